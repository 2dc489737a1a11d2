"""Run a plan over shards: the corpus-wide first pass (when a metric needs one), then scoring.

`run_plan` is the one loop every entry point uses: `dialeval.score` (shards of an in-memory
list) and the streaming `dialeval score` (shards read from files, written out as they finish,
resumable). Shards come from a callable so the first pass and the scoring pass can each read
the input from the start without holding it.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Callable, Iterable, Sequence

from ..data.sample import Sample
from .merge import Totals
from .plan import Plan
from .shard import ShardResult, first_pass_shard, merge_first_pass, score_shard

Shards = Callable[[], Iterable[Sequence[Sample]]]


def gather_first_pass(plan: Plan, shards: Shards, backend) -> dict[str, dict[Any, Any]] | None:
    """Merged corpus-pass states (system -> key -> state), or None when no metric needs them.

    An input of one shard needs no pass: each system's batch is then its whole evaluated set,
    and a metric scoring a batch without merged state takes the same corpus knowledge from the
    batch itself (`Batch.root`, see metrics/base.py), so the numbers are the same without
    reading and tokenising the references twice. The empty dict says so."""
    if not plan.needs_first_pass:
        return None
    parts = iter(shards())
    head = [shard for shard in (next(parts, None), next(parts, None)) if shard is not None]
    if len(head) < 2:
        return {}
    corpus: dict[str, dict[Any, Any]] = {}
    shared = _Interner()
    for part in backend.map(first_pass_shard, plan, chain(head, parts)):
        corpus = merge_first_pass(plan, corpus, part)
        for system in part:
            for key, state in corpus[system].items():
                corpus[system][key] = shared.intern((system, key), state)
    return corpus


class _Interner:
    """One object for equal first-pass states: systems scored against the same references (all
    20 DSTC6 systems) then hold one copy of the document frequencies instead of 20. Only the
    states currently held are remembered, so a growing state does not leave copies behind."""

    def __init__(self):
        self.by_digest: dict[bytes, Any] = {}
        self.holder: dict[Any, bytes] = {}

    def intern(self, owner: Any, state: Any) -> Any:
        digest = getattr(state, "digest", None)
        if digest is None:
            return state
        new = digest()
        old = self.holder.get(owner)
        self.holder[owner] = new
        if old is not None and old != new and old not in self.holder.values():
            self.by_digest.pop(old, None)
        return self.by_digest.setdefault(new, state)


def run_plan(plan: Plan, shards: Shards, backend, *, corpus: dict | None = None,
             totals: Totals | None = None, skip: int = 0, keep_stats: bool = False,
             on_shard: Callable[[int, Sequence[Sample], ShardResult, Totals], None] | None = None) -> Totals:
    """Score every shard after the first `skip` (those are already in `totals`), folding results
    in input order. `on_shard(index, samples, result, totals)` runs after each fold."""
    if corpus is None:
        corpus = gather_first_pass(plan, shards, backend)
    totals = totals if totals is not None else Totals()
    todo = _skipping(shards(), skip)
    held: list[Sequence[Sample]] = []

    def feed():
        for shard in todo:
            held.append(shard)
            yield shard

    from ..progress import report_tallies

    index = skip
    for result in backend.map(score_shard, plan, feed(), corpus, keep_stats):
        samples = held.pop(0)
        totals.add(result)
        if on_shard is not None:
            on_shard(index, samples, result, totals)
        index += 1
    report_tallies(totals.tallies)   # once per run, a resumed one included (Totals keep them)
    return totals


class KeepSingleShard:
    """`shards` (a callable giving the input's shards afresh) that reads an input of one shard
    only once. The corpus first pass reads the input's first two shards to learn whether it
    has more than one (`gather_first_pass`); when it has one, that shard is kept and handed to
    the scoring pass instead of reading and parsing the files a second time. What is kept is
    one shard, the unit scoring holds in memory anyway; longer inputs are read afresh on each
    call, as before."""

    def __init__(self, shards: Shards):
        self.shards = shards
        self.single: list[Sequence[Sample]] | None = None
        self.several = False   # known to have more: read as given (no shard read ahead)

    def __call__(self) -> Iterable[Sequence[Sample]]:
        if self.single is not None:
            return iter(self.single)
        if self.several:
            return self.shards()
        return self._read()

    def _read(self):
        parts = iter(self.shards())
        first = next(parts, None)
        if first is None:
            return
        second = next(parts, None)
        if second is None:
            self.single = [first]
            yield first
            return
        self.several = True
        yield first
        yield second
        yield from parts


def _skipping(shards: Iterable[Sequence[Sample]], skip: int):
    for i, shard in enumerate(shards):
        if i >= skip:
            yield shard
