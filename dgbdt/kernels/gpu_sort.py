"""Prefix sums and an argsort on the GPU that never compile at run time (cuda/sort.cu).

CuPy's ``cumsum`` and ``argsort`` compile their kernels with NVRTC at first use (0.1 s each),
which a fresh GPU's first fit with an auc eval set paid (dgbdt.metrics.sorted_scores). These
are prebuilt:

* ``exclusive_sums(a)``: ``out[i] = a[0] + ... + a[i - 1]`` for ``i`` in ``0..n`` (``n + 1``
  values, the last the total) of an int64 vector, exact (integers; wrapping as numpy's int64
  sums do): tile totals, their scan in one block, then each tile's scan from its offset (up
  to ONE_BLOCK values: one block scans them all, one launch).
* ``argsort_f64(score)``: the order that sorts a float64 vector ascending, stable (equal scores
  keep their order; NaN last, as numpy's), by an LSD radix sort of the scores' bits made
  order-preserving: eight passes of 8-bit digits, each counting the digits of 4096-key tiles,
  scanning those counts digit-major (``exclusive_sums``'s kernels) and scattering each tile's
  keys in order. An eval set sorts as many keys every round: from the second sort of a size
  on a stream, the 25 launches replay as one CUDA graph (``_SortPlan``; not with
  ``DGBDT_CUDA_GRAPHS=0``).
"""
from __future__ import annotations

import logging
import threading

import numpy as np

from .arrays import cuda_graphs
from .launch import BLOCK, _grid, _i32, _i64, kernel

logger = logging.getLogger("dgbdt")

SCAN_TILE = 4096     # cuda/sort.cu's tiles
RADIX_TILE = 4096
RADIX_THREADS = 256


#: at most this many values are scanned by one block (one launch, not three: a radix pass's
#: digit counts of up to a million keys; the host's launches were most of a GPU round's auc)
ONE_BLOCK = 1 << 16


def _scan_into(a, n: int, out, sums=None) -> None:
    """out[0..n) = exclusive sums of the uint64 device vector a[0..n), out[n] = the total
    (out may be a); ``sums``: scratch of ceil(n / SCAN_TILE) uint64 (else allocated)."""
    import cupy as cp
    if n <= ONE_BLOCK:
        if out.data.ptr != a.data.ptr:
            out.data.copy_from_device_async(a.data, 8 * n)
        kernel("sort", "scan_totals")((1,), (1024,), (out, _i64(n), out[n:]))
        return
    nb = (n + SCAN_TILE - 1) // SCAN_TILE
    sums = cp.empty(nb, dtype=cp.uint64) if sums is None else sums
    kernel("sort", "tile_totals")((nb,), (RADIX_THREADS,), (a, _i64(n), sums))
    kernel("sort", "scan_totals")((1,), (1024,), (sums, _i64(nb), out[n:]))
    kernel("sort", "tile_scan")((nb,), (RADIX_THREADS,), (a, _i64(n), sums, out))


def exclusive_sums(a):
    """int64 [n + 1]: 0, a[0], a[0] + a[1], ..., the total, of a 1-D int64 device vector."""
    import cupy as cp
    if a.dtype != np.int64 or a.ndim != 1:
        raise TypeError(f"exclusive_sums takes a 1-D int64 vector, not {a.dtype} {a.shape}")
    a = cp.ascontiguousarray(a)
    n = int(a.shape[0])
    out = cp.empty(n + 1, dtype=cp.int64)
    if n == 0:
        out.data.memset_async(0, out.nbytes)
        return out
    _scan_into(a.view(cp.uint64), n, out.view(cp.uint64))
    return out


def argsort_f64(score):
    """int64 [n]: the stable ascending order of a C-contiguous 1-D float64 device vector.
    The second sort of n keys on a stream and those after it replay a CUDA graph of the
    sort's launches (``_SortPlan``)."""
    import cupy as cp
    if score.dtype != np.float64 or score.ndim != 1 or not score.flags.c_contiguous:
        raise TypeError("argsort_f64 takes a C-contiguous 1-D float64 vector")
    n = int(score.shape[0])
    if n == 0:
        return cp.empty(0, dtype=cp.int64)
    plan = _plan(n)
    if plan is not None:
        return plan.run(score)
    return _radix_sort(score, _Buffers(n))


