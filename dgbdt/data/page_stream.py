"""Streaming pages through the GPU: two staging buffers, copies overlapping kernels.

Every pass over the data (a tree level, the end of a tree) visits each shard once. A shard whose
page is ``streamed`` (dgbdt.data.page_store: its words in pinned host memory or a spill file)
gets, for the length of its visit, a page whose words are one of two device staging buffers;
outside the visit its page is the host one again.

Schedule of one pass over the streamed shards ``s_0 .. s_{m-1}`` (buffers A and B)::

    copy s_0 -> A, copy s_1 -> B               (on the copy stream, before the resident shards)
    for i: compute waits for s_i's copy;  kernels of s_i;  mark "A/B free" after them
           copy s_{i+2} -> the buffer s_i used, after its "free" mark   (copy stream)

so the copy of page ``i + 2`` runs while the kernels of page ``i + 1`` (and, at the start of a
pass, of the resident shards) run. Passes alternate direction (a "snake"): the last two pages of
one pass are the first two of the next and are still in the buffers, so a pass copies
``m - 2`` pages, and a pass over pages of total size ``P`` with ``R`` bytes resident and two
buffers moves ``P - R - 2 page`` bytes. Copies need pinned host memory to run asynchronously at
the link's rate; from a memory map the driver stages them (slower, still correct).

The order in which shards are visited changes no result (histograms are integer sums).
``HostMover`` does the same with numpy copies, so CI runs this schedule on the CPU backend.
"""
from __future__ import annotations

import contextlib
import ctypes

import numpy as np

from .pages import Page


class HostMover:
    """Copies between numpy arrays, for the CPU backend (synchronous: no events)."""

    def alloc(self, n_words: int):
        return np.empty(n_words, dtype=np.uint32)

    def copy(self, src, dst, after):
        dst[:src.size] = src
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

    def alloc(self, n_words: int):
        with self.backend.device:
            return self.cp.empty(n_words, dtype=self.cp.uint32)

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


class PageStream:
    """Visits shards with their pages where kernels run (see the module doc)."""

    def __init__(self, mover):
        self.mover = mover
        self.buffers: list = []
        self.held: list = [None, None]     # the shard whose page each buffer holds
        self.ready: list = [None, None]    # event: the buffer's copy is done
        self.free: list = [None, None]     # event: the kernels reading the buffer are done
        self.reverse = False
        self.passes = 0
        self.copies = 0
        self.bytes_moved = 0
        self._timings: list = []

    @classmethod
    def for_backend(cls, backend) -> "PageStream":
        return cls(CudaMover(backend) if backend.name == "cuda" else HostMover())

    def visit(self, shards):
        """Yield every shard, resident ones first, with its page where kernels run."""
        streamed = [s for s in shards if s.page.streamed]
        if not streamed:
            yield from shards
            return
        if self.reverse:
            streamed.reverse()
        self.reverse = not self.reverse
        self.passes += 1
        self._ensure_buffers(max(s.page.words.size for s in streamed))
        second = streamed[1] if len(streamed) > 1 else None
        self._load(streamed[0], self.held.index(second) if second in self.held else None)
        if second is not None:
            self._load(streamed[1], self.held.index(streamed[0]))
        for s in shards:
            if not s.page.streamed:
                yield s
        for i, s in enumerate(streamed):
            k = self.held.index(s)
            self.mover.wait(self.ready[k])
            host = s.page
            s.page = Page(words=self.buffers[k][:host.words.size], n_rows=host.n_rows,
                          n_features=host.n_features, bits=host.bits)
            try:
                yield s
            finally:
                s.page = host
            self.free[k] = self.mover.mark()
            if i + 2 < len(streamed):
                self._load(streamed[i + 2], None, slot=k)

    def _ensure_buffers(self, n_words: int) -> None:
        if not self.buffers or self.buffers[0].size < n_words:
            self.buffers = [self.mover.alloc(n_words) for _ in range(2)]
            self.held = [None, None]

    def _load(self, shard, avoid, slot=None) -> None:
        """Bring shard's page into a buffer (none if one holds it already): into ``slot``, or
        else a buffer other than ``avoid``."""
        if shard in self.held:
            return
        if slot is None:
            slot = 1 if avoid == 0 else 0
        words = shard.page.words
        start_done = self.mover.copy(words, self.buffers[slot], self.free[slot])
        self.ready[slot] = start_done[1]
        self.held[slot] = shard
        self.copies += 1
        self.bytes_moved += int(words.nbytes)
        if start_done[0] is not None:
            self._timings.append(start_done)

    def stats(self) -> dict:
        """Passes, copies, bytes moved and the seconds the copies took (their events)."""
        seconds = sum(self.mover.seconds(t) for t in self._timings)
        self._timings = []
        self._seconds = getattr(self, "_seconds", 0.0) + seconds
        return {"stream_passes": self.passes, "stream_copies": self.copies,
                "stream_bytes": self.bytes_moved, "stream_copy_seconds": self._seconds}


@contextlib.contextmanager
def page_on_device(shard):
    """The shard, for one task, with its page where kernels run: a streamed page is copied into
    a buffer of its own (no overlap; Dask's graph mode visits one shard per task)."""
    if not shard.page.streamed:
        yield shard
        return
    visit = PageStream.for_backend(shard.be).visit([shard])
    try:
        yield next(visit)
    finally:
        visit.close()
