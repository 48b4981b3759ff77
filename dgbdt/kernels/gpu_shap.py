"""SHAP values on the GPU: the path form of TreeSHAP (dgbdt.kernels.shap_paths) as one CUDA
kernel, cuda/shap.cu (one thread per row, a block's rows walking the same paths).

The kernel is compiled for the paths' longest length (MAXL, at most 32: trees up to depth
31), which keeps each path's arrays in registers. The SHAP values of a block's rows are kept in shared memory while it walks the
paths: ``F x rows x 8`` bytes, so the rows per block shrink as features grow, down to 32
(about 900 features with 227 KB of shared memory a block, an H100); beyond that ``fits`` is
false and the caller computes on the host.
"""
from __future__ import annotations

import functools

import numpy as np

from .gpu import source

_MIN_ROWS, _MAX_ROWS = 32, 128


@functools.lru_cache(maxsize=None)
def _kernel(maxl: int):
    import cupy
    return cupy.RawKernel(source("shap"), "shap_paths",
                          options=("--std=c++17", f"-DMAXL={maxl}"))


def _smem_optin(device: int) -> int:
    import cupy
    attrs = cupy.cuda.Device(device).attributes
    return int(attrs.get("MaxSharedMemoryPerBlockOptin", 48 * 1024))


def _rows_per_block(n_features: int, device: int) -> int:
    budget = _smem_optin(device)
    rows = _MAX_ROWS
    while rows > _MIN_ROWS and 8 * max(n_features, 1) * rows > budget:
        rows //= 2
    return rows


MAX_LEN = 32


def fits(n_features: int, device: int) -> bool:
    """Whether a block of at least 32 rows can keep its SHAP values in shared memory."""
    return 8 * max(n_features, 1) * _MIN_ROWS <= _smem_optin(device)


def device_paths(paths: dict, device: int) -> dict:
    """The path arrays of shap_paths.ensemble_paths on ``device`` (cached in ``paths``)."""
    import cupy as cp
    held = paths.setdefault("_device", {})
    if device not in held:
        with cp.cuda.Device(device):
            held[device] = {k: cp.asarray(paths[k]) for k in
                            ("path_ptr", "path_class", "path_value", "feature", "lo", "hi",
                             "miss", "z", "invz")}
    return held[device]


def contributions(X, paths: dict, out) -> None:
    """out[r, k, f] += the SHAP values of row r of the float32 [n, F] device matrix X for
    output k over every path (out: float64 [n, K, F + 1] on X's device; column F untouched)."""
    import cupy as cp
    n, F = X.shape
    n_paths = int(paths["path_ptr"].shape[0] - 1)
    if n == 0 or n_paths == 0 or F == 0:
        return
    device = X.device.id
    d = device_paths(paths, device)
    maxl = max(2, int(paths["max_len"]))
    if maxl > MAX_LEN:
        raise ValueError(f"paths of {maxl} elements: the GPU kernel takes at most {MAX_LEN}")
    rows = _rows_per_block(F, device)
    kern = _kernel(maxl)
    smem = 8 * F * rows
    if smem > 48 * 1024:
        kern.max_dynamic_shared_size_bytes = smem
    blocks = -(-n // rows)
    # enough blocks for the device: cut the paths into chunks when rows alone are too few
    sms = cp.cuda.Device(device).attributes["MultiProcessorCount"]
    chunks = int(max(1, min(n_paths // 16 or 1, -(-4 * sms // blocks))))
    X = cp.ascontiguousarray(X, dtype=cp.float32)
    kern((blocks, chunks), (rows,),
         (X, np.int64(n), np.int32(F), d["path_ptr"], d["path_class"], d["path_value"],
          np.int32(n_paths), d["feature"], d["lo"], d["hi"], d["miss"], d["z"], d["invz"],
          np.int32(out.shape[1]), out), shared_mem=smem)
