"""The environment of dgbdt's work inside a Dask worker's task.

A training that runs in a worker (one task, a collective rank, the graph's shard tasks) lives
in a process that the worker set up for many small tasks. Three of its settings slow training;
``training_task`` adjusts them for the task's duration and restores them after, however it
ends:

* numba threads: the worker's thread count (or nthread), not the machine's core count (a
  worker with one thread per process must not run two numba threads per task);
* the worker's statistical profiler: it samples every thread's stack every 10 ms holding the
  GIL, which slows the per-level Python of a GPU training;
* glibc's heap: a Dask nanny starts workers with ``MALLOC_TRIM_THRESHOLD_=65536``, which also
  fixes glibc's mmap threshold at 128 KiB, so every array temporary over 128 KiB is a fresh
  mmap whose pages fault in again on first touch, which slows numpy work such as a round's
  evaluation. The heap keeps freed memory while the training runs and the worker's thresholds
  come back afterwards (and trim it then).

Figures: docs/benchmarks-archive.md#figures-behind-code-choices.
"""
from __future__ import annotations

import contextlib
import ctypes
import os

from ..backends.device import release_pooled
from ..kernels.threads import kernel_threads

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_GLIBC_MMAP_DEFAULT = 128 * 1024
_KEEP = 1 << 30


def worker_address() -> str:
    """The address of the worker running the calling task ("" outside a worker)."""
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return ""


def use_worker_threads(nthread) -> None:
    """numba threads for this task: nthread, else the worker's thread count."""
    import numba
    n = nthread
    if n is None:
        try:
            from distributed import get_worker
            n = get_worker().state.nthreads
        except (ImportError, ValueError, AttributeError):
            n = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))


@contextlib.contextmanager
def data_task_threads():
    """numba threads for a data task on a worker (a partition's sketch, a merge of sketches, a
    partition's packing): at most the worker's thread count, as a training task's, so a
    one-thread worker runs the kernels' serial builds (dgbdt.kernels.twins: a first fit
    compiles those alone); restored after. Outside a worker nothing changes."""
    try:
        from distributed import get_worker
        n = get_worker().state.nthreads
    except (ImportError, ValueError, AttributeError):
        n = None
    if n is None:
        yield
        return
    with kernel_threads(max(1, int(n))):
        yield


@contextlib.contextmanager
def profiler_paused():
    """Pause this worker's statistical profiler while the task runs (see the docstring)."""
    try:
        from distributed import get_worker
        worker = get_worker()
        pc = worker.periodic_callbacks.get("profile")
    except (ImportError, ValueError, AttributeError):
        pc = None
    if pc is None or not pc.is_running():
        yield
        return
    worker.loop.add_callback(pc.stop)      # tornado callbacks belong to the worker's loop
    try:
        yield
    finally:
        worker.loop.add_callback(pc.start)


def _mallopt():
    try:
        return ctypes.CDLL("libc.so.6").mallopt
    except OSError:                          # not glibc: nothing to adjust
        return None


@contextlib.contextmanager
def heap_kept():
    """Raise glibc's trim and mmap thresholds while the task runs, where the process was started
    with a fixed trim threshold (MALLOC_TRIM_THRESHOLD_, as a Dask nanny does); restore them
    after. Elsewhere nothing changes (glibc's own thresholds adapt)."""
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    mallopt = _mallopt() if trim is not None else None
    if mallopt is None or not trim.isdigit():
        yield
        return
    mallopt(_M_MMAP_THRESHOLD, _KEEP)
    mallopt(_M_TRIM_THRESHOLD, _KEEP)
    try:
        yield
    finally:
        mallopt(_M_MMAP_THRESHOLD, _GLIBC_MMAP_DEFAULT)
        mallopt(_M_TRIM_THRESHOLD, int(trim))


@contextlib.contextmanager
def training_task(nthread, whole_training: bool = True):
    """The task's environment (see the module docstring); ``whole_training``: the task runs a
    whole training (pause the profiler too), not one step of the graph."""
    import numba
    previous = numba.get_num_threads()
    use_worker_threads(nthread)
    try:
        with heap_kept(), (profiler_paused() if whole_training else contextlib.nullcontext()):
            yield
    finally:
        numba.set_num_threads(previous)
        if whole_training:      # CuPy's pool, where dgbdt used it in place of RMM's default
            release_pooled()


@contextlib.contextmanager
def client_in_reach(client=None):
    """The client a call given ``client`` uses: that one; else, called inside a task (a fit
    submitted to the cluster, as XGBoost's tests do), its worker's, with the task's thread
    seceded from the worker's pool meanwhile (distributed.worker_client): the call waits for
    the training's own tasks, which on a one-thread worker need that thread; else the default
    client."""
    if client is not None:
        check_synchronous(client)
        yield client
        return
    import distributed
    try:
        distributed.get_worker()
    except ValueError:
        yield distributed.get_client()
        return
    with distributed.worker_client() as c:
        yield c


def on_loop(client) -> bool:
    """Whether ``client`` is asynchronous (``Client(asynchronous=True)``) and this call runs
    on its event loop. dgbdt.dask's blocking calls then return awaitables (``off_loop``)."""
    return client is not None and bool(client.asynchronous)


def off_loop(client, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``; on an asynchronous client's event loop, an awaitable of it run
    in a thread (asyncio.to_thread, which carries the caller's context). Off its loop an
    asynchronous client blocks as a synchronous one does (distributed runs the call on its
    loop and waits), and the loop stays free to serve it meanwhile."""
    if on_loop(client):
        import asyncio
        return asyncio.to_thread(fn, *args, **kwargs)
    return fn(*args, **kwargs)


def check_synchronous(client) -> None:
    """Refuse an asynchronous client (``Client(asynchronous=True)``): dgbdt's Dask calls wait
    for their results; awaitable versions of them are not built."""
    if getattr(client, "asynchronous", False):
        raise NotImplementedError(
            "this dgbdt.dask call blocks, and on an asynchronous client's event loop it has no "
            "awaitable form (DaskDataset, train and the estimators' methods have: await "
            "them). Fix: run it in a thread, where the same client blocks as a synchronous "
            "one: await asyncio.to_thread(fn, client, ...)")


def reaching_client(fn):
    """``fn(client, ...)`` run with client_in_reach(client)'s client; on an asynchronous
    client's loop, an awaitable of it (off_loop)."""
    import functools

    @functools.wraps(fn)
    def call(client=None, *args, **kwargs):
        if on_loop(client):
            return off_loop(client, call, client, *args, **kwargs)
        with client_in_reach(client) as c:
            return fn(c, *args, **kwargs)
    return call
