"""Compiling and launching the CUDA kernels of ``cuda/*.cu``: the sources (headers inlined),
the compiled kernels, the default block size, a grid for n items, and the scalar types CuPy
passes as C ``int`` / ``long long``.

A kernel comes from the binaries compiled ahead of time and shipped in the package
(dgbdt.kernels.prebuilt) when they hold the GPU's architecture and were built from this
source; otherwise CuPy compiles its module at first use (NVRTC; cached on disk). Both with
``--fmad=false``: the split gains are then the same float64 operations as the CPU kernel's,
rounded the same way."""
from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np

_DIR = Path(__file__).parent / "cuda"
_OPTIONS = ("--std=c++17", "--fmad=false")
NVCC_OPTIONS = ("-std=c++17", "--fmad=false")    # the same, as nvcc spells them (prebuild)

BLOCK = 256


def _grid(n: int, block: int = BLOCK, cap: int = 65535) -> int:
    """Blocks for n items of one thread each: ceil(n / block), at least 1, at most cap."""
    return max(1, min(cap, (int(n) + block - 1) // block))


@functools.lru_cache(maxsize=None)
def sm_count(device: int) -> int:
    """The device's streaming multiprocessors (CuPy's ``Device.attributes`` reads every
    attribute, some 100 driver calls: too slow for a launch of a round's evaluation)."""
    import cupy
    multiprocessor_count = 16       # cudaDevAttrMultiProcessorCount
    return int(cupy.cuda.runtime.deviceGetAttribute(multiprocessor_count, int(device)))


def _i32(x) -> np.int32:
    return np.int32(x)


def _i64(x) -> np.int64:
    return np.int64(x)


@functools.lru_cache(maxsize=None)
def source(name: str) -> str:
    """The CUDA source of ``cuda/<name>.cu`` with its headers (``#include "x.cuh"``, one
    level) inlined (NVRTC, CuPy's cache key)."""
    text = (_DIR / f"{name}.cu").read_text()
    return re.sub(r'#include "(\w+\.cuh)"', lambda m: (_DIR / m.group(1)).read_text(), text)


@functools.lru_cache(maxsize=None)
def kernel(module: str, name: str):
    """A compiled kernel (cupy.RawKernel) of ``cuda/<module>.cu``: prebuilt where it can be
    (dgbdt.kernels.prebuilt), else compiled by NVRTC."""
    from . import prebuilt
    found = prebuilt.kernel(module, name, source(module))
    if found is not None:
        return found
    import cupy
    prebuilt.COMPILED.add(module)
    return cupy.RawKernel(source(module), name, options=_OPTIONS)
