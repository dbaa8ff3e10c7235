"""Metric specs: the registry, the metric-string grammar, the Result container."""
