"""The CPU backend: the kernel seam (dgbdt.backends.device) over numba kernels and numpy arrays."""
from __future__ import annotations

import threading
import time

import numba
import numpy as np

from ..kernels.arrays import to_host
from ..kernels.pages import columns
from ..kernels.cpu_objective import column_abs_maxima
from .protocol import Capabilities
from ..kernels import cpu_categorical, cpu_linear, cpu_linear_fit, cpu_sparse, cpu_split, cpu_tree
from ..kernels.threads import kernel_threads, serial_below

#: shards of fewer rows run their row kernels (histograms, partitions, gradients' fixed
#: point, leaf updates) on one thread (kernels.threads.serial_below): a parallel region costs
#: ~20-50 us to wake the sleeping threads on a busy 2-core machine, more than such a shard's
#: level. Decided by the shard, not the call: a training whose calls switched between one
#: thread and all (a deep level's few rows) measured slower, the pool's threads sleeping
#: longer between its parallel calls (issue 47)
SERIAL_ROWS = 1 << 14

#: ``warm``: whether this thread's last dense histograms ran on numba's pool, whose threads
#: are then awake for the level's split evaluation (cpu_split.WARM_SERIAL_SLOTS)
_POOL = threading.local()


class CpuBackend:
    """Operations on a Shard's rows (see dgbdt.engine.shard), on the host."""

    name = "cpu"
    xp = np
    caps = Capabilities()

    def clock(self) -> float:
        return time.perf_counter()

    def asarray(self, a, dtype=None):
        return np.ascontiguousarray(to_host(a), dtype=dtype)

    def to_host(self, a) -> np.ndarray:
        return np.asarray(a)

    def upload(self, a):
        """Small request arrays (node ids, split decisions) where the kernels read them."""
        return np.ascontiguousarray(a)

    def take_rows(self, page, rows):
        """A page of ``page``'s ``rows`` (in that order), with the same symbol width and
        layout."""
        out = self.pack_symbols(self.row_symbols(page, rows), page.bits)
        out.ell = page.ell
        return out

    def row_symbols(self, page, rows):
        """uint16 (uint32 beyond 16 bits) [len(rows), F]: the rows' symbols, unpacked."""
        from ..kernels.pages import unpack_rows
        return unpack_rows(page, rows)

    def join_pages(self, pages):
        """One page of ``pages``' rows in their order (dgbdt.kernels.pages.join)."""
        from ..kernels.pages import join
        return join(pages)

    def pack_symbols(self, symbols, bits: int):
        """A page of ``bits``-bit symbols from a uint16/uint32 [n, F] array."""
        from ..kernels.pages import pack
        return pack(symbols, bits=bits)

    def gradients(self, objective, margin, label, weight, g, h, wait: bool = True,
                  maxima=None):
        if maxima is not None:      # a caller's bug: only device backends post maxima
            raise RuntimeError("the CPU backend returns its gradient maxima; it takes no "
                               "device array to post them into")
        with kernel_threads(serial_below(margin.shape[0], SERIAL_ROWS)):
            objective.gradients(margin, label, weight, out=(g, h))
            if margin.shape[0] == 0:
                return np.zeros(margin.shape[1]), np.zeros(margin.shape[1])
            return column_abs_maxima(g, h)

    def start_tree(self, shard, k: int, scale_g: float, scale_h: float, consts=None) -> None:
        with kernel_threads(serial_below(shard.n_rows, SERIAL_ROWS)):
            cpu_tree.quantize_gradients(shard.g, shard.h, k, scale_g, scale_h, shard.grad,
                                        shard.rows)
        shard.begin[0] = 0
        shard.end[0] = shard.n_rows
        if shard.columns is None:       # the shard's first tree
            shard.columns = (shard.page, self._columns(shard))
        elif shard.columns[0] is not shard.page:    # a new page (approx's cuts): the page
            shard.columns = (shard.page, None)

    @staticmethod
    def _columns(shard):
        """The page's columns (kernels.pages.columns) for the partition's numerical splits,
        or None (read the page): where Shard.columns_wanted says so."""
        return columns(shard.page) if shard.columns_wanted() else None

    def root_rows(self, shard) -> None:
        """Every row back in the root's segment, in order (a recorded tree's replay)."""
        shard.rows[:] = np.arange(shard.n_rows, dtype=shard.rows.dtype)
        shard.begin[0] = 0
        shard.end[0] = shard.n_rows

    def start_vector_tree(self, shard, scale_g, scale_h) -> None:
        """A vector-leaf tree's start (dgbdt.tree.multi_target): every target t's
        fixed-point gradients into ``shard.grad_targets[t]`` with its scales; every row back
        in the root's segment."""
        T = len(scale_g)
        if shard.grad_targets is None or shard.grad_targets.shape[0] != T:
            shard.grad_targets = np.empty((T, shard.n_rows, 2), np.int64)
        for t in range(T):
            cpu_tree.quantize_gradients(shard.g, shard.h, t, float(scale_g[t]),
                                        float(scale_h[t]), shard.grad_targets[t], shard.rows)
        shard.begin[0] = 0
        shard.end[0] = shard.n_rows

    def _vector_histograms(self, shard, nodes, hist_ptrs) -> np.ndarray:
        """int64 [len(nodes), S, 2T]: target t's histograms (of its fixed-point gradients)
        at columns 2t, 2t + 1 (dgbdt.tree.multi_target)."""
        T = shard.grad_targets.shape[0]
        out = np.empty((len(nodes), int(hist_ptrs[-1]), 2 * T), np.int64)
        grad = shard.grad
        try:
            for t in range(T):
                shard.grad = shard.grad_targets[t]
                out[:, :, 2 * t:2 * t + 2] = self.histograms(shard, nodes, hist_ptrs)
        finally:
            shard.grad = grad
        return out

    def histograms(self, shard, nodes: np.ndarray, hist_ptrs: np.ndarray) -> np.ndarray:
        p = shard.page
        if p.ell:       # an ELLPACK page (dgbdt.data.sparse)
            return self._ell_histograms(shard, nodes, hist_ptrs,
                                        np.empty((len(nodes), int(hist_ptrs[-1]), 2), np.int64))
        out = np.empty((len(nodes), int(hist_ptrs[-1]), 2), np.int64)
        self._dense_histograms(shard, nodes, hist_ptrs, out)
        return out

    @staticmethod
    def _dense_histograms(shard, nodes, hist_ptrs, out, parent=None, parent_slot=None):
        """out[:m] = the histograms of ``nodes`` (m) from their rows; with ``parent``,
        out[m + i] = parent[parent_slot[i]] - out[i] (cpu_tree.level_histograms), on one
        thread for a small shard (SERIAL_ROWS)."""
        p = shard.page
        b, e = shard.begin[nodes], shard.end[nodes]
        S = int(hist_ptrs[-1])
        if parent is None:
            parent, parent_slot = np.zeros((0, S, 2), np.int64), np.zeros(0, np.int64)
        with kernel_threads(serial_below(shard.n_rows, SERIAL_ROWS)) as threads:
            cpu_tree.level_histograms(p.words, p.bits, p.n_features, hist_ptrs, shard.rows,
                                      shard.grad, b, e, threads, parent, parent_slot, out)
        _POOL.warm = threads > 1

    def siblings(self, small, parents, parent_slot) -> np.ndarray:
        """[small; parents[parent_slot] - small]: merged histograms of the smaller children
        and of their siblings (parent minus smaller child, exact in integers)."""
        return np.concatenate([small, parents[np.asarray(parent_slot, np.int64)] - small])

    def level_histograms(self, shard, req, hist_ptrs: np.ndarray) -> np.ndarray:
        """The smaller children from rows, their siblings = parent - smaller (exact)."""
        if req.linear is not None:
            return self.linear_histograms(shard, req, hist_ptrs)
        if shard.grad_targets is not None:       # a vector-leaf tree: T histograms a node
            small = self._vector_histograms(shard, req.small, hist_ptrs)
            if not len(req.large):
                return small
            large = shard.level_hist[np.asarray(req.parent_slot, np.int64)] - small
            return np.concatenate([small, large])
        m = len(req.small)
        # one buffer for the level: the smaller children, then their siblings
        out = np.empty((m + len(req.large), int(hist_ptrs[-1]), 2), dtype=np.int64)
        if not shard.page.ell:      # the siblings in the same call (one kernel a level)
            slots = np.ascontiguousarray(req.parent_slot, np.int64) if len(req.large) else None
            self._dense_histograms(shard, req.small, hist_ptrs, out,
                                   shard.level_hist if slots is not None else None, slots)
            return out
        self._ell_histograms(shard, req.small, hist_ptrs, out[:m])
        if not len(req.large):
            return out
        cpu_tree.subtract_siblings(shard.level_hist, np.ascontiguousarray(req.parent_slot,
                                                                          np.int64), out, m)
        return out

    @staticmethod
    def _ell_histograms(shard, nodes, hist_ptrs, out):
        p = shard.page
        return cpu_sparse.build_histograms_ell(
            p.words, p.bits, p.n_features, np.ascontiguousarray(hist_ptrs, np.int64),
            shard.rows, shard.grad, shard.begin[nodes], shard.end[nodes], int(hist_ptrs[-1]),
            numba.get_num_threads(), out)

    @staticmethod
    def _read_columns(shard):
        """The columns' words to partition from, or None (the page)."""
        c = shard.columns
        return None if c is None or c[0] is not shard.page or c[1] is None else c[1].words

    def apply_splits(self, shard, s) -> None:
        p = shard.page
        b, e = shard.begin[s.node], shard.end[s.node]
        if shard.scratch_l is None:
            shard.scratch_l = np.empty(shard.n_rows, dtype=np.int32)
            shard.scratch_r = np.empty(shard.n_rows, dtype=np.int32)
        threads = serial_below(shard.n_rows, SERIAL_ROWS)
        with kernel_threads(threads):
            n_left = cpu_tree.partition_rows(
                p.words, p.bits, p.n_features, shard.n_bins, shard.rows, shard.scratch_l,
                shard.scratch_r, b, e, s.feature, s.split_bin, s.default_left,
                max(1, min(threads * 4, shard.n_rows // 4096)), s.is_cat, s.cats,
                p.ell, shard.hist_ptrs, columns=self._read_columns(shard))
        shard.begin[s.left], shard.end[s.left] = b, b + n_left
        shard.begin[s.right], shard.end[s.right] = b + n_left, e

    def fold_tree(self, shard, table, values, k: int, steps: int) -> None:
        """margin[:, k] += each row's leaf value of a tree walked over the rows' symbols."""
        p = shard.page
        cpu_tree.fold_tree(p.words, p.bits, np.uint64(p.mask), p.n_features, shard.n_bins,
                           table, values, steps, shard.n_rows, shard.margin, k, p.ell,
                           shard.hist_ptrs)

    def add_leaves(self, shard, k: int, nodes: np.ndarray, values: np.ndarray) -> None:
        with kernel_threads(serial_below(shard.n_rows, SERIAL_ROWS)):
            cpu_tree.add_leaf_values(shard.margin, k, shard.rows, shard.begin[nodes],
                                     shard.end[nodes], values)

    def split_add_leaves(self, shard, k: int, s, nodes: np.ndarray, values: np.ndarray):
        """apply_splits(s), then add_leaves(k, nodes, values), in one pass that moves no
        rows (cpu_tree.partition_rows' leaf update): the children's segments are left unset."""
        p = shard.page
        nodes = np.asarray(nodes, np.int64)
        values = np.asarray(values, np.float64)
        table = np.zeros(int(max(nodes.max(), s.right.max())) + 1)
        table[nodes] = values
        split = np.zeros(len(table), np.bool_)
        split[s.left] = split[s.right] = True
        old = nodes[~split[nodes]]          # leaves of earlier levels: both sides one value
        m, n_old = len(s.node), len(old)
        seg = np.concatenate([s.node, old])
        zeros = np.zeros(n_old, np.int64)
        is_cat = np.zeros(m + n_old, np.bool_)
        cats = np.zeros((m + n_old, 1 if s.cats is None else s.cats.shape[1]), np.uint8)
        if s.is_cat is not None:
            is_cat[:m], cats[:m] = s.is_cat, s.cats
        threads = serial_below(shard.n_rows, SERIAL_ROWS)
        with kernel_threads(threads):
            cpu_tree.partition_rows(
                p.words, p.bits, p.n_features, shard.n_bins, shard.rows, shard.rows,
                shard.rows, shard.begin[seg], shard.end[seg], np.concatenate([s.feature, zeros]),
                np.concatenate([s.split_bin, zeros]),
                np.concatenate([s.default_left, np.ones(n_old, np.bool_)]),
                max(1, min(threads * 4, shard.n_rows // 4096)), is_cat, cats, p.ell,
                shard.hist_ptrs, (shard.margin, k, np.concatenate([table[s.left], table[old]]),
                                  np.concatenate([table[s.right], table[old]])),
                columns=self._read_columns(shard))

    # -- linear trees (dgbdt.tree.linear_growth; kernels.cpu_linear) ---------------------
    @staticmethod
    def _raw(shard):
        if shard.raw is None:
            raise RuntimeError("a linear tree needs the shard's raw feature values "
                               "(Shard.raw); this shard was made without them")
        return shard.raw

    #: bytes of private linear histograms a call may hold (nodes go in batches below it)
    LINEAR_PRIVATE_BYTES = 1 << 28

    def linear_histograms(self, shard, req, hist_ptrs):
        """The level's 9-sum histograms [small + large, S, 9]: the smaller children from
        rows; a larger child's g, h and x~ entries as its parent's partial minus its
        sibling's (exact), its p~ entries (its own slope part) from rows."""
        lv, ns = req.linear, len(req.small)
        small = self._linear_rows(shard, req.small, lv, slice(0, ns), hist_ptrs, False)
        if not len(req.large):
            return small
        large = shard.level_hist[req.parent_slot] - small
        large[:, :, self._P_ENTRIES] = self._linear_rows(
            shard, req.large, lv, slice(ns, None), hist_ptrs, True)[:, :, self._P_ENTRIES]
        return np.concatenate([small, large])

    #: the entries of a linear histogram slot that depend on the node's p~
    _P_ENTRIES = np.array([2, 3, 4, 7])

    def _linear_rows(self, shard, nodes, lv, at: slice, hist_ptrs, p_only: bool):
        """Linear histograms of ``nodes`` from their rows (their regressors: lv's rows
        ``at``), in batches whose per-thread private copies fit LINEAR_PRIVATE_BYTES."""
        p = shard.page
        g = np.ascontiguousarray(shard.g[:, lv.k])
        h = np.ascontiguousarray(shard.h[:, lv.k])
        n_slots, threads = int(hist_ptrs[-1]), numba.get_num_threads()
        batch = max(1, self.LINEAR_PRIVATE_BYTES // (threads * n_slots * 9 * 8))
        b, e, parts = shard.begin[nodes], shard.end[nodes], []
        feat, coef, inv_sp = lv.reg_feat[at], lv.reg_coef[at], lv.inv_sp[at]
        for a in range(0, len(nodes), batch):
            z = slice(a, a + batch)
            parts.append(cpu_linear.linear_histograms(
                p.words, p.bits, p.n_features, hist_ptrs, shard.rows, g, h, shard.grad,
                self._raw(shard), lv.center, lv.inv_scale, lv.xmask, b[z], e[z], feat[z],
                coef[z], inv_sp[z], lv.scale_g, lv.scale_h, n_slots, threads, p_only))
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def linear_leaf_sums(self, shard, req):
        chunks = max(1, min(numba.get_num_threads() * 4, shard.n_rows // 4096))
        return cpu_linear.leaf_sums(
            shard.rows, shard.begin[req.leaves], shard.end[req.leaves], self._raw(shard),
            np.ascontiguousarray(shard.g[:, req.k]), np.ascontiguousarray(shard.h[:, req.k]),
            req.center, req.inv_scale, req.feats, req.scale_g, req.scale_h, chunks)

    def add_linear_leaves(self, shard, fin) -> None:
        lm = fin.linear
        cpu_linear.add_linear_leaves(shard.margin, fin.k, shard.rows, shard.begin[fin.leaves],
                                     shard.end[fin.leaves], self._raw(shard), lm.begin,
                                     lm.size, lm.coef, lm.feat, lm.center, lm.inv_scale)

    def evaluate_linear_splits(self, hist, hist_ptrs, node_totals, addable, has_p, inv_sg,
                               inv_sh, lam0, lam1, min_child_weight, on_host=True,
                               consts=None):
        """cpu_linear.evaluate_linear_splits' (gain, feature, bin, default_left, left) and each
        winner's right side: its feature's total minus the left (feature 0's for a node
        without a split). ``on_host``, ``consts``: the CUDA backend's; here host arrays and
        scalars."""
        gain, feat, sbin, dleft, left = cpu_linear.evaluate_linear_splits(
            hist, hist_ptrs, node_totals, addable, has_p, inv_sg, inv_sh, lam0, lam1,
            min_child_weight)
        right = cpu_linear.feature_totals(hist, hist_ptrs,
                                          np.maximum(feat, 0).astype(np.int64)) - left
        return gain, feat, sbin, dleft, left, right

    @staticmethod
    def linear_level(slots, regs, slopes, nreg, inv_sp, regressor):
        """A device-grown linear level's inputs (kernels.cpu_linear_fit.level_inputs):
        (reg_feat, reg_coef, isp, addable, has_p) of its slots."""
        W, D, F = int(slots.shape[0]), int(regs.shape[1]), int(regressor.shape[0])
        out = (np.empty((W, D), np.int64), np.empty((W, D)), np.empty(W),
               np.empty((W, F), np.bool_), np.empty(W, np.bool_))
        cpu_linear_fit.level_inputs(np.ascontiguousarray(slots, dtype=np.int64), regs, slopes,
                                    nreg, inv_sp, np.asarray(regressor, np.bool_), *out)
        return out

    @staticmethod
    def linear_children(nodes, feat, lefts, rights, lsum, rsum, addable, sentinel, regs,
                        slopes, nreg, inv_sp, inv_sg, inv_sh, lam0, lam1, consts=None) -> None:
        """A device-grown linear level's children's fits (kernels.cpu_linear_fit)."""
        i64 = np.int64
        cpu_linear_fit.linear_children(
            np.ascontiguousarray(nodes, dtype=i64), np.ascontiguousarray(feat, dtype=i64),
            np.ascontiguousarray(lefts, dtype=i64), np.ascontiguousarray(rights, dtype=i64),
            np.ascontiguousarray(lsum, dtype=i64), np.ascontiguousarray(rsum, dtype=i64),
            np.ascontiguousarray(addable, dtype=np.bool_), int(sentinel), regs, slopes, nreg,
            inv_sp, float(inv_sg), float(inv_sh), float(lam0), float(lam1))

    @staticmethod
    def fit_linear_leaves(sums, leaves, nreg, sentinel, inv_sg, inv_sh, lam0, lam1,
                          min_child_weight, eta, coefs, consts=None) -> None:
        """A device-grown linear tree's leaf fits (kernels.cpu_linear_fit.fit_leaves)."""
        cpu_linear_fit.fit_leaves(sums, leaves, nreg, int(sentinel), float(inv_sg),
                                  float(inv_sh), float(lam0), float(lam1),
                                  float(min_child_weight), float(eta), coefs)

    def predict_linear(self, X, cat, ptrs, classes, out) -> None:
        """out[r, classes[t]] += row r's leaf value in tree t, linear leaves evaluated
        (``cat``: concatenated trees with dgbdt.tree.linear_model.linear_arrays' entries)."""
        depth = cat.get("cpu_depth")       # kept with the trees (one entry: thread-safe)
        if depth is None:
            depth = cat["cpu_depth"] = cpu_tree.tree_depths(cat["left"], cat["right"], ptrs)
        cpu_linear.predict_linear(
            X, cat["left"], cat["right"], cat["feature"], cat["threshold"], cat["default_left"],
            cat["lin_begin"], cat["lin_size"], cat["lin_coef"], cat["lin_feat"],
            cat["lin_center"], cat["lin_inv_scale"], ptrs, classes, out, depth)

    def evaluate_splits(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p):
        warm = getattr(_POOL, "warm", False)
        return cpu_split.evaluate_splits(
            hist, hist_ptrs, totals, inv_sg, inv_sh, p.lam, p.alpha, p.max_delta_step,
            p.min_child_weight, cpu_split.WARM_SERIAL_SLOTS if warm else None)

    def evaluate_splits_monotone(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p, lower, upper):
        return cpu_split.evaluate_splits_monotone(
            hist, hist_ptrs, totals, inv_sg, inv_sh, p.lam, p.alpha, p.max_delta_step,
            p.min_child_weight, np.asarray(p.monotone, dtype=np.int8), lower, upper)

    def evaluate_categorical(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p, features,
                             width, bounds=None):
        m, n_features = hist.shape[0], len(hist_ptrs) - 1
        if bounds is None:
            mono = np.zeros(n_features, np.int8)
            lower, upper = np.full(m, -np.inf), np.full(m, np.inf)
        else:
            mono = np.asarray(p.monotone, dtype=np.int8)
            lower, upper = bounds
        return cpu_categorical.evaluate_categorical(
            hist, hist_ptrs, totals, inv_sg, inv_sh, p.lam, p.alpha, p.max_delta_step,
            p.min_child_weight, features, p.max_cat_to_onehot, p.max_cat_threshold, width,
            bounds is not None, mono, np.asarray(lower, np.float64),
            np.asarray(upper, np.float64))

    def evaluate_splits_device(self, hist, totals, hist_ptrs, inv_sg, inv_sh, p):
        """The same, results left where the histograms are (here: the host)."""
        return self.evaluate_splits(hist, totals, hist_ptrs, inv_sg, inv_sh, p)

    def predict_raw(self, X, cat, ptrs, classes, out, leaves) -> None:
        want = leaves is not None
        # cat is kept with the trees (dgbdt.model.margins._concatenated) and shared by the threads
        # that predict blocks at once (a Dask worker's): what is derived from it goes in as
        # one entry, so no thread sees half of it
        derived = cat.get("cpu_walk")
        if derived is None:
            derived = cat["cpu_walk"] = (cpu_tree.tree_depths(cat["left"], cat["right"], ptrs),
                                         cat["threshold"].astype(np.float64))
        depth, leaf_value = derived
        if "is_cat" in cat:      # trees with categorical splits (dgbdt.model.margins._concatenated)
            cpu_categorical.predict_raw_cat(
                X, cat["left"], cat["right"], cat["feature"], cat["threshold"],
                cat["default_left"], leaf_value, cat["is_cat"], cat["cat_begin"],
                cat["cat_size"], cat["cats"], ptrs, classes, out,
                leaves if want else np.zeros((1, 1), dtype=np.int32), want)
            return
        cpu_tree.predict_raw(
            X, cat["left"], cat["right"], cat["feature"], cat["threshold"], cat["default_left"],
            leaf_value, ptrs, classes, depth, out,
            leaves if want else np.zeros((1, 1), dtype=np.int32), want)


CPU = CpuBackend()
