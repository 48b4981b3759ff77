"""Where arrays live: numpy on the host, cupy on a GPU. The lowest floor of the package:
everything may import it (kernels included), it imports nothing of dgbdt."""
from __future__ import annotations

import os

import numpy as np


def is_device_array(a) -> bool:
    """Whether ``a`` lives in GPU memory (cupy arrays, cuDF columns, numba device arrays,
    cupyx.scipy.sparse matrices)."""
    return hasattr(a, "__cuda_array_interface__") or \
        type(a).__module__.startswith("cupyx.scipy.sparse")


def array_module(a):
    """cupy for GPU arrays, numpy otherwise."""
    if is_device_array(a):
        import cupy
        return cupy
    return np


def to_host(a) -> np.ndarray:
    """A numpy copy (or view) of a host or device array."""
    if is_device_array(a):
        import cupy
        return cupy.asnumpy(a)
    return np.asarray(a)


def sync_timers() -> bool:
    """DGBDT_SYNC_TIMERS=1: GPU stage timers synchronize, so they measure kernel time (slower)."""
    return os.environ.get("DGBDT_SYNC_TIMERS", "") not in ("", "0")


def cuda_graphs() -> bool:
    """Whether fixed sequences of launches may replay as CUDA graphs (trees, an eval set's
    sort): not with DGBDT_CUDA_GRAPHS=0 (the same results, more host time), nor with
    DGBDT_SYNC_TIMERS (it synchronizes between launches)."""
    return os.environ.get("DGBDT_CUDA_GRAPHS", "1") != "0" and not sync_timers()
