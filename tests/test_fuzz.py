"""Property-based fuzzing (hypothesis) of every reader, every data set loader on mutated copies
of its files, and every cheap metric. Allowed outcomes: a correct result or a one-line
`DialevalError`; the metric invariants are in fuzz_targets.check_metric / check_identity.

Each test runs a bounded number of examples so CI stays fast; `benchmarks/fuzz.py` runs the
same targets with 10^5 examples each. A failing example prints its seed: replay it with
`fuzz_targets.<target>(random.Random(seed), tmp_path)`.
"""

from __future__ import annotations

import random

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import fuzz_targets as ft  # noqa: E402
from conftest import DATA  # noqa: E402
from dialeval.errors import DialevalError  # noqa: E402

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FAST = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
SLOW = settings(FAST, max_examples=8)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """A scratch cache, except that METEOR's resource cache (built once by install.sh, a
    minute to rebuild) is linked in from the real one when it is there."""
    from dialeval.models.cache import cache_dir

    meteor = cache_dir() / "meteor"
    monkeypatch.setenv("DIALEVAL_CACHE_DIR", str(tmp_path / "cache"))
    if meteor.is_dir():
        (tmp_path / "cache").mkdir()
        (tmp_path / "cache" / "meteor").symlink_to(meteor, target_is_directory=True)


def allowed(target, seed: int, tmp_path) -> None:
    """Run one example: a result passes its own checks inside the target; an error must be a
    one-line DialevalError; anything else fails the test."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    try:
        target(random.Random(seed), work)
    except DialevalError as exc:
        assert ft.one_line(str(exc)), f"seed {seed}: multi-line error {str(exc)!r}"


@pytest.mark.parametrize("name", sorted(ft.READER_TARGETS))
def test_readers(name, tmp_path):
    @FAST
    @given(seed=SEEDS)
    def run(seed):
        allowed(ft.READER_TARGETS[name], seed, tmp_path)
    run()


def _loaders():
    from dialeval.data.datasets import list_datasets

    return [(s.name, s.folder) for s in list_datasets()]


@pytest.mark.parametrize("name,folder", _loaders())
def test_dataset_loaders_on_mutated_copies(name, folder, tmp_path):
    path = DATA / folder
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    target = ft.loader_target(name, path)
    settings_ = settings(SLOW, max_examples=3) if name in ("dstc6", "dstc9") else SLOW

    @settings_
    @given(seed=SEEDS)
    def run(seed):
        allowed(target, seed, tmp_path)
    run()


@pytest.mark.parametrize("metric", ft.CHEAP_METRICS)
def test_metrics(metric, tmp_path):
    target = ft.metric_target(metric)
    examples = 4 if metric == "meteor" else 15

    @settings(FAST, max_examples=examples)
    @given(seed=SEEDS)
    def run(seed):
        allowed(target, seed, tmp_path)
    run()


@pytest.mark.parametrize("metric", ft.WILD_METRICS)
def test_metrics_on_surrogates_and_cjk(metric, tmp_path):
    """Scraped-chat text read through the JSONL reader (lone surrogates, unspaced CJK): a
    correct result, never a crash."""
    target = ft.wild_metric_target(metric)
    examples = 4 if metric in ("meteor", "sent_cosine") else 12

    @settings(FAST, max_examples=examples)
    @given(seed=SEEDS)
    def run(seed):
        allowed(target, seed, tmp_path)
    run()


@pytest.mark.parametrize("metric", ft.CHEAP_METRICS)
def test_identical_hypothesis_scores_as_the_originals(metric, tmp_path):
    ft.check_identity(metric, tmp_path, random.Random(1))


def test_a_crash_is_reported_as_a_crash(tmp_path):
    """The harness itself: a non-Dialeval exception counts as a crash, a one-line
    DialevalError as an error, and the error's numbers and paths are blanked for counting."""
    def boom(rng, tmp):
        raise ValueError("x")

    def refuse(rng, tmp):
        raise DialevalError(f"{tmp}/in.jsonl:3: field 'response': expected a string")
    assert ft.run_example(boom, random.Random(0), tmp_path)[0] == "crash"
    assert ft.run_example(refuse, random.Random(0), tmp_path) == \
        ("error", "PATH:N: field '…': expected a string")
