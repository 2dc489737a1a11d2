"""Batching that makes a text's vector a function of that text alone, with no wasted rows.

Padding a batch to its longest text moves float32 results by ~1e-7, and the CPU kernels round a
very short sequence alone differently from the same sequence among others ("hi" alone differed by
2.7e-7 from "hi" in a batch of eight; DSTC6 through Dask moved 3 of 40,000 sent_cosine values). A
sharded, resumed or distributed run must give the same bits as a plain one, so texts are batched
only with texts of the same token length (no padding at all) and batches come in order of length.

Copies. Until issue 33 every encoder batch was filled to its batch size with copies of its first
text (`filled`): a text whose length nobody shares was computed 16 times (sent_cosine) or 4 times
(BERTScore). Encoders now take `pass_rows`: copies only while a batch has fewer than
`ENCODER_MIN_POSITIONS` (16) positions, rows x length. Measured on a 2-core AVX-512 CPU (MKL,
torch 2.13, fp32), random token ids of length L, row 0 of an r-row batch (r = 1..8, 12) against
the same row among 16, L = 2..40, 64, 100, 128, 200, 256, 384, 512: all-MiniLM-L6-v2 (1 and 2
threads) differs only for r = 1 at L = 2, 3; all-mpnet-base-v2 (1 thread) only for r = 1 at
L = 2..11; every r >= 2 gave the same bits at every L (MiniLM in bf16, L <= 64: no difference).
So 16 positions (a single row of up to 15 tokens gets copies) covers both with a margin. On 400
real texts (DailyDialog, FED, USR-TC, demo, one-word replies), MiniLM, one thread, each text
alone equalled itself in every batch of 1..32 rows of its length and under the old fixed fill
(4 and 16), for sent_cosine's pipeline, MME's mean+max features, BERTScore's token states and a
tuned top (29,654 comparisons, with copies up to 8 positions); the only ones that differed (8
per reader) were the control without copies: single rows of 2 or 3 tokens. On 250 such texts
MPNet's pipeline differed only for single rows of 8-11 tokens (copies up to 8 positions then),
which 16 now covers. tests/test_backbone_fill.py keeps the property (MiniLM; MPNet's short
rows), benchmarks/bench_backbone_fill.py times both rules and compares `dialeval score` outputs
byte for byte. Off the CPU nothing was measured, so other devices keep the fixed fill. The
causal LMs use `budget_batches`/`min_filled` with their own `MIN_POSITIONS` (8, SmolLM2).
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


# Encoders (BERT-style, measured with MiniLM-L6 and MPNet-base; see the module docstring): a row
# alone rounds differently from the same row among others up to 3 tokens (MiniLM) or 11 (MPNet),
# while every batch of 2 rows or more gave the same bits as any larger one. 16 keeps a margin.
ENCODER_MIN_POSITIONS = 16

# The previous rule (every chunk `filled` to its batch size), kept switchable for the benchmark
# that times both and the test that compares their bits; never set by the package itself.
FIXED_FILL = False


def pass_rows(rows: Sequence, length: int, size: int, device: str = "cpu") -> list:
    """The rows one forward pass of an encoder runs for the chunk `rows` (texts of one token
    `length`, at most `size` of them, from `length_batches`): on the CPU `min_filled(rows,
    length, ENCODER_MIN_POSITIONS)`; on another device (not measured: a GPU library may pick its
    kernel, and the order of its sums, from the whole shape) and with `FIXED_FILL`, the old
    `filled(rows, size)`. Only the first len(rows) results are kept."""
    if FIXED_FILL or str(device) != "cpu":
        return filled(rows, size)
    return min_filled(rows, length, ENCODER_MIN_POSITIONS)
