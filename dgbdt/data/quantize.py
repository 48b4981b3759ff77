"""Histogram cuts from summaries, and quantization of float32 data to symbols.

Cut rule, per feature with buckets ``k = 0..K-1`` (``lo_k``, ``hi_k``,
weight ``W_k``) from ``dgbdt.data.sketch``:

* ``last = hi_{K-1} + (|hi_{K-1}| + 1e-5)`` and
  ``min_value = lo_0 - (|lo_0| + 1e-5)``, both evaluated in float64 and
  rounded once to float32 (this is what XGBoost does: e.g. for
  ``hi = 49`` float32 arithmetic gives 98.000015, XGBoost 98.00001).
* ``K <= max_bin``: cuts ``= [lo_1, ..., lo_{K-1}, last]`` (K bins). At
  shift 0 the ``lo_k`` are the distinct values, which is XGBoost's rule.
* ``K > max_bin``: with ``C_g = sum_{j<=g} W_j`` (``g = 0..K-2``, the
  weight left of the gap after bucket g) and targets
  ``t_i = i * W / max_bin`` (``i = 1..max_bin-1``, ``W`` the total), take
  for each i the gap ``g_i = argmin_g |C_g - t_i|`` (ties to the smaller g);
  cuts ``= sorted(unique(lo_{g_i + 1})) + [last]``. Integers and float64
  only, so the result is deterministic.
* No non-missing value: cuts ``= [1e-5]`` (one bin), ``min_value = -1e-5``.

Quantization: ``bin(x) = #{cuts <= x}`` clipped to ``n_bins - 1`` (so
bins are ``[cut_{b-1}, cut_b)``), NaN -> ``n_bins`` (the missing symbol;
its histogram slot is ``hist_ptrs[f] + n_bins(f)``).

Categorical features (``Cuts.categorical``, dgbdt.data.categorical): the
cuts are the codes ``0, 1, ..., c_max`` (``c_max`` the largest code of the
feature in the data: XGBoost's cut values), one bin per code whatever
``max_bin`` is, and a code's bin is the code itself: quantization searches
the cuts shifted by one (``#{cuts + 1 <= c} = c`` for a code c).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import cpu_data as K
from .sketch import Summaries

__all__ = ["Cuts", "cuts_from_summaries", "quantize", "symbol_dtype"]

_EPS = np.float32(1e-5)


@dataclass
class Cuts:
    """Per-feature cut values: feature f's cuts are ``values[ptrs[f]:ptrs[f+1]]``."""

    values: np.ndarray  # float32, ascending within each feature
    ptrs: np.ndarray  # int64 [F + 1]
    min_values: np.ndarray  # float32 [F]
    #: bool [F]: categorical features (their cuts are the codes 0..c_max), or None
    categorical: np.ndarray | None = None
    #: float32 [F]: each feature's smallest value (``lo_0``; NaN without values): bin 0's one
    #: value under tree_method="exact" (dgbdt.tree.exact_split); None when not kept
    first_values: np.ndarray | None = None

    def n_bins(self) -> np.ndarray:
        """int64 [F]: bins per feature (``>= 1``), missing slot not counted."""
        return np.diff(self.ptrs)

    @property
    def n_features(self) -> int:
        return int(self.ptrs.shape[0] - 1)

    @property
    def max_bins(self) -> int:
        """Largest ``n_bins`` over features (0 without features)."""
        nb = self.n_bins()
        return int(nb.max()) if nb.size else 0

    def hist_ptrs(self) -> np.ndarray:
        """int64 [F + 1]: histogram offsets with ``n_bins(f) + 1`` slots per
        feature (``hist_ptrs[f+1] - 1`` is feature f's missing slot)."""
        return self.ptrs + np.arange(self.ptrs.shape[0], dtype=np.int64)

    def feature(self, f: int) -> np.ndarray:
        return self.values[self.ptrs[f]:self.ptrs[f + 1]]

    def categorical_features(self) -> np.ndarray:
        """int64: indices of the categorical features (empty when none)."""
        if self.categorical is None:
            return np.zeros(0, np.int64)
        return np.flatnonzero(self.categorical).astype(np.int64)

    def search_values(self) -> np.ndarray:
        """The values quantization counts (``bin = #{v <= x}``): the cuts, those of
        categorical features plus one (so a code's bin is the code)."""
        if self.categorical is None:
            return self.values
        kind = np.repeat(self.categorical, self.n_bins())
        return np.where(kind, self.values + np.float32(1), self.values).astype(np.float32)

    def to_dict(self) -> dict:
        """JSON-safe dict. Python floats hold float32 values exactly, and
        ``json`` writes floats with round-trip precision."""
        out = {
            "values": [float(v) for v in self.values],
            "ptrs": [int(p) for p in self.ptrs],
            "min_values": [float(v) for v in self.min_values],
        }
        if self.categorical is not None:
            out["categorical"] = [int(f) for f in self.categorical_features()]
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Cuts":
        ptrs = np.asarray(d["ptrs"], dtype=np.int64)
        cat = None
        if d.get("categorical"):
            cat = np.zeros(ptrs.shape[0] - 1, dtype=bool)
            cat[np.asarray(d["categorical"], dtype=np.int64)] = True
        return cls(
            values=np.asarray(d["values"], dtype=np.float64).astype(np.float32),
            ptrs=ptrs,
            min_values=np.asarray(d["min_values"], dtype=np.float64).astype(np.float32),
            categorical=cat,
        )

    def equals(self, other: "Cuts") -> bool:
        return (np.array_equal(self.ptrs, other.ptrs)
                and np.array_equal(self.values.view(np.uint32), other.values.view(np.uint32))
                and np.array_equal(self.min_values.view(np.uint32),
                                   other.min_values.view(np.uint32))
                and np.array_equal(self.categorical_features(), other.categorical_features()))


