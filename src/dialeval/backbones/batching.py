"""Fixed-shape batching: the rule that makes a text's vector a function of that text alone.

Padding a batch to its longest text moves float32 results by ~1e-7, and MKL rounds a product
of fewer than 4 rows differently from the same rows among more ("hi" alone differed by 2.7e-7
from "hi" in a batch of eight; DSTC6 through Dask moved 3 of 40,000 sent_cosine values). A
sharded, resumed or distributed run must give the same bits as a plain one, so texts are
batched only with texts of the same token length (no padding at all), batches come in order of
length, and every batch is filled to the same row count with copies of its first text (the
copies have the same length; only the first results are kept).
"""

from __future__ import annotations

from typing import Sequence


def length_batches(lengths: Sequence[int], size: int) -> list[list[int]]:
    """Indices grouped by equal length, shortest length first, in chunks of at most `size`
    (input order kept inside a length)."""
    size = max(1, int(size))
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(int(n), []).append(i)
    return [idx[s:s + size] for n in sorted(groups) for idx in [groups[n]] for s in range(0, len(idx), size)]


def filled(rows: Sequence, size: int) -> list:
    """`rows` padded to exactly `size` entries with copies of its first one (see the module
    docstring: one fixed batch shape)."""
    rows = list(rows)
    return rows + rows[:1] * (size - len(rows))