class _Buffers:
    """A sort's device scratch for n keys: keys and their indices (twice: passes go from
    one to the other), digit counts, and the large scans' tile sums."""

    def __init__(self, n: int):
        import cupy as cp
        self.n = n
        self.keys = [cp.empty(n, dtype=cp.uint64) for _ in range(2)]
        self.vals = [cp.empty(n, dtype=cp.int64) for _ in range(2)]
        nb = (n + RADIX_TILE - 1) // RADIX_TILE
        self.counts = cp.empty(256 * nb + 1, dtype=cp.uint64)
        self.sums = cp.empty((256 * nb + SCAN_TILE - 1) // SCAN_TILE, dtype=cp.uint64)


def _radix_sort(score, b: _Buffers):
    """The launches of argsort_f64 into ``b``; returns the order (one of b.vals)."""
    n = b.n
    keys, keys2 = b.keys
    vals, vals2 = b.vals
    kernel("sort", "f64_sort_keys")((_grid(n, cap=4096),), (BLOCK,),
                                    (score.view(np.uint64), _i64(n), keys, vals))
    nb = (n + RADIX_TILE - 1) // RADIX_TILE
    for shift in range(0, 64, 8):
        kernel("sort", "radix_counts")((nb,), (RADIX_THREADS,),
                                       (keys, _i64(n), _i32(shift), b.counts))
        _scan_into(b.counts, 256 * nb, b.counts, b.sums)
        kernel("sort", "radix_scatter")((nb,), (RADIX_THREADS,),
                                        (keys, vals, _i64(n), _i32(shift), b.counts, keys2,
                                         vals2))
        keys, keys2, vals, vals2 = keys2, keys, vals2, vals
    return vals


class _SortPlan:
    """argsort_f64 of n keys on one stream as a CUDA graph: its own input, scratch and output
    (allocated on that stream, so CuPy's pool reuses them only in its order), the 25
    launches captured once and replayed behind a copy of the keys; the order is copied out.
    An eval set sorts its rows every round, and those launches were most of the host's time
    in a GPU round's auc (docs/benchmarks.md, "An eval set's round")."""

    def __init__(self, n: int):
        import cupy as cp
        self.n = n
        self.score = cp.empty(n, dtype=cp.float64)
        self.buffers = _Buffers(n)
        self.lock = threading.Lock()      # a run's three enqueues stay together
        capture = cp.cuda.Stream(non_blocking=True)
        relaxed = getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", None)
        with capture:
            capture.begin_capture(mode=relaxed)
            try:
                self.order = _radix_sort(self.score, self.buffers)
            finally:
                self.graph = capture.end_capture()

    def run(self, score):
        import cupy as cp
        n = self.n
        out = cp.empty(n, dtype=cp.int64)
        with self.lock:
            self.score.data.copy_from_device_async(score.data, 8 * n)
            self.graph.launch(stream=cp.cuda.get_current_stream())
            out.data.copy_from_device_async(self.order.data, 8 * n)
        return out


_PLANS_MAX = 4
#: larger sorts stay eager: their device time dwarfs the launches, and a plan holds 40 bytes
#: a key for as long as it is kept
PLAN_MAX_KEYS = 1 << 19
_plans: dict = {}        # (device, stream, n) -> _SortPlan, or the count of eager sorts
_plans_lock = threading.Lock()


def _plan(n: int):
    """The graph of a sort of n keys on the current stream: None for the first such sort
    (a one-off sort does not pay a capture) or where graphs are off; made at the second.
    A capture that fails is logged at DEBUG and the sorts stay eager."""
    import cupy as cp
    if not cuda_graphs():
        return None
    stream = cp.cuda.get_current_stream()
    if stream.is_capturing():
        return None
    if n > PLAN_MAX_KEYS:
        return None
    key = (cp.cuda.Device().id, stream.ptr, n)
    with _plans_lock:
        got = _plans.pop(key, 0)
        if got != 1:        # a plan, a failed capture (-1), or a first sort (0)
            _plans[key] = 1 if got == 0 else got           # most recent last
            _trim()
            return got if isinstance(got, _SortPlan) else None
    try:
        plan = _SortPlan(n)
    except Exception as e:      # noqa: BLE001 - any failure: eager sorts, the same order
        logger.debug("dgbdt: a sort could not be captured as a CUDA graph (%s: %s)",
                     type(e).__name__, e)
        plan = None
    with _plans_lock:
        _plans[key] = plan if plan is not None else -1
        _trim()
    return plan


def _trim() -> None:
    while len(_plans) > _PLANS_MAX:
        _plans.pop(next(iter(_plans)))


__all__ = ["argsort_f64", "exclusive_sums"]
