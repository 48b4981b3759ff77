"""CuPy's memory pool during a training, where the user's allocator would synchronize.

Under RMM's default resource (cuDF's, dask-cuda's without a pool) every cudaFree waits for the
whole device, so a training's temporaries come from CuPy's own pool instead
(``pooled_allocations``) and go back to the device at its end (``release_pooled``); arrays that
outlive the training are allocated with the user's allocator (``kept_allocations``): in the
pool, one of them would keep a whole cached block. Re-exported by dgbdt.backends.device; kept
apart so that the CUDA backend's modules import it without importing device selection.
"""
from __future__ import annotations

import contextlib
import gc
import threading

__all__ = ["kept_allocations", "pooled_allocations", "release_pooled"]


#: RMM memory resources that allocate without synchronizing (pools, stream-ordered)
_RMM_POOLED = {"PoolMemoryResource", "ArenaMemoryResource", "CudaAsyncMemoryResource",
               "BinningMemoryResource", "FixedSizeMemoryResource"}
_pooled_used = False
_outer = threading.local()      # the allocator pooled_allocations replaced, per thread


def _allocation_syncs() -> bool:
    """Whether CuPy's current allocator is RMM's over a resource that calls cudaMalloc and
    cudaFree per allocation (RMM's default: importing cuDF makes RMM CuPy's allocator, and
    dask-cuda workers without rmm_pool_size keep that default). cudaFree waits for the whole
    device, so every temporary array freed would stop the GPU pipeline."""
    import cupy
    allocator = cupy.cuda.get_allocator()
    if not str(getattr(allocator, "__module__", None) or "").startswith("rmm"):
        return False
    try:
        import rmm
        mr = rmm.mr.get_current_device_resource()
    except Exception:                    # an RMM we do not know: leave the user's choice
        return False
    for _ in range(8):                   # adaptors (statistics, limits, ...) wrap a resource
        name = type(mr).__name__
        if name in _RMM_POOLED:
            return False
        upstream = getattr(mr, "upstream_mr", None)
        if upstream is None:
            return name in ("CudaMemoryResource", "ManagedMemoryResource",
                            "SystemMemoryResource")
        mr = upstream
    return False


@contextlib.contextmanager
def pooled_allocations():
    """CuPy allocates from its own memory pool in this thread for the context, where the
    current allocator would synchronize the device (``_allocation_syncs``); otherwise (CuPy's
    pool, an RMM pool, RMM's async resource) nothing changes. Memory the pool caches is given
    back by ``release_pooled`` at the end of a training."""
    global _pooled_used
    import cupy
    if not _allocation_syncs():
        yield
        return
    _pooled_used = True
    _outer.allocator = cupy.cuda.get_allocator()
    try:
        with cupy.cuda.using_allocator(cupy.get_default_memory_pool().malloc):
            yield
    finally:
        _outer.allocator = None


def kept_allocations():
    """Inside ``pooled_allocations``: the user's allocator again, for arrays that outlive the
    training (a Dataset's pages); in CuPy's pool one such array would keep a whole cached
    block from going back to the device. Elsewhere nothing changes."""
    allocator = getattr(_outer, "allocator", None)
    if allocator is None:
        return contextlib.nullcontext()
    import cupy
    return cupy.cuda.using_allocator(allocator)


def release_pooled() -> None:
    """Give the blocks CuPy's pool cached for dgbdt (``pooled_allocations``) back to the
    device, where the user's allocator is RMM's, so cuDF can use them again."""
    if _pooled_used:
        import cupy
        pool = cupy.get_default_memory_pool()
        pool.free_all_blocks()
        # blocks still in use may be arrays that only the training's reference cycles hold:
        # collect them, then give those back too. A full collection cost 0.09-0.11 s at the
        # end of a Dask GPU rank's training (benchmarks/lab/release_lab.py), so only then
        if pool.used_bytes():
            gc.collect()
            pool.free_all_blocks()
