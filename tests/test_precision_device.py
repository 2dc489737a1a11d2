"""Precision and device of ADEM and the MME sub-metrics (issue 33 items 3 and 4):
`--adem-precision/--adem-device` and `--mme-precision/--mme-device`, with the rules of
`--sentence-precision/--sentence-device` and `--bertscore-precision/--bertscore-device`.

- the default (fp32, cpu) gives the numbers and signatures it always gave: no dtype or device field;
- bf16 names `dtype:bf16` and stays close to fp32 (tolerances from docs/speed.md's measurement:
  on 300 USR-TC and 375 FED rows the largest |d| was 0.021 for the ADEMs on their 1-5 scale, 0.017
  for a raw MME probability, and relatively 0.004 for SM's surprisals, 0.029 for its perplexity;
  here the eight demo rows, with room to spare);
- MME's TCM (stored word vectors and a small graph network) stays fp32: under `--mme-precision bf16`
  mme_tcm gives the fp32 values bit for bit and signs no dtype; SM's masked LM runs in bf16;
- a CUDA device on a machine where torch sees none is refused in one line (exit 2) before any model
  is read.

Uses the installed default models (install.sh); skips where they are not installed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")

import torch  # noqa: E402

from dialeval.errors import DialevalError  # noqa: E402
from dialeval.metrics.registry import build_metric  # noqa: E402
from dialeval.models.defaults import default_model_dir  # noqa: E402

# read at collection, before conftest hides the defaults per test
ADEM = {v: default_model_dir(v) for v in ("adem", "c_adem", "r_adem")}
MME = default_model_dir("mme")
MME_CROSS = default_model_dir("mme_cross")
COMPOSE = default_model_dir("compose")
BF16_MME = ("mme_fm", "mme_rm", "mme_em",                    # MiniLM's features
            "mme_sm_nll", "mme_sm_nce", "mme_sm_ppl")       # SM's masked LM
FP32_MME = ("mme_tcm",)                                      # fp32 always
DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo.jsonl"

ADEM_ATOL = 0.05      # 1-5 scale
MME_ATOL = 0.03       # raw probabilities (mme_norm none: the usl clipping would hide the gaps)
SM_RTOL = {"mme_sm_nll": 0.01, "mme_sm_nce": 0.01, "mme_sm_ppl": 0.05}   # raw surprisals: relative

needs_models = pytest.mark.skipif(any(v is None for v in ADEM.values()) or MME is None,
                                  reason="the default models package (install.sh) is not installed")
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="torch sees a CUDA device here")


def _rows():
    return [json.loads(line) for line in DEMO.read_text(encoding="utf-8").splitlines() if line.strip()]


def _metrics(precision: str | None):
    """Metric objects: the three ADEM variants (each with its own folder) and the seven MME
    sub-metrics (raw values). precision None: the options left out (today's call)."""
    adem = {} if precision is None else {"adem_precision": precision}
    mme = {"mme_norm": "none"} if precision is None else {"mme_norm": "none", "mme_precision": precision}
    return ([build_metric(v, adem_model=ADEM[v], **adem) for v in ("adem", "c_adem", "r_adem")]
            + [build_metric(m, mme_model=MME, **mme) for m in BF16_MME + FP32_MME])


@pytest.fixture(scope="module")
def runs():
    if any(v is None for v in ADEM.values()) or MME is None:
        pytest.skip("the default models package (install.sh) is not installed")
    from dialeval import score

    rows = _rows()
    return {"default": score(rows, _metrics(None)), "fp32": score(rows, _metrics("fp32")),
            "bf16": score(rows, _metrics("bf16"))}


def _fields(signature) -> list[str]:
    return str(signature).split("|")


@needs_models
def test_fp32_is_todays_numbers_and_signatures(runs):
    default, fp32 = runs["default"], runs["fp32"]
    for name, sig in default.signatures.items():
        assert str(fp32.signatures[name]) == str(sig)
        assert not any(f.startswith(("dtype:", "device:")) for f in _fields(sig)), sig
        np.testing.assert_array_equal(fp32.sentence[name], default.sentence[name])


@needs_models
def test_bf16_is_named_in_the_signature_where_it_applies(runs):
    fp32, bf16 = runs["fp32"], runs["bf16"]
    for name in ("adem", "c_adem", "r_adem") + BF16_MME:
        fields = _fields(bf16.signatures[name])
        assert "dtype:bf16" in fields, fields
        # the fp32 signature with dtype:bf16 before the version, nothing else changed
        assert [f for f in fields if f != "dtype:bf16"] == _fields(fp32.signatures[name])
        assert fields.index("dtype:bf16") == len(fields) - 2
    for name in FP32_MME:
        assert str(bf16.signatures[name]) == str(fp32.signatures[name])
        np.testing.assert_array_equal(bf16.sentence[name], fp32.sentence[name])


@needs_models
def test_bf16_is_close_to_fp32(runs):
    fp32, bf16 = runs["fp32"], runs["bf16"]
    moved = 0
    for name in ("adem", "c_adem", "r_adem") + BF16_MME:
        a, b = np.asarray(fp32.sentence[name]), np.asarray(bf16.sentence[name])
        assert np.isfinite(a).all() and np.isfinite(b).all()
        if name.startswith("mme_sm"):
            np.testing.assert_allclose(b, a, rtol=SM_RTOL[name], atol=0, err_msg=name)
        else:
            np.testing.assert_allclose(b, a, atol=ADEM_ATOL if "adem" in name else MME_ATOL, rtol=0, err_msg=name)
        moved += int((a != b).any())
    assert moved >= 7        # bf16 did run: the values are not the fp32 ones


def test_precision_is_checked_before_any_work():
    for metric, option, extra in (("adem", "adem_precision", {"adem_model": ADEM["adem"]}),
                                  ("mme_fm", "mme_precision", {"mme_model": MME})):
        with pytest.raises(DialevalError, match=rf"^--{option.replace('_', '-')} fp16: choose from fp32, bf16$"):
            build_metric(metric, **{option: "fp16"}, **{k: v for k, v in extra.items() if v is not None})


def test_only_the_hierarchical_encoder_refuses_bf16_in_one_line():
    """MiniLM, frozen or with tuned layers (ADEM's, MME's, the cross-encoder's), takes every
    device and precision; the GRU encoder trained here runs in fp32 only."""
    from dialeval.metrics.learned.adem.encoding import check_runtime

    check_runtime("minilm", "cuda", "bf16")
    check_runtime("hred:/x", "cuda", "fp32")           # the GRU encoder takes a device
    with pytest.raises(DialevalError) as info:
        check_runtime("hred:/x", "cpu", "bf16")
    message = str(info.value)
    assert message.startswith("--adem-precision bf16: this ADEM reads a hierarchical GRU") and "\n" not in message


@needs_models
def test_the_shipped_cross_encoder_and_compose_take_bf16():
    """`mme_rm_cross` (all six MiniLM layers tuned, stored float16) and `compose`, which reads
    it, run under --mme-precision bf16: named in the signature, close to fp32 (the raw
    probability within MME's tolerance), and not the fp32 values bit for bit."""
    from dialeval import score

    if MME_CROSS is None or COMPOSE is None:
        pytest.skip("the default models package has no mme_cross or compose folder")
    rows = _rows()
    runs = {p: score(rows, [build_metric("mme_rm_cross", mme_cross_model=MME_CROSS, mme_norm="none",
                                         mme_precision=p), "compose"], mme_precision=p,
                     compose_model=COMPOSE, mme_model=MME, mme_cross_model=MME_CROSS)
            for p in ("fp32", "bf16")}
    a, b = np.asarray(runs["fp32"].sentence["mme_rm_cross"]), np.asarray(runs["bf16"].sentence["mme_rm_cross"])
    np.testing.assert_allclose(b, a, atol=MME_ATOL, rtol=0)
    assert (a != b).any()
    assert "dtype:bf16" in _fields(runs["bf16"].signatures["mme_rm_cross"])
    assert "dtype:bf16" not in _fields(runs["fp32"].signatures["mme_rm_cross"])
    assert np.isfinite(runs["bf16"].sentence["compose"]).all()


@no_cuda
@pytest.mark.parametrize("flag,metric,model", [
    ("--adem-device", "adem", "adem"), ("--adem-device", "c_adem", "c_adem"),
    ("--mme-device", "mme_rm", "mme"), ("--mme-device", "mme_sm_nll", "mme")])
def test_cuda_without_a_gpu_is_refused_in_one_line_with_exit_2(tmp_path, capsys, flag, metric, model):
    from dialeval.backbones import cached_backbones
    from dialeval.cli.main import main
    from dialeval.models.artifacts import opened_models

    src = tmp_path / "in.jsonl"
    src.write_text('{"response": "hi there", "references": ["hello there"], "context": ["hi"]}\n', encoding="utf-8")
    folder = (ADEM.get(model) if model != "mme" else MME) or str(tmp_path / "no-model")
    option = "--adem-model" if flag == "--adem-device" else "--mme-model"
    before = (len(cached_backbones()), len(opened_models()))
    rc = main(["score", str(src), "--metrics", metric, option, folder, flag, "cuda", "-o", str(tmp_path / "out.jsonl")])
    out, err = capsys.readouterr()
    assert rc == 2
    line = f"dialeval: error: {flag} cuda: torch sees no CUDA device here (available: cpu)"
    assert err.strip().splitlines() == [line]
    assert out == ""
    assert not (tmp_path / "out.jsonl").exists()
    assert (len(cached_backbones()), len(opened_models())) == before


def test_deep_am_takes_the_sentence_encoders_precision_and_device():
    """deep_am (and deep_amfm's AM half) read sent_cosine's vectors, so they take its options:
    fp32 names no runtime, bf16 is named and stays within the sentence encoder's measured gap
    (docs/speed.md: 0.0038 on USR-TC), and a CUDA device without a GPU is refused in one line."""
    from dialeval.data.readers import read_samples
    from dialeval.scoring import score

    samples = read_samples(str(DEMO))
    fp32 = score(samples, ["deep_am"], progress=False)
    bf16 = score(samples, ["deep_am"], progress=False, sentence_precision="bf16")
    assert "dtype" not in str(fp32.signatures["deep_am"])
    assert "|dtype:bf16|" in str(bf16.signatures["deep_am"])
    a, b = fp32.sentence["deep_am"], bf16.sentence["deep_am"]
    assert np.array_equal(np.isnan(a), np.isnan(b)) and np.nanmax(np.abs(a - b)) < 0.01
    assert np.nanmax(np.abs(a - b)) > 0                         # bf16 did run
    if not torch.cuda.is_available():
        with pytest.raises(DialevalError, match=r"^--sentence-device cuda: torch sees no CUDA device here"):
            build_metric("deep_amfm", sentence_device="cuda")
