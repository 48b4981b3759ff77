"""Whole trees as CUDA graphs: one launch per tree instead of ~15 per level.

A device-grown tree (dgbdt.tree.device_grower) has a fixed shape: for a given depth, class and
set of shards, its kernels, their launch sizes and their buffers are the same for every tree;
only its constants (the fixed-point scales and the learning rate, kept in device memory:
dgbdt.backends.cuda.tree_consts) and the data in the buffers change. So the host's per-level
Python (the grower's bookkeeping and a dozen launches of the shard's partition and histogram
kernels; docs/benchmarks-archive.md#figures-behind-code-choices) can run once: the second tree
of a class is *captured* (CUDA stream capture records every launch instead of running it), and
every later tree of that class is the recorded graph launched again after its constants are
copied in. The model is the same bytes: the graph runs exactly the launches the eager tree runs,
in the same order.

What it needs, and where it is not used (the tree grows eagerly, as before):

* In-core shards on one GPU: one process (``LocalSeam``), or a rank of the NCCL mode
  (``DGBDT_NCCL_GRAPHS=0`` turns that off) (its all-reduces are kernels on the stream and go into the graph;
  the graph's launch is watched for aborts and timeouts as a queued all-reduce is; TCP's host
  reductions cannot be captured; linear trees' waited all-reduces neither), no column sampling (its masks are drawn per tree
  on the host), no ``DGBDT_SYNC_TIMERS`` (it synchronizes inside a tree), and
  ``DGBDT_CUDA_GRAPHS`` not set to ``0``.
* Memory allocated while capturing comes from a pool of its own (``MemoryPool``) that only
  captures use: a replay writes to those addresses again, so nothing else may be handed them.
  The trees of a training's classes run one after another, so their graphs share the pool.
  A finished training releases its graphs and hands its pool, with its capture stream, to
  the next one (``take_pool`` / ``give_pool``, the last pool given is the first taken;
  trainings running at the same time each take their own). A CuPy ``MemoryPool`` dropped
  with free blocks does not give them back (on an H200, five captures each through a new
  pool left 86 MB; with ``free_all_blocks`` first, nothing): in-process trainings used to
  drop theirs, and a loop of fits grew by 6.3 MB a fit (200k rows, depth 6). A reused pool
  allocates nothing new.
* A capture that fails (an operation that cannot be captured) turns graphs off for the
  training, logged at DEBUG, and the tree grows eagerly: never a wrong model.

Stage timers: a replayed tree's time (launch and wait) is charged to ``device_wait``; the
per-stage host times of the shards then cover only the eager and captured trees.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time

from .device_grower import DeviceGrowth, RoundScales
from .grower import finish_tree, grow_tree

logger = logging.getLogger("dgbdt")


@dataclasses.dataclass
class CapturePool:
    """The memory pool and stream a training's captures use (module docstring). A pool
    reuses a free block only for the stream that freed it, so the stream goes with it."""

    device: int
    pool: object         # cupy.cuda.MemoryPool
    stream: object       # cupy.cuda.Stream


#: capture pools of finished trainings, the last given first taken (a loop of fits reuses one
#: pool, whose free blocks then fit); at most _SPARE_POOLS_MAX are kept
_spare_pools: list = []
_SPARE_POOLS_MAX = 2
#: pools given beyond that: their blocks go back to the device at the next take_pool, not at
#: once (freeing waits for the whole device, which a failed collective training may hold
#: behind an all-reduce that a stopped peer never answers)
_retired: list = []
_spare_lock = threading.Lock()


def take_pool(cp) -> CapturePool:
    """The spare capture pool of the current device given last, or a new one; retired pools'
    blocks are freed first."""
    device = cp.cuda.Device().id
    found = None
    with _spare_lock:
        retired = list(_retired)
        _retired.clear()
        for i in range(len(_spare_pools) - 1, -1, -1):
            if _spare_pools[i].device == device:
                found = _spare_pools.pop(i)
                break
    for old in retired:
        with cp.cuda.Device(old.device):
            old.pool.free_all_blocks()
    if found is None:
        found = CapturePool(device, cp.cuda.MemoryPool(), cp.cuda.Stream(non_blocking=True))
    return found


def give_pool(spare: CapturePool) -> None:
    """A finished training's capture pool, for the next training (its blocks are free)."""
    with _spare_lock:
        (_spare_pools if len(_spare_pools) < _SPARE_POOLS_MAX else _retired).append(spare)


