"""Mean log-probability of a response's tokens under a causal LM, with or without a query.

Sequences are laid out as the model was trained on them. The `plain` frame (the default, and
the one `dialeval train lm` uses) is `<sep> query <sep> response` for context coherence (eq. 1:
only the response tokens are summed, the query's own probability cancels) and `<sep> response`
for fluency (eq. 3); `<sep>` is the tokenizer's end-of-text token, which a GPT-2 checkpoint
already knows. The `chat` frame wraps query and response in the tokenizer's chat turns (user,
then assistant), for instruction-tuned models whose pre-training saw dialogue only that way;
which frame a LoRA adapter uses is chosen on DailyDialog validation likelihood and stored with
it (docs/lm-lora.md). A batch holds sequences of one
length only: no padding, so a text's score never depends on which other texts share its
batch, and a run split into shards (or resumed, or on Dask) gives the same bits.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..rowwise import filled
from .loaded import LoadedLM

# Sequences per forward pass. A batch holds sequences of one length filled up with copies of its
# first (the fixed-shape rule, backbones/batching.py), so a small batch wastes least: at 32 the
# SmolLM2 default scored 60 USR-PC samples in 73.4 CPU s, at 4 in 11.2, the values bit for bit equal.
BATCH_SIZE = 4


def layout(lm: LoadedLM, query: list[int] | None, response: list[int]) -> tuple[list[int], int]:
    """(ids, index of the first response token), truncated to the model's window: the query
    loses its oldest tokens first, then the response its last ones. The frame's pieces are the
    separators (`plain`: `<sep> q <sep> r`) or the chat turns (`chat`) around q and r."""
    frame = lm.frame
    room = lm.max_len
    if query is None:
        head = frame.solo
        response = response[: max(1, room - len(head))]
        return head + response, len(head)
    head, mid = frame.head, frame.mid
    response = response[: max(1, room - len(head) - len(mid))]
    keep = max(0, room - len(head) - len(mid) - len(response))
    query = query[len(query) - keep:] if keep else []
    ids = head + query + mid + response
    return ids, len(head) + len(query) + len(mid)


def mean_logprobs(lm: LoadedLM, responses: Sequence[str], queries: Sequence[str] | None = None,
                  batch_size: int = BATCH_SIZE) -> np.ndarray:
    """(n,) mean natural-log probability per response token; NaN for an empty response."""
    resp_ids = [lm.encode(r) for r in responses]
    query_ids = [lm.encode(q) for q in queries] if queries is not None else [None] * len(responses)
    sums, counts = token_logprob_sums(lm, query_ids, resp_ids, batch_size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), math.nan)


def token_logprob_sums(lm: LoadedLM, queries: Sequence[list[int] | None], responses: Sequence[list[int]],
                       batch_size: int = BATCH_SIZE, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """Summed log-probability and count of the response tokens of each (query, response).
    `progress(done, total)` is called after each batch when given."""
    import torch

    n = len(responses)
    sums = np.zeros(n)
    counts = np.zeros(n, dtype=np.int64)
    laid = [layout(lm, q, r) if r else ([], 0) for q, r in zip(queries, responses)]
    order = sorted((i for i in range(n) if responses[i]), key=lambda i: len(laid[i][0]))
    batch_size = max(1, int(batch_size))
    batches: list[list[int]] = []
    for i in order:   # consecutive runs of one length, cut at batch_size
        if batches and len(batches[-1]) < batch_size and len(laid[batches[-1][0]][0]) == len(laid[i][0]):
            batches[-1].append(i)
        else:
            batches.append([i])
    done = 0
    with torch.inference_mode():
        for rows in batches:
            full = filled(rows, batch_size)     # one fixed batch shape (see metrics/rowwise.py)
            width = max(len(laid[i][0]) for i in rows)
            ids = torch.full((len(full), width), lm.sep_id, dtype=torch.long)
            mask = torch.zeros((len(full), width), dtype=torch.long)
            target = torch.zeros((len(full), width), dtype=torch.bool)
            for k, i in enumerate(full):
                seq, first = laid[i]
                ids[k, :len(seq)] = torch.tensor(seq)
                mask[k, :len(seq)] = 1
                target[k, first:len(seq)] = True
            logits = lm.model(input_ids=ids.to(lm.device), attention_mask=mask.to(lm.device)).logits
            logits = logits[:, :-1].float()
            nexts = ids[:, 1:].to(lm.device)
            picked = target[:, 1:].to(lm.device)
            logp = torch.log_softmax(logits, dim=-1).gather(-1, nexts.unsqueeze(-1)).squeeze(-1)
            logp = torch.where(picked, logp, torch.zeros_like(logp))
            sums[rows] = logp.sum(dim=1).double().cpu().numpy()[:len(rows)]
            counts[rows] = picked.sum(dim=1).cpu().numpy()[:len(rows)]
            done += len(rows)
            if progress is not None:
                progress(done, len(order))
    return sums, counts


def perplexity(lm: LoadedLM, pairs: Sequence[tuple[str, str]], batch_size: int = 32) -> float:
    """Per-token perplexity of (query, response) pairs: exp of the mean negative log-probability
    of every query and response token, log P(q) + log P(r | q) in the `<sep> q <sep> r` layout
    (the separators themselves are not counted). Tokens are this model's BPE tokens, so values
    of models with different tokenizers are not directly comparable."""
    fluency_q = [lm.encode(q) for q, _ in pairs]
    resp = [lm.encode(r) for _, r in pairs]
    # log P(q) and log P(r | q): their sum is the whole sequence's log-probability
    s1, c1 = token_logprob_sums(lm, [None] * len(pairs), fluency_q, batch_size)
    s2, c2 = token_logprob_sums(lm, fluency_q, resp, batch_size)
    total = float(s1.sum() + s2.sum())
    count = int(c1.sum() + c2.sum())
    return math.exp(-total / count) if count else math.nan
