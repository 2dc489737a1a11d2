"""Metric names -> how to build them.

Entries name their class by import path so that `import dialeval` and the word-overlap
metrics never import a heavy family's dependencies. Each entry lists the options it accepts;
options meant for other metrics (one CLI call passes one set of options to all metrics) are
ignored, so `--word-vectors` does not trouble BLEU.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from ..errors import DialevalError
from .base import Metric

COMMON_OPTIONS = ("refs_mode", "tokenizer")


@dataclass(frozen=True)
class MetricSpec:
    name: str
    target: str                      # "module:Class"
    family: str
    description: str
    fixed: dict[str, Any] = field(default_factory=dict)
    options: tuple[str, ...] = COMMON_OPTIONS
    extra: str | None = None         # pip extra that provides its dependencies

    def build(self, **options: Any) -> Metric:
        module_name, cls_name = self.target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = f" (pip install 'dialeval[{self.extra}]')" if self.extra else ""
            raise DialevalError(f"metric {self.name!r} needs a missing dependency: {exc.name}{hint}") from None
        cls = getattr(module, cls_name)
        kwargs = {k: v for k, v in options.items() if k in self.options and v is not None}
        return cls(**self.fixed, **kwargs)


_OVERLAP = "dialeval.metrics.overlap"
_SPECS: list[MetricSpec] = [
    *[MetricSpec(f"bleu{k}", f"{_OVERLAP}.bleu:Bleu", "overlap",
                 f"BLEU-{k}, pycocoevalcap rules (closest reference length, 1e-15/1e-9 floors)",
                 fixed={"order": k}) for k in range(1, 5)],
    MetricSpec("rouge_l", f"{_OVERLAP}.rouge:RougeL", "overlap",
               "ROUGE-L F (beta 1.2), pycocoevalcap rules"),
    MetricSpec("cider_d", f"{_OVERLAP}.cider:Cider", "overlap",
               "CIDEr-D (pycocoevalcap `Cider`, nlg-eval's CIDEr)", fixed={"variant": "d"}),
    MetricSpec("cider", f"{_OVERLAP}.cider:Cider", "overlap",
               "plain CIDEr (Vedantam et al. 2015), corpus document frequencies",
               fixed={"variant": "plain"}),
]

REGISTRY: dict[str, MetricSpec] = {spec.name: spec for spec in _SPECS}


def register(spec: MetricSpec) -> None:
    REGISTRY[spec.name] = spec


def metric_spec(name: str) -> MetricSpec:
    try:
        return REGISTRY[name]
    except KeyError:
        raise DialevalError(f"unknown metric {name!r}; `dialeval metrics` lists them") from None


def build_metric(name: str, **options: Any) -> Metric:
    return metric_spec(name).build(**options)


def list_metrics() -> list[MetricSpec]:
    return list(REGISTRY.values())
