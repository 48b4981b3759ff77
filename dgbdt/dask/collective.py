"""Collective communication between the ranks of a training, with waits that end.

In dgbdt.dask.train's ``mode="nccl"`` every GPU worker runs one long task (one *rank*); the ranks
run the same boosting loop on their own rows and meet only in the collectives of this module:

* ``allreduce`` of device arrays in place: the int64 level histograms (exact in any order, so
  every rank evaluates the same splits and grows the same tree) and the gradient maxima;
* ``sum_exact``: metric statistics, which are exact sums (dgbdt.kernels.fixedpoint.ExactSum) of
  unbounded size, all-reduced as fixed-width int64 limbs and decoded exactly;
* ``allgather_rows``: the rows themselves, for metrics that are not sums (auc), and
  ``gather_apply``: the same rows given to a function whose small result every rank gets (on
  TCP computed once, on rank 0, in one round trip).

``Communicator`` builds these on two primitives, which ``NcclComm`` implements with NCCL
through ``cupy.cuda.nccl`` for GPU workers and ``SocketComm`` (dgbdt.dask.collective_tcp) with a
TCP star for CPU workers (the tests also implement them with threads).

A collective whose peer died never completes, and a blocking synchronize would hang the worker
for ever. So every NCCL call is followed by a *watched* wait (``wait_for``): the host polls a
CUDA event; once the wait has lasted ``ABORT_POLL`` seconds it also asks ``aborted()`` (the
training's abort flag, which a failing rank or the client sets, and NCCL's own asynchronous
error) every ``ABORT_POLL`` seconds; an abort reason, or ``timeout`` seconds without an answer,
end the wait with CollectiveError, after which the rank aborts its communicator (ncclCommAbort
stops the communicator's kernels, so the GPU is usable again).

Not every wait for the device is one of ours: between enqueuing an all-reduce that a
device-grown tree does not wait for and the tree's watched ``settle()``, a host call that
waits for the device blocks behind that all-reduce, and if its peer is gone, for ever. CuPy
loading a kernel's module on first use does (a rank whose peer had raised was seen stuck in
``cuModuleLoadData`` under an indexing kernel: tests/gpu/test_gpu_nccl.py), as do pageable
copies and cudaFree under RMM's default allocator. So an NCCL rank also has a *watchdog*
thread that asks the same questions every ABORT_POLL seconds (plus: has a queued all-reduce
been unfinished for ``timeout`` seconds?) and aborts the communicator from outside: the stuck
kernel ends, the blocked call returns, and the rank's next collective raises CollectiveError
with the reason (as PyTorch's NCCL watchdog does).
"""
from __future__ import annotations

import functools
import os
import threading
import time

import numpy as np

from ..kernels.fixedpoint import ExactSum

ABORT_POLL = 0.25   # seconds between checks of the abort flag once a wait is that long
SPIN = 0.005        # seconds of pure spinning before a wait starts to sleep between polls

RECOVERY_HINT = ("The cluster is usable: fix the cause and train again (mode='graph' needs "
                 "no connections between workers; a lost worker is recovered from by itself, "
                 "see dgbdt.dask.train's max_restarts)")


class CollectiveError(RuntimeError):
    """A collective could not complete: another rank failed or left, or it timed out."""


def wait_for(done, timeout: float, aborted, what: str) -> float:
    """Poll ``done()`` until it is true; return the seconds waited.

    ``aborted()`` returns None or why the training stops; it is asked every ABORT_POLL seconds
    once the wait is that long (it may cost a scheduler round trip). Raises CollectiveError with
    that reason, or when ``timeout`` seconds pass first.
    """
    t0 = time.perf_counter()
    next_check = t0 + ABORT_POLL
    while not done():
        now = time.perf_counter()
        waited = now - t0
        if waited > SPIN:
            time.sleep(1e-4 if waited < 0.1 else 1e-3)
        if now >= next_check:
            reason = aborted()
            if reason is not None:
                raise CollectiveError(f"{what}: stopped because {reason}")
            if waited > timeout:
                raise CollectiveError(
                    f"{what}: the other ranks did not answer within {timeout:g} s "
                    "(collective_timeout); a worker may be stuck or gone")
            next_check = now + ABORT_POLL
    return time.perf_counter() - t0


