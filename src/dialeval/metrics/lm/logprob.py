"""Mean log-probability of a response's tokens under a causal LM, with or without a query.

Sequences are laid out as the model was trained on them. The `plain` frame (the default, and
the one `dialeval train lm` uses) is `<sep> query <sep> response` for context coherence (eq. 1:
only the response tokens are summed, the query's own probability cancels) and `<sep> response`
for fluency (eq. 3); `<sep>` is the tokenizer's end-of-text token, which a GPT-2 checkpoint
already knows. The `chat` frame wraps query and response in the tokenizer's chat turns (user,
then assistant), for instruction-tuned models whose pre-training saw dialogue only that way;
which frame a LoRA adapter uses is chosen on DailyDialog validation likelihood and stored with
it (docs/lm-lora.md).

Batching (docs/speed.md): sequences of one token length only, never padded (padding moved a
row's summed log-probability by up to 3e-5 with the SmolLM2 default), at most `batch_size` rows
(`--lm-batch-size`) and `token_budget` positions (`--lm-token-budget`, rows x length) per
forward pass; a text longer than the budget runs alone. Batches are not filled up with copies,
so every text is computed once: a product of 4 or more rows gives each row the same bits whatever
the row count, so a text's value does not depend on the batch it shares, and only a batch of
fewer than `MIN_POSITIONS` positions (a very short sequence) gets the copies that reach that
size. The output layer runs apart from the decoder, on the response positions only and at most
`HEAD_ROWS` positions at a time, so a long text never holds its whole (length x vocabulary)
logits; that split is used only where it gives the full forward pass's bits (checked once per
loaded model), else the full forward pass runs. A run split into shards (or
resumed, or on Dask) gives the same bits.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ...backbones.batching import MIN_POSITIONS, budget_batches, min_filled
from .loaded import LoadedLM

# Rows per forward pass at most (`--lm-batch-size`) and positions (rows x length) at most
# (`--lm-token-budget`). With no copies a larger batch wastes nothing; the budget bounds memory.
BATCH_SIZE = 32
TOKEN_BUDGET = 2048


class LMOptions:
    """The options every metric over a causal LM takes (lm_*, deep_fm, deep_amfm), declared once:
    the flag generator reads the option blocks of a metric class and of all its bases.

    Options:
        lm_model: causal-LM folder, GGUF file (or a folder holding one) or LoRA adapter folder (`dialeval train lm`)
        lm_batch_size: sequences per forward pass at most (default 32; a batch holds sequences of
            one token length, each computed once)
        lm_token_budget: token positions per forward pass at most, rows x length (default 2048):
            bounds memory; a longer text runs alone
        lm_precision: weight dtype, fp32 (default) or bf16 (faster on CPUs with AVX512-BF16;
            named in the signature)
        lm_device: torch device (default cpu)
        lm_layout: sequence frame, auto (the model's own: an adapter's stored one, else plain), plain or chat
    """
# Positions per output-layer product: (HEAD_ROWS x vocabulary) logits at a time.
HEAD_ROWS = 256


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
                  batch_size: int = BATCH_SIZE, token_budget: int = TOKEN_BUDGET) -> np.ndarray:
    """(n,) mean natural-log probability per response token; NaN for an empty response."""
    resp_ids = [lm.encode(r) for r in responses]
    query_ids = [lm.encode(q) for q in queries] if queries is not None else [None] * len(responses)
    sums, counts = token_logprob_sums(lm, query_ids, resp_ids, batch_size, token_budget=token_budget)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), math.nan)


def _parts(model):
    """(decoder, output layer) of a transformers causal LM, or None where they cannot be told apart."""
    try:
        head = model.get_output_embeddings()
    except Exception:  # noqa: BLE001  (a model without the method, or one that raises)
        return None
    prefix = getattr(model, "base_model_prefix", None)
    decoder = getattr(model, prefix, None) if prefix else None
    if head is None or decoder is None or decoder is model or not callable(decoder):
        return None
    return decoder, head


def _forward_split(parts, ids, mask, picked):
    """(P,) log-probabilities of the picked next tokens: the decoder once, then the output layer
    and log-softmax over the picked positions only, HEAD_ROWS (balanced) at a time."""
    import torch

    decoder, head = parts
    hidden = decoder(input_ids=ids, attention_mask=mask, use_cache=False)[0]
    chosen = hidden[:, :-1][picked]
    nexts = ids[:, 1:][picked]
    n = chosen.shape[0]
    if n < MIN_POSITIONS:         # no product below MIN_POSITIONS rows (backbones/batching.py)
        chosen = torch.cat([chosen, chosen[:1].expand(MIN_POSITIONS - n, -1)])
        nexts = torch.cat([nexts, nexts[:1].expand(MIN_POSITIONS - n)])
    pieces = -(-chosen.shape[0] // HEAD_ROWS)
    step = -(-chosen.shape[0] // pieces)
    out = []
    for s in range(0, chosen.shape[0], step):
        logits = head(chosen[s:s + step]).float()
        logp = torch.log_softmax(logits, dim=-1)
        del logits
        out.append(logp.gather(-1, nexts[s:s + step].unsqueeze(-1)).squeeze(-1))
        del logp
    return torch.cat(out)[:n]


def _forward_full(model, ids, mask, picked):
    """The same numbers from the model's own forward pass (every position's logits at once)."""
    import torch

    logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1)
    del logits
    return logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)[picked]


def split_ok(lm: LoadedLM) -> bool:
    """Whether the decoder + output layer apart give this model's forward pass to the bit (no
    logit scaling or soft-capping after the output layer), checked once per loaded model."""
    if lm._split is None:
        import torch

        parts = _parts(lm.model)
        ok = False
        if parts is not None:
            seq, first = layout(lm, None, lm.encode("well , i think that would be fine , thank you ."))
            ids = torch.tensor([seq], device=lm.device)
            mask = torch.ones_like(ids)
            picked = torch.zeros((1, len(seq) - 1), dtype=torch.bool, device=lm.device)
            picked[0, first - 1:] = True
            try:
                with torch.inference_mode():
                    ok = torch.equal(_forward_split(parts, ids, mask, picked),
                                     _forward_full(lm.model, ids, mask, picked))
            except Exception:  # noqa: BLE001  (an architecture whose decoder takes other arguments)
                ok = False
        lm._split = bool(ok)
    return lm._split


def token_logprob_sums(lm: LoadedLM, queries: Sequence[list[int] | None], responses: Sequence[list[int]],
                       batch_size: int = BATCH_SIZE, progress=None,
                       token_budget: int = TOKEN_BUDGET) -> tuple[np.ndarray, np.ndarray]:
    """Summed log-probability and count of the response tokens of each (query, response).
    Batches: one sequence length each, at most `batch_size` rows and `token_budget` positions
    (a longer sequence alone). `progress(done, total)` is called after each batch when given."""
    import torch

    n = len(responses)
    sums = np.zeros(n)
    counts = np.zeros(n, dtype=np.int64)
    laid = [layout(lm, q, r) if r else ([], 0) for q, r in zip(queries, responses)]
    live = [i for i in range(n) if responses[i]]
    batches = [[live[k] for k in rows]
               for rows in budget_batches([len(laid[i][0]) for i in live], batch_size, token_budget)]
    parts = _parts(lm.model) if split_ok(lm) else None
    done = 0
    with torch.inference_mode():
        for rows in batches:
            width = len(laid[rows[0]][0])
            full = min_filled(rows, width)    # copies only for a sequence under MIN_POSITIONS tokens
            ids = torch.tensor([laid[i][0] for i in full], dtype=torch.long)
            mask = torch.ones_like(ids)
            target = torch.zeros((len(full), width), dtype=torch.bool)
            for k, i in enumerate(rows):      # the copies' tokens are never picked
                target[k, laid[i][1]:] = True
            ids, mask = ids.to(lm.device), mask.to(lm.device)
            picked = target[:, 1:].to(lm.device)
            if parts is not None:
                logp = _forward_split(parts, ids, mask, picked)
            else:
                logp = _forward_full(lm.model, ids, mask, picked)
            table = torch.zeros(picked.shape, dtype=logp.dtype, device=logp.device)
            table[picked] = logp              # the row sums as a full forward pass sums them
            sums[rows] = table.sum(dim=1).double().cpu().numpy()[:len(rows)]
            counts[rows] = picked.sum(dim=1).cpu().numpy()[:len(rows)]
            done += len(rows)
            if progress is not None:
                progress(done, len(live))
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
