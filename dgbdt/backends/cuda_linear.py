"""The CUDA backend's part for piecewise-linear trees (dgbdt.kernels.linear_math, GBDT-PL): what the
host grower (dgbdt.tree.linear_growth) asks of GPU shards.

* ``linear_histograms``: a level's 9-sum histograms [small + large, S, 9] (int64, on the
  device), in one pass over the level's rows: the smaller children's nine sums and the larger
  ones' p~ entries (their own slope part) from their rows (cuda/linear.cu ``linear_ptilde``
  writes each row's record, then ``linear_histograms_shared``, sums privatized per block and
  feature group in shared memory, a thread a row, or ``linear_histograms``, every summand a
  global atomic: ``hist_setting``), a larger child's g, h and x~ entries as its parent's
  partial minus its sibling's (exact; ``linear_siblings``);
* ``linear_leaf_sums``: each leaf's fixed-point ridge sums [Lf, D + 1, D + 2] (device; a
  block a tile of rows, staged in shared memory);
* ``add_linear_leaves``: margin[r, k] += the row's linear leaf value;
* ``linear_node_totals``: each node's own nine sums (a device-grown level's);
* ``evaluate_linear_splits``: the best half-additive split of each node of a level's device
  histograms (cuda/linear_split.cu: a block a (node, feature) scans the bins, an atomicMax a
  node keeps the CPU's winner); only the winners come back to the host.

The kernels form every float64 term as kernels/cpu_linear.py does and round each summand once
to an integer, so the sums, hence the model, are the CPU's bit for bit (the CPU-run check:
tests/test_linear_kernel_host.py and tests/test_linear_split_host.py; the GPU's:
tests/gpu/test_gpu_linear.py). The split search runs on the device with the CPU's float64
operations in its order and its tie rule, so its winners are the CPU's bit for bit; the
half-additive fits of the chosen splits and the leaf solves (a few small systems) run on the
host (linear_growth.LinearNodes). The shard's raw rows (``Shard.raw``) are a float32 [n, F] device
matrix: the Dataset's own for device input, uploaded once for host input (dgbdt.train).

``CudaLinear`` is a mixin of dgbdt.backends.cuda.CudaBackend (it uses the backend's ``xp``,
``n_sm``, ``smem_optin``, ``smem_per_sm``, ``threads_per_sm``, ``upload``, ``on_device``,
``_hist_ptrs``, ``_tile_ptr`` and ``_kernel``); it imports nothing of
gpu.py, so there is no import circle.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ..kernels.launch import BLOCK, _grid, _i32

#: rows a tile of the histogram and margin kernels (a block takes a tile at a time)
LINEAR_TILE = 128
#: rows a tile of the leaf sums at most (a block's shared memory holds each row's z, g and
#: h: leaf_sum_tile)
LEAF_SUM_TILE = 256
#: the shared memory a block may use without opting in: feature_groups' and the leaf sums'
#: default budget (a linear histogram slot is 9 int64 = 72 bytes)
LINEAR_SMEM = 48 * 1024
#: threads of a linear_histograms_shared block (a thread a row). 1024-thread blocks of half
#: an SM's shared memory (6 features of 257 slots on Hopper; the kernel's 56-64 registers let
#: one such block be resident an SM): no slower than smaller blocks of 48 KiB, faster than
#: register caps for more resident threads (docs/benchmarks-archive.md#figures-behind-code-choices)
LINEAR_HIST_BLOCK = 1024
#: threads of a split-search block (a (node, feature) item; bins beyond it go in chunks)
SPLIT_BLOCK = 128
#: columns of a split-search result row: gain bits, feature, bin, default left, left[9], right[9]
SPLIT_ROW = 22


def shared_budget(smem_optin: int, smem_per_sm: int) -> int:
    """Shared memory a linear_histograms_shared block may use: half an SM's (less the 1 KiB
    the device reserves a block, so two fit where registers allow), within the per-block
    opt-in limit (DGBDT_LINEAR_SMEM overrides, within that limit)."""
    env = os.environ.get("DGBDT_LINEAR_SMEM")
    if env:
        return min(int(env), smem_optin)
    return max(LINEAR_SMEM, min(smem_optin, smem_per_sm // 2 - 1024))


def leaf_sum_tile(D: int, budget: int = LINEAR_SMEM) -> tuple[int, int]:
    """(rows a tile, shared-memory bytes) of linear_leaf_sums for D regressors a leaf: the
    tile's z, g and h (D + 3 float64 a row) and the block's n_entries int64 sums within
    ``budget`` (the default limit, no opt-in): 256 rows up to D = 20, fewer beyond."""
    n_entries = (D + 1) * (D + 2) // 2 + D + 1
    tile = LEAF_SUM_TILE
    while tile > 16 and tile * (D + 3) * 8 + n_entries * 8 > budget:
        tile //= 2
    return tile, tile * (D + 3) * 8 + n_entries * 8


def hist_setting() -> str:
    """DGBDT_LINEAR_HIST: which kernel builds linear histograms on a GPU: "shared" (the
    default: sums privatized per block in shared memory, for feature groups that fit
    shared_budget; "global" where a feature alone does not) or "global" (every summand a
    global atomic: the simplest form). The same integers either way."""
    value = os.environ.get("DGBDT_LINEAR_HIST", "shared") or "shared"
    if value not in ("shared", "global"):
        raise ValueError(f"DGBDT_LINEAR_HIST must be 'shared' or 'global'; got {value!r}")
    return value


def feature_groups(hist_ptrs, budget: int = LINEAR_SMEM):
    """int32 [2 G]: runs [f0, f1) of consecutive features whose slots x 72 bytes fit
    ``budget`` (greedy), and the largest run's slots; None when a feature alone does not fit
    (then the global kernel runs)."""
    hp = np.asarray(hist_ptrs, dtype=np.int64)
    cap = budget // (9 * 8)
    slots = np.diff(hp)
    if len(slots) == 0 or int(slots.max()) > cap:
        return None
    pairs, start, acc = [], 0, 0
    for f, n in enumerate(slots.tolist()):
        if acc + n > cap:
            pairs += [start, f]
            start, acc = f, 0
        acc += n
    pairs += [start, len(slots)]
    g = np.asarray(pairs, dtype=np.int32)
    return g, int(max(hp[b] - hp[a] for a, b in g.reshape(-1, 2)))


def raw_of(shard, xp):
    """The shard's raw rows where the kernels run (float32 [n, F] of ``xp``, C-contiguous)."""
    raw = shard.raw
    if raw is None or type(raw) is not xp.ndarray:
        raise RuntimeError("a linear tree on a GPU needs the shard's raw feature values on the "
                           "device (Shard.raw, set by dgbdt.train); this shard has "
                           + ("none" if raw is None else f"a {type(raw).__name__}"))
    return raw


