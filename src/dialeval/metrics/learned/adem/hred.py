"""Our own hierarchical recurrent dialogue encoder, pre-trained as VHRED (ADEM paper §4, App. C).

No pretrained VHRED (the paper's was trained on Twitter with Theano) can be had, so we train a
small one. The network has the paper's three RNNs and its latent variable:

- **utterance encoder**: a bidirectional GRU over the words of one utterance; its two final
  states, layer-normalised, are the utterance vector;
- **context encoder**: a GRU over the utterance vectors of a dialogue; its last hidden state,
  layer-normalised, is the *context vector*. ADEM uses exactly this vector for a context, for a
  reference and for a candidate response (each fed in as a one- or many-utterance "dialogue");
- **latent variable** z: a diagonal Gaussian whose prior is computed from the context vector
  and whose approximate posterior also sees the utterance vector of the true next utterance;
- **decoder**: a GRU language model of the next utterance, conditioned at every step on the
  context vector and z.

Training maximises the ELBO (token NLL + KL(q || p)), with the KL weight annealed linearly from
0 to 1 over `kl_anneal_steps` batches and 25% of the decoder's input words replaced by `<unk>`
(word drop), the two tricks the paper takes from Bowman et al. and Serban et al. so that the
decoder does not ignore z. Words are lower-cased word/punctuation tokens (the paper used BPE);
the vocabulary is the corpus's most frequent words.

`DialogueEncoder` is the estimator: hyper-parameters in the constructor, `fit(dialogues)`
learns `vocab_` and the weights (`weights_`, saved to arrays.npz), `encode(dialogues)` gives
context vectors. Training stops at `epochs` or `max_minutes`, whichever comes first.
"""

from __future__ import annotations

import math
import os
import random
import re
import time
from collections import Counter
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ....errors import DialevalError
from ....models.estimator import Estimator

KIND = "dialogue-encoder"
PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|'[a-z]+|[^\sa-z0-9]")


def tokenize(text: str) -> list[str]:
    """Lower-cased words, contractions and single punctuation marks."""
    return _TOKEN.findall(text.lower())


