"""Merge: shard results fold into run totals; totals give per-system and overall corpus values.

Shards are folded in input order whatever backend computed them, so a run's numbers do not
depend on scheduling, and a resumed run (totals restored from its checkpoint) equals an
uninterrupted one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..metrics.base import MetricState
from .plan import Plan
from .shard import ShardResult


@dataclass
class Totals:
    """Everything a run has reduced so far."""

    states: dict[str, dict[str, MetricState]] = field(default_factory=dict)  # system -> metric -> state
    counts: dict[str, int] = field(default_factory=dict)                    # system -> samples
    n: int = 0
    with_refs: int = 0
    shards: int = 0
    # metric -> system -> reason -> [count, first ids...] (see `shard.unscored_reasons`)
    unscored: dict[str, dict[str, dict[str, list]]] = field(default_factory=dict)
    # counts metrics would otherwise warn about per shard (`progress.tally`), reported once at the
    # end of the whole run: kept here so that a resumed run reports the part before the kill too
    tallies: dict[Any, list[int]] = field(default_factory=dict)

    def _add_unscored(self, part: dict[str, dict[str, dict[str, list]]]) -> None:
        from .shard import UNSCORED_IDS

        for metric, systems in part.items():
            for system, reasons in systems.items():
                have = self.unscored.setdefault(metric, {}).setdefault(system, {})
                for reason, (count, *ids) in reasons.items():
                    mine = have.setdefault(reason, [0])
                    mine[0] += count
                    mine.extend(ids[:UNSCORED_IDS + 1 - len(mine)])

    def add(self, part: ShardResult) -> "Totals":
        for system, states in part.states.items():
            have = self.states.setdefault(system, {})
            for name, state in states.items():
                have[name] = state if name not in have else have[name].merge(state)
            self.counts[system] = self.counts.get(system, 0) + part.counts[system]
        self._add_unscored(part.unscored)
        from ..progress import merge_tallies

        merge_tallies(self.tallies, part.extra.get("tallies"))
        self.n += part.n
        self.with_refs += part.with_refs
        self.shards += 1
        return self

    def merge(self, other: "Totals") -> "Totals":
        """Totals of this run followed by `other` (another run over the samples that follow)."""
        out = Totals()
        for src in (self, other):
            for system, states in src.states.items():
                have = out.states.setdefault(system, {})
                for name, state in states.items():
                    have[name] = state if name not in have else have[name].merge(state)
                out.counts[system] = out.counts.get(system, 0) + src.counts[system]
        out._add_unscored(self.unscored)
        out._add_unscored(other.unscored)
        from ..progress import merge_tallies

        merge_tallies(out.tallies, self.tallies)
        merge_tallies(out.tallies, other.tallies)
        out.n = self.n + other.n
        out.with_refs = self.with_refs + other.with_refs
        out.shards = self.shards + other.shards
        return out

    def corpus_values(self, plan: Plan) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        """(overall corpus value per metric, system -> metric -> corpus value). The overall value
        reduces the states of all systems together (each system's own corpus pass)."""
        metrics = {m.name: m for m in plan.metrics()}
        systems = {system: {name: metrics[name].corpus_from_state(state) for name, state in states.items()}
                   for system, states in self.states.items()}
        overall: dict[str, float] = {}
        for name in plan.names:
            total: MetricState | None = None
            for states in self.states.values():
                total = states[name] if total is None else total.merge(states[name])
            overall[name] = metrics[name].corpus_from_state(total) if total is not None else float("nan")
        return overall, systems

    def to_dict(self) -> dict[str, Any]:
        return {"states": {s: {m: st.to_dict() for m, st in v.items()} for s, v in self.states.items()},
                "counts": self.counts, "n": self.n, "with_refs": self.with_refs, "shards": self.shards,
                "unscored": self.unscored,
                "tallies": [[_json_key(k), v] for k, v in self.tallies.items()]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Totals":
        return cls(states={s: {m: MetricState.from_dict(st) for m, st in v.items()}
                           for s, v in data["states"].items()},
                   counts={k: int(v) for k, v in data["counts"].items()}, n=int(data["n"]),
                   with_refs=int(data["with_refs"]), shards=int(data["shards"]),
                   unscored=data.get("unscored") or {},
                   tallies={_tuple_key(k): [int(c) for c in v] for k, v in data.get("tallies") or []})

    def scored(self, plan: Plan) -> dict[str, dict[str, int]]:
        """system -> metric -> rows with a score."""
        from ..metrics.base import scored_rows

        metrics = {m.name: m for m in plan.metrics()}
        return {system: {name: scored_rows(state, metrics[name]) for name, state in states.items()}
                for system, states in self.states.items()}


def _json_key(key: Any) -> Any:
    return [_json_key(k) for k in key] if isinstance(key, tuple) else key


def _tuple_key(key: Any) -> Any:
    return tuple(_tuple_key(k) for k in key) if isinstance(key, list) else key


def unscored_notes(plan: Plan, totals: Totals) -> list[str]:
    """One line per metric that left rows without a score: how many of how many, per system
    and reason, with the first ids. A system value is the mean over its scored rows only, so
    these lines are what says that two systems' values rest on different rows."""
    lines = []
    for name in plan.names:
        systems = totals.unscored.get(name)
        if not systems or (totals.with_refs == 0 and plan.needs_references.get(name)):
            continue   # said once for all of them by `no_reference_note`
            continue
        total = sum(count for reasons in systems.values() for count, *_ in reasons.values())
        parts = []
        # systems in input order (the order of their first rows), not in the order their first
        # unscored row was folded in, which depends on how the input was cut into shards
        order = {system: i for i, system in enumerate(totals.counts)}
        for system, reasons in sorted(systems.items(), key=lambda kv: order.get(kv[0], len(order))):
            for reason, (count, *ids) in reasons.items():
                more = ", ..." if count > len(ids) else ""
                parts.append(f"{system}: {count} of {totals.counts.get(system, 0)}, {reason} "
                             f"({', '.join(ids)}{more})")
        lines.append(f"{name}: {total} of {totals.n} rows unscored, left out of its means; " + "; ".join(parts))
    return lines


def no_reference_note(plan: Plan, totals: Totals) -> str | None:
    """One message when no sample of the run had references but reference-based metrics ran."""
    ref_based = [name for name in plan.names if plan.needs_references.get(name)]
    if totals.n and totals.with_refs == 0 and ref_based:
        return (f"no sample has references: {', '.join(ref_based)} are null (NaN) for every sample")
    return None
