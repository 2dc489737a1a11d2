"""Default models: a metric with no model option loads its default from the models folder (a
tiny composition fitted here stands in for the shipped ones), the signature names it with its
hash, `models verify` refuses a flipped byte, and without the default the old error stays.
Also `datasets --sources` (rendered from the loaders, the doc page matches it) and `--metrics all`."""

from __future__ import annotations

import os

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, flip_byte
from dialeval.cli import main
from dialeval.errors import DialevalError

DEMO = REPO / "examples" / "demo.jsonl"


@pytest.fixture
def models_dir(tmp_path, monkeypatch):
    """A models folder holding one default, `compose`: CRS over bleu2 and rouge_l fitted on the
    demo's overall ratings (word-overlap metrics only, so it takes a second)."""
    root = tmp_path / "models"
    root.mkdir()
    assert main(["fit", "compose", "--data", f"demo:{DEMO}", "--metrics", "bleu2,rouge_l",
                 "--quality", "overall", "-o", str(root / "compose")]) == 0
    monkeypatch.setenv("DIALEVAL_MODELS_DIR", str(root))
    return root


def _summary(capsys, argv):
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_default_fills_the_model_option(models_dir, capsys):
    from dialeval.models.defaults import model_digest

    digest = model_digest(str(models_dir / "compose"))
    assert len(digest) == 64
    out = _summary(capsys, ["score", str(DEMO), "--metrics", "compose", "--json"])["metrics"]["compose"]
    assert f"|model:compose@{digest[:12]}|" in out["signature"]
    # the same number as naming the folder explicitly: the default is that folder, nothing else
    explicit = _summary(capsys, ["score", str(DEMO), "--metrics", "compose", "--json",
                                 "--compose-model", str(models_dir / "compose")])["metrics"]["compose"]
    assert out["corpus"] == pytest.approx(explicit["corpus"])
    # the folder named explicitly signs as the default does: one rule, the manifest's hash
    assert explicit["signature"] == out["signature"]


def test_no_default_keeps_the_old_error(tmp_path, monkeypatch):
    from dialeval.scoring import score
    from dialeval.data.readers import read_samples

    samples = read_samples(str(DEMO))
    monkeypatch.setenv("DIALEVAL_MODELS_DIR", str(tmp_path))          # a folder without models
    with pytest.raises(DialevalError, match="needs a fitted composition: --compose-model"):
        score(samples, ["compose"])
    monkeypatch.delenv("DIALEVAL_MODELS_DIR")
    monkeypatch.setattr("dialeval.models.defaults.PACKAGE", "dialeval_models_not_installed")
    with pytest.raises(DialevalError, match="needs a fitted composition"):
        score(samples, ["compose"])


def test_fill_default_only_when_unset(models_dir):
    from dialeval.metrics.registry import metric_spec
    from dialeval.models.defaults import fill_default

    spec = metric_spec("compose")
    given = {"compose_model": "elsewhere"}
    assert fill_default(spec, given) is None and given == {"compose_model": "elsewhere"}
    empty: dict = {}
    tag = fill_default(spec, empty)
    assert tag.startswith("compose@") and empty["compose_model"] == str(models_dir / "compose")
    # a metric without a declared default is left alone
    none: dict = {}
    assert fill_default(metric_spec("bleu2"), none) is None and none == {}
    # every model-needing family declares its default and the option it fills
    for name, default, option in [("adem", "adem", "adem_model"), ("c_adem", "c_adem", "adem_model"),
                                  ("r_adem", "r_adem", "adem_model"), ("mme_em", "mme", "mme_model"),
                                  ("lm_fluency", "lm", "lm_model"), ("amfm", "amfm", "amfm_model"),
                                  ("compose", "compose", "compose_model"),
                                  ("compose_ref", "compose_ref", "compose_ref_model"),
                                  ("compose_judge", "compose_judge", "compose_judge_model")]:
        s = metric_spec(name)
        assert (s.default_model, s.model_option) == (default, option)
        assert option in s.option_specs()


