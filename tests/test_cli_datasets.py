"""Every CLI subcommand that takes a data set (or samples), given each data set loader's set:
it succeeds, or it prints one `dialeval: error:` line and exits 2. No traceback anywhere.

Commands run in-process through `dialeval.cli.main`, so an exception other than a
DialevalError fails the test with its traceback. DSTC6's 20 x 2,000 hypothesis files are cut to
their first 40 lines in a scratch copy (the loader reads them line-aligned), so the whole
module stays fast; the other sets are read in place. Small settings throughout: bleu2,
`--n-boot 10`, one quality, a one-point AM-FM sweep.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import DATA
from dialeval.cli import main
from dialeval.data.datasets import list_datasets, load_dataset

MAX_LINES = 40


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))


def small_copy(folder: Path, tmp: Path) -> Path:
    """The folder itself, or for line-aligned text files longer than MAX_LINES (DSTC6) a copy
    of the folder with those files cut to MAX_LINES lines (other files linked)."""
    big = [p for p in folder.rglob("*.txt") if p.stat().st_size > 50_000]
    if not big:
        return folder
    copy = tmp / folder.name
    for path in folder.rglob("*"):
        if path.is_dir():
            continue
        dest = copy / path.relative_to(folder)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".txt" and path.stat().st_size > 50_000:
            lines = path.read_text(encoding="utf-8").split("\n")[:MAX_LINES]
            dest.write_text("\n".join(lines) + "\n", encoding="utf-8")
        else:
            os.symlink(path.resolve(), dest)
    return copy


def run(capsys, argv: list[str]) -> int:
    """main(argv): exit 0, or exit 2 with exactly one error line; never a traceback."""
    try:
        code = main(argv)
    except SystemExit as exc:              # argparse refusing an argument: usage + one line
        code = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err + out, (argv, err)
    assert code in (0, 2), (argv, code, err)
    if code == 2:
        errors = [line for line in err.splitlines() if "error:" in line]
        assert len(errors) == 1, (argv, err)
    return code


@pytest.mark.slow
@pytest.mark.parametrize("spec", list_datasets(), ids=lambda s: s.name)
def test_every_command_on_every_data_set(spec, tmp_path, capsys):
    folder = DATA / spec.folder
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    path = str(small_copy(folder, tmp_path))
    dataset = load_dataset(spec.name, path)
    quality = next(iter(dataset.info.qualities))
    scores = tmp_path / "scores.jsonl"
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(s.to_dict(), ensure_ascii=False) + "\n"
                               for s in dataset.samples[:300]), encoding="utf-8")
    results = {}
    results["datasets"] = run(capsys, ["datasets", spec.name, path])
    results["evaluate"] = run(capsys, ["evaluate", spec.name, path, "--metrics", "bleu2", "--n-boot", "10",
                                       "--qualities", quality, "-o", str(scores)])
    if scores.exists():
        results["correlate"] = run(capsys, ["correlate", str(scores), "--human", quality, "--n-boot", "10",
                                            "--level", "all"])
    results["agreement"] = run(capsys, ["agreement", spec.name, path, "--qualities", quality,
                                        "--n-rep", "5"])
    results["score"] = run(capsys, ["score", str(samples), "--metrics", "bleu2,rouge_l", "--json"])
    results["diversity"] = run(capsys, ["diversity", str(samples), "--format", "jsonl"])
    results["augment"] = run(capsys, ["augment", str(samples), "--method", "wordnet", "-k", "1",
                                      "--limit", "2"])
    results["sweep"] = run(capsys, ["sweep", "amfm", "--dataset", spec.name, "--data", path,
                                    "--quality", quality, "--crossfit", "2", "--dims-grid", "5",
                                    "--orders", "1", "--lambdas", "0.5", "--dims", "5", "--order", "1",
                                    "--quiet", "-o", str(tmp_path / "sweep")])
    # The description and the agreement of a set with per-rater scores always work.
    assert results["datasets"] == 0
    if not dataset.system_ratings:
        assert results["agreement"] == 0
