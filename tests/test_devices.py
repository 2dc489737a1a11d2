"""Devices of the model metrics (issue 33 item 4): one shared check (backbones.runtime.check_device),
called by each metric's constructor, refuses a device that is not here in one line naming the
option and the devices there are, before any model is read; "cpu" builds the metric.

Runs on a machine without CUDA (the refusal path); where torch sees a GPU the refusal tests skip.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

import torch  # noqa: E402

from dialeval.errors import DialevalError  # noqa: E402
from dialeval.metrics.registry import build_metric  # noqa: E402
from dialeval.models.defaults import default_model_dir  # noqa: E402

LM = default_model_dir("lm")     # read at collection, before conftest hides the defaults per test
ADEM = {v: default_model_dir(v) for v in ("adem", "c_adem", "r_adem")}
MME = default_model_dir("mme")
MME_CROSS = default_model_dir("mme_cross")
MME_METRICS = ("mme_fm", "mme_rm", "mme_tcm", "mme_em", "mme_sm_nll", "mme_sm_nce", "mme_sm_ppl")

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="torch sees a CUDA device here")

# (metric, its device option, the other options it needs)
DEVICE_METRICS = [
    ("sent_cosine", "sentence_device", {}),
    ("bertscore_p", "bertscore_device", {}),
    ("bertscore_r", "bertscore_device", {}),
    ("bertscore_f", "bertscore_device", {}),
    ("lm_coherence", "lm_device", {"lm_model": LM}),
    ("lm_coherence_raw", "lm_device", {"lm_model": LM}),
    ("lm_fluency", "lm_device", {"lm_model": LM}),
    ("lm_fluency_raw", "lm_device", {"lm_model": LM}),
    ("deep_fm", "lm_device", {"lm_model": LM}),
    ("deep_amfm", "lm_device", {"lm_model": LM}),
    ("deep_am", "sentence_device", {}),                  # the sentence encoder's vectors
    ("deep_amfm", "sentence_device", {"lm_model": LM}),
    ("judge", "judge_device", {}),
    *[(v, "adem_device", {"adem_model": ADEM[v]}) for v in ("adem", "c_adem", "r_adem")],
    *[(m, "mme_device", {"mme_model": MME}) for m in MME_METRICS],
    ("mme_rm_cross", "mme_device", {"mme_cross_model": MME_CROSS}),
]


def _loaded():
    """What the process has loaded: backbones, and the trained models (the LM's among them)."""
    from dialeval.backbones import cached_backbones
    from dialeval.models.artifacts import opened_models

    return len(cached_backbones()), len(opened_models())


def test_every_metric_with_a_device_option_is_checked_here():
    from dialeval.metrics.registry import REGISTRY

    takes = set()
    for name, spec in REGISTRY.items():
        try:
            options = spec.option_specs()
        except DialevalError:
            continue
        if any(o.endswith("_device") for o in options):
            takes.add(name)
    listed = {m for m, _, _ in DEVICE_METRICS}
    # the judge's other qualities are the same class as `judge`
    assert {n for n in takes if not n.startswith("judge_")} == listed


@no_cuda
@pytest.mark.parametrize("value", ["cuda", "cuda:0", "CUDA"])
@pytest.mark.parametrize("metric,option,extra", DEVICE_METRICS, ids=[m for m, _, _ in DEVICE_METRICS])
def test_cuda_without_a_gpu_is_refused_before_any_work(metric, option, extra, value):
    before = _loaded()
    with pytest.raises(DialevalError) as info:
        build_metric(metric, **{option: value}, **{k: v for k, v in extra.items() if v is not None})
    message = str(info.value)
    flag = "--" + option.replace("_", "-")
    assert message == f"{flag} {value}: torch sees no CUDA device here (available: cpu)"
    assert "\n" not in message
    assert _loaded() == before        # refused before a model was read


@pytest.mark.parametrize("value", ["gpu", "cdua", "cuda:x", ""])
@pytest.mark.parametrize("metric,option", [("sent_cosine", "sentence_device"), ("bertscore_f", "bertscore_device"),
                                           ("lm_fluency", "lm_device"), ("deep_fm", "lm_device"),
                                           ("judge", "judge_device")])
def test_a_misspelt_device_is_refused_naming_the_option(metric, option, value):
    with pytest.raises(DialevalError, match=rf"^--{option.replace('_', '-')} {value}: not a device \(available: cpu"):
        build_metric(metric, **{option: value})


def test_check_device_normalises():
    from dialeval.backbones import check_device

    assert check_device("lm_device", None) == "cpu"
    assert check_device("lm_device", " CPU ") == "cpu"


@pytest.mark.parametrize("metric,option,extra", DEVICE_METRICS, ids=[m for m, _, _ in DEVICE_METRICS])
def test_cpu_builds_the_metric(metric, option, extra):
    if any(k in extra and extra[k] is None for k in ("lm_model", "adem_model", "mme_model")):
        pytest.skip("the default models package (install.sh) is not installed")
    if metric == "judge":
        pytest.importorskip("transformers")
        from dialeval.models.pretrained import smollm2_135m

        try:
            smollm2_135m(prepare=False)
        except DialevalError as exc:
            pytest.skip(f"SmolLM2-135M-Instruct is not prepared here: {exc}")
    m = build_metric(metric, **{option: "cpu"}, **extra)
    assert m.name == metric
    # the one runtime rule (metrics/model_metric.py): the default device is not named
    assert not any(k == "device" for k, _ in m.signature_options())


@no_cuda
@pytest.mark.parametrize("flag,metric", [("--sentence-device", "sent_cosine"), ("--bertscore-device", "bertscore_f"),
                                         ("--lm-device", "lm_fluency"), ("--judge-device", "judge")])
def test_the_cli_refuses_in_one_line_with_exit_2(tmp_path, capsys, flag, metric):
    from dialeval.cli.main import main

    src = tmp_path / "in.jsonl"
    src.write_text('{"response": "hi there", "references": ["hello there"]}\n', encoding="utf-8")
    rc = main(["score", str(src), "--metrics", metric, flag, "cuda"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert err.strip().splitlines() == [f"dialeval: error: {flag} cuda: torch sees no CUDA device here (available: cpu)"]
    assert out == ""


@no_cuda
@pytest.mark.parametrize("command", [
    ["train", "adem", "--data", "{rated}"],
    ["train", "mme", "--corpus", "{corpus}", "--only", "rm"],
    ["train", "dialogue-encoder", "--corpus", "{corpus}"],
    ["train", "lm", "--corpus", "{corpus}"]], ids=lambda c: c[1])
def test_every_torch_trainer_refuses_a_missing_gpu_in_one_line(tmp_path, capsys, command):
    """`--device cuda` on a machine without one stops every trainer that runs torch in one line,
    exit 2, before its model is read or its output folder made (on a GPU: measured there)."""
    from dialeval.cli.main import main

    rated = tmp_path / "rated.jsonl"
    rated.write_text("".join(f'{{"context": ["hi {i}"], "response": "hello {i}", "references": ["hey {i}"], '
                             f'"score": {1 + i % 5}}}\n' for i in range(30)), encoding="utf-8")
    corpus = tmp_path / "dialogues.txt"
    corpus.write_text("".join(f"hi there {i} __eou__ hello to you {i} __eou__\n" for i in range(30)), encoding="utf-8")
    out = tmp_path / "out"
    args = [a.format(rated=rated, corpus=corpus) for a in command] + ["-o", str(out), "--device", "cuda"]
    rc = main(args)
    captured = capsys.readouterr()
    assert rc == 2
    errors = [line for line in captured.err.strip().splitlines() if not line.startswith("[")]
    assert errors == ["dialeval: error: --device cuda: torch sees no CUDA device here (available: cpu)"]
    assert not out.exists()


# -- precision of the sentence encoder (the BERTScore one: tests/test_bertscore.py) ------------

def test_sentence_bf16_is_close_named_and_leaves_fp32_alone():
    pytest.importorskip("sentence_transformers")
    from dialeval import score

    rows = [{"response": "i would love to go to the beach tomorrow .",
             "references": ["let us go to the beach tomorrow .", "i am busy tomorrow , sorry ."]},
            {"response": "the weather is nice", "references": ["the weather is nice today"]},
            {"response": "what time does the train leave ?", "references": ["it leaves at nine ."]}]
    fp32 = score(rows, ["sent_cosine"])
    bf16 = score(rows, ["sent_cosine"], sentence_precision="bf16")
    again = score(rows, ["sent_cosine"])
    np.testing.assert_array_equal(again.sentence["sent_cosine"], fp32.sentence["sent_cosine"])
    np.testing.assert_allclose(bf16.sentence["sent_cosine"], fp32.sentence["sent_cosine"], atol=1e-2, rtol=0)
    assert str(fp32.signatures["sent_cosine"]).endswith("|model:all-MiniLM-L6-v2|version:" +
                                                        str(fp32.signatures["sent_cosine"]).rsplit(":", 1)[1])
    assert "|model:all-MiniLM-L6-v2|dtype:bf16|" in str(bf16.signatures["sent_cosine"])
    with pytest.raises(DialevalError, match="--sentence-precision fp16: choose from fp32, bf16"):
        build_metric("sent_cosine", sentence_precision="fp16")
