"""Issue 21, item 12: `evaluate` and `agreement` take a user's own rated JSONL or CSV file, read
by the reader every command uses, not only the built-in data-set names."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import threebots


def rated_rows():
    """The three-bot rows with three raters each (the second and third derived from the first
    by a fixed rule, so the raters agree but not perfectly)."""
    rows = threebots.records()
    for i, r in enumerate(rows):
        first = r["ratings"]["overall"][0]
        r["ratings"] = {"overall": [first, min(5, first + i % 2), max(1, first - (i % 3 == 0))],
                        "fluent": [float(len(r["response"].split()) % 5 + 1), 3.0, 4.0]}
    return rows


@pytest.fixture
def files(tmp_path):
    rows = rated_rows()
    jsonl = tmp_path / "rated.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    table = tmp_path / "rated.csv"
    with open(table, "w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle)
        w.writerow(["system", "context", "response", "references", "rating:overall",
                    "rating:fluent", "dialogue_id", "turn"])
        for r in rows:
            w.writerow([r["system"], r["context"][0], r["response"], json.dumps(r["references"]),
                        ";".join(f"{v:g}" for v in r["ratings"]["overall"]),
                        ";".join(f"{v:g}" for v in r["ratings"]["fluent"]), r["dialogue_id"], r["turn"]])
    return rows, jsonl, table


def test_agreement_on_a_rated_file(files, capsys):
    from dialeval.cli.main import main
    from dialeval.data.readers import read_samples
    from dialeval.meta.agreement import agreement, ratings_matrix

    rows, jsonl, table = files
    got = {}
    for path in (jsonl, table):
        capsys.readouterr()
        assert main(["agreement", str(path), "--n-rep", "20", "--json"]) == 0
        got[path.suffix] = json.loads(capsys.readouterr().out)
    assert [a["quality"] for a in got[".jsonl"]["agreement"]] == ["overall", "fluent"]
    assert got[".jsonl"]["agreement"] == got[".csv"]["agreement"]
    want = agreement(ratings_matrix(read_samples(jsonl), "overall"), "overall", method="spearman",
                     n_rep=20, seed=0).to_dict()
    row = got[".jsonl"]["agreement"][0]
    assert row["raters"] == 3 and row["items"] == 45
    assert row["kappa"] == pytest.approx(want["kappa"]) and row["split_half"] == pytest.approx(want["split_half"])
    assert main(["agreement", str(jsonl), "--qualities", "overall", "--n-rep", "5"]) == 0
    assert capsys.readouterr().out.startswith("quality")


def test_evaluate_on_a_rated_file(files, capsys):
    from scipy.stats import pearsonr

    from dialeval.cli.main import main
    from dialeval.scoring import score

    rows, jsonl, table = files
    outs = {}
    for path in (jsonl, table):
        capsys.readouterr()
        assert main(["evaluate", str(path), "--metrics", "bleu2,rouge_l", "--method", "pearson",
                     "--n-boot", "50", "--json"]) == 0
        outs[path.suffix] = json.loads(capsys.readouterr().out)
    assert outs[".jsonl"]["correlations"] == outs[".csv"]["correlations"]
    result = score(rows, ["bleu2"])
    human = [np.mean(r["ratings"]["overall"]) for r in rows]
    corr = {(c["metric"], c["quality"]): c for c in outs[".jsonl"]["correlations"]}
    assert corr[("bleu2", "overall")]["r"] == pytest.approx(pearsonr(result.sentence["bleu2"], human).statistic)
    assert corr[("bleu2", "overall")]["n"] == 45 and corr[("bleu2", "overall")]["level"] == "turn"
    assert ("rouge_l", "fluent") in corr


def test_rated_file_errors(tmp_path, capsys):
    from dialeval.cli.main import main

    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"response": "hi", "references": ["hello"]}) + "\n")
    assert main(["agreement", str(bare)]) == 2
    assert "bare.jsonl: no human ratings" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "missing.jsonl")]) == 2
    assert "neither a data set loader name" in capsys.readouterr().err
    assert main(["evaluate", "usr-tc"]) == 2
    assert "give the data set's folder too" in capsys.readouterr().err
