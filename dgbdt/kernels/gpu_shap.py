"""SHAP values and SHAP interaction values on the GPU: the path form of TreeSHAP
(dgbdt.kernels.shap_paths) as two CUDA kernels, cuda/shap.cu (one thread per row, a block's
rows walking the same paths; categorical splits test a category bitset).

The kernels are compiled for the paths' longest length (MAXL, at most 32: trees up to depth
31), which keeps each path's arrays in registers, and for whether any split is categorical.
The values of a block's rows are kept in shared memory while it walks the paths: ``F x rows x
8`` bytes, so the rows per block shrink as features grow, down to 32 (about 900 features with
227 KB of shared memory a block, an H100); beyond that ``fits`` is false and the caller
computes on the host.

Determinism: interaction values have one writer per (row, class, conditioned feature) and no
atomics, so they are the same bits on every run. Contributions of few rows (fewer blocks than
the device has SMs x 4) cut the paths into chunks that add with float64 atomics: there the
lowest bits depend on the order the chunks land in.
"""
from __future__ import annotations

import functools

import numpy as np

from .launch import sm_count, source
from .shap_paths import PATH_ARRAYS

_MIN_ROWS, _MAX_ROWS = 32, 128


@functools.lru_cache(maxsize=None)
def _kernel(name: str, maxl: int, has_cat: bool):
    import cupy
    return cupy.RawKernel(source("shap"), name,
                          options=("--std=c++17", f"-DMAXL={maxl}", f"-DHAS_CAT={int(has_cat)}"))


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
    """Whether a block of at least 32 rows can keep its values in shared memory."""
    return 8 * max(n_features, 1) * _MIN_ROWS <= _smem_optin(device)


def device_paths(paths: dict, device: int) -> dict:
    """The path arrays of shap_paths.ensemble_paths on ``device`` (cached in ``paths``)."""
    import cupy as cp
    held = paths.setdefault("_device", {})
    if device not in held:
        with cp.cuda.Device(device):
            held[device] = {k: cp.asarray(paths[k]) for k in PATH_ARRAYS}
    return held[device]


def _launch(name: str, X, paths: dict, out, grid_y) -> None:
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
    kern = _kernel(name, maxl, bool((paths["cat"] >= 0).any()))
    smem = 8 * F * rows
    if smem > 48 * 1024:
        kern.max_dynamic_shared_size_bytes = smem
    blocks = -(-n // rows)
    X = cp.ascontiguousarray(X, dtype=cp.float32)
    a = [d[k] for k in PATH_ARRAYS]
    kern((blocks, grid_y(blocks, n_paths, device)), (rows,),
         (X, np.int64(n), np.int32(F), a[0], a[1], a[2], np.int32(n_paths), *a[3:],
          np.int32(out.shape[1]), out), shared_mem=smem)


def contributions(X, paths: dict, out) -> None:
    """out[r, k, f] += the SHAP values of row r of the float32 [n, F] device matrix X for
    output k over every path (out: float64 [n, K, F + 1] on X's device; column F untouched)."""
    def chunks(blocks, n_paths, device):
        # enough blocks for the device: cut the paths into chunks when rows alone are too few
        sms = sm_count(device)
        return int(max(1, min(n_paths // 16 or 1, -(-4 * sms // blocks))))

    _launch("shap_paths", X, paths, out, chunks)


def interactions(X, paths: dict, out) -> None:
    """out[r, k, i, j] += the SHAP interaction values of row r (out: float64
    [n, K, F + 1, F + 1] on X's device, zeros or values to add to; the last row and column
    untouched): one block row per conditioned feature i (blockIdx.y), so ``F`` at most
    65535 (``fits`` caps F far lower)."""
    _launch("shap_interactions", X, paths, out, lambda blocks, n_paths, device: X.shape[1])
