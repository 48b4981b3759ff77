"""NCCL's device code loaded on each GPU worker while a collective fit builds its dataset.

A process's first NCCL communicator spends most of its set-up loading NCCL's kernels: NCCL's
own ``Init timings`` on an H200 say "kernels 0.28-0.51 s" of a 0.46-0.70 s first
communicator, and 0.00 s of a second one in the same process (0.03-0.07 s in all;
benchmarks/lab/nccl_init_lab.py). CuPy's ``NcclCommunicator`` holds the GIL through all of it,
so a rank that paid it there would stall its worker's Python as well, and it would sit in
the critical path of a first fit after the dataset's tasks.

``submit`` (the client, at the start of a collective GPU fit, and already where a GPU
DaskDataset is made on two or more workers: ``for_dataset``) runs ``start`` on each worker
holding the training's partitions, ahead of the sketch tasks: ``start`` makes a one-rank
communicator in a daemon thread through ctypes, which releases the GIL, so the load overlaps
the sketch and page tasks. The communicator is kept, not destroyed (a one-rank communicator
holds little; ncclCommDestroy took about as long as the load on 2x H200). The rank's own
communicator ``wait``s for the load first (two initialisations at once in one process gain
nothing) and then costs what a second one does.
Nothing here is needed for correctness: a preload that cannot run (no NCCL library found by
ctypes, an error) is logged at DEBUG and the rank's communicator loads the kernels itself.
"""
from __future__ import annotations

import ctypes
import logging
import os
import threading
import time

logger = logging.getLogger("dgbdt.dask")

_lock = threading.Lock()
_loads: dict = {}        # device -> its loading thread (one a device, once a process)
_seconds: dict = {}      # device -> the preload's seconds, once it ended well
_kept: dict = {}         # device -> the one-rank communicator it made

#: seconds a rank waits for a preload before making its communicator anyway
WAIT = 30.0


def submit(client, workers) -> None:
    """Run ``start`` once on each of ``workers`` (addresses), before tasks already queued
    there; fire and forget."""
    from distributed import fire_and_forget
    for w in sorted(set(workers)):
        fire_and_forget(client.submit(start, workers=[w], allow_other_workers=False,
                                      pure=False, priority=100))


def for_dataset(client) -> None:
    """Where a GPU dataset is being made on a cluster of two or more workers: ``submit`` to
    every worker, so that the load overlaps the dataset's own tasks from the first one, not
    from the training's start (its submit came 0.036-0.041 s into a fit on 1 H200). A
    training on several GPU workers connects them ("nccl", which "auto" picks where NCCL
    runs); where it does not, a worker has loaded NCCL's kernels in a background thread and
    holds a one-rank communicator."""
    try:
        workers = list(client.scheduler_info(n_workers=-1)["workers"])
    except Exception:  # noqa: BLE001  (only a head start: the training submits its own)
        return
    if len(workers) >= 2:
        submit(client, workers)


def start() -> None:
    """On a worker: begin loading NCCL's kernels on this thread's current GPU (once); nothing
    where CuPy or NCCL is missing (the training reports that itself)."""
    from .collective import nccl_status, set_nccl_env
    if nccl_status() is not None:
        return
    import cupy
    set_nccl_env()
    device = int(cupy.cuda.runtime.getDevice())
    with _lock:
        if device in _loads:
            return
        _loads[device] = t = threading.Thread(target=_load, args=(device,), daemon=True,
                                              name=f"dgbdt-nccl-preload-{device}")
    t.start()


def wait(device: int) -> dict:
    """Wait (at most WAIT seconds) for a preload of ``device`` begun in this process; its
    timings: ``nccl_preload_wait`` (seconds waited here) and ``nccl_preload`` (the load's
    seconds; absent when none was begun or it failed)."""
    with _lock:
        t = _loads.get(device)
    if t is None:
        return {}
    t0 = time.perf_counter()
    t.join(WAIT)
    out = {"nccl_preload_wait": time.perf_counter() - t0}
    if device in _seconds:
        out["nccl_preload"] = _seconds[device]
    return out


def _library():
    """The NCCL library CuPy loaded (by its path in this process's maps), else by name."""
    from cupy.cuda import nccl  # noqa: F401  (loads it)
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(None, 1)[-1]
                if os.path.basename(path).startswith("libnccl.so"):
                    return ctypes.CDLL(path)
    except OSError:
        pass
    return ctypes.CDLL("libnccl.so.2")


def _load(device: int) -> None:
    t0 = time.perf_counter()
    try:
        lib = _library()
        init = lib.ncclCommInitAll
        init.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                         ctypes.POINTER(ctypes.c_int)]
        init.restype = ctypes.c_int
        comm = ctypes.c_void_p()
        # a foreign call through ctypes runs without the GIL
        rc = init(ctypes.byref(comm), 1, (ctypes.c_int * 1)(device))
        if rc != 0:
            logger.debug("NCCL preload on device %d: ncclCommInitAll returned %d", device, rc)
            return
        # kept, not destroyed: ncclCommDestroy took as long again (2x H200), and a one-rank
        # communicator holds little
        _kept[device] = comm
        _seconds[device] = time.perf_counter() - t0
        logger.debug("NCCL preload on device %d: %.3f s", device, _seconds[device])
    except Exception as e:  # only a head start: the rank's own communicator does the same
        logger.debug("NCCL preload on device %d failed: %s: %s", device, type(e).__name__, e)


__all__ = ["WAIT", "for_dataset", "start", "submit", "wait"]
