"""Metric families. Each family lives in its own sub-package; `registry` maps names to them."""

from .base import Batch, Metric, MetricOutput, Signature, REFS_MODES
from .registry import build_metric, list_metrics, metric_spec

__all__ = ["Batch", "Metric", "MetricOutput", "Signature", "REFS_MODES", "build_metric",
           "list_metrics", "metric_spec"]
