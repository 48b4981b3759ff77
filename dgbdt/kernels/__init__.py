"""Kernels: numba (cpu_*) and CUDA (cuda/*.cu, launched by gpu_* and launch.py), arrays in and
arrays out; nothing of dgbdt above this package is imported here."""
