"""Binary auc's summary: each partition's rows sorted by score, never merged.

With integer positive and negative weights ``p_i``, ``n_i`` per row (0/1 for unit weights),
twice the ROC area of all rows of all parts is

    2 A = sum_i p_i (2 N(< s_i) + N(= s_i)),

``N(< s)`` and ``N(= s)`` the negative weight below and at score ``s`` over every part: a
positive row scores one against each lower negative and one half against each tie. A part
sorted by score answers both with two binary searches into its exclusive prefix sums of
negatives (lower and upper bound), so parts are sorted once (one radix argsort of the
partition's scores) and never merged: the value of ``R`` parts searches every row in each
part. These are the same integers as RocRuns' ``sum_j pos_j (2 N_<j + neg_j)`` over distinct
scores (a run's rows add up to the run), so the value is the same bits. What it saves on a GPU
is the run compression and merge sort of RocRuns (two sorts, each run extraction a host round
trip for its size) and all but one copy to the host: on the device the whole value is one
kernel (dgbdt.kernels.gpu_metric.auc_twice_area). On the host the value is one linear walk a
pair of parts (dgbdt.kernels.cpu_metric), faster than RocRuns there too
(docs/benchmarks-archive.md#figures-behind-code-choices).

The parts live back to back in three arrays (score, pos, neg) with their bounds; more than
MAX_PARTS parts are sorted into one. Exact while the products and their sum stay in int64,
``2 P T < 2**63`` with ``T`` the total weight: unit weights and fewer than 2**31 rows
(``exact``); otherwise RocRuns (``arrays``). dgbdt.metrics.registry.AUC uses this for unweighted binary
auc, on the host and on devices.
"""
from __future__ import annotations

import numpy as np

from ..kernels import gpu_arrays
from ..kernels.fixedpoint import _module
from ..kernels.cpu_metric import auc_twice_area as host_twice_area
from ..kernels.gpu_metric import AUC_MAX_PARTS, auc_twice_area, gather3, stack3, unstack3
from ..kernels.gpu_sort import argsort_f64, exclusive_sums

__all__ = ["SortedScores"]

#: parts kept side by side (the device kernel's limit); a sum of more is sorted into one
MAX_PARTS = AUC_MAX_PARTS
_EXACT_ROWS = 1 << 31


class SortedScores:
    """Rows (score float64, pos int64, neg int64) as parts ``[bounds[q], bounds[q+1])``,
    each sorted by score."""

    __slots__ = ("score", "pos", "neg", "bounds")

    def __init__(self, score, pos, neg, bounds: list[int]):
        self.score, self.pos, self.neg, self.bounds = score, pos, neg, bounds

    @classmethod
    def of(cls, score, pos, neg) -> "SortedScores":
        """One part: these rows sorted by score."""
        xp = _module(score)
        if xp is not np:        # kernels that ship built (CuPy's argsort and take compile)
            order = argsort_f64(xp.ascontiguousarray(score))
            return cls(*gather3(order, score, pos, neg), [0, int(score.shape[0])])
        order = xp.argsort(score)
        return cls(score[order], pos[order], neg[order], [0, int(score.shape[0])])

    @property
    def n_rows(self) -> int:
        return self.bounds[-1]

    def __add__(self, other: "SortedScores") -> "SortedScores":
        xp = _module(self.score)
        # on a GPU by copies (CuPy's concatenate compiles at first use)
        join = np.concatenate if xp is np else gpu_arrays.concatenate
        cat = [join([xp.ascontiguousarray(a), xp.ascontiguousarray(b)])
               for a, b in ((self.score, other.score), (self.pos, other.pos),
                            (self.neg, other.neg))]
        return SortedScores._within_limit(
            *cat, self.bounds + [self.n_rows + b for b in other.bounds[1:]])

    @classmethod
    def _within_limit(cls, score, pos, neg, bounds) -> "SortedScores":
        """These parts, or, beyond MAX_PARTS of them, their rows sorted into one."""
        if len(bounds) - 1 > MAX_PARTS:
            return cls.of(score, pos, neg)
        return cls(score, pos, neg, bounds)

    def arrays(self) -> tuple:
        """All rows' (score, pos, neg) (for RocRuns.of)."""
        return self.score, self.pos, self.neg

    def exact(self) -> bool:
        """Whether ``stats`` is exact: unit weights (each row 0/1 in pos and neg, as
        AUC.summary makes them without sample weights) and fewer than 2**31 rows."""
        return self.n_rows < _EXACT_ROWS

    def stats(self) -> tuple[int, int, int]:
        """(2 A, P, N) as Python ints: twice the area (module docstring) and the positive and
        negative totals."""
        return self.stats_later()()

    def stats_later(self):
        """A callable that gives ``stats()``: on a device the kernels are queued now and the
        call waits for their three totals alone; on the host they are computed now."""
        xp = _module(self.score)
        if xp is not np:     # prebuilt prefix sums, then one kernel on the device
            return auc_twice_area(self.score, self.pos, exclusive_sums(self.neg), self.bounds)
        cneg = np.zeros(self.n_rows + 1, dtype=np.int64)
        np.cumsum(self.neg, out=cneg[1:])
        got = (host_twice_area(self.score, self.pos, cneg, self.bounds), int(self.pos.sum()),
               int(cneg[-1]))
        return lambda: got

    # -- as rows for a collective: [n, 3] int64 (score bits, pos, neg), one part a rank ------
    def rows(self):
        """This summary sorted into one part, as [n, 3] int64 rows."""
        s = self if len(self.bounds) == 2 else SortedScores.of(*self.arrays())
        xp = _module(s.score)
        if xp is not np:        # a prebuilt kernel (CuPy's stack compiles at first use)
            return stack3(s.score, s.pos, s.neg)
        return np.stack([np.ascontiguousarray(s.score).view(np.int64), s.pos, s.neg], axis=1)

    @classmethod
    def from_rows(cls, rows, counts) -> "SortedScores":
        """Every rank's ``rows()`` concatenated in rank order, ``counts`` rows each."""
        xp = _module(rows)
        bounds = [0] + [int(c) for c in np.cumsum(np.asarray(counts, dtype=np.int64))]
        if xp is not np:
            score, pos, neg = unstack3(xp.ascontiguousarray(rows),
                                       (np.float64, np.int64, np.int64))
            return cls._within_limit(score, pos, neg, bounds)
        score, pos, neg = (np.ascontiguousarray(rows[:, k]) for k in range(3))
        return cls._within_limit(score.view(np.float64), pos, neg, bounds)

    def __reduce__(self):
        return (SortedScores, (self.score, self.pos, self.neg, self.bounds))
