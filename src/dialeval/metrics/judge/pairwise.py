"""The pairwise judge: which of two replies to one context is better, as a probability.

The judge is shown the context and two replies, numbered 1 and 2 (the shipped
`templates/pairwise.txt`, or `--pairwise-template`), and asked for the number of the better one.
Its preference for the reply shown first is P("1") / (P("1") + P("2")):

- a local causal LM: the two answer tokens' logits at the answer position (the same prompt
  framing, batching and shared prefix as the rating judge, `metric.py`);
- a served model (`--judge-endpoint`): the two labels' probabilities among the top tokens, or
  the share of sampled answers naming each (`served.py`).

The order is the caller's business: `meta/pairwise.py` asks every pair both ways round, which is
what cancels the judge's liking for a position.
"""

from __future__ import annotations

import json
import os
from typing import Any, Literal, Sequence

import numpy as np

from ...errors import DialevalError
from .frame import shared_prefix
from .metric import _cached_judge, resolve_judge_model
from .prompt import PAIR_PLACEHOLDERS, load_template

LABELS = ("1", "2")
OPENER = "Better response: "    # a model without a chat template (or the completions API)


class PairwiseJudge:
    """Asks a causal LM, local or served, which of two replies is the better next turn.

    Options:
        judge_model: the local causal LM (default: the installed SmolLM2-135M-Instruct; a
            folder, a GGUF file or a packaged name such as qwen1.5b), or with --judge-endpoint
            the served model's name
        pairwise_template: template file with {context}, {response_a} and {response_b} (the
            replies shown first and second) and optionally {references}, or a shipped name
            (default: pairwise)
        judge_precision: fp32 (default) or bf16, for a local model
        judge_context_turns: last context turns shown (default 2; 0: all)
        judge_batch_tokens: token budget of one forward pass of a local model (default 0: one
            prompt at a time)
        judge_device: torch device of a local model (default cpu)
        judge_endpoint: URL of an OpenAI-compatible server to ask instead of a local model
        judge_api: chat (default) or completions, with --judge-endpoint
        judge_api_key_env: environment variable holding the server's API key
        judge_concurrency: requests in flight at once to the server (default 4)
        judge_timeout: seconds to wait for one reply (default 60)
        judge_retries: further tries after a connection error, a timeout or HTTP 429/5xx (default 2)
        judge_scoring: auto (default), logprobs or sample, with --judge-endpoint
        judge_samples: answers sampled per prompt on the sample path (default 10)
        judge_temperature: sampling temperature on the sample path (default 1.0)
        judge_seed: seed of the first sampled answer (default 0)
        judge_journal: file keeping every served reply (default auto; off: none)
        judge_extra_body: a JSON object merged into every request to the server
        judge_backend: torch (default) or llama.cpp, for a local GGUF model (as the judge metric's)
    """

    def __init__(self, judge_model: str | None = None, pairwise_template: str | None = None,
                 judge_precision: Literal["fp32", "bf16"] = "fp32", judge_context_turns: int = 2,
                 judge_batch_tokens: int = 0, judge_device: str = "cpu", judge_endpoint: str | None = None,
                 judge_api: Literal["chat", "completions"] = "chat", judge_api_key_env: str | None = None,
                 judge_concurrency: int = 4, judge_timeout: float = 60.0, judge_retries: int = 2,
                 judge_scoring: Literal["auto", "logprobs", "sample"] = "auto", judge_samples: int = 10,
                 judge_temperature: float = 1.0, judge_seed: int = 0, judge_journal: str = "auto",
                 judge_extra_body: str | None = None, judge_backend: Literal["torch", "llama.cpp"] = "torch"):
        from ...backbones.runtime import check_precision
        from .llamacpp import check_backend

        judge_precision = check_precision("judge_precision", judge_precision)
        if int(judge_context_turns) < 0:
            raise DialevalError(f"--judge-context-turns must be 0 (all) or more, got {judge_context_turns}")
        self.template = load_template(pairwise_template, "pairwise", needs=PAIR_PLACEHOLDERS)
        self.context_turns = int(judge_context_turns)
        self.precision = judge_precision
        self.batch_tokens = max(0, int(judge_batch_tokens))
        self.served = None
        self.model_path = None
        if judge_endpoint:
            from .served import ServedJudge

            self.served = ServedJudge(judge_endpoint, judge_model, api=judge_api, key_env=judge_api_key_env,
                                      concurrency=judge_concurrency, timeout=judge_timeout,
                                      retries=judge_retries, scoring=judge_scoring, samples=judge_samples,
                                      temperature=judge_temperature, seed=judge_seed, journal=judge_journal,
                                      extra_body=judge_extra_body)
        else:
            from ...backbones.runtime import check_device

            self.device = check_device("judge_device", judge_device)
            self.model_path = resolve_judge_model(judge_model)
        self.backend = check_backend(judge_backend, judge_precision, getattr(self, "device", "cpu"), judge_endpoint,
                                     self.model_path)

    def _text(self, context: Sequence[str], first: str, second: str, references: Sequence[str]) -> str:
        turns = list(context)
        if self.context_turns:
            turns = turns[-self.context_turns:]
        refs = list(references) if self.template.wants_references else []
        return self.template.fill_pair(turns, first, second, refs)

    def prefer_first(self, contexts: Sequence[Sequence[str]], firsts: Sequence[str], seconds: Sequence[str],
                     references: Sequence[Sequence[str]] | None = None) -> np.ndarray:
        """P(the judge names the reply shown first), per prompt; NaN where a served judge's
        answers named neither."""
        refs = references if references is not None else [[] for _ in contexts]
        texts = [self._text(c, a, b, r) for c, a, b, r in zip(contexts, firsts, seconds, refs)]
        if not texts:
            return np.zeros(0)
        if self.served is not None:
            reading = self.served.read(texts, LABELS, self.template.answer or OPENER)
            return reading.probs[:, 0]
        judge = _cached_judge(self.model_path, self.precision, self.device, self.backend)
        prompts = [self._frame(judge, t) for t in texts]
        ids, strip = judge.label_ids(prompts[0], LABELS)
        if strip:
            prompts = [p.rstrip(" ") for p in prompts]
        tokens = [self._fit(judge, p) for p in prompts]
        logits = judge.rating_logits(tokens, ids, self.batch_tokens, self._prefix(judge, strip)).astype(np.float64)
        z = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p[:, 0] / p.sum(axis=1)

    def _frame(self, judge, text: str) -> str:
        if judge.chat:
            head = judge.tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                                       add_generation_prompt=True)
            return head + self.template.answer
        return text + "\n" + (self.template.answer or OPENER)

    def _prefix(self, judge, strip: bool) -> int:
        """The template's data-independent token prefix (two fillings compared), so that the
        cached prefix, and each value's rounding, does not depend on the prompts of the call."""
        a, b = (self._frame(judge, self.template.fill_pair([c], c, c, [c])) for c in ("@", "#"))
        if strip:
            a, b = a.rstrip(" "), b.rstrip(" ")
        return shared_prefix([judge.encode(a), judge.encode(b)])

    @staticmethod
    def _fit(judge, prompt: str) -> list[int]:
        """The prompt's tokens; one longer than the model's window keeps its last tokens (the
        question and both replies sit at the end)."""
        tokens = judge.encode(prompt)
        return tokens[-judge.max_len:]

    def signature(self) -> str:
        parts = ["pairwise"]
        if self.served is not None:
            parts += [f"{k}:{v}" for k, v in self.served.signature_parts()]
        else:
            from ...backbones.fingerprint import model_fingerprint

            path = os.path.abspath(self.model_path)
            known = os.path.isfile(path) or os.path.exists(os.path.join(path, "config.json"))
            fingerprint = model_fingerprint(path) if known else \
                _cached_judge(self.model_path, self.precision, self.device, self.backend).fingerprint
            parts += [f"model:{fingerprint}"]
        parts += [f"template:{self.template.name}@{self.template.sha}", f"ctx:{self.context_turns or 'all'}",
                  "orders:both"] + ([f"backend:{self.backend}"] if self.backend != "torch" else [])
        if self.served is None:          # the runtime under the model metrics' one rule
            from ..model_metric import Runtime, runtime_fields

            parts += [f"{k}:{v}" for k, v in runtime_fields({"model": Runtime(self.device, self.precision)})]
        from ...version import __version__

        return "|".join(parts + [f"version:{__version__}"])

    def settings(self) -> dict[str, Any]:
        return {"signature": self.signature(), "served": self.served is not None,
                "extra_body": json.dumps(self.served.extra, sort_keys=True) if self.served else None}


__all__ = ["LABELS", "PairwiseJudge"]
