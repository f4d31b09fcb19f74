"""Metrics: the registry (registry.py) and how a case's metrics are derived from its rounds (derive.py)."""

from perfci.metrics.derive import case_metrics, round_medians
from perfci.metrics.registry import METRICS, MetricDef, metric_def, metric_direction, reference_ratio

__all__ = ["METRICS", "MetricDef", "case_metrics", "metric_def", "metric_direction", "reference_ratio", "round_medians"]
