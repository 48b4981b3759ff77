"""Device arrays on their way to the host without the host waiting at the launch: copies
queued behind the work on the current stream into pinned memory, and an event to wait for
when the host reads them (a device-grown tree's node table, dgbdt.tree.node_table; a metric's
totals, dgbdt.kernels.gpu_metric). ``HostNow`` is the same interface for numpy arrays."""
from __future__ import annotations

import ctypes
import threading

import numpy as np


class HostNow:
    """Host arrays already copied (the CPU's tables): ``wait()`` returns them."""

    def __init__(self, arrays):
        self.arrays = arrays

    def wait(self) -> list:
        return [a.reshape(-1).view(np.uint8) for a in self.arrays]


_in_flight: list = []     # (event, pinned memory) of copies dropped before their wait
_in_flight_lock = threading.Lock()      # trainings in threads share it


class HostCopy:
    """C-contiguous device arrays copied asynchronously, on the current stream, into one
    block of pinned host memory; ``wait()`` waits for those copies alone (an event) and
    returns each array's bytes. A copy dropped unwaited keeps its block until the device
    has written it (the pool must not hand it out while the copy may still land)."""

    def __init__(self, arrays):
        import cupy as cp
        with _in_flight_lock:
            _in_flight[:] = [(e, m) for e, m in _in_flight if not e.done]
        sizes = [int(a.nbytes) for a in arrays]
        starts = np.concatenate([[0], np.cumsum([-(-s // 8) * 8 for s in sizes])])
        self.mem = cp.cuda.alloc_pinned_memory(max(int(starts[-1]), 8))
        host = np.frombuffer(self.mem, np.uint8, int(starts[-1]))
        for a, s, n in zip(arrays, starts, sizes):
            if n:
                a.data.copy_to_host_async(ctypes.c_void_p(host.ctypes.data + int(s)), n)
        self.parts = [host[int(s):int(s) + n] for s, n in zip(starts, sizes)]
        self.event = cp.cuda.Event(disable_timing=True)
        self.event.record()

    def wait(self) -> list:
        self.event.synchronize()
        parts, self.parts, self.mem = self.parts, None, None
        return parts

    def __del__(self):
        if getattr(self, "mem", None) is not None and not self.event.done:
            with _in_flight_lock:
                _in_flight.append((self.event, self.mem))


__all__ = ["HostCopy", "HostNow"]
