"""Third-party metrics and data-set loaders register through entry points.

A tiny plug-in package is written into the test's temporary folder, installed there with pip
(`--target`, so nothing outside the test changes), and put on the path of a `dialeval`
process: its metric must then score through `dialeval score` and take its own option as a
generated flag, its loader must feed `dialeval evaluate`, and its estimator's training command
must train and save through `dialeval train`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "examples" / "demo.jsonl"

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "dialeval-plugin-demo"
version = "0.0.1"

[project.entry-points."dialeval.metrics"]
resp_tokens = "dialeval_plugin_demo:ResponseTokens"

[project.entry-points."dialeval.datasets"]
demo-rated = "dialeval_plugin_demo:load_rated"

[project.entry-points."dialeval.train"]
word-counts = "dialeval_plugin_demo:WordCounts"
"""

MODULE = '''\
"""A plug-in metric (response length in whitespace tokens) and a data-set loader."""
import json
import os

import numpy as np

from dialeval.data.datasets.base import Dataset
from dialeval.data.sample import DatasetInfo, Sample
from dialeval.metrics.base import Metric
from dialeval.models.estimator import Argument, Estimator, Options, TrainCommand


class ResponseTokens(Metric):
    """Whitespace tokens in the response, times a scale.

    Options:
        scale: multiplies every count
    """

    name = "resp_tokens"
    needs_references = False

    def __init__(self, scale: float = 1.0, refs_mode="multi", tokenizer=None):
        super().__init__(refs_mode=refs_mode, tokenizer=tokenizer)
        self.scale = scale

    def multi_stats(self, batch):
        return np.array([[len(h.split()) * self.scale] for h in batch.hyps], dtype=float)

    def sentence_from_stats(self, stats):
        return stats[:, 0]

    def signature_options(self):
        return [("scale", self.scale)]


def load_rated(path):
    samples = []
    with open(os.path.join(path, "rated.jsonl"), encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            samples.append(Sample(id=row["id"], context=row["context"], response=row["response"],
                                  references=row["references"], system=row.get("system"),
                                  ratings={k: [float(x) for x in v] for k, v in row["ratings"].items()}))
    info = DatasetInfo(name="demo-rated", qualities={"overall": "overall quality, 1-5"},
                       scales={"overall": (1.0, 5.0)})
    return Dataset(info, samples)


class WordCounts(Estimator):
    """Counts of a corpus's most frequent words.

    Options:
        size: words kept
    """

    kind = "word-counts-demo"
    train_command = TrainCommand("word-counts", "count the words of a corpus", arguments=(
        Argument("--corpus", required=True, help="a text file"), Options()))

    def __init__(self, size: int = 100):
        self.size = size

    def fit(self, corpus):
        with open(corpus, encoding="utf-8") as handle:
            words = handle.read().split()
        top = sorted(set(words), key=lambda w: (-words.count(w), w))[: self.size]
        self.words_ = top
        self.counts_ = np.array([words.count(w) for w in top], dtype=float)
        return self
'''


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("plugin-src")
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "dialeval_plugin_demo.py").write_text(MODULE)
    site = tmp_path_factory.mktemp("plugin-site")
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "--no-deps", "--no-build-isolation", "--target", str(site), str(src)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail("could not install the plug-in package: " + proc.stderr[-2000:])
    return site


def _dialeval(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO / "src"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "dialeval.cli", *args], capture_output=True,
                          text=True, env=env, cwd=REPO)


def _demo_rows() -> list[dict]:
    return [json.loads(line) for line in DEMO.read_text().splitlines() if line.strip()]


