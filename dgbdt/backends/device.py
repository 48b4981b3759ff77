"""The kernel seam: which backend computes on a device's arrays (dgbdt.kernels.arrays says where they live).

Everything above the seam (the boosting loop, the grower, the Dask layer) is written once. A
*backend* object carries the operations that touch rows — the kernels — for one kind of memory:

* ``dgbdt.backends.cpu.CpuBackend``: numba kernels on numpy arrays;
* ``dgbdt.backends.cuda.CudaBackend``: CUDA kernels (CuPy RawKernel, compiled by NVRTC at first
  use) on cupy arrays of one device.

Both compute the same integers (fixed-point histograms, row partitions) and the same float64
arithmetic where it matters (split gains), so the CPU backend is the GPU backend's oracle.
``device`` follows XGBoost: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``; ``None`` means where the
data lives (cupy/cuDF input trains on the GPU, host input on the CPU).
"""
from __future__ import annotations

import contextlib

import numpy as np

from ..kernels.arrays import array_module, is_device_array, sync_timers, to_host
from .pool import kept_allocations, pooled_allocations, release_pooled

__all__ = ["array_module", "backend_of", "beside", "cuda_available", "device_ordinal",
           "device_scope", "get_backend", "is_device_array", "kept_allocations", "own_stream",
           "pooled_allocations", "release_pooled", "resolve_device", "sync_timers", "to_host"]


def cuda_available() -> bool:
    """Whether cupy imports and sees at least one GPU."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:                       # no cupy, no driver, no device
        return False


def resolve_device(device: str | None, data=None) -> str:
    """The device training runs on: the parameter if given, else where ``data`` lives."""
    if device is None:
        return "cuda" if data is not None and is_device_array(data) else "cpu"
    return device


def device_ordinal(device: str) -> int | None:
    """None for "cpu"; the GPU ordinal for "cuda" (the current device) or "cuda:N"."""
    if device == "cpu":
        return None
    if device == "cuda":
        import cupy
        return cupy.cuda.runtime.getDevice()
    return int(device.split(":")[1])


def get_backend(device: str):
    """The backend object of a resolved device string."""
    if device == "cpu":
        from .cpu import CPU
        return CPU
    if not cuda_available():
        raise RuntimeError(f"device={device!r} needs a CUDA GPU and CuPy, and none is usable "
                           "here (is cupy-cuda13x installed and a GPU visible?). Fix: install "
                           "dgbdt[gpu] on a GPU machine, or use device='cpu'.")
    from .cuda import CudaBackend
    return CudaBackend.for_ordinal(device_ordinal(device))


def device_scope(backend):
    """A context that makes the backend's GPU current, with CuPy allocating from a pool
    (``pooled_allocations``); nothing for the CPU backend."""
    if not backend.caps.device_memory:
        return contextlib.nullcontext()
    return _gpu_scope(backend)


@contextlib.contextmanager
def _gpu_scope(backend):
    with backend.device, pooled_allocations():
        yield


def beside(backend):
    """A context for work the host will run *later*, beside the work queued after now.

    Made when that work's inputs are queued (on a GPU it records an event on the current
    stream), entered when the host runs it: the work then goes to a second, non-blocking
    stream of the device that first waits for the event. Its host waits (a metric's scalar, a
    tree's node table) then wait for the event and for the work itself, not for whatever the
    current stream got meanwhile (the next tree: dgbdt.engine.boosting.boost defers a round's scores
    until the next round is queued, and a wait on the current stream would drain it and leave
    the device idle while the host scores). Memory stays safe: CuPy's pool keeps blocks freed
    on each stream for that stream, RMM's pools are stream-ordered. The CPU: nothing."""
    if not backend.caps.device_memory:
        return contextlib.nullcontext()
    return _Beside(backend)


def _kept_stream(streams: dict, ordinal: int):
    """The non-blocking stream ``streams`` keeps for device ``ordinal``, made on first use:
    one a device and process, since CuPy's pool caches freed blocks per stream, so a new
    stream per use would strand the last one's."""
    stream = streams.get(ordinal)
    if stream is None:
        import cupy
        with cupy.cuda.Device(ordinal):
            stream = streams[ordinal] = cupy.cuda.Stream(non_blocking=True)
    return stream


class _Beside:
    _streams: dict = {}          # device ordinal -> its side stream (_kept_stream)

    def __init__(self, backend):
        cp = backend.xp
        self.ordinal = backend.ordinal
        self.event = cp.cuda.Event(block=False, disable_timing=True)
        self.event.record()
        self._stream = None

    def __enter__(self):
        stream = _kept_stream(_Beside._streams, self.ordinal)
        stream.wait_event(self.event)
        self._stream = stream
        stream.__enter__()
        return stream

    def __exit__(self, *exc):
        self._stream.__exit__(*exc)
        self._stream = None
        return False


def own_stream(backend):
    """A context in which this thread's device work goes to a non-blocking stream of its own
    (one a device and process), after the work queued on the default stream before it is
    entered and before the default stream's work queued after it is left. The CPU: nothing.

    For work that waits on other processes: a rank's NCCL kernels wait for its peers, and when
    a peer dies they spin until the communicator is aborted. On CUDA's legacy default stream
    every other thread's default-stream work would queue behind them: Dask sending a cupy
    partition to another worker copies it to the host in the worker's event loop, which then
    stops, and with it the reading of the abort flag that would end the wait (4 GPU ranks, one
    killed: issue 46)."""
    if not backend.caps.device_memory:
        return contextlib.nullcontext()
    return _Own(backend)


class _Own:
    _streams: dict = {}          # device ordinal -> the rank's stream (_kept_stream)

    def __init__(self, backend):
        self.ordinal = backend.ordinal
        self._stream = None

    def __enter__(self):
        import cupy
        stream = _kept_stream(_Own._streams, self.ordinal)
        queued = cupy.cuda.Event(block=False, disable_timing=True)
        queued.record(cupy.cuda.Stream.null)
        stream.wait_event(queued)
        self._stream = stream
        stream.__enter__()
        return stream

    def __exit__(self, *exc):
        import cupy
        stream, self._stream = self._stream, None
        stream.__exit__(*exc)
        done = cupy.cuda.Event(block=False, disable_timing=True)
        done.record(stream)
        cupy.cuda.Stream.null.wait_event(done)
        return False


def backend_of(a):
    """The backend that computes on arrays like ``a`` (the current GPU for device arrays)."""
    if type(a) is np.ndarray:       # the host's, without the device probes (a few a level)
        from .cpu import CPU
        return CPU
    if is_device_array(a):
        from .cuda import CudaBackend
        import cupy
        return CudaBackend.for_ordinal(cupy.cuda.runtime.getDevice())
    from .cpu import CPU
    return CPU

