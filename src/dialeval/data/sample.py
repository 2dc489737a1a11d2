"""The sample every reader produces and every metric consumes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Sample:
    """One response to be judged.

    `references` may be empty (reference-free metrics, human-only data sets); `ratings` maps a
    quality name to the scores of the individual annotators (a list, so agreement statistics
    can be computed; a single mean score is a one-element list).
    """

    id: str
    response: str
    context: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    system: str | None = None
    ratings: dict[str, list[float]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def human(self, quality: str) -> float:
        """Mean of the annotators' scores for `quality` (NaN when absent)."""
        values = [v for v in self.ratings.get(quality, []) if v == v]
        return sum(values) / len(values) if values else float("nan")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "context": list(self.context),
                               "response": self.response, "references": list(self.references)}
        if self.system is not None:
            out["system"] = self.system
        if self.ratings:
            out["ratings"] = {k: list(v) for k, v in self.ratings.items()}
        if self.meta:
            out["meta"] = dict(self.meta)
        return out


@dataclass
class DatasetInfo:
    """What a data set's ratings mean: the qualities, their scales, and the level they apply to."""

    name: str
    qualities: dict[str, str] = field(default_factory=dict)  # quality -> description incl. scale
    scales: dict[str, tuple[float, float]] = field(default_factory=dict)
    level: str = "turn"  # "turn", "dialogue" or "system"
    description: str = ""
