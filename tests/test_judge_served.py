"""The served judge (`--judge-endpoint`): scoring through a real OpenAI-compatible server that
the test starts (`transformers serve` on the installed SmolLM2-135M-Instruct folder, on
127.0.0.1 and a free port), the one-line failures, and `--resume` after the server stops.

The failure servers are real too, each the smallest thing that fails that way: a port nobody
listens on, a socket that accepts and never answers, a static file server (HTML, not JSON), and
a forwarding proxy in front of the real server that checks a bearer key, counts the requests it
forwards and stops forwarding after a budget (the server going away mid-run). Only loopback
addresses are used; every wait is bounded; every server is stopped.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest

from dialeval.cli import main
from dialeval.errors import DialevalError
from dialeval.metrics.judge.served import ServedJudge, endpoint_url, first_label, label_probs

HOST = "127.0.0.1"
START_TIMEOUT = 180          # s for the server to load the model and answer /v1/models
# transformers serve samples only when the generation config says so: asked for here, per request
SAMPLING = json.dumps({"generation_config": json.dumps({"do_sample": True, "temperature": 1.0, "top_k": 0,
                                                        "max_new_tokens": 8})})
ROWS = [
    {"id": "a", "context": ["Do you like to cook?"], "response": "Yes, I make pasta every Sunday.",
     "references": ["I do, mostly Italian."]},
    {"id": "b", "context": ["Where did you go on holiday?"], "response": "the the the the",
     "references": ["We went to Spain."]},
    {"id": "c", "context": ["What is your favourite film?"], "response": "I like films with robots, like Wall-E.",
     "references": ["Probably Alien."]},
    {"id": "d", "context": ["Do you have pets?"], "response": "No.", "references": ["Two cats."]},
]
SAMPLES = 2


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


# -- the real server -------------------------------------------------------------------------

def _serve_missing() -> str | None:
    for name in ("fastapi", "uvicorn", "openai", "transformers"):
        if importlib.util.find_spec(name) is None:
            return (f"transformers serve needs {name} (transformers[serving]: pip install -e '.[serve]', "
                    "which install.sh installs)")
    return None


@pytest.fixture(scope="module")
def server():
    why = _serve_missing()
    if why:
        pytest.skip(why)
    try:
        from dialeval.metrics.judge.metric import default_judge_model

        folder = default_judge_model()
    except DialevalError as exc:
        pytest.skip(f"the installed SmolLM2-135M-Instruct is not there: {exc}")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TRANSFORMERS_VERBOSITY": "error"}
    proc = subprocess.Popen([sys.executable, "-c", "from transformers.cli.transformers import main; main()",
                             "serve", folder, "--host", HOST, "--port", str(port), "--device", "cpu",
                             "--dtype", "float32", "--log-level", "error"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"http://{HOST}:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"transformers serve exited {proc.returncode}: "
                            f"{proc.stderr.read().decode(errors='replace')[-500:]}")
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=5) as r:
                    models = json.load(r)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not answer within {START_TIMEOUT} s")
                time.sleep(1)
        yield {"url": url, "model": models["data"][0]["id"], "folder": folder}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)


class Proxy:
    """Forwards to `upstream`; refuses a wrong bearer key with 401 when `key` is set; after
    `budget` forwarded requests it drops every connection unanswered (a server gone)."""

    def __init__(self, upstream: str, key: str | None = None, budget: int | None = None):
        self.upstream, self.key, self.budget = upstream, key, budget
        self.forwarded = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _relay(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else None
                if proxy.key is not None and self.headers.get("Authorization") != f"Bearer {proxy.key}":
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if proxy.budget is not None and proxy.forwarded >= proxy.budget:
                    self.close_connection = True
                    return                     # no answer at all
                proxy.forwarded += 1
                request = urllib.request.Request(proxy.upstream + self.path, data=data, method=method,
                                                 headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=120) as r:
                    body = r.read()
                    status = r.status
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                self._relay("POST")

            def do_GET(self):
                self._relay("GET")

        self.httpd = http.server.ThreadingHTTPServer((HOST, 0), Handler)
        self.url = f"http://{HOST}:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def _score(data, out, endpoint, journal, *extra, model=None):
    args = ["score", str(data), "-o", str(out), "--metrics", "judge", "--judge-endpoint", endpoint + "/v1",
            "--judge-samples", str(SAMPLES), "--judge-concurrency", "1", "--judge-retries", "0",
            "--judge-timeout", "60", "--judge-journal", str(journal), "--judge-extra-body", SAMPLING,
            "--chunk-size", "2", *extra]
    if model:
        args += ["--judge-model", model]
    return main(args)


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("dialeval: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _journal_texts(journal) -> list[str]:
    rows = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    return [r["reply"]["text"] for r in rows if "text" in r["reply"]]


# -- through the real server -------------------------------------------------------------------

def test_scores_through_transformers_serve(server, data, tmp_path, capsys):
    """Every item is scored from SAMPLES sampled answers (transformers serve returns no
    log-probabilities, so `auto` takes the sample path), the signature names the served model,
    template and path, each score is the mean of the ratings its answers name, and a second run
    asks the server nothing (every reply is in the journal) and writes the same bytes."""
    proxy = Proxy(server["url"])
    try:
        journal = tmp_path / "journal.jsonl"
        out = tmp_path / "out.jsonl"
        assert _score(data, out, proxy.url, journal, "--judge-api", "completions") == 0
        asked = proxy.forwarded
        assert asked == 1 + 1 + len(ROWS) * SAMPLES      # GET /models, the probe, the answers
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert [r["id"] for r in rows] == [r["id"] for r in ROWS]
        err = capsys.readouterr().err
        # each score from the journal's answers, read here by a separate rule: the first digit
        # 1-5 that is not part of a longer number or word, nor an end of a range
        texts = _journal_texts(journal)
        assert len(texts) == len(ROWS) * SAMPLES
        scored = 0
        for i, row in enumerate(rows):
            ratings = []
            for text in texts[i * SAMPLES:(i + 1) * SAMPLES]:
                for k, ch in enumerate(text):
                    after = text[k + 1:]
                    before = text[:k]
                    if before.endswith("-") and before[-2:-1].isdigit() or \
                            before.endswith(" to ") and before[-5:-4].isdigit():
                        continue
                    if ch in "12345" and not (k and text[k - 1].isalnum()) and \
                            not (after[:1].isalnum() or (after[:1] == "-" and after[1:2].isdigit())
                                 or (after[:4] == " to " and after[4:5].isdigit())):
                        ratings.append(int(ch))
                        break
            value = row["scores"]["judge"]
            if ratings:
                scored += 1
                assert value == pytest.approx(sum(ratings) / len(ratings), abs=1e-12)
            else:
                assert value is None or math.isnan(value)
        assert scored >= 1, texts      # SmolLM2 after "Rating (1-5): " names a digit nearly always
        assert "sampled answers per item" in err
        first = out.read_bytes()
        out.unlink()
        assert _score(data, out, proxy.url, journal, "--judge-api", "completions", model=server["model"]) == 0
        assert proxy.forwarded == asked                  # nothing asked again
        assert out.read_bytes() == first
    finally:
        proxy.close()
    from dialeval.metrics.registry import build_metric

    metric_sig = str(build_metric("judge", judge_endpoint=server["url"], judge_model=server["model"],
                                  judge_api="completions",
                                  judge_samples=SAMPLES, judge_journal=str(journal),
                                  judge_extra_body=SAMPLING).signature())
    assert f"model:served:{server['model']}" in metric_sig and "api:completions" in metric_sig
    assert "template:overall@" in metric_sig and f"scoring:sample:n{SAMPLES}:t1:seed0:extra@" in metric_sig


def test_resume_after_the_server_goes_away(server, data, tmp_path, capsys):
    """The server stops answering mid-run: one line, exit 2, the finished shard kept; with the
    server back, --resume asks only what was never answered, and the output equals a run that
    was never stopped."""
    budget = 1 + 1 + 3 * SAMPLES        # /models, the probe, shard 1 (2 items), one item of shard 2
    proxy = Proxy(server["url"], budget=budget)
    try:
        journal = tmp_path / "journal.jsonl"
        out = tmp_path / "out.jsonl"
        assert _score(data, out, proxy.url, journal) == 2
        line = _error_line(capsys)
        assert "connection lost" in line and "--resume" in line
        assert not out.exists() and (tmp_path / "out.jsonl.partial").exists()
        assert proxy.forwarded == budget
        proxy.budget = None
        assert _score(data, out, proxy.url, journal, "--resume") == 0
        assert "already done" in capsys.readouterr().err
        # the model name is in the journal's key of nothing: GET /models is asked again (cheap),
        # and of the answers only the last item's
        assert proxy.forwarded - budget == 1 + SAMPLES
        resumed = out.read_bytes()
    finally:
        proxy.close()
    clean = tmp_path / "clean.jsonl"
    proxy = Proxy(server["url"])
    try:
        assert _score(data, clean, proxy.url, tmp_path / "other-journal.jsonl") == 0
    finally:
        proxy.close()
    assert clean.read_bytes() == resumed


# -- the failure lines ---------------------------------------------------------------------------

def test_unreachable_server_is_one_line(data, tmp_path, capsys):
    port = free_port()          # nobody listens there
    rc = _score(data, tmp_path / "o.jsonl", f"http://{HOST}:{port}", tmp_path / "j.jsonl", model="m")
    assert rc == 2
    line = _error_line(capsys)
    assert f"judge endpoint http://{HOST}:{port}/v1/chat/completions: cannot connect" in line
    assert "after 1 try" in line


def test_timeout_is_one_line(data, tmp_path, capsys):
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.bind((HOST, 0))
    silent.listen(8)              # accepts connections (the kernel does) and never answers
    try:
        port = silent.getsockname()[1]
        rc = _score(data, tmp_path / "o.jsonl", f"http://{HOST}:{port}", tmp_path / "j.jsonl",
                    "--judge-timeout", "1", model="m")
    finally:
        silent.close()
    assert rc == 2
    assert "no reply within 1 s (--judge-timeout) after 1 try" in _error_line(capsys)


def test_malformed_reply_is_one_line(data, tmp_path, capsys):
    site = tmp_path / "site"
    (site / "v1").mkdir(parents=True)
    (site / "v1" / "models").write_text("<html>not an API</html>", encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer((HOST, 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        port = httpd.server_address[1]
        rc = _score(data, tmp_path / "o.jsonl", f"http://{HOST}:{port}", tmp_path / "j.jsonl")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert rc == 2
    assert f"http://{HOST}:{port}/v1/models: malformed reply (not JSON: '<html>not an API</html>')" in _error_line(capsys)


def test_bad_key_is_one_line_and_the_good_key_works(server, data, tmp_path, capsys, monkeypatch):
    proxy = Proxy(server["url"], key="right-key")
    try:
        monkeypatch.setenv("MY_JUDGE_KEY", "wrong-key")
        rc = _score(data, tmp_path / "o.jsonl", proxy.url, tmp_path / "j.jsonl", "--judge-api-key-env",
                    "MY_JUDGE_KEY", model=server["model"])
        assert rc == 2
        assert "HTTP 401 (the key in $MY_JUDGE_KEY was refused)" in _error_line(capsys)
        monkeypatch.delenv("MY_JUDGE_KEY")
        rc = _score(data, tmp_path / "o.jsonl", proxy.url, tmp_path / "j.jsonl", "--judge-api-key-env",
                    "MY_JUDGE_KEY", model=server["model"])
        assert rc == 2
        assert "--judge-api-key-env MY_JUDGE_KEY: the variable is not set" in _error_line(capsys)
        monkeypatch.setenv("MY_JUDGE_KEY", "right-key")
        assert _score(data, tmp_path / "o.jsonl", proxy.url, tmp_path / "j.jsonl", "--judge-api-key-env",
                      "MY_JUDGE_KEY", model=server["model"]) == 0
    finally:
        proxy.close()


# -- reading answers: no server needed ------------------------------------------------------------

def test_endpoint_urls():
    assert endpoint_url("http://127.0.0.1:8000", "chat")[:2] == ("http://127.0.0.1:8000/v1/chat/completions", "chat")
    assert endpoint_url("http://127.0.0.1:8000/v1/", "completions")[:2] == \
        ("http://127.0.0.1:8000/v1/completions", "completions")
    url, api, base = endpoint_url("http://127.0.0.1:11434/v1/completions", "chat")
    assert (api, base) == ("completions", "http://127.0.0.1:11434/v1")
    with pytest.raises(DialevalError, match="http"):
        endpoint_url("127.0.0.1:8000", "chat")


def test_first_label_reads_a_lone_rating():
    labels = list("12345")
    assert first_label({"text": "Rating: 4/5"}, labels) == 3
    assert first_label({"text": "**2**"}, labels) == 1
    assert first_label({"text": "10 out of 10, so 5"}, labels) == 4
    assert first_label({"text": "Scale 8 out of 10"}, labels) is None
    assert first_label({"text": "1-5: I give it 3"}, labels) == 2
    assert first_label({"text": "from 1 to 5, 4."}, labels) == 3


def test_logprobs_path_equals_the_local_softmax_over_the_rating_logits():
    """A server's top-20 log-probabilities carry the local judge's answer: the renormalised
    probabilities of the rating tokens are the softmax over their five logits, whatever the other
    tokens (here from made-up logits over a 30-token vocabulary, written as a server would)."""
    from dialeval.metrics.judge.metric import expected_rating

    rng = np.random.default_rng(0)
    logits = rng.normal(size=30) * 3
    vocab = [str(d) for d in "12345"] + [f"w{i}" for i in range(25)]
    logits[:5] += 4                    # the ratings among the top 20
    logsoftmax = logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()
    order = np.argsort(-logsoftmax)[:20]
    reply = {"top": [[vocab[i], float(logsoftmax[i])] for i in order]}
    p = label_probs(reply, list("12345"))
    assert float((p * np.arange(1, 6)).sum()) == pytest.approx(float(expected_rating(logits[None, :5])[0]), abs=1e-12)
    # " 3" and "3" are one rating; a rating outside the top tokens has probability 0
    p = label_probs({"top": [["3", math.log(0.2)], [" 3", math.log(0.2)], ["5", math.log(0.1)],
                             ["x", math.log(0.5)]]}, list("12345"))
    assert p.tolist() == pytest.approx([0, 0, 0.8, 0, 0.2])
    assert label_probs({"top": [["x", 0.0]]}, list("12345")) is None
    # the labels as the judge passes them (the string "12345"): a space, a newline or a token that
    # decodes to nothing is no rating (they once all counted as "1": a string holds "" at 0)
    p = label_probs({"top": [["\n", math.log(0.5)], [" ", math.log(0.2)], ["", math.log(0.1)], ["12", math.log(0.1)],
                             ["4", math.log(0.05)], ["2", math.log(0.05)]]}, "12345")
    assert p.tolist() == pytest.approx([0, 0.5, 0, 0.5, 0])


def test_chat_reply_without_logprobs_shapes(tmp_path):
    """The two OpenAI shapes of top log-probabilities (chat: content[0].top_logprobs;
    completions: top_logprobs[0] as a token -> logprob object), and one that is neither."""
    judge = ServedJudge("http://127.0.0.1:9/v1", "m", journal="off")
    chat = {"choices": [{"logprobs": {"content": [{"token": "4", "logprob": -0.1,
                                                   "top_logprobs": [{"token": "4", "logprob": -0.1},
                                                                    {"token": "5", "logprob": -2.4}]}]}}]}
    assert judge._top_tokens(chat) == [["4", -0.1], ["5", -2.4]]
    completion = {"choices": [{"text": "4", "logprobs": {"top_logprobs": [{"4": -0.1, " 3": -3.0}]}}]}
    assert judge._top_tokens(completion) == [["4", -0.1], [" 3", -3.0]]
    assert judge._top_tokens({"choices": [{"message": {"content": "4"}}]}) is None
    with pytest.raises(DialevalError, match="malformed reply"):
        judge._top_tokens({"choices": [{"logprobs": {"content": [{"top_logprobs": [{"tok": 1}]}]}}]})