class Communicator:
    """The collectives of one rank among ``n_ranks`` (see the module docstring).

    Subclasses implement ``_allreduce(x, op)`` (in place on an array of module ``xp``, op "sum"
    or "max", every rank's x of one shape) and ``_allgather(x)`` (a new array [n_ranks, *x.shape]
    in rank order). ``seconds``: host time in collectives (it includes waiting for this rank's
    own queued kernels); ``comm_seconds``: time of the collectives themselves (on a GPU, the
    collective kernels' time, which includes waiting for the slowest rank); ``n_bytes``: bytes
    this rank contributed.
    """

    xp = np
    rank: int = 0
    n_ranks: int = 1
    #: whether its ``wait=False`` all-reduces can be recorded into a CUDA graph with the
    #: tree's kernels (dgbdt.tree.tree_graph): NCCL's are kernels on the stream; TCP's are not
    capturable = False

    def __init__(self):
        self.seconds = 0.0
        self.comm_seconds = 0.0
        self.n_bytes = 0
        self.calls = 0
        self.graph_calls = 0      # of ``calls``, those that ran inside trees' CUDA graphs
        # asked before every collective: None, or why the training ends (dgbdt.dask.stop: the
        # client let go); cheap, unlike the abort flag, which waits ask every ABORT_POLL
        self.halt = None

    def _asked_to_stop(self) -> None:
        why = self.halt() if self.halt is not None else None
        if why is not None:
            raise CollectiveError(f"rank {self.rank}: {why}")

    def _allreduce(self, x, op: str):
        raise NotImplementedError

    def _allgather(self, x):
        raise NotImplementedError

    def _last_seconds(self, host_seconds: float) -> float:
        """Seconds of the collective just finished (the host's wait, unless measured better)."""
        return host_seconds

    def _timed(self, fn, x, *args):
        t = time.perf_counter()
        out = fn(x, *args)
        self.seconds += time.perf_counter() - t
        self.comm_seconds += self._last_seconds(time.perf_counter() - t)
        self.n_bytes += x.nbytes
        self.calls += 1
        return out

    def allreduce(self, x, op: str = "sum", wait: bool = True):
        """x (contiguous, on this rank's device) becomes the element-wise sum/max over ranks.

        ``wait=False`` (NCCL: stream-ordered) only enqueues it: work queued after it on the
        device sees the sums, and the host must ``settle()`` (the watched wait, with its
        abort checks and timeout) before it next waits for the device itself."""
        self._asked_to_stop()
        if wait:
            self._timed(self._allreduce, x, op)
        else:
            self._enqueue(x, op)
        return x

    def _enqueue(self, x, op: str) -> None:
        """A collective the host does not wait for (here: one it does; see NcclComm)."""
        self._timed(self._allreduce, x, op)

    def launch_watched(self, launch, calls: int, n_bytes: int) -> None:
        """Run ``launch()``, which enqueues work holding ``calls`` collectives of ``n_bytes``
        in all (a tree's replayed CUDA graph), and watch it as an enqueued collective: the
        next ``settle()`` waits for it, with the abort checks and the timeout."""
        launch()

    def settle(self) -> None:
        """Wait (watched) for the collectives enqueued with wait=False."""

    def settle_later(self):
        """The collectives enqueued with wait=False so far, as a callable that settles them
        (watched) when called; later ones are not its business. None: nothing to wait for."""
        return None

    def watch_queued(self) -> None:
        """Wait (watched) for everything queued on this rank's device so far: before a host
        read that would otherwise wait unwatched behind a peer's all-reduces."""

    def allreduce_host(self, a: np.ndarray, op: str = "sum") -> np.ndarray:
        """The all-reduce of a small host array, returned on the host."""
        x = self.xp.array(np.ascontiguousarray(a))
        self.allreduce(x, op)
        return np.asarray(x.get() if hasattr(x, "get") else x)

    def sum_exact(self, sums: list[ExactSum]) -> list[ExactSum]:
        """Exact sums over ranks, element-wise (int64 limbs: exact in any order)."""
        if not sums:
            return []
        total = self.allreduce_host(np.stack([s.limbs() for s in sums]), "sum")
        return [ExactSum.from_limbs(row) for row in total]

    def rank_counts(self, n: int) -> np.ndarray:
        """Every rank's ``n``, in rank order (one all-reduce)."""
        counts = np.zeros(self.n_ranks, dtype=np.int64)
        counts[self.rank] = n
        return self.allreduce_host(counts, "sum")

    def allgather_rows(self, a, counts=None):
        """Every rank's rows of a ([n_r, ...], n_r may differ), concatenated in rank order.
        ``counts``: every rank's n_r when the caller knows them (saves an all-reduce and its
        wait for the device)."""
        return self._gathered_rows(a, counts, lambda buf: self._timed(self._allgather, buf))

    def _gathered_rows(self, a, counts, gather):
        """allgather_rows with ``gather(buf)`` ([m, ...] -> [n_ranks, m, ...]) as the all-gather
        of every rank's rows padded to the longest."""
        self._asked_to_stop()
        xp = self.xp
        a = xp.ascontiguousarray(xp.asarray(a))
        counts = self.rank_counts(a.shape[0]) if counts is None else counts
        m = max(int(max(counts)), 1)
        buf = a if a.shape[0] == m else xp.zeros((m,) + a.shape[1:], dtype=a.dtype)
        if buf is not a:
            buf[:a.shape[0]] = a
        out = gather(buf)
        return xp.concatenate([out[r, :int(counts[r])] for r in range(self.n_ranks)])

    def gather_apply(self, a, fn, counts=None) -> np.ndarray:
        """``fn(rows, counts)`` of every rank's rows of ``a`` concatenated in rank order (as
        ``allgather_rows``) and the ranks' row counts; its result, a small float64 host array,
        on every rank. Here every rank computes it (``fn`` is deterministic, so they agree);
        SocketComm computes it once, on rank 0, and sends only the result back. ``counts``:
        as for allgather_rows."""
        counts = self.rank_counts(int(a.shape[0])) if counts is None else counts
        return np.asarray(fn(self.allgather_rows(a, counts), counts), dtype=np.float64)

    #: whether ``gather_apply_later`` and ``sum_exact_later`` only queue their collectives
    #: (NCCL: on the device, in the communicator's order), so the host reads their results
    #: later; else they complete at the call and their results wait in the host's memory
    queues_results = False

    def gather_apply_later(self, a, fn, counts=None):
        """``gather_apply`` whose result the host reads later: ``fn(rows, counts)`` returns a
        callable that gives the result, and so does this. Here the gather and ``fn`` complete
        now; NcclComm only queues the gather and what ``fn`` queues behind it, and the
        callable waits (watched) for them: a training reads round r's scores after round r +
        1's trees are queued, so the device is not left idle while the host reads them."""
        value = self.gather_apply(a, lambda rows, c: fn(rows, c)(), counts)
        return lambda: value

    def sum_exact_later(self, sums: list[ExactSum]):
        """``sum_exact`` as a callable that gives its result (see ``gather_apply_later``)."""
        value = self.sum_exact(sums)
        return lambda: value

    def abort(self) -> None:
        """Stop this rank's part in every collective (after a failure)."""

    def close(self) -> None:
        """Release the communicator after a successful training."""

    def park(self) -> bool:
        """After a successful training: stop watching, keep the connection for the next
        training on these workers (dgbdt.dask.comm_cache). False when it cannot be kept (it
        was aborted, or this kind is not kept); then the caller closes it."""
        return False

    def rebind(self, timeout: float, aborted) -> None:
        """A parked communicator made ready for another training: its timeout and abort flag,
        counters from zero."""
        self.timeout, self._flag = float(timeout), aborted
        Communicator.__init__(self)


