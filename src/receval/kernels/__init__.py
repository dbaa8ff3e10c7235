"""Numba kernels (ranking, beyond, model scan), exact sums and the thread pools."""
