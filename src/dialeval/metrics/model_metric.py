"""The base of every metric that scores through a model: one way to the model, one runtime, one
way to sign.

Each model-backed family once built its own: a lazy `model` under its own name, a reader of the
folder's small files under four names, a signature memo under three, and device and precision
fields written always, only when not the default, under another prefix, or never. What a
`ModelMetric` declares instead, and what the base then does for it:

- `load_model()`: how the model is read, through one of the two doors (`dialeval.backbones` for
  an encoder or LM from elsewhere, `dialeval.models.artifacts` for a folder trained here). The
  base calls it once, on first use of `model` (scoring), never while a run is planned.
- `describe()`: what the folder's small files say (manifest, config.json), read once, without
  weights, as `described`. Planning, `compare` and `report` sign a metric from this alone.
- `model_fields()`: the signature's fields naming the model, exactly one of them `model:`
  (the manifest's hash for a folder trained here, the backbone rule `name:size` otherwise);
  other identity fields (`base:`, `encoder:`) follow it.
- `option_fields()`: the metric's own settings that change its numbers.
- `runtime`: a `Runtime` (device, precision) checked once in the constructor from the family's
  `<prefix>_device` / `<prefix>_precision` options. The signature names it under one rule, last:
  `device:` when not cpu, `dtype:` when not fp32, so a default run signs neither. A metric that
  reads several models at several runtimes (deep AM-FM, a composition) gives `runtimes()`, and
  the fields then name each one that is not the default (`dtype:lm=bf16`).

The signature is put together once per metric object (every batch's output carries it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DialevalError
from .base import Metric

Field = tuple[str, Any]


@dataclass(frozen=True)
class Runtime:
    """Where and in what precision a metric's model runs."""

    device: str = "cpu"
    precision: str = "fp32"

    @classmethod
    def checked(cls, prefix: str, device: str = "cpu", precision: str = "fp32") -> "Runtime":
        """The runtime from a family's `<prefix>_device` and `<prefix>_precision` options,
        refused in one line naming the option (before any model is read)."""
        from ..backbones.runtime import check_device, check_precision

        return cls(check_device(f"{prefix}_device", device), check_precision(f"{prefix}_precision", precision))

    @property
    def default(self) -> bool:
        return self.device == "cpu" and self.precision == "fp32"


def runtime_fields(runtimes: dict[str, Runtime]) -> list[Field]:
    """`device:` / `dtype:` of the models a metric reads, each only where not the default. One
    model (or several that all agree) gives a bare value; otherwise the models off the default
    are named and the rest are at it (`dtype:lm=bf16`)."""
    fields: list[Field] = []
    for key, attr, default in (("device", "device", "cpu"), ("dtype", "precision", "fp32")):
        values = {name: getattr(rt, attr) for name, rt in runtimes.items()}
        off = {name: v for name, v in values.items() if v != default}
        if not off:
            continue
        distinct = set(values.values())
        fields.append((key, distinct.pop() if len(distinct) == 1 else
                       "+".join(f"{name}={v}" for name, v in sorted(off.items()))))
    return fields


# the default runtime as signatures before the one rule wrote it (sent_cosine always named its
# device; the judge always its precision): what a record made then is compared without
_OLD_DEFAULT_RUNTIME = ("device:cpu", "prec:fp32")


def without_default_runtime(signature: str) -> str:
    """`signature` (as `str(Signature)` prints it) without the default runtime fields that the
    signatures made before the one rule carried, so a record made then compares with one now."""
    return "|".join(part for part in signature.split("|") if part not in _OLD_DEFAULT_RUNTIME)


class ModelMetric(Metric):
    """A metric that scores through a model (see the module doc for what a subclass declares)."""

    runtime: Runtime = Runtime()
    _model: Any = None
    _described: dict | None = None
    _signed: list | None = None

    # -- what a subclass declares -----------------------------------------------------------
    def load_model(self) -> Any:
        """The loaded model, through one of the two doors; called once, on first use."""
        raise NotImplementedError

    def describe(self) -> dict:
        """What the model's small files say, without loading weights (default: nothing)."""
        return {}

    def model_fields(self) -> list[Field]:
        """The signature's fields naming the model: exactly one `model:`, then other identity."""
        raise NotImplementedError

    def option_fields(self) -> list[Field]:
        """The metric's own settings that change its numbers."""
        return []

    def runtimes(self) -> dict[str, Runtime]:
        """The runtime of each model the metric reads, by name (one: its `runtime`)."""
        return {"model": self.runtime}

    # -- what the base does -------------------------------------------------------------------
    @property
    def model(self) -> Any:
        if self._model is None:
            self._model = self.load_model()
        return self._model

    def __getstate__(self) -> dict:
        """Pickled (to a Dask worker) without the loaded model: the worker opens it through its
        own door, once per process, as every other metric there does."""
        state = dict(self.__dict__)
        state.pop("_model", None)
        return state

    @property
    def model_loaded(self) -> bool:
        return self._model is not None

    @property
    def described(self) -> dict:
        if self._described is None:
            self._described = self.describe()
        return self._described

    @property
    def device(self) -> str:
        return self.runtime.device

    @property
    def precision(self) -> str:
        return self.runtime.precision

    def signature_options(self) -> list[Field]:
        if self._signed is None:
            named = list(self.model_fields())
            if [k for k, _ in named].count("model") != 1 or named[0][0] != "model":
                raise DialevalError(f"{self.name}: a model-backed metric names its model in one "
                                    f"`model:` field, first; got {[k for k, _ in named]}")
            self._signed = (named + list(self.option_fields()) + self.rule_fields()
                            + runtime_fields(self.runtimes()))
        return list(self._signed)
