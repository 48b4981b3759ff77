"""Streaming pages through the GPU: a ring of device slots, copies overlapping kernels.

Every pass over the data (a tree level, the end of a tree) visits each shard once. A shard whose
page is ``streamed`` (dgbdt.data.page_store: its words in pinned host memory or a spill file)
gets, for the length of its visit, a page whose words are one of ``S`` device slots (the budget
holds ``S`` pages); outside the visit its page is the host one again.

Schedule of one pass over ``m`` streamed pages, ``S`` of them already in slots::

    visit order: the pages in slots (their copies are done), then the other m - S
    after the kernels of a visited page are queued: its slot gets, on the copy stream and after
    those kernels (an event), the next page of this pass not yet in a slot

so copies run while kernels run, and the pages visited last stay in their slots for the next
pass, which visits them first: a pass copies ``m - S`` pages, i.e. it moves the bytes that do
not fit the budget, ``P - S page``, once (the first pass copies all). Copies are asynchronous at
the link's rate from pinned host memory; from a memory map the driver stages them (slower,
still correct). The copy engine idles while the host evaluates splits between passes: every
slot then holds a page the next pass needs, and replacing one would only add a copy.

The order in which shards are visited changes no result (histograms are integer sums).
``HostMover`` does the same with numpy copies, so CI runs this schedule on the CPU backend.

A shard may stream its raw feature rows with its page (piecewise-linear trees, whose kernels
read raw values: ``Shard.raw_stream``, float32 [n, F] on the host): its slot then holds both,
and for the visit ``shard.raw`` is the slot's rows (None outside visits, as its page is the
host one). Those rows are 4 F bytes a row against the page's ``bits`` F / 8.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np


class HostMover:
    """Copies between numpy arrays, for the CPU backend (synchronous: no events)."""

    def alloc(self, n_words: int, dtype=np.uint32):
        return np.empty(n_words, dtype=dtype)

    def copy(self, src, dst, after):
        dst[:src.size] = src.ravel()
        return None, None

    def wait(self, ready) -> None:
        pass

    def mark(self):
        return None

    def seconds(self, timing) -> float:
        return 0.0


class CudaMover:
    """Host-to-device copies on their own non-blocking stream, ordered by CUDA events."""

    def __init__(self, backend):
        self.cp = backend.xp
        self.backend = backend
        with backend.device:
            self.stream = self.cp.cuda.Stream(non_blocking=True)

    def alloc(self, n_words: int, dtype=np.uint32):
        with self.backend.device:
            return self.cp.empty(n_words, dtype=dtype)

    def copy(self, src, dst, after):
        """Queue ``dst[:n] = src`` after event ``after``; returns (start, done) events."""
        cp = self.cp
        src = np.ascontiguousarray(src)
        if after is not None:
            self.stream.wait_event(after)
        start, done = cp.cuda.Event(), cp.cuda.Event()
        start.record(self.stream)
        dst.data.copy_from_host_async(ctypes.c_void_p(src.ctypes.data), src.nbytes,
                                      stream=self.stream)
        done.record(self.stream)
        return start, done

    def wait(self, ready) -> None:
        if ready is not None:
            self.cp.cuda.get_current_stream().wait_event(ready)

    def mark(self):
        ev = self.cp.cuda.Event(block=False, disable_timing=True)
        ev.record()
        return ev

    def seconds(self, timing) -> float:
        start, done = timing
        done.synchronize()
        return self.cp.cuda.get_elapsed_time(start, done) / 1e3


@functools.lru_cache(maxsize=None)
def _cuda_mover(backend) -> CudaMover:
    """One copy stream per GPU, shared by the process's page streams."""
    return CudaMover(backend)


