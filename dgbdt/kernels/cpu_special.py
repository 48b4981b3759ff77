"""Special functions for CPU metrics (numba): numpy has no elementwise log-gamma."""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, parallel=True)
def _lgamma(a, out):
    for i in prange(a.shape[0]):
        out[i] = math.lgamma(a[i])


def lgamma(a: np.ndarray) -> np.ndarray:
    """``log |Gamma(a)|`` of a 1-D float64 array, elementwise."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    out = np.empty_like(a)
    _lgamma(a, out)
    return out
