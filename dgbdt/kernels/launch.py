"""Launch arguments of the CUDA kernels, shared by the GPU backend's modules (dgbdt.kernels.gpu
and its mixins): the default block size, a grid for n items, and the scalar types CuPy passes
as C ``int`` / ``long long``."""
from __future__ import annotations

import numpy as np

BLOCK = 256


def _grid(n: int, block: int = BLOCK, cap: int = 65535) -> int:
    """Blocks for n items of one thread each: ceil(n / block), at least 1, at most cap."""
    return max(1, min(cap, (int(n) + block - 1) // block))


def _i32(x) -> np.int32:
    return np.int32(x)


def _i64(x) -> np.int64:
    return np.int64(x)
