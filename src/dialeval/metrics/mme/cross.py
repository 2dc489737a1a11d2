"""RM as a cross-encoder (`encoder_mode="cross"`): the context and the response read together by
one MiniLM whose six transformer layers are all tuned on next-utterance prediction.

Why a third mode beside `frozen` and `finetune`: those encode the context and the response
apart and compare two pooled vectors, so a reply that reuses the context's words in any order
looks as relevant as the true one (a shuffled reply, or the context's own words, score like the
original), and only the pooled summary of each text reaches the head. Reading both texts in one
pass lets attention compare them word by word and see word order, which is what USR's and
USL-H's relevance models do with whole fine-tuned encoders. The price: every (context,
response) pair is its own pass, so nothing is shared between pairs, and the stored artifact
holds all six layers (about 21 MB as float16, under the installed MiniLM's tensor names; the
embeddings stay the base model's own and are not stored).

Input: `[CLS] context [SEP] response [SEP]`, the response cut to its first MAX_RESPONSE_TOKENS
word pieces and the context to its last pieces that fit MAX_PAIR_TOKENS (the turns nearest the
response matter most). Score: a linear head over the mean of the last layer's token states,
`sigmoid` of it the probability that the response follows.

Training (`fit_cross`): the rows the caller makes (positives, random and hard negatives),
binary cross-entropy, from the installed MiniLM or, to continue an earlier training
(`init`), from its stored layers and head, the shared tuning loop (`backbones.tuning.tune_top_layers`: AdamW, linear
warm-up and decay, gradient clipping, the best held-out state kept, the start included), rows
of similar length batched together so that padding stays small. bfloat16 autocast on the CPU
while training (measured 1.4x faster than float32 on this machine's AVX-512 BF16 cores); the
stored weights are float16, and every score, the held-out ones included, is computed from the
stored weights in float32, so a loaded folder scores what the trainer measured.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ...backbones.layers import embed, encoder_layers, run_layers
from ...backbones.pooling import pool
from ...backbones.runtime import apply_thread_policy

MAX_PAIR_TOKENS = 128
MAX_RESPONSE_TOKENS = 64
CONTEXT_TURNS = 3
BATCH = 32
BLANK = "."
VALID_SHARE = 0.05
CHECKS_PER_EPOCH = 4


def pair_ids(tokenizer, contexts: Sequence[str], responses: Sequence[str]) -> list[list[int]]:
    """Word-piece ids of `[CLS] context [SEP] response [SEP]` per pair, cut as the module says."""
    c_ids = tokenizer(list(contexts), add_special_tokens=False)["input_ids"] if contexts else []
    r_ids = tokenizer([r if r.strip() else BLANK for r in responses], add_special_tokens=False)["input_ids"] \
        if responses else []
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    out = []
    for c, r in zip(c_ids, r_ids):
        r = r[:MAX_RESPONSE_TOKENS]
        room = MAX_PAIR_TOKENS - 3 - len(r)
        c = c[len(c) - room:] if 0 < room < len(c) else c
        out.append([cls] + c + [sep] + r + [sep])
    return out


def _padded(ids: Sequence[Sequence[int]], pad_id: int, device: str = "cpu"):
    import torch

    width = max(len(x) for x in ids)
    inp = torch.full((len(ids), width), pad_id, dtype=torch.long)
    att = torch.zeros((len(ids), width), dtype=torch.long)
    for r, x in enumerate(ids):
        inp[r, :len(x)] = torch.tensor(x, dtype=torch.long)
        att[r, :len(x)] = 1
    return inp.to(device), att.to(device)


def _logits(base, layers, head_w, head_b, inp, att, pool_fp32: bool = False):
    """Head logits of one padded batch through `layers` (the tuned ones) over `base`'s embeddings.
    `pool_fp32`: the states pooled in float32 (scoring a bf16 copy; training's autocast keeps its
    own dtypes, so the trained bits stay as they were)."""
    import torch

    with torch.no_grad():
        hidden = embed(base, inp)
    states = run_layers(base, layers, hidden, att)
    return pool(states.float() if pool_fp32 else states, att, "mean") @ head_w + head_b


def _length_buckets(lengths: Sequence[int], batch: int, rng: random.Random | None) -> list[list[int]]:
    """Batches of rows of similar length: sorted by length (ties in a seeded order when `rng`),
    cut into batches, the batches shuffled. Without `rng`: sorted order, for scoring."""
    order = list(range(len(lengths)))
    if rng is not None:
        rng.shuffle(order)
    order.sort(key=lambda i: lengths[i])
    batches = [order[k:k + batch] for k in range(0, len(order), batch)]
    if rng is not None:
        rng.shuffle(batches)
    return batches


class CrossScorer:
    """The base MiniLM with its six layers replaced by tuned ones and a linear head: `logits()`
    of (context, response) pairs in float32."""

    def __init__(self, backbone, layers: Mapping[int, Mapping[str, Any]], head: Mapping[str, np.ndarray],
                 batch_size: int = BATCH, weights_id: str = ""):
        from ...backbones.tuning import scoring_layers

        self.backbone, self.base, self.tokenizer = backbone, backbone.model, backbone.tokenizer
        n = len(encoder_layers(self.base))
        if sorted(layers) != list(range(n)):
            from ...errors import DialevalError

            raise DialevalError(f"a cross-encoder RM tunes all {n} layers; got layers {sorted(layers)}")
        self.layers = scoring_layers(self.base, layers)
        self.head = {k: np.asarray(v, dtype=np.float32) for k, v in head.items()}
        self.batch_size = max(1, int(batch_size))
        self.weights_id = weights_id

    def moved(self, backbone) -> "CrossScorer":
        """This scorer over another load of the base (`--mme-device`, `--mme-precision`): the
        tuned layers take that backbone's device and dtype; the head stays float32."""
        layers = {k: layer.state_dict() for k, layer in enumerate(self.layers)}
        return CrossScorer(backbone, layers, self.head, self.batch_size, self.weights_id)

    def logits(self, contexts: Sequence[str], responses: Sequence[str]) -> np.ndarray:
        """One pair per forward pass (and the backbones' copies of a very short one,
        `batching.pass_rows`), so a pair's score does not depend on the pairs scored beside it
        (a shard of a run gives the whole run's bits); each distinct pair is run once. Pairs of
        one length used to share passes of up to `batch_size` rows, but at the 128-token cap,
        where many pairs meet, a row's last bits moved with the row count (2.5e-8 on usr-tc's
        training negatives, 2 rows against 32); alone costs 5-10% more CPU time there."""
        import torch

        from ...backbones import batching
        from ...backbones.batching import length_batches

        apply_thread_policy()
        keys = list(dict.fromkeys(zip(contexts, responses)))
        ids = pair_ids(self.tokenizer, [c for c, _ in keys], [r for _, r in keys])
        got = np.zeros(len(ids), dtype=np.float64)
        device = self.backbone.device
        w = torch.from_numpy(self.head["w"]).to(device)
        b = torch.from_numpy(self.head["b"]).to(device)
        with torch.inference_mode():
            for rows in length_batches([len(x) for x in ids], 1):
                full = batching.pass_rows(rows, len(ids[rows[0]]), self.batch_size, device)
                inp = torch.tensor([ids[i] for i in full], dtype=torch.long, device=device)
                z = _logits(self.base, self.layers, w, b, inp, torch.ones_like(inp), pool_fp32=True)
                got[rows] = z[:len(rows)].double().cpu().numpy()
        where = {k: i for i, k in enumerate(keys)}
        return np.array([got[where[k]] for k in zip(contexts, responses)], dtype=np.float64)