def test_verify_refuses_a_flipped_byte(models_dir, tmp_path, capsys):
    capsys.readouterr()
    assert main(["models", "verify"]) == 0
    assert capsys.readouterr().out.startswith("compose: ok (")
    target = models_dir / "compose" / "config.json"
    flip_byte(target, target.stat().st_size // 2, 0x01)
    assert main(["models", "verify"]) == 2
    out, err = capsys.readouterr()
    assert "compose: FAILED: compose/config.json sha256 differs" in out
    assert "dialeval: error:" in err
    # and the metric itself refuses to load it
    with pytest.raises(DialevalError, match="changed since"):
        from dialeval.scoring import score
        from dialeval.data.readers import read_samples

        score(read_samples(str(DEMO)), ["compose"])


def test_verify_without_models(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DIALEVAL_MODELS_DIR", str(tmp_path / "absent"))
    assert main(["models", "verify"]) == 2
    assert "no default models installed" in capsys.readouterr().err


def test_normalise_makes_npz_and_json_independent_of_time_and_place(tmp_path):
    """The rebuild guarantee rests on `normalise`: two folders that differ only in archive
    timestamps, timings and the paths they were made from come out byte-identical."""
    import zipfile

    import numpy as np

    from dialeval.recipes import normalise
    from dialeval.models.store import write_manifest

    folders = []
    for k, (root, seconds) in enumerate([("/data/a", 1.5), ("/elsewhere/b", 7.25)]):
        folder = tmp_path / f"m{k}"
        folder.mkdir()
        np.savez(folder / "arrays.npz", w=np.arange(4.0))
        with zipfile.ZipFile(folder / "arrays.npz") as z:
            member = z.read("w.npy")
        with zipfile.ZipFile(folder / "arrays.npz", "w") as z:  # as a writer that stamps the time
            z.writestr(zipfile.ZipInfo("w.npy", date_time=(2026, 1, 2, 3, 4, 5 + 2 * k)), member)
        (folder / "config.json").write_text(json.dumps(
            {"source": f"{root}/dailydialog/train.zip", "train_seconds": seconds, "loss": 0.5}))
        (folder / "tokenizer.json").write_text('{"vocab": {"time": 5, "seconds": 6}}')   # a library's file
        write_manifest(folder, "test-kind", {"made_from": f"{root}/x"})
        normalise(str(folder), root, str(folder))
        folders.append(folder)
    assert (folders[0] / "tokenizer.json").read_text() == '{"vocab": {"time": 5, "seconds": 6}}'
    for name in ("arrays.npz", "config.json", "manifest.json"):
        assert (folders[0] / name).read_bytes() == (folders[1] / name).read_bytes(), name
    config = json.loads((folders[0] / "config.json").read_text())
    assert config == {"source": "<data-root>/dailydialog/train.zip", "train_seconds": None, "loss": 0.5}


def test_models_list_names_every_default(models_dir, capsys):
    out = _summary(capsys, ["models", "list", "--json"])
    rows = {r["name"]: r for r in out["models"]}
    assert set(rows) == {"amfm", "adem", "c_adem", "r_adem", "mme", "mme_cross", "lm", "compose", "compose_ref",
                         "compose_judge"}
    assert "judge-1.5b" in rows["compose_judge"]["optional"] and not rows["compose"]["optional"]
    assert rows["compose"]["installed"] and rows["compose"]["bytes"] > 0
    assert not rows["adem"]["installed"]
    assert "--data-root" not in rows["adem"]["command"] and "<data-root>/usr" in rows["adem"]["command"]
    assert "CC BY-NC-SA 4.0" in rows["amfm"]["licence"]


def test_build_refuses_a_data_root_without_the_folders(tmp_path):
    with pytest.raises(DialevalError, match="no folder dailydialog"):
        from dialeval.recipes import build

        build(str(tmp_path), str(tmp_path / "out"), ["amfm"])
    assert main(["models", "build", "--data-root", str(tmp_path), "--only", "nope", "-o", str(tmp_path)]) == 2


def test_datasets_sources_cover_every_loader_and_the_doc_matches(capsys):
    from dialeval.data.datasets import list_datasets
    from dialeval.data.datasets.sources import all_sources, markdown

    covered = {n for _, names in all_sources() for n in names}
    assert covered == {s.name for s in list_datasets()}
    for source, _ in all_sources():
        assert source.origin and source.licence and source.layout, source.folder
    doc = (REPO / "docs" / "datasets.md").read_text(encoding="utf-8")
    assert doc == markdown(), "docs/datasets.md is stale: regenerate it (command at its top)"
    capsys.readouterr()
    assert main(["datasets", "--sources"]) == 0
    text = capsys.readouterr().out
    assert "predictive-engagement/" in text and "PlusLabNLP/PredictiveEngagement" in text
    assert "dailydialog/" in text and "CC BY-NC-SA 4.0" in text
    rows = _summary(capsys, ["datasets", "--sources", "--json"])
    assert {r["folder"] for r in rows} >= {"usr", "grade", "fed", "dailydialog", "predictive-engagement"}


def test_no_doc_recipe_points_at_shared():
    """Recipes use the public names under a data root, never a sibling checkout's folder."""
    for page in sorted((REPO / "docs").rglob("*.md")):
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            assert "../shared" not in line, f"{page.relative_to(REPO)}:{number}: {line.strip()}"


@pytest.mark.slow
def test_metrics_all_runs_and_says_what_it_left_out(tmp_path, capsys):
    """With no default installed, `--metrics all` scores what can run and names the rest once."""
    capsys.readouterr()
    assert main(["score", str(DEMO), "--metrics", "all", "--json"]) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)
    text = json.dumps(summary)
    for name in ("bleu4", "rouge_l", "cider_d"):
        assert f'"{name}"' in text
    notes = [line for line in err.splitlines() if "--metrics all: left out" in line]
    left = " ".join(notes)
    for name in ("adem", "c_adem", "r_adem", "mme_fm", "compose", "lm_coherence", "amfm"):
        assert name in left, name
    # each reason once: ADEM's three variants share one line
    assert sum("adem" in line for line in notes) == 1


def test_shipped_models_fit_the_budget_and_name_no_machine_path():
    """packages/dialeval-models: at most 120 MB tracked, no file over 50 MB, and nothing that
    records where it was built (the build writes <data-root> and <models> instead)."""
    root = REPO / "packages" / "dialeval-models" / "src" / "dialeval_models"
    files = [p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    sizes = {p: p.stat().st_size for p in files}
    assert sum(sizes.values()) <= 120_000_000
    assert all(size <= 50_000_000 for size in sizes.values()), max(sizes.values())
    import tempfile

    # where a build could have leaked from: this checkout, the data beside it, home, temp
    places = {str(REPO), str(REPO.parent), os.path.expanduser("~"), tempfile.gettempdir(), "/tmp"}
    for path in files:
        if path.suffix == ".json":
            text = path.read_text(encoding="utf-8")
            for place in places:
                assert place + os.sep not in text, f"{path.relative_to(REPO)} names {place}"


def test_shipped_configs_are_what_their_estimators_record_now():
    """Every shipped folder's config.json reads under its estimator's versioned schema, and
    holds exactly the parameters and `schema` entry a save writes today: a rebuild by the recipe
    gives the same config (checked for adem / c_adem by benchmarks/bench_models_rebuild.py),
    and no parameter of a shipped folder is unknown to this version."""
    from dialeval.metrics.amfm.model import AMFMModel
    from dialeval.metrics.compose.model import ComposeModel
    from dialeval.metrics.learned.adem.model import Adem
    from dialeval.metrics.mme.model import MMETrainer, _classes

    root = REPO / "packages" / "dialeval-models" / "src" / "dialeval_models"
    folders = {"adem": Adem, "c_adem": Adem, "r_adem": Adem, "amfm": AMFMModel, "compose": ComposeModel,
               "compose_ref": ComposeModel, "mme": MMETrainer, "mme_cross": MMETrainer}
    checked = []
    for name, cls in folders.items():
        for path in [root / name / "config.json", *sorted((root / name).glob("*/config.json"))]:
            estimator = cls if path.parent.name == name else _classes()[path.parent.name]
            config = json.loads(path.read_text(encoding="utf-8"))
            est = estimator(**estimator.params_from_config(config, str(path)))
            assert est.recorded_params() == config["params"], path
            assert est.schema_entry() == ({"schema": config["schema"]} if "schema" in config else {}), path
            checked.append(f"{name}/{path.parent.name}")
    assert len(checked) == 14, checked         # eight folders, MME's five sub-metrics and mme_cross's rm
    assert json.loads((root / "adem" / "config.json").read_text())["schema"] == 3      # its copy term
