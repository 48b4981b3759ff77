"""The CUDA backend: the kernel seam (dgbdt.backends.device) over the kernels in dgbdt/kernels/cuda/.

Kernels are CUDA C sources compiled at first use by CuPy (NVRTC; CuPy caches the binaries on
disk), so installing dgbdt needs no compiler. They are built with ``--fmad=false``: the split
gains are then the same float64 operations as the CPU kernel's, rounded the same way.

Everything a level does stays on the device; the host learns only the split decisions (one
small copy per level, in ``evaluate_splits``) and the gradient maxima that set the fixed-point
scale: once a round, or, for a tree replayed as a CUDA graph, with the tree (``tree_scales``
computes its constants from them on the device). Requests from the grower (node ids, split
decisions, leaf values) go to the device as one small packed copy each.
"""
from __future__ import annotations

import math
import os
import time

import numpy as np

from ..kernels.arrays import sync_timers
from .pool import kept_allocations
from .cuda_linear import CudaLinear
from .cuda_pages import CudaPages
from .cuda_routes import CudaRoutes
from .cuda_sampling import CudaSampling
from .protocol import Capabilities
from ..kernels import gpu_arrays
from ..kernels.launch import BLOCK, _grid, _i32, _i64, kernel

HIST_BLOCK = 1024    # build_histograms: faster than 512
                     # (docs/benchmarks-archive.md#figures-behind-code-choices)
GLOBAL_HIST_BLOCK = 512
HIST_SLOT_BYTES = 24  # six 32-bit words per histogram slot (three pieces of g and of h)
RING = 64            # pinned staging slots for small host-to-device copies
RING_SLOT = 64 * 1024
HIST_SMEM = 48 * 1024
HIST_TILE = 2048     # rows per tile of histogram work
PART_ITEMS = 8       # rows per thread in partition_scatter (cuda/tree.cu)
LEAF_TILE = 4096


def tree_consts(scale_g: float, scale_h: float, eta: float = 0.0) -> np.ndarray:
    """A tree's constants as the kernels read them from device memory (start_tree,
    evaluate_splits, leaf_values): scale_g, scale_h, 1 / scale_g, 1 / scale_h, eta. In device
    memory rather than kernel arguments so that a tree captured as a CUDA graph
    (dgbdt.tree.tree_graph) replays with the next tree's values."""
    return np.array([scale_g, scale_h, 1.0 / scale_g, 1.0 / scale_h, eta], dtype=np.float64)


VECTOR_LEAF_ON_GPU = (
    "multi_strategy='multi_output_tree' (vector-leaf trees) on the GPU (device='cuda' or "
    "cupy input) is not implemented in dgbdt. Fix: train on the CPU (device='cpu', host "
    "arrays), or multi_strategy='one_output_per_tree' (a tree a target, on the GPU too).")