class Watchdog:
    """A thread that ends a communicator from outside (module docstring).

    Every ABORT_POLL seconds it asks ``check()`` (None, or why the training stops); on a reason
    it calls ``abort()`` once and stops. The rank's thread makes its calls into the
    communicator through ``call``, which holds a lock, so an abort never lands inside one,
    unless that call is the stuck one (it has not returned within a second): then the abort
    goes ahead, since ending that call is what it is for. After an abort ``call`` and
    ``check`` raise CollectiveError with the reason; ``end(fn)`` (close or abort, by the rank's
    thread) stops the watchdog and runs ``fn`` unless an abort already ended the communicator.
    """

    def __init__(self, who: str, check, abort, setup=None):
        self.who, self._check, self._abort, self._setup = who, check, abort, setup
        self.why: str | None = None
        self._live = True
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"dgbdt-watchdog-{who.replace(' ', '')}")
        self._thread.start()

    def _run(self) -> None:
        if self._setup is not None:
            self._setup()
        while not self._stop.wait(ABORT_POLL):
            try:
                why = self._check()
            except Exception as e:  # noqa: BLE001  (a closing cluster, say: stop the training)
                why = f"the abort flag could not be read ({type(e).__name__}: {e})"
            if why is None:
                continue
            got = self._lock.acquire(timeout=1.0)
            try:
                if self._live:
                    # the reason first: a wait that ends because of the abort then sees it
                    self.why, self._live = why, False
                    self._abort()
            finally:
                if got:
                    self._lock.release()
            return

    def call(self, fn, *args):
        with self._lock:
            if not self._live:
                self.check()
                raise CollectiveError(f"{self.who}: the communicator was closed")
            return fn(*args)

    def check(self) -> None:
        """CollectiveError if the watchdog aborted (a collective that ended because of the
        abort holds no result)."""
        if self.why is not None:
            raise CollectiveError(f"{self.who}: the collective was stopped because {self.why}")

    def end(self, fn) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5.0)   # it may be asking the scheduler: one poll
        with self._lock:
            if self._live:
                self._live = False
                fn()


