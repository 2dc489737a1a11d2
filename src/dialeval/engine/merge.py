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

    def add(self, part: ShardResult) -> "Totals":
        for system, states in part.states.items():
            have = self.states.setdefault(system, {})
            for name, state in states.items():
                have[name] = state if name not in have else have[name].merge(state)
            self.counts[system] = self.counts.get(system, 0) + part.counts[system]
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
                "counts": self.counts, "n": self.n, "with_refs": self.with_refs, "shards": self.shards}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Totals":
        return cls(states={s: {m: MetricState.from_dict(st) for m, st in v.items()}
                           for s, v in data["states"].items()},
                   counts={k: int(v) for k, v in data["counts"].items()}, n=int(data["n"]),
                   with_refs=int(data["with_refs"]), shards=int(data["shards"]))


def no_reference_note(plan: Plan, totals: Totals) -> str | None:
    """One message when no sample of the run had references but reference-based metrics ran."""
    ref_based = [name for name in plan.names if plan.needs_references.get(name)]
    if totals.n and totals.with_refs == 0 and ref_based:
        return (f"no sample has references: {', '.join(ref_based)} are null (NaN) for every sample")
    return None