def _build_net(vocab: int, emb: int, utt: int, ctx: int, latent: int, dec: int):
    import torch
    from torch import nn

    class VHREDNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(vocab, emb, padding_idx=0)
            self.utt_rnn = nn.GRU(emb, utt, batch_first=True, bidirectional=True)
            self.utt_norm = nn.LayerNorm(2 * utt)
            self.ctx_rnn = nn.GRU(2 * utt, ctx, batch_first=True)
            self.ctx_norm = nn.LayerNorm(ctx)
            self.prior = nn.Sequential(nn.Linear(ctx, ctx), nn.Tanh(), nn.Linear(ctx, 2 * latent))
            self.posterior = nn.Sequential(nn.Linear(ctx + 2 * utt, ctx), nn.Tanh(), nn.Linear(ctx, 2 * latent))
            self.dec_init = nn.Linear(ctx + latent, dec)
            self.dec_rnn = nn.GRU(emb + ctx + latent, dec, batch_first=True)
            self.out = nn.Linear(dec, vocab)

        def utterances(self, ids, lengths):
            """(N, L) word ids -> (N, 2*utt) utterance vectors."""
            from torch.nn.utils.rnn import pack_padded_sequence

            packed = pack_padded_sequence(self.emb(ids), lengths.clamp(min=1).cpu(), batch_first=True,
                                          enforce_sorted=False)
            _, h = self.utt_rnn(packed)
            return self.utt_norm(torch.cat([h[0], h[1]], dim=-1))

        def contexts(self, ids, lengths, turns):
            """Utterances of B dialogues (flattened, `turns[b]` each, in order) -> (B, ctx)."""
            from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence

            vecs = self.utterances(ids, lengths)
            dialogs = pad_sequence(list(torch.split(vecs, turns.tolist())), batch_first=True)
            packed = pack_padded_sequence(dialogs, turns.cpu(), batch_first=True, enforce_sorted=False)
            _, h = self.ctx_rnn(packed)
            return self.ctx_norm(h[-1])

        def utterance_vectors(self, ids):
            """(N, L) word ids of N utterances of exactly L words (no padding) -> (N, 2*utt)."""
            _, h = self.utt_rnn(self.emb(ids))
            return self.utt_norm(torch.cat([h[0], h[1]], dim=-1))

        def context_vectors(self, utterance_vecs):
            """(B, T, 2*utt) utterance vectors of B dialogues of exactly T turns -> (B, ctx)."""
            _, h = self.ctx_rnn(utterance_vecs)
            return self.ctx_norm(h[-1])

        def elbo_terms(self, ctx_ids, ctx_len, turns, resp_ids, resp_len, dec_in, dec_out, *, posterior=True):
            """Summed token NLL and summed KL over the batch, and the number of target tokens."""
            h = self.contexts(ctx_ids, ctx_len, turns)
            prior_mu, prior_lv = self.prior(h).chunk(2, dim=-1)
            if posterior:
                r = self.utterances(resp_ids, resp_len)
                mu, lv = self.posterior(torch.cat([h, r], dim=-1)).chunk(2, dim=-1)
                z = mu + torch.randn_like(mu) * torch.exp(0.5 * lv) if self.training else mu
                kl = 0.5 * (prior_lv - lv + (lv.exp() + (mu - prior_mu) ** 2) / prior_lv.exp() - 1).sum()
            else:
                z, kl = prior_mu, torch.zeros((), device=h.device)
            cond = torch.cat([h, z], dim=-1)
            h0 = torch.tanh(self.dec_init(cond)).unsqueeze(0)
            steps = dec_in.shape[1]
            x = torch.cat([self.emb(dec_in), cond.unsqueeze(1).expand(-1, steps, -1)], dim=-1)
            y, _ = self.dec_rnn(x, h0)
            logits = self.out(y)
            nll = nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), dec_out.reshape(-1),
                                              ignore_index=0, reduction="sum")
            return nll, kl, int((dec_out != 0).sum())

    return VHREDNet()


