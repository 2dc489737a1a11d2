"""A judge behind an OpenAI-compatible server (vLLM, llama.cpp's server, Ollama, `transformers
serve`): the same question the local judge asks, sent over HTTP.

Why a plain `urllib` client and not the `openai` package: the judge needs two request shapes
(`/v1/chat/completions`, `/v1/completions`) and two reply fields, and every server of this kind
answers them; a client library would be one more dependency for users who only score.

Two ways to read an answer, chosen per run (`scoring`):

- `logprobs`: one greedy token with its top log-probabilities; the probability of each answer
  label ("1".."5" for a rating, "1"/"2" for a pairwise verdict) is the summed probability of the
  top tokens that are that label (" 3" and "3" both count), renormalised over the labels found.
  With all five ratings among the top tokens this is exactly the local judge's softmax over the
  five rating logits.
- `sample`: G-Eval's estimate. n answers are sampled (one request each, seeded `seed + i`, so
  that an answer does not depend on how many were asked before it or on the server's support
  for `n`), the first label in each answer is read, and the label frequencies stand in for the
  probabilities. Their spread (the standard deviation of the sampled ratings) is returned too.
- `auto` (default): one probe request asks for log-probabilities; a server that returns them is
  read the first way, one that ignores or refuses them (`transformers serve`) the second.

Every reply goes into a journal (JSON lines, one per request, keyed by the sha256 of the URL and
the request body) as soon as it arrives; a request whose key is in the journal is not sent
again. So a run stopped by a dead server, a refused key or a timeout loses nothing it was told:
`dialeval score ... --resume` redoes the unfinished shard from the journal and asks only what
was never answered.

Failures are one line (`DialevalError`, exit status 2 on the command line): a connection that
cannot be made, a refused key (HTTP 401/403), any other HTTP error, a reply that is not the
OpenAI shape, or no reply within the timeout after the retries. Connection errors, timeouts and
HTTP 429/5xx are retried (`retries` times, backing off 0.5 s, 1 s, 2 s, ... at most 8 s); the
rest are not, since asking again cannot change the answer.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...errors import DialevalError

APIS = ("chat", "completions")
SCORINGS = ("auto", "logprobs", "sample")
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
DEFAULT_KEY_ENV = "DIALEVAL_JUDGE_API_KEY"
PROBE_TEXT = "How many sides has a triangle? Answer with a single number."
ERROR_CHARS = 160            # of a server's error message, in the one-line error


def endpoint_url(endpoint: str, api: str) -> tuple[str, str, str]:
    """(the request URL, the API kind, the base URL ending in /v1 or where the path stops).
    A URL that ends in `/chat/completions` or `/completions` names its API; any other is a
    base (`http://host:8000` or `http://host:8000/v1`) to which `/v1/<api>` is added."""
    text = endpoint.strip()
    parsed = urllib.parse.urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise DialevalError(f"--judge-endpoint {endpoint!r}: give an http(s) URL, e.g. http://127.0.0.1:8000/v1")
    path = parsed.path.rstrip("/")
    for kind, tail in (("chat", "/chat/completions"), ("completions", "/completions")):
        if path.endswith(tail):
            base = path[: -len(tail)]
            return urllib.parse.urlunparse(parsed._replace(path=path)), kind, \
                urllib.parse.urlunparse(parsed._replace(path=base))
    if api not in APIS:
        raise DialevalError(f"--judge-api {api!r}: choose from {', '.join(APIS)}")
    base = path if path.endswith("/v1") else path + "/v1"
    tail = "/chat/completions" if api == "chat" else "/completions"
    return (urllib.parse.urlunparse(parsed._replace(path=base + tail)), api,
            urllib.parse.urlunparse(parsed._replace(path=base)))


class Journal:
    """Replies already had, by request key: read once per process, appended line by line (a
    line cut short by a kill is skipped when read back)."""

    def __init__(self, path: str | None):
        self.path = path
        self.lock = threading.Lock()
        self.entries: dict[str, Any] = {}
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        row = json.loads(line)
                        self.entries[row["key"]] = row["reply"]
                    except (ValueError, KeyError, TypeError):
                        continue

    def get(self, key: str) -> Any:
        with self.lock:
            return self.entries.get(key)

    def put(self, key: str, reply: Any) -> None:
        with self.lock:
            self.entries[key] = reply
            if not self.path:
                return
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"key": key, "reply": reply}, ensure_ascii=False) + "\n")
                handle.flush()


_JOURNALS: dict[str, Journal] = {}
_JOURNALS_LOCK = threading.Lock()


def journal_for(path: str | None) -> Journal:
    """One journal per file and process (a memory-only one for `path` None)."""
    if not path:
        return Journal(None)
    with _JOURNALS_LOCK:
        key = os.path.abspath(path)
        if key not in _JOURNALS:
            _JOURNALS[key] = Journal(key)
        return _JOURNALS[key]


@dataclass
class Reading:
    """What the answers to a list of prompts say: per prompt, the probability of each label
    (NaN row: no label found), and for `sample` the answers that named a label."""

    probs: np.ndarray           # (n, L)
    parsed: np.ndarray          # (n,) answers that named a label (logprobs: 1 or 0)
    asked: int                  # answers per prompt


class ServedJudge:
    """The client: where, which model, how to read its answers, how patient to be."""

    def __init__(self, endpoint: str, model: str | None = None, *, api: str = "chat",
                 key_env: str | None = None, concurrency: int = 4, timeout: float = 60.0,
                 retries: int = 2, scoring: str = "auto", samples: int = 10, temperature: float = 1.0,
                 seed: int = 0, top_logprobs: int = 20, max_tokens: int = 8,
                 journal: str | None = "auto", extra_body: str | dict | None = None):
        self.url, self.api, self.base = endpoint_url(endpoint, api)
        self.extra = parse_extra_body(extra_body)
        if scoring not in SCORINGS:
            raise DialevalError(f"--judge-scoring {scoring!r}: choose from {', '.join(SCORINGS)}")
        if int(concurrency) < 1 or int(retries) < 0 or float(timeout) <= 0:
            raise DialevalError("--judge-concurrency must be 1 or more, --judge-retries 0 or more and "
                                "--judge-timeout positive")
        if int(samples) < 1 or int(top_logprobs) < 1 or int(max_tokens) < 1:
            raise DialevalError("--judge-samples, --judge-top-logprobs and --judge-max-tokens must be 1 or more")
        self.key_env = key_env or DEFAULT_KEY_ENV
        if key_env and not os.environ.get(key_env):
            raise DialevalError(f"--judge-api-key-env {key_env}: the variable is not set")
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.scoring = scoring
        self.samples = int(samples)
        self.temperature = float(temperature)
        self.seed = int(seed)
        self.top_logprobs = int(top_logprobs)
        self.max_tokens = int(max_tokens)
        self._model = model or None
        self._journal_spec = journal

    # -- identity ------------------------------------------------------------------------------
    @property
    def model(self) -> str:
        """The served model's name: as given, else the one model the server lists."""
        if self._model is None:
            reply = self._send(self.base + "/models", None)
            try:
                names = [m["id"] for m in reply["data"]]
            except (KeyError, TypeError):
                raise self._malformed("no data[].id", self.base + "/models") from None
            if len(names) != 1:
                raise DialevalError(f"judge endpoint {self.base}: serves {len(names)} models "
                                    f"({', '.join(map(str, names[:5]))}); name one with --judge-model")
            self._model = str(names[0])
        return self._model

    @property
    def journal(self) -> Journal:
        spec = self._journal_spec
        if spec in (None, "", "off", "none"):
            return journal_for(None)
        if spec == "auto":
            from ...models.cache import cache_dir

            digest = hashlib.sha256(f"{self.url}\n{self.model}".encode()).hexdigest()[:16]
            spec = os.fspath(cache_dir("judge-served", f"{digest}.jsonl"))
        return journal_for(spec)

    def scoring_path(self) -> str:
        """`logprobs` or `sample`: as asked, or for `auto` what the server does with a request
        for log-probabilities (one probe, kept in the journal like any reply)."""
        if self.scoring != "auto":
            return self.scoring
        if getattr(self, "_path", None) is None:
            body = self._body(self._message(PROBE_TEXT, ""), logprobs=True)
            key = self._key(body)
            found = self.journal.get(key)
            if found is None:
                try:
                    reply = self._send(self.url, body)
                    found = {"path": "logprobs" if self._top_tokens(reply) else "sample"}
                except _Refused:     # a server that rejects the fields: asked again without them
                    self._send(self.url, self._body(self._message(PROBE_TEXT, ""), logprobs=False))
                    found = {"path": "sample"}
                self.journal.put(key, found)
            self._path = found["path"]
        return self._path

    def signature_parts(self) -> list[tuple[str, Any]]:
        path = self.scoring_path()
        how = (f"logprobs:top{self.top_logprobs}" if path == "logprobs" else
               f"sample:n{self.samples}:t{self.temperature:g}:seed{self.seed}")
        if self.extra:
            digest = hashlib.sha256(json.dumps(self.extra, sort_keys=True).encode()).hexdigest()[:12]
            how += f":extra@{digest}"
        return [("model", f"served:{self.model}"), ("api", self.api), ("scoring", how)]

    # -- asking --------------------------------------------------------------------------------
    def _message(self, text: str, opener: str) -> Any:
        """Chat: the filled template as the user's turn (the server adds the chat template; a
        template's answer opener cannot be sent). Completions: the text, a newline and the
        opener, as the local judge writes a prompt for a model without a chat template."""
        if self.api == "chat":
            return [{"role": "user", "content": text}]
        return text + "\n" + (opener or "Answer: ")

    def _body(self, message: Any, *, logprobs: bool, sample: int | None = None) -> dict:
        body: dict[str, Any] = {"model": self.model}
        body["messages" if self.api == "chat" else "prompt"] = message
        if logprobs:
            body.update(max_tokens=1, temperature=0.0)
            if self.api == "chat":
                body.update(logprobs=True, top_logprobs=self.top_logprobs)
            else:
                body["logprobs"] = self.top_logprobs
        else:
            body.update(max_tokens=self.max_tokens, temperature=self.temperature,
                        seed=self.seed + (sample or 0))
        body.update(self.extra)
        return body

    def _key(self, body: dict) -> str:
        text = json.dumps({"url": self.url, "body": body}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def read(self, texts: Sequence[str], labels: Sequence[str], opener: str = "") -> Reading:
        """The label probabilities of each prompt (`texts`: the filled templates)."""
        path = self.scoring_path()
        jobs: list[tuple[int, dict]] = []
        for i, text in enumerate(texts):
            message = self._message(text, opener)
            if path == "logprobs":
                jobs.append((i, self._body(message, logprobs=True)))
            else:
                jobs += [(i, self._body(message, logprobs=False, sample=s)) for s in range(self.samples)]
        replies = self._ask_all([body for _, body in jobs], path)
        probs = np.zeros((len(texts), len(labels)))
        parsed = np.zeros(len(texts), dtype=np.int64)
        for (i, _), reply in zip(jobs, replies):
            if path == "logprobs":
                p = label_probs(reply, labels)
                if p is not None:
                    probs[i] = p
                    parsed[i] = 1
            else:
                label = first_label(reply, labels)
                if label is not None:
                    probs[i, label] += 1
                    parsed[i] += 1
        with np.errstate(invalid="ignore", divide="ignore"):
            probs = probs / probs.sum(axis=1, keepdims=True)     # no label found: a NaN row
        return Reading(probs, parsed, 1 if path == "logprobs" else self.samples)

    def _ask_all(self, bodies: list[dict], path: str) -> list[Any]:
        """The reduced reply of every body (from the journal, or asked, `concurrency` at a time);
        the first failure stops the rest and is raised once what is in flight has landed."""
        journal = self.journal
        out: list[Any] = [None] * len(bodies)
        todo = []
        for j, body in enumerate(bodies):
            key = self._key(body)
            found = journal.get(key)
            if found is None:
                todo.append((j, key, body))
            else:
                out[j] = found
        if not todo:
            return out
        stop = threading.Event()

        def one(j: int, key: str, body: dict) -> None:
            if stop.is_set():
                return
            reply = self._send(self.url, body)
            reduced = self._reduce(reply, path)
            journal.put(key, reduced)
            out[j] = reduced

        if self.concurrency == 1:
            for item in todo:
                one(*item)
            return out
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = [pool.submit(one, *item) for item in todo]
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f.done() and f.exception() is not None]
            if failed:
                stop.set()
                wait(futures)
                raise failed[0].exception()
        return out

    def _reduce(self, reply: Any, path: str) -> Any:
        """What a reply is kept as: the top tokens with their log-probabilities, or the text."""
        if path == "logprobs":
            top = self._top_tokens(reply)
            if top is None:
                raise self._malformed("no log-probabilities in the reply (use --judge-scoring sample)")
            return {"top": top}
        return {"text": self._text(reply)}

    def _text(self, reply: Any) -> str:
        try:
            choice = reply["choices"][0]
            text = choice["message"]["content"] if self.api == "chat" else choice["text"]
        except (KeyError, IndexError, TypeError):
            where = "choices[0].message.content" if self.api == "chat" else "choices[0].text"
            raise self._malformed(f"no {where}") from None
        if text is None:
            return ""
        if not isinstance(text, str):
            raise self._malformed("the answer is not text")
        return text

    def _top_tokens(self, reply: Any) -> list[list] | None:
        """[[token, logprob], ...] at the first answer position, or None (no log-probabilities)."""
        try:
            choice = reply["choices"][0]
        except (KeyError, IndexError, TypeError):
            raise self._malformed("no choices[0]") from None
        lp = choice.get("logprobs") if isinstance(choice, dict) else None
        if not lp:
            return None
        try:
            if isinstance(lp.get("content"), list):          # chat: content[0].top_logprobs
                if not lp["content"]:
                    return None
                top = lp["content"][0].get("top_logprobs") or []
                return [[str(t["token"]), float(t["logprob"])] for t in top] or None
            tops = lp.get("top_logprobs")                      # completions: top_logprobs[0]
            if not tops:
                return None
            first = tops[0]
            if isinstance(first, dict):
                return [[str(k), float(v)] for k, v in first.items()] or None
            return [[str(t["token"]), float(t["logprob"])] for t in first] or None
        except (KeyError, TypeError, ValueError, AttributeError):
            raise self._malformed("log-probabilities not in the OpenAI shape") from None

    # -- HTTP ------------------------------------------------------------------------------------
    def _malformed(self, what: str, url: str | None = None) -> DialevalError:
        return ServedError(f"judge endpoint {url or self.url}: malformed reply ({what})")

    def _send(self, url: str, body: dict | None) -> Any:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = None if body is None else json.dumps(body).encode("utf-8")
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(8.0, 0.5 * 2 ** (attempt - 1)))
            request = urllib.request.Request(url, data=data, headers=headers,
                                             method="GET" if body is None else "POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                detail = _one_line(exc.read().decode("utf-8", "replace"))
                if exc.code in (401, 403):
                    sent = (f"the key in ${self.key_env} was refused" if key else
                            f"no key was sent: set ${self.key_env} or name the variable with --judge-api-key-env")
                    raise ServedError(f"judge endpoint {url}: HTTP {exc.code} ({sent})") from None
                if exc.code in RETRY_STATUS:
                    last = f"HTTP {exc.code} {detail}".strip()
                    continue
                if exc.code in (400, 422) and body is not None and ("logprobs" in body):
                    raise _Refused(f"judge endpoint {url}: HTTP {exc.code} {detail}")
                raise ServedError(f"judge endpoint {url}: HTTP {exc.code} {detail}".rstrip()) from None
            except (TimeoutError, socket.timeout):
                last = f"no reply within {self.timeout:g} s (--judge-timeout)"
                continue
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    last = f"no reply within {self.timeout:g} s (--judge-timeout)"
                else:
                    last = f"cannot connect ({getattr(reason, 'strerror', None) or reason})"
                continue
            except (ConnectionError, OSError) as exc:   # reset or closed mid-reply
                last = f"connection lost ({getattr(exc, 'strerror', None) or exc})"
                continue
            try:
                return json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise self._malformed(f"not JSON: {_one_line(raw[:60].decode('utf-8', 'replace'))!r}", url) from None
        tries = self.retries + 1
        raise ServedError(f"judge endpoint {url}: {last} after {tries} tr{'y' if tries == 1 else 'ies'}; "
                            "run the same command with --resume once it answers")


class ServedError(DialevalError):
    """The server failed us; the engine keeps what is finished, for `--resume`."""

    resumable = True


class _Refused(ServedError):
    """A 400/422 to a request for log-probabilities: the server does not take those fields."""


def parse_extra_body(extra: str | dict | None) -> dict:
    """`--judge-extra-body`: a JSON object merged into every request (a server's own fields:
    vLLM's `top_k`, Ollama's `options`, `transformers serve`'s `generation_config`)."""
    if not extra:
        return {}
    if isinstance(extra, dict):
        return dict(extra)
    try:
        value = json.loads(extra)
    except ValueError as exc:
        raise DialevalError(f"--judge-extra-body: not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise DialevalError("--judge-extra-body: give a JSON object, e.g. '{\"top_k\": 20}'")
    return value


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= ERROR_CHARS else text[:ERROR_CHARS - 3] + "..."


def label_probs(reply: dict, labels: Sequence[str]) -> np.ndarray | None:
    """The labels' probabilities from a reduced logprobs reply: each label's top tokens
    (stripped of spaces) summed, renormalised over the labels; None when no label is among
    them."""
    labels = list(labels)      # a string of labels ("12345") must not match its substrings, "" above all
    p = np.zeros(len(labels))
    for token, logprob in reply.get("top") or []:
        text = str(token).strip()
        if text in labels and math.isfinite(float(logprob)):
            p[labels.index(text)] += math.exp(float(logprob))
    total = p.sum()
    return p / total if total > 0 else None


def first_label(reply: dict, labels: Sequence[str]) -> int | None:
    """Index of the first label that stands alone in a sampled answer ("4", "Rating: 4/5",
    "**4**"; not the 1 of "10", nor either end of a range, "1-5" or "1 to 5"), or None."""
    text = reply.get("text") or ""
    pattern = "|".join(re.escape(label) for label in labels)
    match = re.search(rf"(?<![0-9A-Za-z])(?<![0-9]-)(?<![0-9] to )({pattern})(?![0-9A-Za-z]|-[0-9]| to [0-9])", text)
    return None if match is None else list(labels).index(match.group(1))


__all__ = ["APIS", "SCORINGS", "Journal", "Reading", "ServedError", "ServedJudge", "endpoint_url", "first_label",
           "journal_for", "label_probs"]
