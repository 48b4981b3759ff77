"""The CUDA backend's row-sampling draws (a mixin of dgbdt.backends.cuda.CudaBackend;
cuda/sampling.cu): one kernel where the array code (dgbdt.engine.sampling's ``uniform``,
dgbdt.engine.gradient_sampling, dgbdt.engine.sampled_rounds's ``candidate_rows``: their specification, and what the
CPU runs) launches a dozen operations and holds a few 8-byte temporaries a row. The same
integer and float64 operations, so the same rows and the same reweighted gradients.

They take rows whose global indices are one run ``id0, id0 + 1, ...`` (a page of an in-process
Dataset, the rows of a streamed seam joined: dgbdt.engine.row_block); callers with scattered ids
use the array code. It uses the backend's ``xp``, ``n_sm``, ``on_device`` and ``_kernel`` and imports
nothing of dgbdt.backends.cuda.
"""
from __future__ import annotations

import numpy as np

from ..kernels.launch import BLOCK, _grid, _i32, _i64


class CudaSampling:
    """Row sampling on one GPU (see module doc)."""

    def row_candidates(self, g, h, id0: int, keys, cr, step, vt, lam: float, key0,
                       rate: float):
        """bool [n]: dgbdt.engine.sampled_rounds.candidate_rows' rows as a mask (``keys`` empty: uniform
        sampling, draw(key0) < rate; else per class k: draw(keys[k]) < (v + step[k]) cr[k]
        or v >= vt[k])."""
        cp = self.xp
        n, K = g.shape
        keep = cp.empty(n, dtype=cp.uint8)
        if n == 0:
            return keep.astype(cp.bool_)
        kk = len(keys)
        dev = [self.on_device(np.asarray(a, dtype=t) if kk else np.zeros(1, dtype=t), t)
               for a, t in ((keys, np.uint64), (cr, np.float64), (step, np.float64),
                            (vt, np.float64))]
        self._kernel("sampling", "candidates")(
            (_grid(n, cap=self.n_sm * 16),), (BLOCK,),
            (g, h, _i32(K if kk else 0), _i64(n), _i64(id0), *dev, np.float64(lam),
             np.uint64(key0), np.float64(rate), keep))
        return keep.view(cp.bool_)

    def apply_row_sample(self, g, h, id0: int, key, *, k: int = 0, by_gradient: bool = False,
                         rate: float = 1.0, lam: float = 0.0, qscale: float = 0.0,
                         t_star: int = 0, ratio: float = 0.0, v_zero: bool = False) -> None:
        """Round sampling in place on float64 [n, K] g, h (see cuda/sampling.cu
        ``apply_sample``): uniform (every class times the row's keep) or class k's
        gradient-based reweighting."""
        n, K = g.shape
        if n == 0:
            return
        self._kernel("sampling", "apply_sample")(
            (_grid(n, cap=self.n_sm * 16),), (BLOCK,),
            (g, h, _i32(K), _i32(k), _i64(n), _i64(id0), np.uint64(key), _i32(by_gradient),
             np.float64(rate), np.float64(lam), np.float64(qscale), _i64(t_star),
             np.float64(ratio), _i32(v_zero)))
