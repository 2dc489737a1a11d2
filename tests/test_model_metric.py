"""The one base of the model-backed metrics (metrics/model_metric.py): every one names its model
in exactly one `model:` field and its runtime under one rule, at the defaults and with every
precision option at bf16; building one loads no model."""

from pathlib import Path

import pytest

from dialeval.metrics.model_metric import ModelMetric, Runtime, runtime_fields, without_default_runtime
from dialeval.metrics.registry import REGISTRY
from dialeval.errors import DialevalError


def test_runtime_fields_name_only_what_is_off_the_default():
    cpu, bf16 = Runtime(), Runtime("cpu", "bf16")
    assert runtime_fields({"model": cpu}) == []
    assert runtime_fields({"model": bf16}) == [("dtype", "bf16")]
    assert runtime_fields({"encoder": bf16, "lm": bf16}) == [("dtype", "bf16")]      # they agree
    assert runtime_fields({"encoder": cpu, "lm": bf16}) == [("dtype", "lm=bf16")]    # the rest at fp32
    assert runtime_fields({"a": Runtime("cuda", "bf16"), "b": Runtime("cuda", "bf16")}) == [
        ("device", "cuda"), ("dtype", "bf16")]


def test_signatures_from_before_the_rule_compare_without_their_default_runtime():
    old = "sent_cosine|refs:multi|tok:model|model:all-MiniLM-L6-v2|device:cpu|version:0.1.0"
    assert without_default_runtime(old) == "sent_cosine|refs:multi|tok:model|model:all-MiniLM-L6-v2|version:0.1.0"
    kept = "x|model:m|device:cuda|dtype:bf16|version:0.1.0"
    assert without_default_runtime(kept) == kept


def test_a_metric_naming_its_model_twice_is_refused():
    class Twice(ModelMetric):
        name = "twice"

        def model_fields(self):
            return [("model", "a"), ("model", "b")]

    with pytest.raises(DialevalError, match="one `model:` field"):
        Twice().signature_options()


def _model_metrics():
    names = []
    for name, spec in REGISTRY.items():
        try:
            cls = spec.metric_class()
        except DialevalError:
            continue
        if isinstance(cls, type) and issubclass(cls, ModelMetric):
            names.append(name)
    return sorted(names)


MODEL_METRICS = _model_metrics()
SHIPPED = Path(__file__).resolve().parents[1] / "packages" / "dialeval-models" / "src" / "dialeval_models"


def test_every_model_backed_family_is_a_model_metric():
    families = {REGISTRY[n].family for n in MODEL_METRICS}
    assert {"learned", "mme", "lm", "amfm", "compose", "judge"} <= families
    assert {"sent_cosine", "bertscore_f", "deep_am", "deep_amfm", "mme_rm_cross"} <= set(MODEL_METRICS)


@pytest.mark.parametrize("name", MODEL_METRICS)
def test_one_model_field_and_the_runtime_rule(name, monkeypatch):
    if not (SHIPPED / "compose").is_dir():
        pytest.skip("the shipped default models are not in this checkout")
    monkeypatch.setenv("DIALEVAL_MODELS_DIR", str(SHIPPED))
    spec = REGISTRY[name]
    try:
        metric = spec.build()
    except DialevalError as exc:
        pytest.skip(f"{name} cannot be built here: {exc}")
    fields = metric.signature_options()
    keys = [k for k, _ in fields]
    assert keys.count("model") == 1 and keys[0] == "model"
    assert "device" not in keys and "dtype" not in keys          # the default runtime is not named
    assert not any(k in ("prec", "encoder_dtype", "encoder_device") for k in keys)
    assert not metric.model_loaded                              # signing loaded nothing
    precision = {k: "bf16" for k in spec.options if k.endswith("_precision")}
    if not precision:
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                          # compose: members now at bf16
        at_bf16 = spec.build(**precision).signature_options()
    runtime = dict(at_bf16).get("dtype")
    if name == "mme_tcm":                                        # fp32 always: signs no dtype
        assert runtime is None
    else:
        assert runtime is not None and "bf16" in runtime and [k for k, _ in at_bf16].count("dtype") == 1