class PageStream:
    """Visits shards with their pages where kernels run (see the module doc)."""

    def __init__(self, mover, slots: int = 2):
        self.mover = mover
        self.n_slots = max(2, int(slots))
        self.buffers: list = []
        self.raw_buffers: list = []   # each slot's raw rows (shards with raw_stream), or None
        self.held: list = []      # the shard whose page each slot holds (or None)
        self.ready: list = []     # event: the slot's copy is done
        self.free: list = []      # event: the kernels reading the slot are done
        self.passes = 0
        self.copies = 0
        self.bytes_moved = 0
        self._seconds = 0.0
        self._timings: list = []

    @classmethod
    def for_backend(cls, backend, slots: int = 2) -> "PageStream":
        return cls(_cuda_mover(backend) if backend.caps.device_memory else HostMover(), slots)

    def visit(self, shards):
        """Yield every shard, resident ones first, with its page where kernels run."""
        streamed = [s for s in shards if s.page.streamed]
        if not streamed:
            yield from shards
            return
        self.passes += 1
        raws = [s.raw_stream.size for s in streamed if getattr(s, "raw_stream", None) is not None]
        self._ensure_buffers(max(s.page.words.size for s in streamed), len(streamed),
                             max(raws) if raws else 0)
        ids = {id(s) for s in streamed}
        in_slots = [s for s in self.held if s is not None and id(s) in ids]
        held = {id(s) for s in in_slots}
        pending = [s for s in streamed if id(s) not in held]
        order, nxt = in_slots + pending, 0
        for k in range(self.n_slots):         # empty slots (the first pass) take pages now
            if self.held[k] is None and nxt < len(pending):
                self._load(pending[nxt], k)
                nxt += 1
        for s in shards:
            if not s.page.streamed:
                yield s
        for s in order:
            k = self.held.index(s)
            self.mover.wait(self.ready[k])
            host = s.page
            s.page = host.with_words(self.buffers[k][:host.words.size], streamed=False)
            raw = getattr(s, "raw_stream", None)
            if raw is not None:
                s.raw = self.raw_buffers[k][:raw.size].reshape(raw.shape)
            try:
                yield s
            finally:
                s.page = host
                if raw is not None:
                    s.raw = None
            self.free[k] = self.mover.mark()
            if nxt < len(pending):
                self._load(pending[nxt], k)
                nxt += 1

    def _ensure_buffers(self, n_words: int, n_pages: int, n_raw: int = 0) -> None:
        n = min(self.n_slots, n_pages)
        if len(self.buffers) != n or self.buffers[0].size < n_words or (
                n_raw and (self.raw_buffers[0] is None or self.raw_buffers[0].size < n_raw)):
            self.buffers = self.raw_buffers = []   # free the old slots before taking new ones
            self.buffers = [self.mover.alloc(n_words) for _ in range(n)]
            self.raw_buffers = [self.mover.alloc(n_raw, np.float32) if n_raw else None
                                for _ in range(n)]
            self.n_slots = n
            self.held, self.ready, self.free = [None] * n, [None] * n, [None] * n

    def _load(self, shard, slot: int) -> None:
        """Queue the copy of shard's page into ``slot`` (after the slot's last kernels)."""
        words = shard.page.words
        start, done = self.mover.copy(words, self.buffers[slot], self.free[slot])
        raw = getattr(shard, "raw_stream", None)
        if raw is not None:       # the rows after the words, on the same copy stream
            _, done = self.mover.copy(raw, self.raw_buffers[slot], None)
            self.bytes_moved += int(raw.nbytes)
        self.ready[slot] = done
        self.held[slot] = shard
        self.copies += 1
        self.bytes_moved += int(words.nbytes)
        if start is not None:
            self._timings.append((start, done))

    def stats(self) -> dict:
        """Slots, passes, copies, bytes moved and the seconds the copies took (their events)."""
        self._seconds += sum(self.mover.seconds(t) for t in self._timings)
        self._timings = []
        return {"stream_slots": self.n_slots, "stream_passes": self.passes,
                "stream_copies": self.copies, "stream_bytes": self.bytes_moved,
                "stream_copy_seconds": self._seconds}
