"""Metric specs: their types and the registry (specs), the metric-string grammar (grammar),
the declarations (catalogue), the face that registers them all (registry), Result."""
