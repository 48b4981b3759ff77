"""Kernels behind the backend seam: cpu (numba) now, cuda later."""
