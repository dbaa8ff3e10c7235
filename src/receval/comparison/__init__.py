"""Comparing models: statistics, comparison, reports and plots."""
