"""Metric families as providers over one contract: ranking, pointwise, beyond."""
