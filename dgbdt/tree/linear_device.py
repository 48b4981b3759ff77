"""Device-resident growth of piecewise-linear trees: dgbdt.tree.device_grower's fixed-shape
levels with the linear leaves of dgbdt.tree.linear_growth, so a GPU grows a whole linear tree
without the host waiting on it inside the tree.

The host grower (``LinearGrowth``) learns each level's splits on the host: it copies the
winners of the device split search up, runs the chosen splits' half-additive fits in Python,
builds the next request's regressors and slope parts, and at the end solves every leaf's ridge
system, so the host waits for the GPU at every level, for much of a linear round's time
(docs/benchmarks-archive.md#figures-behind-code-choices). ``DeviceLinearGrowth`` keeps all of
it where the histograms are:

* the node table as ``DeviceGrowth``'s (the same breadth-first numbering, sentinel slots for
  absent nodes, smaller child from rows and larger = parent - smaller), decided by the same
  array code (``DeviceGrowth._decide``) from the linear split search's winners, which stay on
  the device;
* each node's regressors S, slope part v and 1 / s_p in tables of ``cap`` rows (``regs``
  int64 [cap, D], -1 padded; ``slopes`` float64 [cap, D]; ``nreg``; ``inv_sp``); a level's
  request gathers its slots' rows (sentinel slots read the root's empty row values: no
  regressors, s_p = 1);
* the chosen splits' half-additive fits and the children's (S, v): one backend call a level,
  ``linear_children`` (kernels.cpu_linear_fit on the CPU, cuda/linear_grow.cu on a GPU: one
  thread a splitting slot), with tree.linear's ``basis_system`` and ``ridge_solve`` operation
  for operation;
* the leaves' ridge solves: ``fit_linear_leaves`` (one thread a leaf slot) into a fixed-shape
  LeafModels (leaf slot j's model at j (D + 1), sentinel slots empty), added to the margins by
  the shards' usual kernel;
* the tree comes to the host once, when it is done (``tree``).

Every float is formed as the host grower forms it, so the model is the host grower's byte for
byte (tests/test_linear_device_growth.py on the CPU backend with DGBDT_GROWTH=device;
tests/gpu/test_gpu_linear.py on a GPU). Where it grows: depth-wise trees without categorical
features or interaction constraints whose levels fit (``fits`` with 9 sums a slot); the others
grow on the host (dgbdt.engine.seam.start_tree), with the same bytes.
"""
from __future__ import annotations

import time

import numpy as np

from ..backends.device import to_host
from . import device_grower
from .device_grower import DeviceGrowth
from .grower import FinishRequest, LevelRequest
from ..kernels.linear_math import PAYLOAD, LinearSpec
from .linear_growth import LeafModels, LeafSumRequest, LinearLevel


class LinearTables:
    """The training's normalization on the device (uploaded once): center, inv_scale,
    scale (float64 [F]) and the regressor mask (bool [F])."""

    def __init__(self, linear: LinearSpec, xp):
        self.spec = linear
        self.center = xp.asarray(linear.center, dtype=np.float64)
        self.inv_scale = xp.asarray(linear.inv_scale, dtype=np.float64)
        self.regressor = xp.asarray(linear.regressor, dtype=np.bool_)


