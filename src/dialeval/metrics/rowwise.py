"""Matrix products whose every row depends on that row alone, to the bit.

BLAS chooses its kernel, and with it the order in which a dot product is summed, from the
shape of the whole product: a row multiplied alone (M = 1) or in a batch of three can round
differently from the same row in a batch of a thousand. A metric that scores a sample with
`features @ weights` would then give a sample a value that depends on the shard (or chunk, or
Dask partition) it was scored in, and a resumed or distributed run would not be byte-identical
to a plain one. numpy's own einsum loop sums each output element in one fixed order whatever
the number of rows; it is a few times slower than BLAS, which does not matter for the small
heads and projections that use it.
"""

from __future__ import annotations

import numpy as np

from ..backbones.batching import filled  # noqa: F401  (one fixed batch shape: see backbones/batching.py)


def rows_times(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a @ b` for 2-D arrays, each row of the result a function of that row of `a` only."""
    return np.einsum("ij,jk->ik", np.ascontiguousarray(a), np.ascontiguousarray(b))