# -- NCCL --------------------------------------------------------------------------------------
def nccl_status() -> str | None:
    """None when NCCL is usable through CuPy in this process, else why not."""
    try:
        from cupy.cuda import nccl
    except Exception as e:  # ImportError, or a CUDA library that fails to load
        return f"cupy.cuda.nccl cannot be imported ({type(e).__name__}: {e})"
    if not nccl.available:
        return "CuPy finds no NCCL library (pip install nvidia-nccl-cu13, or install NCCL)"
    return None


def set_nccl_env() -> None:
    """NCCL's settings for dgbdt's communicators, set before this process's first one (NCCL
    reads most of them once)."""
    # NVLink multicast (NVLS) stays off: on shared hosts it can take the GPUs out of service.
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    # Buffers through cudaMalloc and CUDA IPC, not cuMem: the first communicator's set-up and
    # its first (lazily connected) all-reduce took 0.2 s less on 2x H200, with the same time
    # per all-reduce after (benchmarks/lab/nccl_init_lab.py). A user's own setting wins.
    os.environ.setdefault("NCCL_CUMEM_ENABLE", "0")


def _nccl():
    why = nccl_status()
    if why is not None:
        raise RuntimeError(f"mode='nccl' needs NCCL on every GPU worker: {why}")
    set_nccl_env()
    from cupy.cuda import nccl
    return nccl


def unique_id() -> tuple:
    """A new NCCL unique id. Run it on rank 0's worker: the id's bootstrap listener lives in
    the process that made it."""
    return _nccl().get_unique_id()     # bytes (CuPy 14) or a tuple (older CuPy)