def enabled() -> bool:
    """DGBDT_CUDA_GRAPHS=0 turns tree graphs off (the same model, more host time)."""
    from ..kernels.arrays import cuda_graphs
    return cuda_graphs()


def device_scales() -> bool:
    """Whether a replayed tree takes its fixed-point scales from the round's gradient maxima
    on the device (TreeGraphs.grow_scaled), so the host queues a round without waiting for
    its gradients; ``DGBDT_DEVICE_SCALES=0`` reads the maxima on the host first (the same
    model: the same scales)."""
    return os.environ.get("DGBDT_DEVICE_SCALES", "1") != "0"


def collective_enabled() -> bool:
    """Whether the NCCL mode's ranks replay their trees as graphs too (all-reduces inside;
    docs/benchmarks.md: 1.5x faster at 4 GPUs); ``DGBDT_NCCL_GRAPHS=0`` grows them level by
    level, as ``DGBDT_CUDA_GRAPHS=0`` does everywhere."""
    return os.environ.get("DGBDT_NCCL_GRAPHS", "1") != "0" and enabled()


@dataclasses.dataclass
class _Entry:
    graph: object            # cupy.cuda.Graph
    growth: DeviceGrowth     # the captured tree's growth state (its node table and constants)
    keep: list               # device arrays from before the capture that the graph reads
    arrays: tuple            # the shards' array addresses it was captured with (_addresses)
    held: object = None      # what it holds beyond kernels (the seam's capture_end: NCCL calls)


