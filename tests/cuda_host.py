"""CUDA sources run on the host (tests/test_*_host.py): a kernel file compiled as C++ with g++
beside a prelude that emulates the few CUDA builtins it uses and a driver that walks its grid,
so CI checks the kernels' own source against the numba kernels without a GPU."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np

CUDA = Path(__file__).parents[1] / "dgbdt" / "kernels" / "cuda"


def source(name: str, replace: dict | None = None) -> str:
    """cuda/<name>.cu with common.cuh inlined and every occurrence of each ``replace`` key (it
    must occur: a shared-memory declaration, say) replaced."""
    src = (CUDA / f"{name}.cu").read_text()
    src = src.replace('#include "common.cuh"', (CUDA / "common.cuh").read_text())
    for old, new in (replace or {}).items():
        assert old in src, old
        src = src.replace(old, new)
    return src


def build(text: str, where: Path, stem: str, threads: bool = False) -> ctypes.CDLL:
    """``text`` compiled as a shared library (no contracted multiply-adds, as the kernels'
    NVRTC options for the exact ones), loaded."""
    cpp = Path(where) / f"{stem}.cpp"
    cpp.write_text(text)
    so = cpp.with_suffix(".so")
    flags = ["-std=c++20", "-pthread"] if threads else []
    r = subprocess.run(["g++", *flags, "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-w",
                        "-o", str(so), str(cpp)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return ctypes.CDLL(str(so))


_SCALARS = [(np.float64, ctypes.c_double), (np.uint64, ctypes.c_uint64),
            (np.uint32, ctypes.c_uint), (np.int64, ctypes.c_longlong),
            (np.int32, ctypes.c_int)]


def launch_args(args) -> list:
    """A kernel launch's arguments as ctypes values, by their numpy types (the backends pass
    arrays and numpy scalars of the kernel's parameter types, in its order)."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            assert a.flags.c_contiguous
            out.append(ctypes.c_void_p(a.ctypes.data))
            continue
        for kind, c in _SCALARS:
            if isinstance(a, kind):
                out.append(c(a.item()))
                break
        else:
            raise TypeError(f"no ctypes type for a launch argument of {type(a).__name__}")
    return out
