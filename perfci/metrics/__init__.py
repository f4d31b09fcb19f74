"""Metrics: one definition per metric (definitions.py, made with definition.py's `@metric`), the registry
everyone reads (registry.py), how figures are read off a round (rounds.py) and how a case's metrics are derived
from its rounds (derive.py)."""

from perfci.metrics.definition import MetricDef, MetricRegistry, Threshold, metric
from perfci.metrics.derive import case_metrics, round_medians
from perfci.metrics.registry import default_registry, metric_def, metric_direction, reference_ratio

__all__ = [
    "MetricDef",
    "MetricRegistry",
    "Threshold",
    "case_metrics",
    "default_registry",
    "metric",
    "metric_def",
    "metric_direction",
    "reference_ratio",
    "round_medians",
]
