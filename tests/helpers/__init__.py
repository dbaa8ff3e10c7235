"""Helpers shared by the test modules: brute-force references, random cases, input frames and
result comparisons.

Test modules import them explicitly (``from helpers import brute``, ``from helpers.cases import
Case``); ``pythonpath = ["tests"]`` in pyproject.toml puts this package on the path. Fixtures and
pytest hooks belong in a conftest.py, helpers here: a test module never imports another test
module or a conftest.
"""