class DialogueEncoder(Estimator):
    """Hierarchical GRU dialogue encoder pre-trained as VHRED; `encode` gives context vectors.

    The defaults have 7.2M parameters. Three epochs of DailyDialog train are 3,565 batches of
    64; on a shared, heavily loaded 2-core machine one thread did 691 batches in 25 minutes
    (about 2.2 s a batch), so an idle 2-core CPU is expected to need about an hour for the
    default `max_minutes=60` budget (an estimate: not measured idle). Threads: `threads=0` (the
    default) follows the backbone policy, the idle cores, so a busy machine gets one thread: two
    OpenMP threads competing for oversubscribed cores were ~17x slower.

    Options:
      vocab_size: most frequent words kept (the rest become the unknown word)
      emb_dim: word embedding size
      utt_dim: utterance-encoder GRU size
      ctx_dim: context-encoder GRU size (the context vector ADEM reads)
      latent_dim: VHRED latent variable size
      dec_dim: decoder GRU size
      max_turns: context turns read before the response
      max_len: words kept per utterance
      word_drop: share of decoder input words replaced by the unknown word
      kl_anneal_steps: steps over which the KL term's weight rises from 0 to 1
      lr: Adam step size
      batch_size: dialogues per step
      epochs: passes over the corpus
      max_minutes: stop training after this long
      max_steps: stop after this many batches
      seed: random seed
      threads: CPU threads (default 0: $OMP_NUM_THREADS, else the idle cores)
      device: cpu or cuda[:N]
    """

    kind = KIND

    def __init__(self, vocab_size: int = 8000, emb_dim: int = 128, utt_dim: int = 192, ctx_dim: int = 384,
                 latent_dim: int = 64, dec_dim: int = 384, max_turns: int = 3, max_len: int = 30,
                 word_drop: float = 0.25, kl_anneal_steps: int = 2000, lr: float = 2e-3,
                 batch_size: int = 64, epochs: float = 3.0, max_minutes: float | None = 60.0,
                 max_steps: int | None = None, seed: int = 0, threads: int = 0, device: str = "cpu"):
        self.vocab_size = vocab_size
        self.emb_dim = emb_dim
        self.utt_dim = utt_dim
        self.ctx_dim = ctx_dim
        self.latent_dim = latent_dim
        self.dec_dim = dec_dim
        self.max_turns = max_turns
        self.max_len = max_len
        self.word_drop = word_drop
        self.kl_anneal_steps = kl_anneal_steps
        self.lr = lr
        self.batch_size = batch_size
        self.epochs = epochs
        self.max_minutes = max_minutes
        self.max_steps = max_steps
        self.seed = seed
        self.threads = threads
        self.device = device

    # -- vocabulary and tensors ----------------------------------------------------------
    def _ids(self, text: str) -> list[int]:
        index = self._index()
        unk = index[UNK]
        return [index.get(t, unk) for t in tokenize(text)[: self.max_len]]

    def _index(self) -> dict[str, int]:
        if getattr(self, "_index_cache", None) is None or len(self._index_cache) != len(self.vocab_):
            self._index_cache = {w: i for i, w in enumerate(self.vocab_)}
        return self._index_cache

    def _pad(self, seqs: Sequence[Sequence[int]]):
        import torch

        width = max(1, max((len(s) for s in seqs), default=1))
        out = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            if s:
                out[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        return out, torch.tensor([len(s) for s in seqs], dtype=torch.long)

    def _context_tensors(self, contexts: Sequence[Sequence[list[int]]]):
        import torch

        flat = [u for c in contexts for u in c]
        ids, lengths = self._pad(flat)
        return ids, lengths, torch.tensor([len(c) for c in contexts], dtype=torch.long)

    def _batch(self, items: Sequence[tuple[list[list[int]], list[int]]], drop: float, rng: random.Random):
        """Tensors of (context, response) id lists: encoder inputs and decoder in/out."""
        bos, eos, unk = (self._index()[t] for t in (BOS, EOS, UNK))
        ctx_ids, ctx_len, turns = self._context_tensors([c for c, _ in items])
        resp_ids, resp_len = self._pad([r for _, r in items])
        dec_in, _ = self._pad([[bos] + [unk if drop and rng.random() < drop else w for w in r] for _, r in items])
        dec_out, _ = self._pad([r + [eos] for _, r in items])
        return ctx_ids, ctx_len, turns, resp_ids, resp_len, dec_in, dec_out

    def _examples(self, dialogues: Sequence[Sequence[str]]) -> list[tuple[list[list[int]], list[int]]]:
        out = []
        for dialogue in dialogues:
            ids = [self._ids(t) for t in dialogue]
            for i in range(1, len(ids)):
                context = [u for u in ids[max(0, i - self.max_turns): i]]
                if ids[i] and all(context):
                    out.append((context, ids[i]))
        return out

    # -- training ------------------------------------------------------------------------
    def _net(self):
        if getattr(self, "_net_cache", None) is None:
            import torch

            net = _build_net(len(self.vocab_), self.emb_dim, self.utt_dim, self.ctx_dim, self.latent_dim,
                             self.dec_dim)
            if getattr(self, "weights_", None) is not None:
                state = {k: torch.from_numpy(np.asarray(v)) for k, v in self.weights_.items()}
                try:
                    net.load_state_dict(state)
                except RuntimeError as exc:
                    raise DialevalError(f"dialogue encoder weights do not fit its configuration: "
                                        f"{str(exc).splitlines()[0]}") from None
            net.to(self._device())
            net.eval()
            self._net_cache = net
        return self._net_cache

    def _device(self) -> str:
        from ....backbones.runtime import check_device

        return check_device("device", self.device)

    def fit(self, dialogues: Sequence[Sequence[str]], *, eval_dialogues: Sequence[Sequence[str]] | None = None,
            progress: Callable[[str], None] | None = None, checkpoint=None) -> "DialogueEncoder":
        """Train on `dialogues`; `checkpoint` (models.resume) saves the loop every few minutes, with
        the word-drop generator's state, and continues a saved one."""
        import torch

        if not dialogues:
            raise DialevalError("no dialogues to train the encoder on")
        torch.manual_seed(self.seed)
        rng = random.Random(self.seed)
        if self._device() == "cpu":
            if self.threads > 0:
                torch.set_num_threads(self.threads)
            else:
                from ....backbones.runtime import apply_thread_policy

                apply_thread_policy()       # the idle cores (or $OMP_NUM_THREADS): see docs/backbones.md
        counts = Counter(t for d in dialogues for u in d for t in tokenize(u))
        self.vocab_ = list(SPECIALS) + [w for w, _ in counts.most_common(max(0, self.vocab_size - len(SPECIALS)))]
        self._index_cache = None
        self.weights_ = None
        self._net_cache = None
        examples = self._examples(dialogues)
        if not examples:
            raise DialevalError("the corpus has no dialogue with two non-empty turns")
        net = self._net()
        net.train()
        opt = torch.optim.Adam(net.parameters(), lr=self.lr)
        started = time.time()
        deadline = started + self.max_minutes * 60 if self.max_minutes else None
        total_steps = math.ceil(self.epochs * len(examples) / self.batch_size)
        if self.max_steps is not None:
            total_steps = min(total_steps, self.max_steps)
        step, stopped_by, log = 0, "epochs", []
        window = [0.0, 0.0, 0]
        device = self._device()
        loop = checkpoint.loop() if checkpoint is not None else None
        saved = loop.restore() if loop is not None else None
        batches, skip = None, 0
        if saved is not None:
            from ....models.resume import set_rng_state

            net.load_state_dict(saved["net"])
            opt.load_state_dict(saved["optimizer"])
            rng.setstate(saved["word_rng"])
            set_rng_state(saved["rng"])
            step, stopped_by, log, window = saved["steps"], saved["stopped_by"], saved["log"], saved["window"]
            batches, skip = saved["batches"], saved["k"]
            if saved["done"]:
                total_steps = step

        def snapshot(k):
            return {"net": net.state_dict(), "optimizer": opt.state_dict(), "word_rng": rng.getstate(),
                    "steps": step, "stopped_by": stopped_by, "log": list(log), "window": list(window),
                    "batches": batches, "k": k}

        while step < total_steps:
            if batches is None:
                order = list(range(len(examples)))
                rng.shuffle(order)
                # buckets of 50 batches sorted by response length: less padding, still shuffled
                chunk = self.batch_size * 50
                batches = []
                for start in range(0, len(order), chunk):
                    part = sorted(order[start:start + chunk], key=lambda i: len(examples[i][1]))
                    batches += [part[j:j + self.batch_size] for j in range(0, len(part), self.batch_size)]
                rng.shuffle(batches)
                skip = 0
            for k, idx in enumerate(batches, start=1):
                if k <= skip:
                    continue
                if step >= total_steps:
                    break
                if deadline is not None and time.time() > deadline:
                    stopped_by = "max_minutes"
                    break
                tensors = [t.to(device) for t in self._batch([examples[i] for i in idx], self.word_drop, rng)]
                nll, kl, ntok = net.elbo_terms(*tensors)
                weight = min(1.0, (step + 1) / max(1, self.kl_anneal_steps))
                loss = (nll + weight * kl) / max(1, ntok)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
                opt.step()
                step += 1
                window[0] += nll.item()
                window[1] += kl.item()
                window[2] += ntok
                if step % 100 == 0:
                    entry = {"step": step, "minutes": round((time.time() - started) / 60, 2),
                             "nll_per_token": window[0] / window[2], "kl_per_token": window[1] / window[2],
                             "kl_weight": weight}
                    log.append(entry)
                    window = [0.0, 0.0, 0]
                    if progress:
                        progress(f"step {step}/{total_steps}  {entry['minutes']:.1f} min  "
                                 f"nll/tok {entry['nll_per_token']:.3f}  kl/tok {entry['kl_per_token']:.3f}  "
                                 f"kl weight {weight:.2f}")
                if loop is not None:
                    loop.maybe_save(lambda: snapshot(k))
            else:
                batches = None
                continue
            break
        if loop is not None and not (saved is not None and saved["done"]):
            loop.save(snapshot(len(batches or [])), done=True)
        net.eval()
        self.weights_ = {k: v.detach().cpu().numpy() for k, v in net.state_dict().items()}
        self.training_ = {"steps": step, "stopped_by": stopped_by, "examples": len(examples),
                          "epochs_done": round(step * self.batch_size / len(examples), 3),
                          "minutes": round((time.time() - started) / 60, 2), "log": log,
                          "parameters": int(sum(p.numel() for p in net.parameters())),
                          "threads": self.threads, "device": device}
        if eval_dialogues:
            self.training_["eval"] = self.perplexity(eval_dialogues)
        return self

    def perplexity(self, dialogues: Sequence[Sequence[str]], batch_size: int = 128) -> dict[str, float]:
        """Per-token perplexity of the next utterance on held-out dialogues: the ELBO bound
        exp((NLL(z = posterior mean) + KL) / tokens), and the prior-mean estimate
        exp(NLL(z = prior mean) / tokens). Tokens include the end-of-utterance token."""
        import torch

        self.check_fitted()
        net = self._net()
        net.eval()
        examples = self._examples(dialogues)
        rng = random.Random(0)
        sums = {"nll_post": 0.0, "kl": 0.0, "nll_prior": 0.0, "tokens": 0}
        with torch.no_grad():
            for start in range(0, len(examples), batch_size):
                tensors = [t.to(self._device()) for t in self._batch(examples[start:start + batch_size], 0.0, rng)]
                nll, kl, ntok = net.elbo_terms(*tensors, posterior=True)
                nll_p, _, _ = net.elbo_terms(*tensors, posterior=False)
                sums["nll_post"] += float(nll)
                sums["kl"] += float(kl)
                sums["nll_prior"] += float(nll_p)
                sums["tokens"] += ntok
        n = max(1, sums["tokens"])
        return {"pairs": len(examples), "tokens": sums["tokens"],
                "ppl_elbo_bound": math.exp((sums["nll_post"] + sums["kl"]) / n),
                "ppl_prior_mean": math.exp(sums["nll_prior"] / n),
                "kl_per_token": sums["kl"] / n}

    # -- encoding ------------------------------------------------------------------------
    def encode(self, dialogues: Sequence[Sequence[str]]) -> np.ndarray:
        """Context vectors (n, ctx_dim) of dialogues (each a list of turns, oldest first; the
        last `max_turns` turns are read). An empty dialogue or turn becomes one `<unk>`.

        A dialogue's vector is a function of that dialogue alone, to the bit: padded or packed
        GRU batches change the last bits with the batch's other rows (and MKL computes a batch of
        one row differently from a batch of four), so that sharded, resumed and Dask runs would
        disagree. Instead every distinct utterance is encoded once, in batches of utterances of
        one token length, and every dialogue in batches of dialogues of one turn count; each
        batch has the fixed shape `ENCODE_ROWS` rows (the last one filled with zero rows), so the
        computation a row goes through never depends on its companions.
        """
        import torch

        self.check_fitted()
        net = self._net()
        device = self._device()
        unk = self._index()[UNK]
        parts = [tuple(tuple(self._ids(u) or [unk]) for u in (list(d)[-self.max_turns:] or [""]))
                 for d in dialogues]
        out = np.zeros((len(dialogues), self.ctx_dim), dtype=np.float32)
        if not parts:
            return out
        with torch.no_grad():
            utterances = sorted({u for p in parts for u in p}, key=lambda u: (len(u), u))
            index = {u: i for i, u in enumerate(utterances)}
            vecs = torch.zeros((len(utterances), 2 * self.utt_dim))
            for rows in _same_size_runs(utterances, len):
                ids = torch.tensor([utterances[i] for i in rows], dtype=torch.long)
                vecs[rows] = _fixed_rows(lambda x: net.utterance_vectors(x.to(device)), ids)
            order = sorted(range(len(parts)), key=lambda i: (len(parts[i]), i))
            for rows in _same_size_runs([parts[i] for i in order], len):
                picked = [order[k] for k in rows]
                dialogs = torch.stack([vecs[[index[u] for u in parts[i]]] for i in picked])
                out[picked] = _fixed_rows(lambda x: net.context_vectors(x.to(device)), dialogs).numpy()
        return out

    def fit_corpus(self, corpus: Sequence[str], eval_corpus: str | None = None, eval_limit: int | None = None, *,
                   say: Callable[[str], None] | None = None, checkpoint=None) -> "DialogueEncoder":
        """`fit` on the corpora `train dialogue-encoder --corpus` names (read as one), with
        next-utterance perplexity reported on the first `eval_limit` dialogues of `eval_corpus`."""
        from ....data.corpus import read_corpus_spec, read_specs

        dialogues = read_specs(list(corpus))
        held_out = read_corpus_spec(eval_corpus) if eval_corpus else None
        if held_out is not None and eval_limit:
            held_out = held_out[:eval_limit]
        if say is not None:
            say(f"training on {len(dialogues)} dialogues")
        return self.fit(dialogues, eval_dialogues=held_out, progress=say, checkpoint=checkpoint)

    def summary(self) -> dict[str, Any]:
        """What `train dialogue-encoder` prints beside the folder: the training record, its log
        left out."""
        self.check_fitted()
        return {k: v for k, v in self.training_.items() if k != "log"}

    # -- persistence ---------------------------------------------------------------------
    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        values = {"vocab_": list(self.vocab_), "training_": getattr(self, "training_", {})}
        arrays = {f"w.{k}": v for k, v in self.weights_.items()}
        return values, arrays

    def _set_state(self, values: Mapping[str, Any], arrays: Mapping[str, np.ndarray], directory: str) -> None:
        vocab = values.get("vocab_")
        if not isinstance(vocab, list) or not arrays:
            raise DialevalError(f"{directory}: incomplete dialogue-encoder artifact (no vocabulary or weights)")
        self.vocab_ = vocab
        self.training_ = dict(values.get("training_") or {})
        self.weights_ = {k[2:]: v for k, v in arrays.items() if k.startswith("w.")}
        self._index_cache = None
        self._net_cache = None
        self._net()   # refuse weights that do not fit the configuration now, not at scoring time


def load_encoder(directory: str | os.PathLike, device: str | None = None) -> DialogueEncoder:
    enc = DialogueEncoder.load(directory)
    if device:
        enc.device = device
        enc._net_cache = None
    return enc


ENCODE_ROWS = 16   # the one batch shape of `DialogueEncoder.encode` (see there why it is fixed)


def _same_size_runs(items: Sequence, size: Callable[[Any], int]) -> list[list[int]]:
    """Indices of consecutive runs of `items` (sorted by `size`) of one size."""
    runs: list[list[int]] = []
    for i, item in enumerate(items):
        if runs and size(items[runs[-1][0]]) == size(item):
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


def _fixed_rows(fn: Callable[[Any], Any], x):
    """`fn` over the rows of `x` in batches of exactly ENCODE_ROWS rows (the last one padded
    with zero rows that are dropped again), on the CPU."""
    import torch

    out = []
    for start in range(0, x.shape[0], ENCODE_ROWS):
        chunk = x[start:start + ENCODE_ROWS]
        n = chunk.shape[0]
        if n < ENCODE_ROWS:
            chunk = torch.cat([chunk, chunk.new_zeros((ENCODE_ROWS - n,) + tuple(chunk.shape[1:]))])
        out.append(fn(chunk)[:n].cpu())
    return torch.cat(out)
