"""SM, specificity: how surprising the response's words are to a masked LM, each token masked
in turn (pseudo-log-likelihood, as USL-H scores specificity).

No pretrained MLM head exists for the frozen MiniLM, and masking every token in turn through
MiniLM costs one 6-layer forward pass per token, which this CPU cannot afford on rated sets
(about 10 sentences a second under load). So SM trains its own small masked LM on DailyDialog
train: a WordPiece tokenizer (`tokenizers`) and a tiny `BertForMaskedLM` (2 layers, 128 wide).
Stored as `tokenizer.json` + `mlm.safetensors`; nothing pickled.

With -log p_i the surprisal of token i when it alone is masked, and n tokens:
- `nll` = sum_i -log p_i            (total surprisal: long, rare-worded responses score high)
- `nce` = (1/n) sum_i -log p_i      (per-token cross-entropy of the response)
- `ppl` = exp(nce)                  (pseudo-perplexity)
Higher means more specific for all three. `ppl` is a monotone function of `nce`, so their rank
correlations are equal; they differ only in scale, which matters to a linear composition.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any, Mapping, Sequence

import numpy as np

from ...errors import DialevalError
from ...models.estimator import Estimator
from .normalise import apply_range, fit_range

VARIANTS = ("nll", "nce", "ppl")
MAX_TOKENS = 40


def _bert_config(vocab: int, hidden: int, layers: int, heads: int):
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                      num_attention_heads=heads, intermediate_size=hidden * 2,
                      max_position_embeddings=MAX_TOKENS + 2, type_vocab_size=1)


class SpecificityModel(Estimator):
    kind = "mme-sm"

    def __init__(self, vocab_size: int = 4000, hidden: int = 128, layers: int = 2, heads: int = 2,
                 max_sentences: int = 30000, epochs: int = 4, batch_size: int = 64, lr: float = 1e-3,
                 mask_prob: float = 0.15, seed: int = 0):
        self.vocab_size = vocab_size
        self.hidden = hidden
        self.layers = layers
        self.heads = heads
        self.max_sentences = max_sentences
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.mask_prob = mask_prob
        self.seed = seed

    # -- training ---------------------------------------------------------------------------
    def fit(self, sentences: Sequence[str], deadline: float | None = None) -> "SpecificityModel":
        import torch

        from ...backbones import apply_thread_policy

        apply_thread_policy()
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
        from transformers import BertForMaskedLM

        started = time.monotonic()
        rng = random.Random(self.seed)
        pool = [s for s in sentences if s.strip()]
        rng.shuffle(pool)
        n_held = min(1000, max(1, len(pool) // 10))
        held, train = pool[:n_held], pool[n_held:n_held + self.max_sentences]
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tok.train_from_iterator(train, trainers.WordPieceTrainer(vocab_size=self.vocab_size,
                                                                 special_tokens=specials, show_progress=False))
        # The trainer numbers the alphabet in the order of a Rust hash map, which differs from
        # process to process; WordPiece reads only which pieces exist, so renumbering them in a
        # fixed order (specials, then sorted) makes a rebuild give the same ids and the same model.
        pieces = tok.get_vocab()
        ordered = specials + sorted(p for p in pieces if p not in specials)
        tok.model = models.WordPiece({p: i for i, p in enumerate(ordered)}, unk_token="[UNK]")
        self.tokenizer_ = tok
        torch.manual_seed(self.seed)
        model = BertForMaskedLM(_bert_config(tok.get_vocab_size(), self.hidden, self.layers, self.heads))
        ids = [self._ids(s) for s in train]
        ids = [x for x in ids if x]
        opt = torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=0.01)
        gen = torch.Generator().manual_seed(self.seed)
        special = {tok.token_to_id(t) for t in specials}
        steps, losses, epoch = 0, [], 0
        stop = False
        for epoch in range(1, self.epochs + 1):
            model.train()
            order = torch.randperm(len(ids), generator=gen).tolist()
            for start in range(0, len(order), self.batch_size):
                batch = [ids[i] for i in order[start:start + self.batch_size]]
                inp, att, labels = self._mask_batch(batch, gen, special)
                out = model(input_ids=inp, attention_mask=att, labels=labels)
                opt.zero_grad()
                out.loss.backward()
                opt.step()
                steps += 1
                losses.append(float(out.loss.detach()))
                if deadline is not None and time.monotonic() > deadline:
                    stop = True
                    break
            if stop:
                break
        model.eval()
        self.model_ = model
        raw = self.raw_all(held)
        self.ranges_ = {v: list(fit_range(raw[v])) for v in VARIANTS}
        self.info_ = {"train_sentences": len(ids), "held_out_sentences": len(held), "epochs_run": epoch,
                      "steps": steps, "final_train_loss": round(float(np.mean(losses[-50:])), 4) if losses else None,
                      "held_out_mean_nce": round(float(np.nanmean(raw["nce"])), 4),
                      "vocab": tok.get_vocab_size(), "stopped_by_deadline": stop,
                      "train_seconds": round(time.monotonic() - started, 1)}
        return self

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer_.encode(text, add_special_tokens=False).ids[:MAX_TOKENS]

    def _mask_batch(self, batch: list[list[int]], gen, special: set[int]):
        import torch

        tok = self.tokenizer_
        cls, sep, pad, mask = (tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]"))
        width = max(len(b) for b in batch) + 2
        inp = torch.full((len(batch), width), pad, dtype=torch.long)
        att = torch.zeros_like(inp)
        for r, b in enumerate(batch):
            seq = [cls] + b + [sep]
            inp[r, :len(seq)] = torch.tensor(seq)
            att[r, :len(seq)] = 1
        labels = inp.clone()
        candidates = att.bool() & (inp != cls) & (inp != sep)
        chosen = (torch.rand(inp.shape, generator=gen) < self.mask_prob) & candidates
        # at least one masked token per sentence
        first = candidates & ~chosen.any(1, keepdim=True) & (torch.arange(width) == 1)
        chosen |= first
        labels[~chosen] = -100
        roll = torch.rand(inp.shape, generator=gen)
        inp = inp.clone()
        inp[chosen & (roll < 0.8)] = mask
        rand_tok = torch.randint(len(special), tok.get_vocab_size(), inp.shape, generator=gen)
        swap = chosen & (roll >= 0.8) & (roll < 0.9)
        inp[swap] = rand_tok[swap]
        return inp, att, labels

    # -- scoring ----------------------------------------------------------------------------
    def surprisals(self, texts: Sequence[str], batch_size: int = 512, device: str = "cpu",
                   precision: str = "fp32") -> list[np.ndarray]:
        """-log p of each token of each text with that token alone masked. `device` and
        `precision` (`--mme-device`, `--mme-precision`): where and in which weight dtype the masked
        LM runs (other than fp32 on the cpu, a copy of it); the log-softmax is fp32 always."""
        import torch

        from ...backbones import apply_thread_policy

        apply_thread_policy()

        self.check_fitted()
        tok = self.tokenizer_
        cls, sep, pad, mask = (tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]"))
        seqs = [self._ids(t) for t in texts]
        rows = [(i, p) for i, s in enumerate(seqs) for p in range(len(s))]
        out = [np.zeros(len(s)) for s in seqs]
        rows.sort(key=lambda r: len(seqs[r[0]]))
        model = self._model_on(device, precision)
        with torch.inference_mode():
            for start in range(0, len(rows), batch_size):
                chunk = rows[start:start + batch_size]
                width = max(len(seqs[i]) for i, _ in chunk) + 2
                inp = torch.full((len(chunk), width), pad, dtype=torch.long)
                att = torch.zeros_like(inp)
                for r, (i, p) in enumerate(chunk):
                    seq = [cls] + seqs[i] + [sep]
                    seq[p + 1] = mask
                    inp[r, :len(seq)] = torch.tensor(seq)
                    att[r, :len(seq)] = 1
                logits = model(input_ids=inp.to(device), attention_mask=att.to(device)).logits.float().cpu()
                pos = torch.tensor([p + 1 for _, p in chunk])
                target = torch.tensor([seqs[i][p] for i, p in chunk])
                logp = torch.log_softmax(logits[torch.arange(len(chunk)), pos], dim=-1)
                nll = -logp[torch.arange(len(chunk)), target]
                for (i, p), v in zip(chunk, nll.tolist()):
                    out[i][p] = v
        return out

    def _model_on(self, device: str, precision: str = "fp32"):
        """The masked LM on `device` in `precision`: itself for fp32 on the cpu, else a copy kept
        for the next call."""
        if device == "cpu" and precision == "fp32":
            return self.model_
        copies = self.__dict__.setdefault("_model_copies", {})
        if (device, precision) not in copies:
            import copy

            import torch

            from ...backbones.runtime import PRECISIONS

            copies[device, precision] = copy.deepcopy(self.model_).to(
                device=device, dtype=getattr(torch, PRECISIONS[precision])).eval()
        return copies[device, precision]

    def raw_all(self, texts: Sequence[str], device: str = "cpu", precision: str = "fp32") -> dict[str, np.ndarray]:
        sur = self.surprisals(texts, device=device, precision=precision)
        nll = np.array([s.sum() if len(s) else np.nan for s in sur])
        nce = np.array([s.mean() if len(s) else np.nan for s in sur])
        return {"nll": nll, "nce": nce, "ppl": np.exp(nce)}

    def normalise(self, variant: str, raw: np.ndarray) -> np.ndarray:
        low, high = self.ranges_[variant]
        return apply_range(raw, low, high)

    # -- persistence ------------------------------------------------------------------------
    def _state(self):
        return {"ranges_": self.ranges_, "info_": self.info_, "bert_config_": self.model_.config.to_dict()}, {}

    def _write_files(self, staging_dir: str) -> None:
        from safetensors.torch import save_file

        self.tokenizer_.save(os.path.join(staging_dir, "tokenizer.json"))
        # the decoder shares the input embeddings (tied); store each tensor once
        state = {k: v.contiguous() for k, v in self.model_.state_dict().items()
                 if k not in ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")}
        save_file(state, os.path.join(staging_dir, "mlm.safetensors"))

    def _set_state(self, values: Mapping[str, Any], arrays: Mapping[str, np.ndarray], directory: str) -> None:
        from safetensors.torch import load_file
        from tokenizers import Tokenizer
        from transformers import BertConfig, BertForMaskedLM

        for name in ("tokenizer.json", "mlm.safetensors"):
            if not os.path.exists(os.path.join(directory, name)):
                raise DialevalError(f"{directory}: {name} missing; not a trained specificity model")
        self.tokenizer_ = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        config = BertConfig.from_dict(dict(values["bert_config_"]))
        model = BertForMaskedLM(config)
        state = load_file(os.path.join(directory, "mlm.safetensors"))
        missing, unexpected = model.load_state_dict(state, strict=False)
        if unexpected or [m for m in missing if not m.startswith("cls.predictions.decoder.")]:
            raise DialevalError(f"{directory}/mlm.safetensors: does not match its config")
        model.tie_weights()
        model.eval()
        self.model_ = model
        self.ranges_ = {k: list(v) for k, v in dict(values["ranges_"]).items()}
        self.info_ = dict(values.get("info_") or {})