class CudaLinear:
    """Linear-tree operations of the CUDA backend (see the module docstring)."""

    def _consts(self, consts, scale_g: float, scale_h: float, eta: float = 0.0,
                inv: tuple | None = None):
        """The tree's constants as the kernels read them, in device memory (gpu.tree_consts'
        layout: scale_g, scale_h, 1 / scale_g, 1 / scale_h, eta): ``consts`` where a
        device-grown tree keeps them (a CUDA graph replays with the next tree's), else these
        values uploaded (``inv``: given as 1 / scales)."""
        if consts is not None:
            return consts
        isg, ish = inv if inv is not None else (1.0 / scale_g, 1.0 / scale_h)
        return self.on_device(np.array([scale_g, scale_h, isg, ish, eta]), np.float64)

    def _device_const(self, name: str, make):
        """A small constant device array, made once per backend (not inside a CUDA graph
        capture, where a host-to-device copy is not allowed: the first tree is eager)."""
        held = self.__dict__.setdefault("_linear_device_consts", {})
        if name not in held:
            held[name] = self.xp.asarray(make())
        return held[name]

    def _linear_consts(self, shard, lv):
        """center, inv_scale (float64 [F]) and xmask (uint8 [F]) on the device, uploaded once
        per training (the LinearSpec's arrays are the same objects every level)."""
        held = getattr(shard, "_linear_consts", None)
        if held is None or held[0] is not lv.center:
            held = (lv.center, self.on_device(lv.center, np.float64),
                    self.on_device(lv.inv_scale, np.float64),
                    self.on_device(np.asarray(lv.xmask).astype(np.uint8), np.uint8))
            shard._linear_consts = held
        return held[1:]

    def _normalization(self, shard, center, inv_scale):
        """center and inv_scale on the device: the shard's copies made with its first
        histograms when they are of these arrays (no upload, so a tree's leaf sums can be
        captured in a CUDA graph), else uploaded."""
        held = getattr(shard, "_linear_consts", None)
        if held is not None and held[0] is center:
            return held[1], held[2]
        return self.on_device(center, np.float64), self.on_device(inv_scale, np.float64)

    def linear_histograms(self, shard, req, hist_ptrs):
        """The level's linear histograms [small + large, S, 9] on the device (see module)."""
        cp = self.xp
        lv, ns, nl = req.linear, len(req.small), len(req.large)
        S = int(hist_ptrs[-1])
        out = cp.zeros((ns + nl, S, 9), dtype=cp.int64)
        if nl and nl != ns:
            raise ValueError(f"a level's larger children pair with its smaller ones; got {ns} "
                             f"smaller and {nl} larger")
        # one pass over the level's rows: the smaller children's nine sums, the larger ones'
        # p~ entries (nodes from ns on)
        nodes = self.on_device(req.small, np.int64)
        if nl:
            nodes = cp.concatenate([nodes, self.on_device(req.large, np.int64)])
        self._linear_rows(shard, nodes, lv, hist_ptrs, ns, out)
        if nl:      # the larger children's other entries by subtraction
            self._kernel("linear", "linear_siblings")(
                (_grid(ns * S * 9, cap=self.n_sm * 32),), (BLOCK,),
                (shard.level_hist, self.on_device(req.parent_slot, np.int64), _i32(ns),
                 np.int64(S), out))
        return out

    def _linear_rows(self, shard, nodes, lv, hist_ptrs, p_from: int, out) -> None:
        """Linear histograms of ``nodes`` (their regressors lv's rows) from their rows into
        ``out`` (zeroed): all nine sums of nodes[:p_from], the p~ entries of the others."""
        m = len(nodes)
        if m == 0 or shard.n_rows == 0:
            return
        p = shard.page
        raw = raw_of(shard, self.xp)
        center, inv_scale, xmask = self._linear_consts(shard, lv)
        D = int(lv.reg_feat.shape[1])
        nodes_d = self.on_device(nodes, np.int64)
        tile_ptr = self._tile_ptr(shard, nodes_d, m, LINEAR_TILE)
        g, h = self.xp.ascontiguousarray(shard.g), self.xp.ascontiguousarray(shard.h)
        # each row's record (g sg, h sh, p~ and its fixed-point g, h) at its position in rows,
        # once (linear_ptilde): the histogram kernels read it in row order, coalesced
        held = getattr(shard, "_linear_records", None)
        if held is None or held[0].shape[0] != shard.n_rows:
            held = shard._linear_records = (
                self.xp.empty((shard.n_rows, 3), dtype=self.xp.float64),
                self.xp.empty((shard.n_rows, 2), dtype=self.xp.int64))
        rec, recq = held
        self._kernel("linear", "linear_ptilde")(       # a thread a row of a tile
            (self.n_sm * 32,), (LINEAR_TILE,),
            (shard.rows, shard.begin, shard.end, nodes_d, tile_ptr, _i32(m), _i32(LINEAR_TILE),
             raw, _i32(raw.shape[1]), center, inv_scale, xmask,
             self.on_device(lv.reg_feat, np.int64), self.on_device(lv.reg_coef, np.float64),
             self.on_device(lv.inv_sp, np.float64), _i32(D), g, h, _i32(g.shape[1]),
             _i32(lv.k), shard.grad, self._consts(lv.consts, lv.scale_g, lv.scale_h),
             _i32(p_from), rec, recq))
        args = (p.words, _i32(p.bits), np.uint32(p.mask), _i32(p.n_features),
                self._hist_ptrs(np.asarray(hist_ptrs)), shard.rows, rec, recq, raw, center,
                inv_scale, xmask, shard.begin, shard.end, nodes_d, _i32(hist_ptrs[-1]),
                tile_ptr, _i32(m), _i32(LINEAR_TILE), _i32(p_from))
        groups = self._linear_groups(shard, hist_ptrs) if hist_setting() == "shared" else None
        if groups is None:
            self._kernel("linear", "linear_histograms")((self.n_sm * 16,), (BLOCK,),
                                                         args + (out,))
            return
        groups_d, n_groups, widest = groups
        kern = self._kernel("linear", "linear_histograms_shared")
        smem = 72 * widest
        held = self.__dict__.setdefault("_linear_launch", {"smem": LINEAR_SMEM})
        if smem > held["smem"]:     # beyond the default limit: opt in (once a size)
            kern.max_dynamic_shared_size_bytes = held["smem"] = smem
        if "block" not in held:     # the kernel's registers may allow fewer threads
            held["block"] = min(LINEAR_HIST_BLOCK, getattr(kern, "max_threads_per_block",
                                                           LINEAR_HIST_BLOCK))
        block = held["block"]
        # one wave of resident blocks: as many per SM as threads and shared memory allow
        per_sm = max(1, min(self.threads_per_sm // block, self.smem_per_sm // (smem + 1024)))
        kern((max(1, math.ceil(self.n_sm * per_sm / n_groups)), 1, n_groups), (block,),
             args + (groups_d, out), shared_mem=smem)

    def _linear_groups(self, shard, hist_ptrs):
        """(device groups, their count, the widest group's slots) for the shared kernel, or
        None (a feature too wide for it), kept on the shard per histogram layout."""
        key = np.asarray(hist_ptrs, dtype=np.int64).tobytes()
        held = getattr(shard, "_linear_groups_of", None)
        if held is None or held[0] != key:
            fg = feature_groups(hist_ptrs, shared_budget(self.smem_optin, self.smem_per_sm))
            held = (key, None if fg is None else
                    (self.on_device(fg[0], np.int32), len(fg[0]) // 2, fg[1]))
            shard._linear_groups_of = held
        return held[1]

    def linear_leaf_sums(self, shard, req):
        """Each leaf's fixed-point ridge sums [Lf, D + 1, D + 2] (device int64; the lower
        triangle mirrored from the upper, as cpu_linear.leaf_sums)."""
        cp = self.xp
        Lf, D = int(req.feats.shape[0]), int(req.feats.shape[1])
        out = cp.zeros((Lf, D + 1, D + 2), dtype=cp.int64)
        if Lf and shard.n_rows:
            raw = raw_of(shard, self.xp)
            leaves_d = self.on_device(req.leaves, np.int64)
            tile, smem = leaf_sum_tile(D)
            tile_ptr = self._tile_ptr(shard, leaves_d, Lf, tile)
            self._kernel("linear", "linear_leaf_sums")(     # a block a tile at a time
                (self.n_sm * 8,), (BLOCK,),
                (shard.rows, shard.begin, shard.end, leaves_d, raw, _i32(raw.shape[1]),
                 self.xp.ascontiguousarray(shard.g), self.xp.ascontiguousarray(shard.h),
                 _i32(shard.g.shape[1]), _i32(req.k),
                 *self._normalization(shard, req.center, req.inv_scale),
                 self.on_device(req.feats, np.int64), _i32(D),
                 self._consts(req.consts, req.scale_g, req.scale_h), tile_ptr, _i32(Lf),
                 _i32(tile), out), shared_mem=smem)
        a = self._device_const(f"tril_a{D}", lambda: np.tril_indices(D + 1, -1)[0])
        b = self._device_const(f"tril_b{D}", lambda: np.tril_indices(D + 1, -1)[1])
        out[:, a, b] = out[:, b, a]
        return out

    def add_linear_leaves(self, shard, fin) -> None:
        """margin[r, fin.k] += the linear value of row r's leaf (fin.linear: LeafModels)."""
        lm, m = fin.linear, len(fin.leaves)
        if m == 0 or shard.n_rows == 0:
            return
        raw = raw_of(shard, self.xp)
        leaves_d = self.on_device(fin.leaves, np.int64)
        tile_ptr = self._tile_ptr(shard, leaves_d, m, LINEAR_TILE)
        self._kernel("linear", "add_linear_leaves")(
            (self.n_sm * 16,), (BLOCK,),
            (shard.margin, _i32(shard.margin.shape[1]), _i32(fin.k), shard.rows, shard.begin,
             shard.end, leaves_d, raw, _i32(raw.shape[1]), self.on_device(lm.begin, np.int64),
             self.on_device(lm.size, np.int64), self.on_device(lm.coef, np.float64),
             self.on_device(lm.feat, np.int64), self.on_device(lm.center, np.float64),
             self.on_device(lm.inv_scale, np.float64), tile_ptr, _i32(m),
             _i32(LINEAR_TILE)))

    def evaluate_linear_splits(self, hist, hist_ptrs, node_totals, addable, has_p, inv_sg,
                               inv_sh, lam0, lam1, min_child_weight, on_host=True,
                               consts=None, raw=False):
        """kernels.cpu_linear.evaluate_linear_splits of device histograms [m, S, 9], plus each
        winner's right side: (gain float32 [m], feature int32 [m] (-1: none), split_bin int32,
        default_left bool, left int64 [m, 9], right int64 [m, 9]) as numpy (one copy of
        m x 22 int64; the histograms stay on the device). The right side is the split
        feature's total minus the left (feature 0's for a node without a split), as the CPU
        backend's. cuda/linear_split.cu: linear_split_scan posts each (node, feature)'s best
        candidate key to the node, linear_split_finish decodes the winners. ``on_host=False``:
        the same arrays on the device, with no copy and no wait (dgbdt.tree.linear_device);
        ``raw``: the winners' rows int64 [m, 22] themselves (gain bits, feature, bin, default
        left, left[9], right[9]), whose first six columns are grow.cu's candidate rows."""
        xp = self.xp
        hist = xp.ascontiguousarray(hist, dtype=xp.int64)
        m, S = int(hist.shape[0]), int(hist.shape[1])
        hp = np.asarray(hist_ptrs, dtype=np.int64)
        F = len(hp) - 1
        nb_max = max(1, int((np.diff(hp) - 1).max())) if F else 1
        if 2 * nb_max * max(F, 1) >= 2 ** 32:
            raise ValueError(f"{F} features of up to {nb_max} bins are too many candidates "
                             "for the GPU's linear split search (32-bit candidate index); "
                             "use fewer bins (max_bin) or features")
        out = xp.zeros((m, SPLIT_ROW), dtype=xp.int64)
        out[:, 1] = -1
        if m:
            hp_d = self._hist_ptrs(hp)
            best = xp.zeros(m, dtype=xp.uint64)
            if F:
                self._kernel("linear_split", "linear_split_scan")(
                    (max(1, min(m * F, self.n_sm * 64)),), (SPLIT_BLOCK,),
                    (hist, _i32(S), hp_d, _i32(F), self.on_device(node_totals, np.int64),
                     self.on_device(addable, np.uint8), self.on_device(has_p, np.uint8),
                     self._consts(consts, 0.0, 0.0, inv=(inv_sg, inv_sh)), np.float64(lam0),
                     np.float64(lam1),
                     np.float64(min_child_weight), _i32(nb_max), _i32(m), best))
                self._kernel("linear_split", "linear_split_finish")(
                    (max(1, min(m, self.n_sm * 8)),), (SPLIT_BLOCK,),
                    (hist, _i32(S), hp_d, _i32(nb_max), _i32(m), best, out))
        if raw:             # the winners' rows [m, 22] as they are (a fused device level)
            return out
        r, mod = (self.to_host(out), np) if on_host else (out, xp)
        gain = mod.ascontiguousarray(r[:, 0]).astype(mod.uint32).view(mod.float32)
        return (gain, r[:, 1].astype(mod.int32), r[:, 2].astype(mod.int32),
                r[:, 3].astype(mod.bool_), mod.ascontiguousarray(r[:, 4:13]),
                mod.ascontiguousarray(r[:, 13:22]))

    def linear_node_totals(self, hist, hist_ptrs):
        """int64 [m, 9] on the device: each node's own sums, its feature-0 slots of ``hist``
        [m, S, 9] added (cuda/linear_split.cu linear_node_totals: one launch, faster than
        cupy's axis sum over the strided slots:
        docs/benchmarks-archive.md#figures-behind-code-choices)."""
        xp = self.xp
        hist = xp.ascontiguousarray(hist, dtype=xp.int64)
        m, S = int(hist.shape[0]), int(hist.shape[1])
        hp = np.asarray(hist_ptrs, dtype=np.int64)
        out = xp.empty((m, 9), dtype=xp.int64)
        if m:
            self._kernel("linear_split", "linear_node_totals")(
                (max(1, min(m, self.n_sm * 8)),), (SPLIT_BLOCK,),
                (hist, _i32(S), _i32(hp[0]), _i32(hp[1]), _i32(m), out))
        return out

    def linear_level(self, slots, regs, slopes, nreg, inv_sp, regressor):
        """A device-grown linear level's inputs (reg_feat, reg_coef, isp, addable, has_p) of
        its slots (cuda/linear_grow.cu linear_level; cpu_linear_fit.level_inputs), one
        launch."""
        xp = self.xp
        W, D, F = int(slots.shape[0]), int(regs.shape[1]), int(regressor.shape[0])
        out = (xp.empty((W, D), dtype=xp.int64), xp.empty((W, D), dtype=xp.float64),
               xp.empty(W, dtype=xp.float64), xp.empty((W, F), dtype=xp.uint8),
               xp.empty(W, dtype=xp.uint8))
        if W:
            self._kernel("linear_grow", "linear_level")(
                (max(1, math.ceil(W / BLOCK)),), (BLOCK,),
                (xp.ascontiguousarray(slots, dtype=xp.int64), _i32(W), regs, slopes, nreg,
                 inv_sp, xp.ascontiguousarray(regressor, dtype=xp.uint8), _i32(F), _i32(D),
                 *out))
        return out

    def linear_children(self, nodes, feat, lefts, rights, lsum, rsum, addable, sentinel, regs,
                        slopes, nreg, inv_sp, inv_sg, inv_sh, lam0, lam1, consts=None) -> None:
        """A device-grown linear level's children's half-additive fits, regressors and slope
        parts (cuda/linear_grow.cu; kernels.cpu_linear_fit.linear_children's loop, a thread
        a slot), into the node tables regs, slopes, nreg, inv_sp."""
        xp, W = self.xp, int(nodes.shape[0])
        if W == 0:
            return
        i64 = xp.int64
        self._kernel("linear_grow", "linear_children")(
            (max(1, math.ceil(W / BLOCK)),), (BLOCK,),
            (xp.ascontiguousarray(nodes, dtype=i64), xp.ascontiguousarray(feat, dtype=i64),
             xp.ascontiguousarray(lefts, dtype=i64), xp.ascontiguousarray(rights, dtype=i64),
             xp.ascontiguousarray(lsum, dtype=i64), xp.ascontiguousarray(rsum, dtype=i64),
             xp.ascontiguousarray(addable, dtype=xp.uint8), _i32(addable.shape[1]),
             np.int64(sentinel), regs, slopes, nreg, inv_sp, _i32(W), _i32(regs.shape[1]),
             self._consts(consts, 0.0, 0.0, inv=(inv_sg, inv_sh)), np.float64(lam0),
             np.float64(lam1)))

    def fit_linear_leaves(self, sums, leaves, nreg, sentinel, inv_sg, inv_sh, lam0, lam1,
                          min_child_weight, eta, coefs, consts=None) -> None:
        """A device-grown linear tree's leaf fits, eta times (cuda/linear_grow.cu
        fit_linear_leaves; kernels.cpu_linear_fit.fit_leaves), into coefs [m, D + 1]."""
        xp, m = self.xp, int(leaves.shape[0])
        if m == 0:
            return
        n = int(coefs.shape[1])
        scratch = xp.empty(m * (2 * n * n + 4 * n), dtype=xp.float64)
        self._kernel("linear_grow", "fit_linear_leaves")(
            (max(1, math.ceil(m / BLOCK)),), (BLOCK,),
            (xp.ascontiguousarray(sums, dtype=xp.int64),
             xp.ascontiguousarray(leaves, dtype=xp.int64), nreg, np.int64(sentinel), _i32(m),
             _i32(n - 1), self._consts(consts, 0.0, 0.0, eta, inv=(inv_sg, inv_sh)),
             np.float64(lam0), np.float64(lam1), np.float64(min_child_weight), scratch, coefs))

    def predict_linear(self, X, cat, ptrs, classes, out) -> None:
        """out[r, classes[t]] += row r's leaf value in tree t, linear leaves evaluated, for
        device rows X (float32 [n, F]) into device margins out [n, K] (cuda/linear.cu
        predict_linear: cpu_linear.predict_linear's walk and arithmetic). ``cat``: the
        concatenated trees with linear_model.linear_arrays' entries; their device copies are
        kept in it (as the constant trees' packed nodes are)."""
        cp = self.xp
        n = int(X.shape[0])
        if n == 0 or len(ptrs) < 2:
            return
        nodes, dptrs, dclasses = self._packed_model(cat, ptrs, classes, X.device.id)
        held = cat.setdefault("_device_linear", {})
        if X.device.id not in held:
            with X.device:
                held[X.device.id] = tuple(
                    cp.asarray(np.asarray(cat[k], dt) if len(cat[k]) else np.zeros(1, dt))
                    for k, dt in (("lin_begin", np.int64), ("lin_size", np.int64),
                                  ("lin_coef", np.float64), ("lin_feat", np.int64),
                                  ("lin_center", np.float64), ("lin_inv_scale", np.float64)))
        X = cp.ascontiguousarray(X, dtype=cp.float32)
        self._kernel("linear", "predict_linear")(
            (max(1, min(math.ceil(n / BLOCK), self.n_sm * 32)),), (BLOCK,),
            (X, np.int64(n), _i32(X.shape[1]), nodes, dptrs, dclasses, _i32(len(ptrs) - 1),
             _i32(out.shape[1]), *held[X.device.id], out))
