"""Progress a new user can see (issue 55): rows done inside a shard, not "0 of 500" for minutes;
a line for a slow metric build; commands that score through the library (`probe`, `evaluate`)
show progress as `score` does. Slicing a shard for progress changes no number."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

import dialeval.progress as progress
from dialeval.data.sample import Sample
from dialeval.engine import make_plan
from dialeval.engine.shard import score_shard
from dialeval.metrics.base import Metric


class Slow(Metric):
    """A stand-in for a judge: a score per row that takes a while (no reference needed)."""

    name = "slow_len"
    needs_references = False

    def multi_stats(self, batch):
        time.sleep(0.001 * len(batch))
        return np.array([[len(h.split())] for h in batch.hyps], dtype=np.float64)

    def sentence_from_stats(self, stats):
        return stats[:, 0]


def samples(n=83):
    words = "the cat sat on a mat and the dog ran to it".split()
    return [Sample(id=str(i), system="AB"[i % 2], response=" ".join(words[: 1 + i % 9]),
                   references=[" ".join(words[i % 4: 5 + i % 6])], context=["hello", "where is it"])
            for i in range(n)]


def score(plan, rows, ticks=None):
    with progress.ticking(ticks.append if ticks is not None else None):
        return score_shard(plan, rows, None, keep_stats=True)


@pytest.fixture
def every_slice(monkeypatch):
    """EVERY = 0: after its first slice every metric goes on in slices of 16 rows."""
    monkeypatch.setattr(progress, "EVERY", 0.0)


def test_progress_counts_rows_inside_a_shard(every_slice):
    plan = make_plan([Slow()])
    ticks: list[float] = []
    rows = samples()
    score(plan, rows, ticks)
    # 83 rows, 42 of system A and 41 of B, each in slices of 16: 3 ticks each, the rows summed
    assert ticks == [16, 16, 10, 16, 16, 9]
    assert sum(ticks) == len(rows)


def test_a_fast_metric_takes_the_rest_at_once(monkeypatch):
    """With the usual 15 s, a metric that finishes a part within that after its first slice
    takes the rest in one go: two ticks per system."""
    monkeypatch.setattr(progress, "EVERY", 3600.0)
    ticks: list[float] = []
    score(make_plan(["bleu2"]), samples(), ticks)
    assert ticks == [16, 26, 16, 25]


NAMES = ["bleu1", "bleu4", "rouge_l", "cider_d", "meteor", "distinct2", "entropy2"]


@pytest.mark.parametrize("names", [NAMES, ["emb_average", "emb_greedy", "emb_extrema"]])
def test_slices_change_no_number(every_slice, tmp_path, names):
    """Scored in slices (ticking) or whole (no one watching): the same sentence values, the same
    statistics rows and the same merged states, bit for bit."""
    options = {}
    if names[0].startswith("emb"):
        vectors = tmp_path / "vec.txt"
        vectors.write_text("the 1 0 0\ncat 0 1 0\nsat 1 1 0\ndog 0 0 1\nmat 0 1 1\n", encoding="utf-8")
        options["word_vectors"] = str(vectors)
    try:
        plan = make_plan(names, **options)
    except Exception as exc:   # METEOR's resources not installed here
        pytest.skip(str(exc))
    rows = samples()
    ticks: list[float] = []
    sliced = score(plan, rows, ticks)
    whole = score(plan, rows)
    assert len(ticks) > 2 * len(names)           # it did slice
    for m in plan.names:
        np.testing.assert_array_equal(sliced.sentence[m], whole.sentence[m])
        np.testing.assert_array_equal(sliced.stats[m], whole.stats[m])
        for system in whole.states:
            assert sliced.states[system][m].to_dict() == whole.states[system][m].to_dict(), (m, system)
    assert sliced.unscored == whole.unscored


def test_cider_is_not_sliced(every_slice):
    """A metric with a corpus-wide first pass reads its whole part (a slice would be another
    corpus for the single-shard case): one tick per system."""
    ticks: list[float] = []
    score(make_plan(["cider"]), samples(), ticks)
    assert ticks == [42, 41]


def test_a_slow_step_gets_a_line(monkeypatch, capsys):
    monkeypatch.setattr(progress, "ANNOUNCE", True)
    with progress.waiting("preparing judge", after=0.0):
        time.sleep(0.3)
    assert capsys.readouterr().err == "dialeval: preparing judge ...\n"
    with progress.waiting("preparing bleu2", after=3600.0):
        pass
    assert capsys.readouterr().err == ""


def test_the_library_stays_quiet_unless_asked(monkeypatch, capsys):
    monkeypatch.setattr(progress, "ANNOUNCE", False)   # (an earlier `main()` in this process sets it)
    with progress.waiting("preparing judge", after=0.0):
        time.sleep(0.2)
    assert capsys.readouterr().err == ""


def test_library_scoring_shows_progress_for_a_command_line(monkeypatch):
    """`probe` and `evaluate` score through `dialeval.score`: with the CLI's ANNOUNCE set, it
    shows progress as `dialeval score` does (a log: plain lines)."""
    import dialeval.scoring as scoring

    made = []

    class Recorder(progress.Progress):
        def __init__(self, total, mode, *args, **kwargs):
            made.append(mode)
            super().__init__(total, None)

    monkeypatch.setattr(progress, "Progress", Recorder)
    monkeypatch.setattr(progress, "ANNOUNCE", False)
    scoring.score(samples(5), ["bleu2"])
    monkeypatch.setattr(progress, "ANNOUNCE", True)
    scoring.score(samples(5), ["bleu2"])
    scoring.score(samples(5), ["bleu2"], progress=False)
    terminal = sys.stderr.isatty()
    assert made == ["bar" if terminal else None, "bar" if terminal else "lines", None]
