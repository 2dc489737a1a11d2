"""Metric families. Each family lives in its own sub-package; `registry` maps names to them.

The names below are loaded on first use, so that reading the registry (which the command line
does before it knows which metrics run) does not import numpy; see `MetricSpec.blas`.
"""

from importlib import import_module

_EXPORTS = {"Batch": ".base", "Metric": ".base", "MetricOutput": ".base", "Signature": ".base",
            "REFS_MODES": ".base", "build_metric": ".registry", "list_metrics": ".registry",
            "metric_spec": ".registry"}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
