"""Distinct-n and entropy-n as `score` metrics: values written out by hand, the same as the
`diversity` command's functions, and identical under any chunk size and after kill + resume."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dialeval import score
from dialeval.metrics.diversity import distinct_n, ngram_entropy

SRC = Path(__file__).resolve().parents[1] / "src"
METRICS = ["distinct1", "distinct2", "distinct3", "entropy1", "entropy2", "entropy3"]


def test_values_by_hand():
    samples = [{"system": "a", "response": "I like it"}, {"system": "a", "response": "i like you"},
               {"system": "b", "response": "ok"}]
    out = score(samples, ["distinct1", "distinct2", "entropy1"], progress=False)
    # system a: unigrams i like it i like you -> 4 types / 6 tokens; bigrams "i like" x2, "like it",
    # "like you" -> 3 / 4; unigram entropy: counts 2,2,1,1 of 6
    assert out.systems["a"]["distinct1"] == 4 / 6
    assert out.systems["a"]["distinct2"] == 3 / 4
    h = -(2 * (2 / 6) * math.log2(2 / 6) + 2 * (1 / 6) * math.log2(1 / 6))
    assert out.systems["a"]["entropy1"] == pytest.approx(h, rel=1e-12)
    # one-token response: no bigram, so no bigram diversity: 0, the floor (a NaN would drop out
    # of a mean and let a system gain by answering in one word); so is system b's distinct-2
    assert out.sentence["distinct2"][2] == 0.0 and out.systems["b"]["distinct2"] == 0.0
    assert out.sentence["distinct1"].tolist()[:2] == [1.0, 1.0]
    # overall: every response together, 5 types (i like it you ok) / 7 tokens
    assert out.corpus["distinct1"] == 5 / 7


def test_same_as_the_diversity_command_functions():
    texts = ["the cat sat on the mat", "the dog sat", "a cat and a dog", "the the the"]
    out = score([{"response": t} for t in texts], METRICS, progress=False)
    for n in (1, 2, 3):
        assert out.corpus[f"distinct{n}"] == distinct_n(texts, n)
        assert out.corpus[f"entropy{n}"] == pytest.approx(ngram_entropy(texts, n), rel=1e-12)


def _write(path: Path, n: int = 300) -> Path:
    import random

    rng = random.Random(3)
    words = "the a cat dog sat ran on mat home i you like it is good fine very".split()
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            handle.write(json.dumps({"id": str(i), "system": "xyz"[i % 3],
                                     "response": " ".join(rng.choice(words) for _ in range(rng.randint(0, 9)))}) + "\n")
    return path


def _cli(*args, env_extra=None):
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "dialeval.cli", "score", *map(str, args)], env=env,
                          capture_output=True, text=True)


@pytest.mark.slow
def test_chunk_sizes_and_kill_resume_give_identical_results(tmp_path):
    src = _write(tmp_path / "in.jsonl")
    common = [src, "--metrics", ",".join(METRICS), "--json"]
    whole = _cli(*common, "-o", tmp_path / "whole.jsonl")
    assert whole.returncode == 0, whole.stderr
    for size in (1, 7, 50):
        run = _cli(*common, "--chunk-size", size, "-o", tmp_path / f"c{size}.jsonl")
        assert run.stdout == whole.stdout, size
        assert (tmp_path / f"c{size}.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    out = tmp_path / "resumed.jsonl"
    killed = _cli(*common, "--chunk-size", 40, "-o", out, env_extra={"DIALEVAL_ENGINE_KILL_AFTER_SHARD": "3"})
    assert killed.returncode == -signal.SIGKILL and not out.exists()
    resumed = _cli(*common, "--chunk-size", 40, "-o", out, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "already done" in resumed.stderr
    assert resumed.stdout == whole.stdout and out.read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
