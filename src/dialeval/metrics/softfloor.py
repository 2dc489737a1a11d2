"""The bottom of a learned metric's scale belongs to silence alone.

Several learned metrics normalise a raw score onto a scale whose bottom is reached by clipping:
USL-H's percentile range for the `mme_*` sub-metrics, the holistic paper's percentile bound for
`lm_coherence` and `lm_fluency`. That bottom is also the floor the blank-response rule gives an
empty reply (`Metric.floor()`), so every weak real reply tied with silence, and a system that
sometimes answers nothing could not be told from one that answers "ok". ADEM's linear score has
no clip but can fall under the floor of its 1-5 scale, below silence.

One map, shared by all of them, is applied to each metric's own normalised score, on a unit
scale `z` (0 the floor, 1 the top): a value at or above the knee `KNEE` is left exactly as it
is, and below the knee the line turns into the hyperbola knee^2 / (2 knee - z), which meets it
with the same value and slope at the knee, keeps decreasing as z does and never reaches 0. So:

- every finite real score lands strictly above the floor (a clipped 0 reads knee / 2 = 0.025;
  an unclipped ADEM score far under its floor still lands above it: a hyperbolic tail does not
  underflow to 0 where an exponential one would);
- the map is strictly increasing, and the published clips are kept, so the new score is a
  strictly increasing function of the published one: every ranking of real replies, ties
  included, is what it was (replies a clip tied at the bottom still tie, above silence now);
- scores at or above the knee are untouched bit for bit: only the bottom 5% of a scale moves,
  and by at most knee / 2.

The floor itself does not move: a blank response still scores it, through the rule in
`metrics/base.py`. The metrics that use the map name it in their signatures (`SIGNATURE_FIELD`),
so a score says it was made with it.
"""

from __future__ import annotations

import numpy as np

KNEE = 0.05
# the signature entry of a metric whose scale goes through `lift`: (field, value)
SIGNATURE_FIELD = ("squash", f"knee{KNEE:g}")


def lift(z: np.ndarray | float, knee: float = KNEE) -> np.ndarray:
    """`z` (unit scale, 0 the floor) with everything under `knee` squashed into (0, knee):
    z itself from the knee up, knee^2 / (2 knee - z) below it; NaN stays NaN and -inf alone
    reaches 0."""
    if not 0 < knee < 1:
        raise ValueError(f"the knee must lie strictly between 0 and 1, got {knee}")
    x = np.asarray(z, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        below = x < knee
        # np.where evaluates both branches; the denominator is >= knee wherever it is used
        tail = knee * knee / np.where(below, 2.0 * knee - x, 1.0)
    return np.where(below, tail, x)


def lift_range(x: np.ndarray, low: float, high: float, top: bool = True) -> np.ndarray:
    """Scores `x` on a scale whose floor is `low` and top `high`, returned on that scale with
    the floor kept and everything under the knee lifted above it (`lift` on (x - low) /
    (high - low)). `top`: the scale stops at `high` (values above it read as `high`); False
    leaves them as they are (ADEM's open-ended linear score)."""
    x = np.asarray(x, dtype=np.float64)
    span = float(high) - float(low)
    if not span > 0:
        raise ValueError(f"an empty scale [{low}, {high}]")
    if top:
        x = np.minimum(x, float(high))
    z = (x - low) / span
    # from the knee up, x itself: the round trip through z could move its last bit
    return np.where(z >= KNEE, x, low + span * lift(z))


def without_field(signature: str) -> str:
    """`signature` (as `str(Signature)` prints it) without the squash entry: what it read
    before the map existed, so that a record made then can be compared with one made now."""
    from .base import without_fields

    return without_fields(signature, SIGNATURE_FIELD[0])