class NcclComm(Communicator):
    """One rank of an NCCL communicator on this process's current GPU (cupy arrays).

    ``aborted()`` -> None or a reason (the training's abort flag); ``timeout``: seconds a
    collective may wait for the other ranks.
    """

    def __init__(self, n_ranks: int, uid, rank: int, timeout: float, aborted):
        super().__init__()
        import cupy
        nccl = _nccl()
        self.xp, self.rank, self.n_ranks = cupy, int(rank), int(n_ranks)
        self.timeout, self._flag = float(timeout), aborted
        self._types = {np.dtype(np.int64): nccl.NCCL_INT64, np.dtype(np.float64): nccl.NCCL_FLOAT64,
                       np.dtype(np.int32): nccl.NCCL_INT32, np.dtype(np.float32): nccl.NCCL_FLOAT32}
        self._ops = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX}
        self._error = nccl.NcclError
        # blocks (holding the GIL) until every rank has joined; callers meet first (a barrier)
        self._comm = nccl.NcclCommunicator(self.n_ranks, uid, self.rank)
        self._device = cupy.cuda.runtime.getDevice()
        self._watch_start()

    def _watch_start(self) -> None:
        import cupy
        # queued work to watch: (began, ended, bytes, enqueued at, all-reduces, timed): one
        # all-reduce (timed by its events), or a tree's graph holding several (not timed)
        self._pending: list = []
        self._later: list = []        # lists of them handed to settle_later, not yet settled
        self._dog = Watchdog(f"rank {self.rank}", lambda: self._aborted() or self._overdue(),
                             self._comm.abort,
                             setup=lambda: cupy.cuda.Device(self._device).use())

    def _aborted(self):
        dog = getattr(self, "_dog", None)      # (its thread's first look may come before)
        if dog is not None and dog.why is not None:
            return dog.why
        try:
            self._comm.check_async_error()
        except self._error as e:
            return f"NCCL reported an error ({e})"
        return self._flag()

    def _overdue(self):
        """Why the oldest queued all-reduce is late (None: none is, or none is queued)."""
        # the rank's thread replaces these lists, never mutates them
        for _, ended, _, at, _, _ in [p[0] for p in [self._pending] + self._later if p]:
            if time.perf_counter() - at > self.timeout and not ended.done:
                return (f"a queued all-reduce of rank {self.rank} was not answered within "
                        f"{self.timeout:g} s (collective_timeout); a worker may be stuck or gone")
        return None

    def _call(self, fn, *args):
        self._dog.call(fn, *args)

    def _not_aborted(self) -> None:
        self._dog.check()

    def _start(self):
        import cupy
        self._began = cupy.cuda.Event()
        self._began.record()

    capturable = True

    def _enqueue(self, x, op):
        """Enqueue the all-reduce with its timing events; settle() waits for it. On a stream
        that is capturing a tree's CUDA graph it is only recorded (no events: an event
        recorded in a capture cannot be waited on); the graph's launch is watched instead
        (launch_watched) and ``captured`` counts what the graph holds."""
        import cupy
        stream = self.xp.cuda.get_current_stream()
        if stream.is_capturing():
            self._call(self._comm.allReduce, x.data.ptr, x.data.ptr, x.size, self._type(x),
                       self._ops[op], stream.ptr)
            self.captured = (self.captured[0] + 1, self.captured[1] + x.nbytes)
            return
        began, ended = cupy.cuda.Event(), cupy.cuda.Event()
        began.record()
        self._call(self._comm.allReduce, x.data.ptr, x.data.ptr, x.size, self._type(x),
                   self._ops[op], stream.ptr)
        ended.record()
        self._pending = self._pending + [(began, ended, x.nbytes, time.perf_counter(), 1, True)]

    #: (calls, bytes) of the all-reduces recorded into CUDA graphs so far (see _enqueue)
    captured = (0, 0)

    def launch_watched(self, launch, calls: int, n_bytes: int) -> None:
        """The graph's collectives run between its first and last kernel, so the pair of
        events around the launch bounds them; their time is the whole tree's, so it is not
        charged to ``comm_seconds``."""
        import cupy
        began, ended = cupy.cuda.Event(), cupy.cuda.Event()
        began.record()
        self._call(launch)
        ended.record()
        self._pending = self._pending + [(began, ended, n_bytes, time.perf_counter(),
                                          int(calls), False)]

    def settle(self):
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        self._settle(pending)

    def settle_later(self):
        if not self._pending:
            return None
        pending, self._pending = self._pending, []
        self._later = self._later + [pending]
        return functools.partial(self._settle, pending)

    def _settle(self, pending):
        last = pending[-1][1]
        t = time.perf_counter()
        wait_for(lambda: last.done, self.timeout, self._aborted,
                 f"rank {self.rank}: {len(pending)} queued all-reduces")
        self._not_aborted()
        self._later = [p for p in self._later if p is not pending]
        self.seconds += time.perf_counter() - t
        import cupy
        for began, ended, nbytes, _, calls, timed in pending:
            if timed:
                self.comm_seconds += cupy.cuda.get_elapsed_time(began, ended) / 1e3
            else:
                self.graph_calls += calls
            self.n_bytes += nbytes
            self.calls += calls

    def watch_queued(self) -> None:
        self._watch(f"rank {self.rank}: the trees queued so far")

    def _watch(self, what: str) -> None:
        import cupy
        self._ended = cupy.cuda.Event()
        self._ended.record()
        wait_for(lambda: self._ended.done, self.timeout, self._aborted, what)
        self._not_aborted()

    def _last_seconds(self, host_seconds: float) -> float:
        import cupy
        return cupy.cuda.get_elapsed_time(self._began, self._ended) / 1e3

    def _type(self, x):
        if not x.flags.c_contiguous or x.dtype not in self._types:
            raise TypeError(f"NCCL collectives take contiguous int32/int64/float32/float64 "
                            f"arrays; got {x.dtype}")
        return self._types[x.dtype]

    def _allreduce(self, x, op):
        if self.xp.cuda.get_current_stream().is_capturing():
            # its wait could never end: the capture fails, and the tree grows eagerly
            raise RuntimeError("a waited all-reduce cannot be recorded into a CUDA graph")
        stream = self.xp.cuda.get_current_stream().ptr
        self._start()
        self._call(self._comm.allReduce, x.data.ptr, x.data.ptr, x.size, self._type(x),
                   self._ops[op], stream)
        self._watch(f"rank {self.rank}: all-reduce ({op}) of {x.nbytes} bytes")

    def _allgather(self, x):
        out = self.xp.empty((self.n_ranks,) + x.shape, dtype=x.dtype)
        stream = self.xp.cuda.get_current_stream().ptr
        self._start()
        self._call(self._comm.allGather, x.data.ptr, out.data.ptr, x.size, self._type(x),
                   stream)
        self._watch(f"rank {self.rank}: all-gather of {x.nbytes} bytes")
        return out

    queues_results = True

    def _allgather_queued(self, x):
        """The all-gather enqueued with its timing events (settle() waits for it)."""
        import cupy
        out = self.xp.empty((self.n_ranks,) + x.shape, dtype=x.dtype)
        began, ended = cupy.cuda.Event(), cupy.cuda.Event()
        began.record()
        self._call(self._comm.allGather, x.data.ptr, out.data.ptr, x.size, self._type(x),
                   self.xp.cuda.get_current_stream().ptr)
        ended.record()
        self._pending = self._pending + [(began, ended, x.nbytes, time.perf_counter(), 1, True)]
        return out

    def gather_apply_later(self, a, fn, counts=None):
        counts = self.rank_counts(int(a.shape[0])) if counts is None else counts
        rows = self._gathered_rows(a, counts, self._allgather_queued)
        settle = self.settle_later()
        finish = fn(rows, counts)     # queued behind the gather; read by finish()

        @functools.cache
        def result():
            settle()         # the watched wait: a lost peer's gather never ends
            return np.asarray(finish(), dtype=np.float64)
        return result

    def sum_exact_later(self, sums: list[ExactSum]):
        if not sums:
            return lambda: []
        from ..kernels.host_copy import HostCopy
        limbs = np.stack([s.limbs() for s in sums])
        x = self.xp.array(limbs)
        self.allreduce(x, "sum", wait=False)
        settle = self.settle_later()
        copy = HostCopy([x])

        @functools.cache          # (each ratio metric reads its two sums from it)
        def result():
            settle()
            total = copy.wait()[0].view(np.int64).reshape(limbs.shape)
            return [ExactSum.from_limbs(row) for row in total]
        return result

    def abort(self) -> None:
        self._dog.end(self._comm.abort)

    def close(self) -> None:
        self._dog.end(self._comm.destroy)

    def park(self) -> bool:
        kept = []
        self._dog.end(lambda: kept.append(True))    # not run when the watchdog aborted
        if kept:
            try:
                self._comm.check_async_error()
            except self._error:
                self._comm.abort()
                return False
        return bool(kept)

    def rebind(self, timeout: float, aborted) -> None:
        super().rebind(timeout, aborted)
        self._watch_start()