class TreeGraphs:
    """The tree graphs of one training on one seam, one per (class, parameters)."""

    def __init__(self, seam):
        self.seam = seam
        self.be = seam.shards[0].be
        self.entries: dict = {}
        self.seen: set = set()      # keys grown eagerly once (kernels compiled, caches filled)
        self.pool = None
        self.failed = False

    def release(self) -> None:
        """Destroy the graphs now (a training's end, before its communicator is kept, closed or
        aborted): graphs that hold collectives must not outlive what they were captured with,
        and the seam and its TreeGraphs refer to each other, so the collector would free them
        at some later time. Each entry lets go of its graph too: a traceback that still holds
        an entry must not keep the graph (and its NCCL work) alive."""
        for entry in self.entries.values():
            entry.graph = None
        self.entries.clear()
        if self.pool is not None:       # its blocks are free now: the next training's
            give_pool(self.pool)
        self.pool = None

    @staticmethod
    def _key(spec, k: int):
        return (k, spec.max_depth, dataclasses.replace(spec.p, eta=0.0), id(spec.cuts))

    def grow(self, spec, k: int, scale_g: float, scale_h: float, epoch: int, timers: dict,
             lazy: bool = False):
        """The tree of class k: replayed, captured and run, or grown eagerly. ``lazy``: a
        PendingTree the host has not waited for (see grow_tree)."""
        key = self._key(spec, k)
        entry = self.entries.get(key)
        if entry is not None and entry.arrays != self._addresses():
            del self.entries[key]    # a shard's array was replaced: capture again
            entry = None
        if entry is not None:
            return self._replay(entry, spec, scale_g, scale_h, timers, lazy)
        growth = self.seam.start_tree(spec, k, scale_g, scale_h, epoch)
        usable = (not self.failed and isinstance(growth, DeviceGrowth)
                  and growth.graphable and growth.columns is None
                  and self.seam.captures(growth))
        if not usable or key not in self.seen:
            self.seen.add(key)
            return grow_tree(self.seam, growth, timers, lazy=lazy)
        entry = self._capture(growth, timers)
        if entry is None:        # not capturable: this tree again, eagerly, from the start
            return grow_tree(self.seam, self.seam.start_tree(spec, k, scale_g, scale_h, epoch),
                             timers, lazy=lazy)
        self.entries[key] = entry
        return self._run(entry, timers, lazy)

    def replays(self, spec, k: int) -> bool:
        """Whether class k's next tree replays its graph (captured, the arrays in place)."""
        entry = self.entries.get(self._key(spec, k))
        return entry is not None and entry.arrays == self._addresses()

    def grow_scaled(self, spec, k: int, maxima, n_rows: int, epoch: int, timers: dict,
                    lazy: bool = False):
        """``grow`` with the scales of the round's device maxima (LocalSeam.device_maxima): a
        replay computes its constants from them on the device (the backend's tree_scales)
        and the host learns the scales only with the tree (RoundScales: scale_for of the
        same maxima, so the same values); a tree that does not replay reads them now."""
        scales = RoundScales(maxima, k, n_rows)
        entry = self.entries.get(self._key(spec, k))
        if entry is None or entry.arrays != self._addresses():
            return self.grow(spec, k, *scales.host(), epoch, timers, lazy)
        g = entry.growth
        g.scale_g, g.scale_h, g.p = scales, None, spec.p
        self.be.tree_scales(maxima, k, n_rows, spec.p.eta, g.consts)
        return self._run(entry, timers, lazy)

    _SHARD_ARRAYS = ("g", "h", "grad", "rows", "margin", "label", "weight", "scratch_l",
                     "begin", "end", "n_bins", "_qmax")

    def _addresses(self) -> tuple:
        """Where the shards' arrays are: a graph replays its kernels on the addresses it was
        captured with, so code that replaces an array (rather than writing into it) must
        make the next tree capture again."""
        out = []
        for s in self.seam.shards:
            out.append(s.page.words.data.ptr)
            for name in self._SHARD_ARRAYS:
                a = getattr(s, name, None)
                out.append(0 if a is None else a.data.ptr)
            out.append(0 if s.route is None else s.route.row_node.data.ptr)
            out.append(0 if s.route is None or s.route.columns is None
                       else s.route.columns.data.ptr)
        return tuple(out)

    def _capture(self, growth: DeviceGrowth, timers: dict):
        cp = self.be.xp
        if self.pool is None:
            self.pool = take_pool(cp)
        pool, stream = self.pool.pool, self.pool.stream
        relaxed = getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", None)
        t = time.perf_counter()
        # The graph reads every array the tree's first level reads, at the addresses they had
        # when captured: the growth's initial slots and request, the backend's cached tables.
        # The eager code drops some of them during the tree; the entry keeps them alive.
        keep = [dict(vars(growth)), growth.request, dict(self.be._hp_cache),
                [getattr(s, "_cuda_static", None) for s in self.seam.shards],
                self.seam._tables]
        graph = None
        mark = self.seam.capture_start()
        try:
            with cp.cuda.using_allocator(pool.malloc), stream:
                stream.begin_capture(mode=relaxed)
                try:
                    growth.reset_table()
                    while not growth.done:
                        growth.advance(self.seam.level(growth.request))
                    finish_tree(self.seam, growth)
                finally:
                    graph = stream.end_capture()
        except Exception as e:      # noqa: BLE001 - any failure: eager trees from now on
            self.failed = True
            logger.debug("dgbdt: a tree could not be captured as a CUDA graph (%s: %s); "
                         "trees grow without graphs", type(e).__name__, e)
            return None
        timers["split_evaluation"] += growth.eval_seconds
        timers["device_wait"] = timers.get("device_wait", 0.0) + time.perf_counter() - t
        return _Entry(graph, growth, keep, self._addresses(), self.seam.capture_end(mark))

    def _replay(self, entry: _Entry, spec, scale_g: float, scale_h: float, timers: dict,
                lazy: bool = False):
        g = entry.growth
        g.scale_g, g.scale_h, g.p = scale_g, scale_h, spec.p
        self.be.upload(self.be.tree_consts(scale_g, scale_h, spec.p.eta), out=g.consts)
        return self._run(entry, timers, lazy)

    def _run(self, entry: _Entry, timers: dict, lazy: bool = False):
        t = time.perf_counter()
        self.seam.launch_graph(entry.graph, entry.held)
        if lazy:        # the table copied behind the graph; the next replay may overwrite it
            return entry.growth.pending_tree(self.seam.settle_later())
        self.seam.settle()                  # the watched wait (collective seams)
        tree = entry.growth.tree()          # the host's one wait for the tree
        timers["device_wait"] = timers.get("device_wait", 0.0) + time.perf_counter() - t
        return tree


__all__ = ["TreeGraphs", "device_scales", "enabled"]
