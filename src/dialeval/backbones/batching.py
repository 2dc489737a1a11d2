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


def budget_batches(lengths: Sequence[int], max_rows: int, token_budget: int) -> list[list[int]]:
    """Indices grouped by equal length, shortest length first, in chunks of at most `max_rows`
    rows and at most `token_budget` positions (rows x length); a text longer than the budget
    gets a batch of its own. No padding and no filling: for models whose per-row results do not
    depend on the number of rows once a product has `MIN_POSITIONS` rows (the causal LMs, see
    `min_filled`), this is the fixed-shape rule without its copies."""
    max_rows, token_budget = max(1, int(max_rows)), max(1, int(token_budget))
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(int(n), []).append(i)
    out: list[list[int]] = []
    for n in sorted(groups):
        idx = groups[n]
        size = max(1, min(max_rows, token_budget // max(1, n)))
        out.extend(idx[s:s + size] for s in range(0, len(idx), size))
    return out


# A matrix product of fewer than 4 rows takes another BLAS kernel and rounds differently (a
# 3-token sequence alone moved SmolLM2's summed log-probability by 7e-4); from 4 rows on, every
# row's result was the same bits whatever the row count (sequences of 4 to 40 tokens, 1 to 8
# at a time). 8 keeps a margin.
MIN_POSITIONS = 8


def min_filled(rows: Sequence, length: int, min_positions: int = MIN_POSITIONS) -> list:
    """`rows` with copies of its first one added only while rows x length < `min_positions`:
    the few copies a very short sequence needs so that no product falls below that size."""
    rows = list(rows)
    need = -(-int(min_positions) // max(1, int(length)))
    return rows + rows[:1] * max(0, need - len(rows))
