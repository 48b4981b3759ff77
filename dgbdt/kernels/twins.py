"""Parallel numba kernels with a serial twin, picked per call by the calling thread's count.

numba compiles a ``parallel=True`` kernel several times slower than the same code compiled
serially (its parfor passes, then the gufunc it builds around the loop body): the sketch's
``summarize_columns`` takes 2.4 s against 1.15 s. On one thread the parallel build runs no
faster than the serial one, yet a first fit compiles it all the same: a Dask worker with one
thread (``LocalCluster(threads_per_worker=1)``, the README's job and the benchmarks' CPU
clusters), or a kernel call that ``threads.kernel_threads(1)`` runs serially because its work
is small. ``serial_twin(kernel)`` gives a callable that runs ``kernel``'s serial twin (the same
Python function compiled without ``parallel``; ``prange`` is then ``range``) when numba's
thread count for the calling thread is 1 and ``kernel`` otherwise, so only the build that
runs is compiled (or loaded from numba's cache).

The twins compute the same values: the kernels given twins write each output element from
one loop iteration (no reduction across iterations), so the thread count never enters.
"""
from __future__ import annotations

import types

import numba
from numba import njit

__all__ = ["serial_twin", "Twin"]


class Twin:
    """A parallel numba kernel and its serial twin; calling it runs the one for this
    thread's numba thread count (module docstring)."""

    def __init__(self, parallel_kernel):
        self.parallel = parallel_kernel
        py = parallel_kernel.py_func
        fn = types.FunctionType(py.__code__, py.__globals__, py.__name__ + "_serial",
                                py.__defaults__, py.__closure__)
        # its own name: numba's cache keys its files by the qualified name, not the options
        fn.__qualname__ = py.__qualname__ + "_serial"
        fn.__module__ = py.__module__
        fn.__doc__ = py.__doc__
        options = {k: v for k, v in parallel_kernel.targetoptions.items()
                   if k not in ("parallel", "nopython")}      # njit sets nopython itself
        # cached as dgbdt's kernels are (numba keeps cache=True out of targetoptions)
        self.serial = njit(cache=True, **options)(fn)
        self.__doc__ = py.__doc__
        self.__name__ = py.__name__
        self.py_func = py

    def pick(self):
        """The build that runs for this thread: the serial twin on one thread."""
        return self.serial if numba.get_num_threads() == 1 else self.parallel

    def __call__(self, *args):
        return self.pick()(*args)

    def __repr__(self) -> str:
        return f"Twin({self.__name__})"


def serial_twin(parallel_kernel) -> Twin:
    """``parallel_kernel`` (an ``@njit(parallel=True)`` dispatcher) with its serial twin."""
    if not parallel_kernel.targetoptions.get("parallel"):
        raise ValueError(f"{parallel_kernel.py_func.__name__} is not a parallel kernel")
    return Twin(parallel_kernel)
