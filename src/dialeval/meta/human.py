"""Human scores as the meta layer reads them: a row's score for a quality is the mean of its
ratings, and a system's is the mean over its rated rows of those row means. One definition, so
that `correlate --level system`, `evaluate --plot` and the system scatter plots show the same
human value for a system. (`compare` and the report resample the human side with the metrics,
so there it is a mean `Measure` over the same row values.)"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def human_value(row: dict, quality: str) -> float:
    """The mean of a row's ratings for `quality` (NaN when it has none)."""
    values = (row.get("ratings") or {}).get(quality)
    if values is None:
        return math.nan
    if not isinstance(values, list):
        values = [values]
    vals = [float(v) for v in values if isinstance(v, (int, float)) and v == v]
    return sum(vals) / len(vals) if vals else math.nan


def rated_systems(human: Sequence[float], systems: Sequence) -> tuple[list, list[np.ndarray]]:
    """Systems with at least one rated row, in order of first appearance, and each one's rows
    (all of them, rated or not: a system's metric value is over every row). A None system is
    no system."""
    h = np.asarray(human, dtype=float)
    rows: dict = {}
    for i, s in enumerate(systems):
        if s is not None:
            rows.setdefault(s, []).append(i)
    names, idx = [], []
    for s, members in rows.items():
        members = np.asarray(members, dtype=np.int64)
        if np.isfinite(h[members]).any():
            names.append(s)
            idx.append(members)
    return names, idx


def system_human_means(human: Sequence[float], systems: Sequence) -> dict:
    """system -> mean over its rated rows of `human` (the rows' mean ratings), for the systems
    of `rated_systems`."""
    h = np.asarray(human, dtype=float)
    names, idx = rated_systems(h, systems)
    return {s: float(np.nanmean(h[i])) for s, i in zip(names, idx)}


__all__ = ["human_value", "rated_systems", "system_human_means"]