def half_round(tensors: Mapping[str, Any]) -> dict[str, Any]:
    """The tensors as they are stored (float16) and read back (float32)."""
    import torch

    return {k: v.detach().to(torch.float16).to(torch.float32).contiguous() for k, v in tensors.items()}


def fit_cross(backbone, contexts: Sequence[str], responses: Sequence[str], labels: np.ndarray, *,
              seed: int = 0, lr: float = 3e-5, epochs: int = 1, deadline: float | None = None,
              say: Callable[[str], None] | None = None, init: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
              first_epoch: int = 0, checkpoint=None) -> tuple[dict[str, Any], dict[str, np.ndarray], dict]:
    """Tune every layer of `backbone`'s encoder and a linear head on the rows; returns the stored
    (float16-rounded) layer tensors, the head and a record. A seeded VALID_SHARE of the rows is
    held out; the kept state is the one with the lowest held-out loss among the checks.

    `init` (stored layer tensors, head) continues an earlier training instead of starting from
    the installed layers and a zero head; `first_epoch` numbers its epochs after the earlier
    ones, so that the continued epochs see new batch orders while the same seed and rows keep
    the same held-out split (rows it held out stay held out)."""
    import copy

    import torch

    from ...backbones.tuning import by_layer, layer_tensors, tune_top_layers

    apply_thread_policy()
    started = time.monotonic()
    say = say or (lambda m: None)
    torch.manual_seed(seed)
    rng = random.Random(f"{seed}:cross")
    base, tok = backbone.model, backbone.tokenizer
    dev = backbone.device                     # a trainer's --device: everything trains there
    autocast = str(dev).split(":")[0]          # bf16 autocast on that device type
    ids = pair_ids(tok, contexts, responses)
    y = torch.tensor(np.asarray(labels, dtype=np.float32), device=dev)
    order = list(range(len(ids)))
    rng.shuffle(order)
    n_valid = max(1, int(len(ids) * VALID_SHARE))
    valid, train = sorted(order[:n_valid]), order[n_valid:]
    top = copy.deepcopy(encoder_layers(base))
    for p in top.parameters():
        p.requires_grad_(True)
    top.train()
    dim = base.config.hidden_size
    head_w = torch.nn.Parameter(torch.zeros(dim))
    head_b = torch.nn.Parameter(torch.zeros(()))
    if init is not None:
        layers, head = init
        top.load_state_dict({f"{i}.{k}": torch.as_tensor(v, dtype=torch.float32)
                             for i, d in by_layer(layers).items() for k, v in d.items()})
        head_w.data.copy_(torch.as_tensor(np.asarray(head["w"], dtype=np.float32)).reshape(dim))
        head_b.data.copy_(torch.as_tensor(np.asarray(head["b"], dtype=np.float32)).reshape(()))
    if dev != "cpu":
        # moved only off the CPU: on it, the two-thread training's last bits move with changes
        # as small as this one (measured), and the shipped folder's bits are these lines'
        head_w = torch.nn.Parameter(head_w.detach().to(dev))
        head_b = torch.nn.Parameter(head_b.detach().to(dev))
    pad = tok.pad_token_id or 0
    bce = torch.nn.functional.binary_cross_entropy_with_logits

    def loss(rows):
        inp, att = _padded([ids[train[i]] for i in rows], pad, dev)
        with torch.autocast(autocast, dtype=torch.bfloat16):
            z = _logits(base, top, head_w, head_b, inp, att)
        return bce(z.float(), y[[train[i] for i in rows]])

    def held_out_loss() -> float:
        top.eval()
        total = 0.0
        with torch.inference_mode():
            for rows in _length_buckets([len(ids[i]) for i in valid], 64, None):
                inp, att = _padded([ids[valid[i]] for i in rows], pad, dev)
                with torch.autocast(autocast, dtype=torch.bfloat16):
                    z = _logits(base, top, head_w, head_b, inp, att)
                total += float(bce(z.float(), y[[valid[i] for i in rows]], reduction="sum"))
        top.train()
        return total / len(valid)

    train_lengths = [len(ids[i]) for i in train]

    def epoch_batches(epoch: int) -> list:
        return _length_buckets(train_lengths, BATCH, random.Random(f"{seed}:cross:{first_epoch + epoch}"))

    def snapshot():
        return (copy.deepcopy(top.state_dict()), head_w.detach().clone(), head_b.detach().clone())

    def on_check(epoch, k, n, score, total, result):
        say(f"[mme] rm cross: epoch {epoch} batch {k}/{n}: train loss {total / max(k, 1):.4f}, "
            f"held-out {score:.4f} ({time.monotonic() - started:.0f} s)")

    planned = epochs * math.ceil(len(train) / BATCH)
    start = (held_out_loss(), None)
    result = tune_top_layers(top, loss, epoch_batches, evaluate=held_out_loss, better=lambda a, b: a < b,
                             snapshot=snapshot, start=start, epochs=epochs, lr=lr, planned_steps=planned,
                             extra_groups=[{"params": [head_w, head_b], "lr": lr * 100, "weight_decay": 0.0}],
                             check_after=lambda n: {max(1, round(n * (j + 1) / CHECKS_PER_EPOCH))
                                                    for j in range(CHECKS_PER_EPOCH)},
                             deadline=deadline, on_check=on_check, checkpoint=checkpoint, say=say,
                             label="[mme] rm cross")
    if result.best_state is not None:
        state, w, b = result.best_state
        top.load_state_dict(state)
        head_w.data.copy_(w)
        head_b.data.copy_(b)
    top.eval()
    tensors = half_round(layer_tensors(top, 0))
    head = {"w": head_w.detach().to(torch.float16).float().cpu().numpy(),
            "b": np.asarray(head_b.detach().to(torch.float16).float().cpu().numpy(), dtype=np.float32)}
    info = {"rows": len(ids), "train_rows": len(train), "valid_rows": len(valid),
            "start_valid_loss": round(float(start[0]), 5), "valid_loss": round(float(result.best_score), 5),
            "epochs_planned": epochs, "steps": result.steps, "stopped_by_deadline": result.stopped,
            "kept_position_epochs": round(result.best_position, 3),
            "checks": [[round(p, 3), round(s, 5)] for p, s in result.checks],
            "train_seconds": round(time.monotonic() - started, 1)}
    return tensors, head, {"valid": valid, **info}