@pytest.mark.slow
def test_plugin_metric_scores_through_the_cli(plugin_site, tmp_path):
    out = tmp_path / "scores.jsonl"
    proc = _dialeval(plugin_site, "score", str(DEMO), "--metrics", "resp_tokens,bleu1", "--scale", "2",
                     "-o", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = _demo_rows()
    scored = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in scored] == [r["id"] for r in rows]
    expected = [2.0 * len(r["response"].split()) for r in rows]   # the metric's definition
    got = [r["scores"]["resp_tokens"] if "scores" in r else r["resp_tokens"] for r in scored]
    assert got == expected
    summary = json.loads(proc.stdout)
    assert summary["metrics"]["resp_tokens"]["corpus"] == pytest.approx(sum(expected) / len(expected))
    assert "scale:2.0" in summary["metrics"]["resp_tokens"]["signature"]


@pytest.mark.slow
def test_plugin_metric_is_listed_and_unknown_names_still_refused(plugin_site):
    listed = _dialeval(plugin_site, "metrics")
    assert listed.returncode == 0, listed.stderr
    assert "resp_tokens" in listed.stdout and "dialeval-plugin-demo" in listed.stdout
    bad = _dialeval(plugin_site, "score", str(DEMO), "--metrics", "resp_tokenz")
    assert bad.returncode == 2
    assert "resp_tokens" in bad.stderr          # the closest name is suggested
    assert "Traceback" not in bad.stderr


@pytest.mark.slow
def test_plugin_dataset_feeds_evaluate(plugin_site, tmp_path):
    folder = tmp_path / "rated"
    folder.mkdir()
    rows = _demo_rows()
    (folder / "rated.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    listed = _dialeval(plugin_site, "datasets")
    assert listed.returncode == 0, listed.stderr
    assert "demo-rated" in listed.stdout
    proc = _dialeval(plugin_site, "evaluate", "demo-rated", str(folder), "--metrics", "resp_tokens",
                     "--json")
    assert proc.returncode == 0, proc.stderr
    assert "resp_tokens" in proc.stdout


@pytest.mark.slow
def test_plugin_estimator_trains_through_its_generated_command(plugin_site, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat and the dog and the bird", encoding="utf-8")
    listed = _dialeval(plugin_site, "train", "--help")
    assert listed.returncode == 0 and "word-counts" in listed.stdout
    helped = _dialeval(plugin_site, "train", "word-counts", "--help")
    assert "--size SIZE" in helped.stdout and "words kept (default: 100)" in helped.stdout
    proc = _dialeval(plugin_site, "train", "word-counts", "--corpus", str(corpus), "--size", "2",
                     "-o", str(tmp_path / "model"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["output"] == str(tmp_path / "model")
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert config["params"] == {"size": 2} and config["state"]["words_"] == ["the", "and"]
    assert json.loads((tmp_path / "model" / "manifest.json").read_text())["kind"] == "word-counts-demo"


def test_registry_reads_plugins_only_for_names_it_does_not_know(monkeypatch):
    """Built-in lookups must not scan installed distributions (the CLI decides on BLAS threads
    from built-in names before numpy is imported, and a scan costs start-up time)."""
    from dialeval.metrics import registry

    reg = registry.MetricRegistry(list(registry.REGISTRY._specs.values()), group="dialeval.no-such-group")
    calls = []
    monkeypatch.setattr(reg, "_read_plugins", lambda: calls.append(1))
    assert "bleu2" in reg and reg["bleu2"].name == "bleu2"
    assert calls == []
    assert "not-a-metric" not in reg
    assert calls == [1]


def test_plugin_cannot_shadow_a_builtin(monkeypatch):
    from importlib import metadata

    from dialeval.metrics import registry

    fake = metadata.EntryPoint(name="bleu2", value="somewhere:Else", group="dialeval.metrics")
    monkeypatch.setattr(metadata, "entry_points", lambda group=None: [fake] if group == "dialeval.metrics" else [])
    reg = registry.MetricRegistry(list(registry.REGISTRY._specs.values()))
    with pytest.warns(UserWarning, match="shadowed"):
        names = list(reg)
    assert reg["bleu2"].target.endswith("bleu:Bleu")
    assert names.count("bleu2") == 1