class DeviceLinearGrowth(DeviceGrowth):
    """One piecewise-linear tree in growth on the device (see the module docstring): the
    interface of LinearGrowth (``request``, ``advance``, ``finish_request``,
    ``leaf_sum_request``, ``fit_leaves``, ``tree``)."""

    def __init__(self, k: int, tables, lin: LinearTables, max_depth: int, p, scale_g: float,
                 scale_h: float, backend, columns=None):
        # fused (a GPU): the level's bookkeeping in a few kernels (grow.cu advance_level,
        # linear_grow.cu), the tree's constants in device memory, so a CUDA graph can replay
        # it (DeviceGrowth.graphable); else the array code below, the kernels' specification
        super().__init__(k, tables, max_depth, p, scale_g, scale_h, backend, columns=columns)
        xp, cap = self.xp, self.cap
        self.lin = lin
        self.linear = lin.spec            # grow_tree's sign of a linear tree
        D = self.D = lin.spec.max_features
        self.regs = xp.empty((cap, D), dtype=np.int64)
        self.slopes = xp.empty((cap, D), dtype=np.float64)
        self.nreg = xp.empty(cap, dtype=np.int64)
        self.inv_sp = xp.empty(cap, dtype=np.float64)
        self.reset_table()
        self.coefs = None                 # the leaves' coefficients (times eta), by leaf slot
        self.leaf_slots = None
        self.inputs = None                # the level's (addable, has_p), set with its request
        self.request = self._linear(self.request)

    def reset_table(self) -> None:
        """The empty node table, every node without regressors (in place: a captured tree
        resets the same arrays on every replay)."""
        super().reset_table()
        if getattr(self, "regs", None) is not None:
            self.regs.fill(-1)
            self.slopes.fill(0.0)
            self.nreg.fill(0)
            self.inv_sp.fill(1.0)

    def _linear(self, req: LevelRequest) -> LevelRequest:
        """``req`` with the regressors of its slots (small, then large); keeps what the split
        search of those slots needs (``inputs``)."""
        reg_feat, reg_coef, isp, addable, has_p = self._level_inputs(self.slots)
        req.linear = LinearLevel(
            self.k, self.scale_g, self.scale_h, self.lin.spec.center, self.lin.spec.inv_scale,
            self.lin.spec.regressor, reg_feat, reg_coef, isp, consts=self.consts)
        self.inputs = (addable, has_p)
        return req

    def _level_inputs(self, slots):
        """(reg_feat, reg_coef, 1 / s_p, addable, has_p) of the slots' nodes: one kernel
        (fused), or the array code (LinearNodes._addable's rule: a regressor feature enters
        the candidates while |S| < the cap, else only S's own)."""
        if self.fused:
            return self.be.linear_level(slots, self.regs, self.slopes, self.nreg, self.inv_sp,
                                        self.lin.regressor)
        xp = self.xp
        reg = self.lin.regressor
        W, F = int(slots.shape[0]), int(reg.shape[0])
        nreg, S = self.nreg[slots], self.regs[slots]
        member = xp.zeros((W, F + 1), dtype=np.bool_)
        member[xp.arange(W)[:, None], xp.where(S >= 0, S, F)] = True
        addable = reg[None, :] & ((nreg < self.D)[:, None] | member[:, :F])
        return S, self.slopes[slots], self.inv_sp[slots], addable, nreg > 0

    def advance(self, merged) -> None:
        """Consume the level's linear histograms [2^depth, S, 9] (slot order); enqueue the
        next request."""
        t = time.perf_counter()
        p, hp = self.p, self.tables.hist_ptrs
        # each slot's own sums: any feature's slots hold them (feature 0's, as the host grower)
        node_totals = (self.be.linear_node_totals(merged, hp) if self.fused
                       else merged[:, hp[0]:hp[1]].sum(axis=1))
        if self.depth == 0:
            self.totals[0] = node_totals[0, :2]
        hist = merged
        if self.columns is not None:        # features outside the sample: slots zeroed (a copy)
            hist = self.columns.apply(hist, self.depth, self.slots)
        addable, has_p = self.inputs
        inv_sg, inv_sh = 1.0 / self.scale_g, 1.0 / self.scale_h
        search = (hist, hp, node_totals, addable, has_p, inv_sg, inv_sh, p.lam,
                  self.lin.spec.lam, p.min_child_weight)
        if self.fused:
            batch, small, large, lsum, rsum = self._advance_level(search, node_totals)
        else:
            gain, feat, sbin, dleft, lsum, rsum = self.be.evaluate_linear_splits(
                *search, on_host=False)
            batch, small, large, _ = self._decide(gain, feat, sbin, dleft, lsum[:, :2],
                                                  rsum[:, :2])
        self.be.linear_children(batch.node, batch.feature, batch.left, batch.right, lsum,
                                rsum, addable, self.sentinel, self.regs, self.slopes,
                                self.nreg, self.inv_sp, inv_sg, inv_sh, p.lam,
                                self.lin.spec.lam, consts=self.consts)
        self.pending = batch
        self.depth += 1
        if self.depth == self.max_depth:
            self.done = True
        else:
            self.request = self._linear(LevelRequest(
                splits=batch, small=small, large=large,
                parent_slot=self.xp.arange(small.shape[0], dtype=np.int64),
                keep=self.depth + 1 < self.max_depth))
            self.pending = None
        self.eval_seconds += time.perf_counter() - t

    def _advance_level(self, search, node_totals):
        """The fused level: the split search's winner rows, whose first six columns are
        grow.cu's candidates, then advance_level's node table, batch and next slots (what
        ``_decide`` computes); returns (batch, small, large, left sums, right sums)."""
        xp = self.xp
        win = self.be.evaluate_linear_splits(*search, consts=self.consts, raw=True)
        batch, small, large = self._fused_level(xp.ascontiguousarray(win[:, :6]),
                                                xp.ascontiguousarray(node_totals[:, :2]))
        return batch, small, large, win[:, 4:13], win[:, 13:22]

    # -- leaves --------------------------------------------------------------------------
    def leaf_sum_request(self, fin: FinishRequest) -> LeafSumRequest:
        """Every leaf slot's ridge sums (fin.leaves: cap ids, the sentinel where no leaf)."""
        self.leaf_slots = fin.leaves
        return LeafSumRequest(self.k, fin.splits, fin.leaves, self.regs[fin.leaves],
                              self.scale_g, self.scale_h, self.lin.spec.center,
                              self.lin.spec.inv_scale, consts=self.consts)

    def fit_leaves(self, fin: FinishRequest, sums) -> FinishRequest:
        """The leaves' ridge fits (times eta) on the device; the request that adds them to the
        shards' margins (fixed shape: leaf slot j's model at j (D + 1))."""
        xp, p, D = self.xp, self.p, self.D
        leaves = fin.leaves
        m = int(leaves.shape[0])
        coefs = xp.zeros((m, D + 1), dtype=np.float64)
        self.be.fit_linear_leaves(xp.ascontiguousarray(sums, dtype=np.int64), leaves,
                                  self.nreg, self.sentinel, 1.0 / self.scale_g,
                                  1.0 / self.scale_h, p.lam, self.lin.spec.lam,
                                  p.min_child_weight, p.eta, coefs, consts=self.consts)
        self.coefs = coefs
        feat = xp.zeros((m, D + 1), dtype=np.int64)
        feat[:, 1:] = xp.maximum(self.regs[leaves], 0)
        size = xp.where(leaves != self.sentinel, self.nreg[leaves], 0)
        models = LeafModels(begin=xp.arange(m, dtype=np.int64) * (D + 1), size=size,
                            coef=coefs.reshape(-1), feat=feat.reshape(-1),
                            center=self.lin.center[feat].reshape(-1),
                            inv_scale=self.lin.inv_scale[feat].reshape(-1))
        return FinishRequest(fin.k, None, leaves, coefs[:, 0].copy(), linear=models)

    def tree(self):
        """The grown tree with its linear leaves, on the host (one wait, small copies)."""
        t = super().tree()
        leaves = to_host(self.leaf_slots)
        coefs, regs, nreg = to_host(self.coefs), to_host(self.regs), to_host(self.nreg)
        spec, linear = self.lin.spec, {}
        for j, n in enumerate(leaves.tolist()):
            if n == self.sentinel:
                continue
            S = regs[n, :nreg[n]]
            w = coefs[j, :len(S) + 1].copy()
            t.threshold[n] = np.float32(w[0])
            linear[int(n)] = {"features": S.astype(np.int32), "coefs": w,
                              "centers": spec.center[S].copy(), "scales": spec.scale[S].copy()}
        t.linear = linear
        return t

    def pending_tree(self, settle=None):
        """Linear trees come back whole (``tree``): the host waits once a tree."""
        if settle is not None:
            settle()
        return self.tree()


def fits(max_depth: int, n_slots: int, n_shards: int) -> bool:
    """device_grower.fits with 9 sums a slot instead of 2."""
    return device_grower.fits(max_depth, n_slots, n_shards, 8 * PAYLOAD)


__all__ = ["DeviceLinearGrowth", "LinearTables", "fits"]
