"""Pooling token states into one vector per text, chosen by name.

"mean" is sentence-transformers' mean pooling (the mask sum clamped at 1e-9, the same torch
operations, so the same bits); "max" takes each dimension's maximum over the real tokens;
"mean+max" concatenates both (MME's features: the max keeps word-order and repetition traces
the mean smooths away); "cls" takes the first position. "model" is not computed here: it means
the folder's own sentence-transformers pipeline (see `Backbone.encode`).
"""

from __future__ import annotations

POOLINGS = ("model", "mean", "max", "mean+max", "cls")


def pool(hidden, attention_mask, how: str = "mean"):
    """(batch, dim) or (batch, 2*dim) torch tensor from (batch, length, dim) states."""
    import torch

    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    if how == "cls":
        return hidden[:, 0]
    if how == "mean":
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    if how == "max":
        return hidden.masked_fill(mask == 0, -1e4).max(1).values
    if how == "mean+max":
        return torch.cat([pool(hidden, attention_mask, "mean"), pool(hidden, attention_mask, "max")], dim=1)
    raise ValueError(f"pooling {how!r}: choose from {', '.join(POOLINGS[1:])}")


def normalize(vectors):
    import torch

    return torch.nn.functional.normalize(vectors, p=2, dim=1)