def symbol_dtype(cuts: Cuts):
    """uint16 unless some feature has ``>= 65535`` bins, then uint32."""
    nb = cuts.n_bins()
    return np.uint32 if nb.size and nb.max() >= 65535 else np.uint16


def _feature_cuts(w: np.ndarray, lo: np.ndarray, hi: np.ndarray, max_bin: int):
    """(cuts float32, min_value float32) of one feature's buckets."""
    k = w.shape[0]
    if k == 0:
        return np.array([_EPS], np.float32), np.float32(-_EPS)
    h = float(hi[k - 1])  # float64 arithmetic, rounded once to float32 (XGBoost's)
    last = np.float32(h + (abs(h) + 1e-5))
    lo0 = float(lo[0])
    min_value = np.float32(lo0 - (abs(lo0) + 1e-5))
    if k <= max_bin:
        inner = lo[1:k]
    else:
        c = np.cumsum(w[:-1], dtype=np.int64).astype(np.float64)  # C_g, g = 0..K-2
        total = float(np.sum(w, dtype=np.int64))
        t = np.arange(1, max_bin, dtype=np.float64) * total / float(max_bin)
        up = np.searchsorted(c, t, side="left")  # first g with C_g >= t
        up_c = np.minimum(up, c.shape[0] - 1)
        down = np.maximum(up - 1, 0)
        # ties (equal C) resolve to the smallest g holding that value
        down = np.searchsorted(c, c[down], side="left")
        d_up = np.abs(c[up_c] - t)
        d_down = np.abs(c[down] - t)
        g = np.sort(np.where((up > 0) & (d_down <= d_up), down, up_c))
        # distinct g by hand: np.unique's first call imports numpy.ma under numpy 2.5, which
        # a fresh worker's first fit paid here (docs/benchmarks.md)
        inner = lo[g[np.concatenate([[True], g[1:] != g[:-1]])] + 1]
    cuts = np.empty(inner.shape[0] + 1, np.float32)
    cuts[:-1] = inner
    cuts[-1] = last
    return cuts, min_value


def _category_cuts(w: np.ndarray, hi: np.ndarray):
    """(cuts, min_value) of a categorical feature: its codes 0..c_max (just 0 without any
    value), as XGBoost's cuts."""
    c_max = int(hi[w.shape[0] - 1]) if w.shape[0] else 0
    return np.arange(c_max + 1, dtype=np.float32), np.float32(0)


def cuts_from_summaries(s: Summaries, max_bin: int, categorical=None) -> Cuts:
    """Cuts of every feature of ``s`` under the rule in the module doc (``categorical``: bool
    [F] of the categorical features, or None)."""
    max_bin = int(max_bin)
    if max_bin < 1:
        raise ValueError("max_bin must be >= 1")
    nf = s.n_features
    parts = []
    mins = np.empty(nf, np.float32)
    firsts = np.full(nf, np.nan, np.float32)
    ptrs = np.zeros(nf + 1, np.int64)
    for f in range(nf):
        a, b = int(s.ptrs[f]), int(s.ptrs[f + 1])
        if categorical is not None and categorical[f]:
            cuts, mins[f] = _category_cuts(s.weights[a:b], s.hi[a:b])
        else:
            cuts, mins[f] = _feature_cuts(s.weights[a:b], s.lo[a:b], s.hi[a:b], max_bin)
            if b > a:
                firsts[f] = s.lo[a]
        parts.append(cuts)
        ptrs[f + 1] = ptrs[f] + cuts.shape[0]
    values = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    cat = None if categorical is None or not np.any(categorical) else \
        np.asarray(categorical, dtype=bool).copy()
    return Cuts(values=values.astype(np.float32, copy=False), ptrs=ptrs, min_values=mins,
                categorical=cat, first_values=firsts)


def quantize(X, cuts: Cuts, out: np.ndarray | None = None) -> np.ndarray:
    """Symbols [n, F] (``symbol_dtype(cuts)``): ``#{cuts <= x}`` clipped to
    ``n_bins - 1``; NaN -> ``n_bins``. ``X`` is cast to float32."""
    X = np.asarray(X, dtype=np.float32)
    if X.ndim != 2 or X.shape[1] != cuts.n_features:
        raise ValueError(f"X must be [n, {cuts.n_features}]")
    dt = symbol_dtype(cuts)
    if out is None:
        out = np.empty(X.shape, dt)
    elif out.shape != X.shape or out.dtype != dt:
        raise ValueError("out has the wrong shape or dtype")
    if X.size:
        K.quantize_rows(X, np.ascontiguousarray(cuts.search_values(), np.float32),
                        np.ascontiguousarray(cuts.ptrs, np.int64), out)
    return out