class CudaBackend(CudaLinear, CudaPages, CudaSampling, CudaRoutes):
    """Operations on a Shard's rows (see dgbdt.engine.shard) on one GPU, arrays as cupy (linear
    trees' operations: dgbdt.backends.cuda_linear's mixin; pages' own: gpu_pages'; the
    row-order partition: cuda_routes')."""

    name = "cuda"
    caps = Capabilities(device_memory=True, device_growth=True, graph_capture=True,
                        row_sample_kernel=True, row_candidates_kernel=True)
    _instances: dict[int, "CudaBackend"] = {}

    def __init__(self, ordinal: int):
        import cupy
        self.xp = cupy
        self.ordinal = ordinal
        self.device = cupy.cuda.Device(ordinal)
        attrs = self.device.attributes
        self.n_sm = int(attrs["MultiProcessorCount"])
        self.smem_optin = int(attrs.get("MaxSharedMemoryPerBlockOptin",
                                        attrs["MaxSharedMemoryPerBlock"]))
        self.smem_per_sm = int(attrs.get("MaxSharedMemoryPerMultiprocessor", self.smem_optin))
        self.threads_per_sm = int(attrs.get("MaxThreadsPerMultiProcessor", 2048))
        self._ring = None
        self._ring_pos = 0
        self._ring_events: list = [None] * RING
        self._hp_cache: dict = {}
        self._static_cache: dict = {}   # _static's constants by histogram layout

    @classmethod
    def for_ordinal(cls, ordinal: int) -> "CudaBackend":
        if ordinal not in cls._instances:
            cls._instances[ordinal] = cls(ordinal)
        return cls._instances[ordinal]

    # -- helpers -----------------------------------------------------------------------------
    def clock(self) -> float:
        if sync_timers():
            self.xp.cuda.get_current_stream().synchronize()
        return time.perf_counter()

    def free_bytes(self) -> int:
        """Device memory free to this backend: the driver's free bytes and what CuPy's pool
        holds unused."""
        with self.device:
            pool = self.xp.get_default_memory_pool()
            return int(self.xp.cuda.runtime.memGetInfo()[0]) + int(pool.free_bytes())

    def asarray(self, a, dtype=None):
        with self.device:
            return self.xp.ascontiguousarray(self.xp.asarray(a, dtype=dtype))

    def to_host(self, a) -> np.ndarray:
        return self.xp.asnumpy(a)

    tree_consts = staticmethod(tree_consts)
    _kernel = staticmethod(kernel)      # for the mixins that do not import this module
    _packed_model = staticmethod(lambda *a: _device_model(*a))

    def upload(self, a, out=None):
        """A small host array on the device without a synchronization: copied into a slot of
        a pinned staging ring, then copied asynchronously on the current stream (a plain copy
        from pageable memory would wait for all queued GPU work). A slot is reused only after
        its previous copy has completed (its event). ``out``: a device array of the same size
        to copy into (else a new one)."""
        import ctypes
        cp = self.xp
        if cp.cuda.get_current_stream().is_capturing():
            raise RuntimeError("a host upload inside a CUDA graph capture (its host buffer "
                               "would be read again at every replay)")
        a = np.ascontiguousarray(a)
        if out is not None:
            assert out.nbytes == a.nbytes and out.flags.c_contiguous
        if a.nbytes == 0 or a.nbytes > RING_SLOT:
            if out is not None:
                out.set(a.reshape(out.shape))
                return out
            return cp.asarray(a)
        if self._ring is None:
            self._mem = cp.cuda.alloc_pinned_memory(RING * RING_SLOT)
            self._ring = np.frombuffer(self._mem, np.uint8, RING * RING_SLOT)
        i = self._ring_pos
        self._ring_pos = (i + 1) % RING
        if self._ring_events[i] is not None:
            self._ring_events[i].synchronize()
        buf = self._ring[i * RING_SLOT:i * RING_SLOT + a.nbytes]
        buf[:] = a.view(np.uint8).ravel()
        if out is None:
            out = cp.empty(a.shape, a.dtype)
        out.data.copy_from_host_async(ctypes.c_void_p(buf.ctypes.data), a.nbytes)
        ev = cp.cuda.Event(block=False, disable_timing=True)
        ev.record()
        self._ring_events[i] = ev
        return out

    def on_device(self, a, dtype):
        """``a`` as a contiguous device array of ``dtype``: device arrays (a device-grown
        tree's requests, dgbdt.tree.device_grower) stay where they are, with no wait; host
        arrays go up through ``upload``."""
        if hasattr(a, "__cuda_array_interface__"):
            return self.xp.ascontiguousarray(a, dtype=dtype)
        return self.upload(np.asarray(a, dtype=dtype))

    def _hist_ptrs(self, hist_ptrs: np.ndarray):
        key = hist_ptrs.tobytes()
        if key not in self._hp_cache:
            with kept_allocations():        # kept beyond the training
                self._hp_cache = {key: self.xp.asarray(np.asarray(hist_ptrs, dtype=np.int64))}
        return self._hp_cache[key]

    def _static(self, shard, hist_ptrs: np.ndarray) -> dict:
        """Per-shard device constants (histogram layout, feature groups), built once per
        layout: shards of one layout share them (a sampled streamed round's compact shard is
        new every round; building them is three host waits)."""
        st = getattr(shard, "_cuda_static", None)
        if st is not None and st["key"] == hist_ptrs.tobytes():
            return st
        st = self._static_cache.get(hist_ptrs.tobytes())
        if st is not None:
            shard._cuda_static = st
            return st
        cp = self.xp
        hp = np.asarray(hist_ptrs, dtype=np.int64)
        slots = np.diff(hp)
        budget = hist_shared_budget(self.smem_optin)
        cap = budget // HIST_SLOT_BYTES
        # groups: runs of consecutive features whose slots fit in shared memory together
        # (build_histograms); a feature wider than that alone is summed in global memory
        # (build_histograms_global), the others still in shared memory
        pairs, wide, start, acc = [], [], None, 0
        for f, s in enumerate(slots.tolist()):
            if s > cap:
                if start is not None:
                    pairs += [start, f]
                start, acc = None, 0
                wide.append(f)
                continue
            if start is not None and acc + s > cap:
                pairs += [start, f]
                start, acc = None, 0
            if start is None:
                start = f
            acc += s
        if start is not None:
            pairs += [start, len(slots)]
        g = np.asarray(pairs, dtype=np.int32).reshape(-1, 2)
        gslots = [int(hp[b] - hp[a]) for a, b in g]
        nfg = int((g[:, 1] - g[:, 0]).max()) if len(g) else 0
        smem = HIST_SLOT_BYTES * max(gslots, default=0) + 4 * (nfg + 1)
        # one wave of resident blocks: as many per SM as threads and shared memory allow
        per_sm = max(1, min(self.threads_per_sm // HIST_BLOCK,
                            self.smem_per_sm // (smem + 1024)))
        with kept_allocations():        # cached beyond the training
            st = {"key": hist_ptrs.tobytes(), "hist_ptrs": cp.asarray(hp),
                  "groups": cp.asarray(g.ravel() if len(g) else np.zeros(2, np.int32)),
                  "n_groups": len(g), "smem": smem, "wide": cp.asarray(np.asarray(
                      wide or [0], dtype=np.int32)), "n_wide": len(wide),
                  "n_slots": int(hp[-1]), "blocks": self.n_sm * per_sm}
        use_shared = len(g) > 0
        if use_shared and smem > 48 * 1024:
            kernel("tree", "build_histograms").max_dynamic_shared_size_bytes = smem
        if len(self._static_cache) >= 16:        # a few layouts at a time
            self._static_cache.pop(next(iter(self._static_cache)))
        shard._cuda_static = self._static_cache[st["key"]] = st
        return st

    # -- the seam ----------------------------------------------------------------------------
    def gradients(self, objective, margin, label, weight, g, h, wait: bool = True,
                  maxima=None):
        """Gradients into g, h; returns (max |g|, max h) per class, or with ``wait=False``
        their float64 bits as a [2, K] uint64 device array (no host wait): ``maxima`` when
        given (zeroed by the caller; several shards' maxima then meet in one array)."""
        cp = self.xp
        n, K = margin.shape
        mx = cp.zeros((2, K), dtype=cp.uint64) if maxima is None else maxima
        if n == 0:
            return (np.zeros(K), np.zeros(K)) if wait else mx
        has_w = weight is not None
        grid = (_grid(n, cap=self.n_sm * 16),)
        # several targets (dgbdt.objectives.multi_target): the one-column kernel over the n*K
        # entries of the flat [n, K] arrays, each with its row's weight; maxima per column below
        flat = objective.num_target > 1
        if flat:
            label, weight = label.reshape(-1), objective.repeated_weights(weight)
        kernel("objective", objective.cuda_kernel)(
            (_grid(n * K, cap=self.n_sm * 16),) if flat else grid, (BLOCK,),
            (margin, label, weight if has_w else label, _i32(has_w))
            + objective.cuda_params(self)
            + ((_i64(n * K), _i32(1), g, h, cp.zeros((2, 1), dtype=cp.uint64)) if flat
               else (_i64(n), _i32(K), g, h, mx)))
        if K > 1:
            for k in range(K):
                kernel("objective", "column_max")(grid, (BLOCK,),
                                                  (g, h, _i64(n), _i32(K), _i32(k), mx))
        if not wait:
            return mx
        mx = cp.asnumpy(mx).view(np.float64)   # one small copy (and wait) per round
        return mx[0], mx[1]

    def tree_scales(self, maxima, k: int, n_rows: int, eta: float, consts) -> None:
        """consts (tree_consts) of class k from the device maxima of ``gradients(wait=False)``,
        on the device: fixedpoint.scale_for's values, no host wait (cuda/tree.cu)."""
        kernel("tree", "tree_scales")((1,), (32,), (maxima, _i32(maxima.shape[1]), _i32(k),
                                                     np.float64(n_rows), np.float64(eta), consts))

    def start_vector_tree(self, shard, scale_g, scale_h) -> None:
        """Vector-leaf trees are grown on the CPU only (dgbdt.tree.multi_target)."""
        raise NotImplementedError(VECTOR_LEAF_ON_GPU)

    def start_tree(self, shard, k: int, scale_g: float, scale_h: float, consts=None) -> None:
        """Fixed-point gradients of class k, rows in order, and the tree's largest |q| (which
        sets the histogram kernel's pieces, cuda/tree.cu), all without a host wait. ``consts``:
        the tree's constants on the device (tree_consts), else uploaded here."""
        n = shard.n_rows
        if consts is None:
            consts = self.upload(tree_consts(scale_g, scale_h))
        qmax = getattr(shard, "_qmax", None)
        if qmax is None:
            qmax = shard._qmax = self.xp.zeros(1, dtype=self.xp.uint64)
        else:
            qmax.data.memset_async(0, 8)
        if n:
            kernel("tree", "start_tree")(
                (_grid(n, cap=self.n_sm * 16),), (BLOCK,),
                (shard.g, shard.h, _i32(shard.g.shape[1]), _i32(k), consts, _i64(n),
                 shard.grad, shard.rows, qmax))
        gpu_arrays.fill(shard.begin[:1], 0)     # (a scalar setitem compiles a kernel)
        gpu_arrays.fill(shard.end[:1], n)
        self.route_reset(shard)

    def root_rows(self, shard) -> None:
        """Every row back in the root's segment, in order (a recorded tree's replay)."""
        n = shard.n_rows
        gpu_arrays.iota(shard.rows)
        gpu_arrays.fill(shard.begin[:1], 0)     # (a scalar setitem compiles a kernel)
        gpu_arrays.fill(shard.end[:1], n)
        self.route_reset(shard)

    def _tile_ptr(self, shard, nodes_d, m: int, tile: int):
        """Device prefix sums of the nodes' tile counts (see tile_node in cuda/common.cuh)."""
        tile_ptr = self.xp.empty(m + 1, dtype=self.xp.int64)
        kernel("tree", "tile_offsets")((1,), (1024,), (shard.begin, shard.end, nodes_d,
                                                       _i32(m), _i32(tile), tile_ptr))
        return tile_ptr

    def histograms(self, shard, nodes: np.ndarray, hist_ptrs: np.ndarray, out=None):
        """int64 [m, S, 2] histograms of the nodes (into ``out`` if given: zeroed here)."""
        cp = self.xp
        st = self._static(shard, hist_ptrs)
        m = len(nodes)
        if out is None:
            out = cp.zeros((m, st["n_slots"], 2), dtype=cp.int64)
        else:
            out.fill(0)
        if m == 0 or shard.n_rows == 0:
            return out
        p = shard.page
        nodes_d = self.on_device(nodes, np.int64)
        if p.ell:       # an ELLPACK page (dgbdt.data.sparse): its own kernels (gpu_pages)
            return self.ell_histograms(shard, nodes_d, m, st["hist_ptrs"], st["n_slots"], out)
        if st["n_groups"]:
            tile_ptr = self._tile_ptr(shard, nodes_d, m, HIST_TILE)
            G = st["n_groups"]
            kernel("tree", "build_histograms")(
                (max(1, math.ceil(st["blocks"] / G)), 1, G), (HIST_BLOCK,),
                (p.words, _i32(p.bits), np.uint32(p.mask), _i32(p.n_features), st["hist_ptrs"],
                 shard.rows, shard.grad, shard.begin, shard.end, nodes_d, tile_ptr, _i32(m),
                 _i32(HIST_TILE), st["groups"], _i32(st["n_slots"]), shard._qmax, out),
                shared_mem=st["smem"])
        if st["n_wide"]:
            bpn = max(1, math.ceil(self.n_sm * 4 / m))
            kernel("tree", "build_histograms_global")(
                (bpn, m), (GLOBAL_HIST_BLOCK,),
                (p.words, _i32(p.bits), np.uint32(p.mask), _i32(p.n_features), st["hist_ptrs"],
                 shard.rows, shard.grad, shard.begin, shard.end, nodes_d, _i32(st["n_slots"]),
                 st["wide"], _i32(st["n_wide"]), out))
        return out

    def level_histograms(self, shard, req, hist_ptrs: np.ndarray):
        """The level's histograms [small + large, S, 2]: the smaller children built from rows,
        their siblings = parent (this shard's previous level) - smaller, in one buffer."""
        if req.linear is not None:       # 9 sums a slot (dgbdt.backends.cuda_linear)
            return self.linear_histograms(shard, req, hist_ptrs)
        cp = self.xp
        st = self._static(shard, hist_ptrs)
        m, S = len(req.small), st["n_slots"]
        out = cp.empty((m + len(req.large), S, 2), dtype=cp.int64)
        self.histograms(shard, req.small, hist_ptrs, out=out[:m])
        if len(req.large):
            width = S * 2
            kernel("tree", "subtract_siblings")(
                (_grid(m * width, cap=self.n_sm * 32),), (BLOCK,),
                (shard.level_hist, self.on_device(req.parent_slot, np.int64),
                 _i32(m), _i64(width), out))
        return out

    def siblings(self, small, parents, parent_slot):
        """[small; parents[parent_slot] - small] (int64, exact): a copy and subtract_siblings,
        where CuPy's take, subtract and concatenate compiled three kernels at a first fit."""
        m = small.shape[0]
        out = self.xp.empty((2 * m,) + small.shape[1:], dtype=self.xp.int64)
        if m:
            small = self.xp.ascontiguousarray(small)
            out.data.copy_from_device_async(small.data, small.nbytes)
            width = small[0].size
            kernel("tree", "subtract_siblings")(
                (_grid(m * width, cap=self.n_sm * 32),), (BLOCK,),
                (self.xp.ascontiguousarray(parents), self.on_device(parent_slot, np.int64),
                 _i32(m), _i64(width), out))
        return out

    def apply_splits(self, shard, s) -> None:
        cp = self.xp
        m = len(s.node)
        if m == 0:
            return
        if shard.scratch_l is None:
            shard.scratch_l = cp.empty(max(shard.n_rows, 1), dtype=cp.int32)
        split = self._split_table(s)
        counts = cp.zeros((m, 2), dtype=cp.uint64)
        p = shard.page
        per = max(1, math.ceil(self.n_sm * 8 / m))
        if shard.n_rows:
            tile_ptr = self._tile_ptr(shard, split, m, BLOCK * PART_ITEMS)
            cat = self._cat_sets(s, m)
            if shard.route is not None:     # decided in row order (cuda_routes)
                self.route_splits(shard, split, m, cat)
                self.scatter_routed(shard, split, m, tile_ptr, counts)
            elif cat is not None:
                from ..kernels import gpu_categorical as gc
                gc.partition_scatter_cat(
                    kernel, (self.n_sm * 8,), (BLOCK,), p.words, p.bits, p.mask, p.n_features,
                    shard.n_bins, shard.rows, shard.scratch_l, shard.begin, shard.end, split,
                    m, tile_ptr, counts, *cat, p.ell, shard.hist_ptrs)
            else:
                kernel("tree", "partition_scatter")(
                    (self.n_sm * 8,), (BLOCK,),
                    (p.words, _i32(p.bits), np.uint32(p.mask), _i32(p.n_features),
                     shard.n_bins, shard.rows, shard.scratch_l, shard.begin, shard.end, split,
                     _i32(m), tile_ptr, counts, _i32(p.ell), shard.hist_ptrs))
        kernel("tree", "partition_finish")(
            (per, m), (BLOCK,),
            (shard.rows, shard.scratch_l, shard.begin, shard.end, split, _i32(m), counts))

    def fold_tree(self, shard, table, values, k: int, steps: int) -> None:
        """margin[:, k] += each row's leaf value of a tree walked over the rows' symbols."""
        p = shard.page
        kernel("tree", "fold_tree")(
            (_grid(shard.n_rows, cap=self.n_sm * 16),), (BLOCK,),
            (p.words, _i32(p.bits), np.uint32(p.mask), _i32(p.n_features), shard.n_bins,
             table, values, _i32(steps), _i64(shard.n_rows), shard.margin,
             _i32(shard.margin.shape[1]), _i32(k), _i32(p.ell), shard.hist_ptrs))

    def _split_table(self, s):
        """A SplitBatch as the kernels read it: int64 [6, m] on the device (node, feature,
        split bin, default left, left, right)."""
        cp = self.xp
        if s.packed is not None:
            return s.packed
        if hasattr(s.node, "__cuda_array_interface__"):
            return cp.stack([s.node, s.feature, s.split_bin, s.default_left.astype(cp.int64),
                             s.left, s.right]).astype(cp.int64)
        return self.upload(np.stack([s.node, s.feature, s.split_bin,
                                     np.asarray(s.default_left, dtype=np.int64), s.left,
                                     s.right]).astype(np.int64))

    def _cat_sets(self, s, m: int):
        """(is_cat, cats, cat_bytes) on the device when the batch has a categorical split, else
        None (dgbdt.kernels.gpu_categorical.split_rows)."""
        if s.is_cat is None or not bool(np.any(s.is_cat)):
            return None
        from ..kernels import gpu_categorical as gc
        return gc.split_rows(self, s.is_cat, s.cats, m)

    def split_add_leaves(self, shard, k: int, s, nodes: np.ndarray, values: np.ndarray):
        """apply_splits(s), then add_leaves(k, nodes, values). Routed (cuda_routes), the rows
        only move to their leaves in row_node and the margins are updated in row order: the
        children's segments are left unset, as the CPU's fused pass leaves them."""
        m = len(s.node)
        if shard.route is None or m == 0 or shard.n_rows == 0:
            self.apply_splits(shard, s)
            self.add_leaves(shard, k, nodes, values)
            return
        self.route_splits(shard, self._split_table(s), m, self._cat_sets(s, m))
        self.add_leaves(shard, k, nodes, values)

    def add_leaves(self, shard, k: int, nodes: np.ndarray, values: np.ndarray) -> None:
        m = len(nodes)
        if m == 0 or shard.n_rows == 0:
            return
        nodes_d = self.on_device(nodes, np.int64)
        values_d = self.on_device(values, np.float64)
        if shard.route is not None:         # in row order (cuda_routes)
            self.add_leaf_rows(shard, k, nodes_d, values_d, m)
            return
        tile_ptr = self._tile_ptr(shard, nodes_d, m, LEAF_TILE)
        kernel("tree", "add_leaf_values")(
            (self.n_sm * 8,), (BLOCK,),
            (shard.margin, _i32(shard.margin.shape[1]), _i32(k), shard.rows, shard.begin,
             shard.end, nodes_d, values_d, tile_ptr, _i32(m), _i32(LEAF_TILE)))

    def evaluate_splits(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p):
        """Best split per node of device histograms [m, S, 2]; results as numpy (one copy)."""
        r = self.xp.asnumpy(self.evaluate_splits_raw(hist, totals, hist_ptrs, inv_sg, inv_sh, p))
        gain = r[:, 0].astype(np.uint32).view(np.float32)
        return (gain, r[:, 1].astype(np.int32), r[:, 2].astype(np.int32),
                r[:, 3].astype(np.bool_), np.ascontiguousarray(r[:, 4:6]))

    def evaluate_splits_monotone(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p, lower,
                                 upper):
        """evaluate_splits under monotone constraints (the CPU kernel on a host copy of the
        histograms: dgbdt.kernels.gpu_categorical); results as numpy."""
        from ..kernels import gpu_categorical
        return gpu_categorical.evaluate_splits_monotone(hist, totals, hist_ptrs, inv_sg, inv_sh,
                                                        p, lower, upper)

    def evaluate_categorical(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p, features,
                             width, bounds=None):
        """The categorical features' best split per node (dgbdt.kernels.gpu_categorical);
        results as numpy."""
        from ..kernels import gpu_categorical
        return gpu_categorical.evaluate_categorical(kernel, self.upload, hist, totals,
                                                    hist_ptrs, inv_sg, inv_sh, p, features,
                                                    width, bounds)

    def evaluate_splits_device(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p):
        """The same, as device arrays (queued: no wait for the GPU)."""
        cp = self.xp
        r = self.evaluate_splits_raw(hist, totals, hist_ptrs, inv_sg, inv_sh, p)
        gain = r[:, 0].astype(cp.uint32).view(cp.float32)
        return (gain, r[:, 1].astype(cp.int32), r[:, 2].astype(cp.int32),
                r[:, 3].astype(cp.bool_), cp.ascontiguousarray(r[:, 4:6]))

    def evaluate_splits_raw(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p, consts=None):
        """[m, 6] int64 device rows: gain bits, feature, bin, default left, left (G, H).
        ``consts`` (device tree_consts) replaces inv_sg, inv_sh when given."""
        cp = self.xp
        if consts is None:
            consts = self.upload(np.array([0.0, 0.0, inv_sg, inv_sh, 0.0]))
        hist = cp.ascontiguousarray(hist)
        m, S = hist.shape[0], hist.shape[1]
        hp = np.asarray(hist_ptrs, dtype=np.int64)
        nf = hp.shape[0] - 1
        nb_max = int((np.diff(hp) - 1).max()) if nf else 1
        hp_d = self._hist_ptrs(hp)
        tot_d = self.on_device(totals, np.int64)
        best = cp.zeros(2 * m, dtype=cp.uint64)       # the keys, then each node's blocks done
        out = cp.empty((m, 6), dtype=cp.int64)
        if m and nf:        # a node's last block also decodes its key into out
            kernel("split", "evaluate_splits")(
                (nf, m), (BLOCK,),
                (hist, _i32(S), hp_d, tot_d, consts, np.float64(p.lam), np.float64(p.alpha),
                 np.float64(p.max_delta_step), np.float64(p.min_child_weight),
                 _i32(max(nb_max, 1)), best, out))
        elif m:             # no feature: every node's row says "no split"
            kernel("split", "finish_splits")(      # a warp a node
                (_grid(32 * m, cap=1 << 30),), (BLOCK,),
                (hist, _i32(S), hp_d, tot_d, _i32(max(nb_max, 1)), _i32(m), best, out))
        return out

    # -- device-resident growth (dgbdt.tree.device_grower; kernels in cuda/grow.cu) ----------
    def advance_level(self, cand, totals, slots, natural, width: int, sentinel: int,
                      min_gain: float, gamma: float, cuts, table, flags, batch, nxt) -> None:
        """One level's decisions, node table and split batch, and the next level's slots
        (``nxt``: (slots, natural, totals), or None after the last level): one launch."""
        W = int(slots.shape[0])
        dummy = batch if nxt is None else None
        ns, nn, nt = nxt if nxt is not None else (dummy, dummy, dummy)
        kernel("grow", "advance_level")(
            (1,), (1024,),
            (cand, totals, slots, natural, _i32(W), _i32(width), _i64(sentinel),
             np.float32(min_gain), np.float32(gamma), cuts.values, cuts.ptrs, cuts.min_values,
             table.n_nodes, table.left, table.right, table.parent, table.feature,
             table.default_left, table.threshold, table.loss_change, table.totals, flags, batch,
             _i32(nxt is not None), ns, nn, nt))

    def leaf_values(self, table, cap: int, sentinel: int, scale_g: float, scale_h: float, p,
                    nodes, values, consts=None) -> None:
        """Every leaf of a grown tree (others: the sentinel) and its value eta * w*."""
        if consts is None:
            consts = self.upload(tree_consts(scale_g, scale_h, p.eta))
        kernel("grow", "leaf_values")(
            (_grid(cap),), (BLOCK,),
            (table.n_nodes, table.left, table.totals, _i32(cap), _i64(sentinel), consts,
             np.float64(p.lam), np.float64(p.alpha), np.float64(p.max_delta_step),
             np.float64(p.min_child_weight), nodes, values))

    def predict_raw(self, X, cat, ptrs, classes, out, leaves) -> None:
        cp = self.xp
        n = X.shape[0]
        if n == 0:
            return
        want = leaves is not None
        nodes, dptrs, dclasses = _device_model(cat, ptrs, classes, X.device.id)
        args = (X, _i64(n), _i32(X.shape[1]), nodes, dptrs, dclasses, _i32(len(ptrs) - 1),
                _i32(out.shape[1]), out, leaves if want else cp.zeros(1, dtype=cp.int32),
                _i32(want))
        if "is_cat" in cat:      # trees with categorical splits (dgbdt.tree.model)
            kernel("predict", "predict_raw_cat")(
                (_grid(n, cap=2 ** 31 - 1),), (BLOCK,),
                args + _device_sets(cat, X.device.id))
            return
        kernel("predict", "predict_raw")((_grid(n, cap=2 ** 31 - 1),), (BLOCK,), args)


def _device_model(cat: dict, ptrs, classes, device: int) -> tuple:
    """The packed nodes, offsets and classes on ``device``, kept in ``cat`` (the caller keeps
    ``cat`` for a model it predicts with again: dgbdt.model.margins._concatenated). Sent up
    as one array through the backend's pinned staging (``upload``: no wait for the device;
    a GPU round's eval set sends its new tree so); a later use on another stream waits for
    that copy's event."""
    import cupy as cp
    held = cat.setdefault("_device", {})
    if device not in held:
        nodes = pack_nodes(cat)       # int32 [m, 4]: first, so its int4 rows stay aligned
        m = 2 * nodes.shape[0]
        ptrs = np.asarray(ptrs, np.int64)
        one = np.concatenate([nodes.reshape(-1).view(np.int64), ptrs,
                              np.asarray(classes, np.int64)])
        with cp.cuda.Device(device):
            up = CudaBackend.for_ordinal(device).upload(one)
            ready = cp.cuda.Event(disable_timing=True)
            ready.record()
        held[device] = ((up[:m].view(cp.int32).reshape(-1, 4), up[m:m + ptrs.shape[0]],
                         up[m + ptrs.shape[0]:]), ready)
    model, ready = held[device]
    cp.cuda.get_current_stream().wait_event(ready)
    return model


def _device_sets(cat: dict, device: int) -> tuple:
    """The categorical splits' arrays (dgbdt.tree.model.category_arrays) on ``device``, kept
    in ``cat`` as _device_model keeps the nodes: is_cat (uint8), cat_begin, cat_size, cats."""
    import cupy as cp
    held = cat.setdefault("_device_sets", {})
    if device not in held:
        with cp.cuda.Device(device):
            held[device] = (cp.asarray(np.asarray(cat["is_cat"]).astype(np.uint8)),
                            cp.asarray(np.asarray(cat["cat_begin"], np.int64)),
                            cp.asarray(np.asarray(cat["cat_size"], np.int64)),
                            cp.asarray(np.asarray(cat["cats"], np.uint8)
                                       if len(cat["cats"]) else np.zeros(1, np.uint8)))
    return held[device]


def pack_nodes(cat: dict) -> np.ndarray:
    """int32 [nodes, 4] rows (left, right, feature | default_left << 31, threshold bits) of
    the concatenated trees (host arrays of ``cat``), read as one int4 per node by
    cuda/predict.cu."""
    out = np.empty((len(cat["left"]), 4), dtype=np.int32)
    out[:, 0] = cat["left"]
    out[:, 1] = cat["right"]
    feature = np.asarray(cat["feature"]).astype(np.int64) & 0x7FFFFFFF   # leaves: unused
    dleft = np.asarray(cat["default_left"]).astype(np.int64) != 0
    out[:, 2] = (feature | (dleft.astype(np.int64) << 31)).astype(np.uint32).view(np.int32)
    out[:, 3] = np.asarray(cat["threshold"], dtype=np.float32).view(np.int32)
    return out


def hist_shared_budget(optin: int) -> int:
    """Shared memory a histogram block may use (DGBDT_HIST_SMEM overrides). 48 KiB, faster than
    larger blocks: two resident 1024-thread blocks per SM hide the atomics' latency better than
    fewer passes over the rows save (docs/benchmarks-archive.md#figures-behind-code-choices)."""
    env = os.environ.get("DGBDT_HIST_SMEM")
    return min(int(env), optin - 1024) if env else HIST_SMEM

