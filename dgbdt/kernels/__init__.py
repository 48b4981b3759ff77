"""Kernels: numba (cpu_*) and CUDA (cuda/*.cu, launched by gpu_* and launch.py), arrays in and
arrays out; nothing of dgbdt above this package is imported here."""
from . import threads  # noqa: F401,E402  (before any kernel starts numba's OpenMP pool)
