"""Binary auc's summary on a GPU: each partition's rows sorted by score, never merged.

With integer positive and negative weights ``p_i``, ``n_i`` per row (0/1 for unit weights),
twice the ROC area of all rows of all parts is

    2 A = sum_i p_i (2 N(< s_i) + N(= s_i)),

``N(< s)`` and ``N(= s)`` the negative weight below and at score ``s`` over every part: a
positive row scores one against each lower negative and one half against each tie. A part
sorted by score answers both with two binary searches into its exclusive prefix sums of
negatives (``searchsorted`` left and right), so parts are sorted once (one radix argsort of
the partition's scores) and never merged: the value of ``R`` parts searches every row in
each part, ``R`` times. These are the same integers as RocRuns' ``sum_j pos_j (2 N_<j +
neg_j)`` over distinct scores (a run's rows add up to the run), so the value is the same
bits; what it saves on a GPU is the run compression and merge sort (two sorts, each run
extraction a host round trip for its size) and all but one host round trip per value.

Exact while the products and their sum stay in int64: ``2 P T < 2**63`` with ``T`` the total
weight, i.e. unit weights and fewer than 2**31 rows (``exact``); other cases go through
RocRuns (``arrays``). dgbdt.metric.AUC uses this for unweighted binary auc on device arrays.
"""
from __future__ import annotations

import numpy as np

from .fixedpoint import _module

__all__ = ["SortedScores"]

#: parts kept side by side before a merge compacts them into one (the value costs R^2
#: searches; a merge of many partitions, e.g. graph mode's tree-reduce, keeps R small)
MAX_PARTS = 4
_EXACT_ROWS = 1 << 31


class SortedScores:
    """Parts ``(score, pos, neg)``, each sorted by score (float64, int64, int64)."""

    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts

    @classmethod
    def of(cls, score, pos, neg) -> "SortedScores":
        xp = _module(score)
        order = xp.argsort(score)
        return cls([(score[order], pos[order], neg[order])])

    @property
    def n_rows(self) -> int:
        return sum(int(s.shape[0]) for s, _, _ in self.parts)

    def __add__(self, other: "SortedScores") -> "SortedScores":
        parts = self.parts + other.parts
        if len(parts) > MAX_PARTS:
            parts = [SortedScores.of(*self._cat(parts)).parts[0]]
        return SortedScores(parts)

    @staticmethod
    def _cat(parts) -> tuple:
        xp = _module(parts[0][0])
        return tuple(xp.concatenate([p[k] for p in parts]) for k in range(3))

    def arrays(self) -> tuple:
        """All rows' (score, pos, neg), concatenated (for RocRuns.of)."""
        return self._cat(self.parts)

    def exact(self) -> bool:
        """Whether ``stats`` is exact: unit weights (each row 0/1 in pos and neg, as
        AUC.summary makes them without sample weights) and fewer than 2**31 rows."""
        return self.n_rows < _EXACT_ROWS

    def stats(self) -> tuple[int, int, int]:
        """(2 A, P, N) as Python ints: twice the area (module docstring) and the positive and
        negative totals, with one device-to-host copy."""
        xp = _module(self.parts[0][0])
        cneg = [xp.concatenate([xp.zeros(1, dtype=np.int64), xp.cumsum(n)])
                for _, _, n in self.parts]
        area = xp.zeros((), dtype=np.int64)
        pos_total = xp.zeros((), dtype=np.int64)
        for s_r, p_r, _ in self.parts:
            if not s_r.shape[0]:
                continue
            twice_below_plus_at = xp.zeros(s_r.shape[0], dtype=np.int64)
            for (s_q, _, _), c in zip(self.parts, cneg):
                lo = c[xp.searchsorted(s_q, s_r, side="left")]
                hi = c[xp.searchsorted(s_q, s_r, side="right")]
                twice_below_plus_at += lo + hi        # 2 N(<) + N(=) = lo + hi
            area = area + xp.sum(p_r * twice_below_plus_at)
            pos_total = pos_total + xp.sum(p_r)
        neg_total = sum(c[-1] for c in cneg)
        out = xp.stack([area, pos_total, xp.asarray(neg_total, dtype=np.int64)])
        out = out.get() if hasattr(out, "get") else out
        return int(out[0]), int(out[1]), int(out[2])

    # -- as rows for a collective: [n, 3] int64 (score bits, pos, neg), one part a rank ------
    def rows(self):
        """This summary compacted to one sorted part, as [n, 3] int64 rows."""
        s, p, n = self.parts[0] if len(self.parts) == 1 else SortedScores.of(
            *self._cat(self.parts)).parts[0]
        xp = _module(s)
        return xp.stack([xp.ascontiguousarray(s).view(np.int64), p, n], axis=1)

    @classmethod
    def from_rows(cls, rows, counts) -> "SortedScores":
        """Every rank's ``rows()`` concatenated in rank order, ``counts`` rows each."""
        xp = _module(rows)
        parts, a = [], 0
        for c in counts:
            r = rows[a:a + int(c)]
            a += int(c)
            parts.append((xp.ascontiguousarray(r[:, 0]).view(np.float64),
                          xp.ascontiguousarray(r[:, 1]), xp.ascontiguousarray(r[:, 2])))
        out = cls(parts[:1])
        for p in parts[1:]:
            out = out + cls([p])
        return out

    def __reduce__(self):
        return (SortedScores, (self.parts,))
