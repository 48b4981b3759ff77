"""Metrics over the collective ranks' rows (dgbdt.dask.collective_train's evaluation): each
rank summarizes its own rows (dgbdt.engine.evaluation), and the summaries meet in the ranks'
communicator — ratio metrics' exact sums all-reduced, auc's score runs or sorted rows and
row-summary metrics' rows gathered — so every rank gets the value in-process evaluation of
all the rows gives."""
from __future__ import annotations

import functools

import numpy as np

from ..backends.device import array_module, to_host
from ..engine.evaluation import EvalRows, weight_scale
from ..kernels.fixedpoint import ExactSum
from ..metrics.registry import AUC, RocRuns
from ..metrics.sorted_scores import SortedScores

__all__ = ["rank_rows", "collective_scores"]


def rank_rows(comm, label, weight, qid=None) -> EvalRows:
    """This rank's rows of an evaluation set, with the auc weight scale of the whole set (the
    largest weight and the row count are reduced over the ranks once)."""
    xp = comm.xp
    label = xp.asarray(label, dtype=np.float64)
    counts = comm.rank_counts(int(label.shape[0]))
    n = int(counts.sum())
    scale = None
    if comm.allreduce_host(np.array([weight is not None], dtype=np.int64), "max")[0]:
        weight = xp.asarray(weight, dtype=np.float64) if weight is not None else None
        local = float(weight.max()) if weight is not None and weight.shape[0] else 0.0
        scale = weight_scale(comm.allreduce_host(np.array([local]), "max")[0], int(n))
    rows = EvalRows(label, weight, scale, qid)
    rows.rank_counts = counts
    return rows


def collective_scores(comm, rows: EvalRows, margin, objective, metrics) -> list[float]:
    """Metric values over every rank's rows from this rank's summaries (the same on every
    rank): ratio metrics' exact sums all-reduced as limbs in one call; each auc metric's score
    runs (each rank's runs are its distinct scores, not its rows) gathered, merged and scored
    in one ``gather_apply`` (on TCP: once, on rank 0, which sends back the value)."""
    local = rows.summaries(objective, metrics, margin)
    columns = margin.shape[1] if margin.shape[1] > 1 else 1
    sums = []
    for m, s in zip(metrics, local):
        if not isinstance(m, AUC) and not getattr(m, "row_summary", False):
            sums.extend([ExactSum(0), ExactSum(0)] if s is None else s)
    sums = comm.sum_exact(sums)
    out = []
    for m, s in zip(metrics, local):
        if isinstance(m, AUC) and _sorted(comm, rows, margin):
            # unit-weight binary auc: every rank's sorted rows, known counts
            mine = s[0].rows() if s is not None else comm.xp.zeros((0, 3), dtype=np.int64)
            out.append(float(comm.gather_apply(mine, functools.partial(_sorted_value, m),
                                               counts=rows.rank_counts)[0]))
        elif getattr(m, "row_summary", False):
            # a summary of the rows themselves (cox-nloglik's): every rank's, gathered
            mine = np.stack(s, axis=1) if s is not None else np.zeros((0, m.row_summary))
            out.append(float(comm.gather_apply(mine, functools.partial(_rows_value, m))[0]))
        elif isinstance(m, AUC):
            runs = s if s is not None else [None] * columns
            out.append(float(comm.gather_apply(_runs_rows(comm.xp, runs),
                                               functools.partial(_merged_value, m, columns))[0]))
        else:
            out.append(float(m.value(sums[:2])))
            sums = sums[2:]
    return out


def _rows_value(metric, rows, counts) -> list:
    """A row-summary metric's value of every rank's rows (its columns, gathered; on the host:
    NCCL gathers them on the device)."""
    rows = to_host(rows)
    return [metric.value([rows[:, j] for j in range(rows.shape[1])])]


def _sorted(comm, rows: EvalRows, margin) -> bool:
    """Whether every rank's auc summary is a SortedScores (AUC.summary's rule: binary, unit
    weights on every rank), decided from what all ranks share."""
    return (rows.scale is None and margin.shape[1] == 1
            and getattr(rows, "rank_counts", None) is not None)


def _sorted_value(metric, rows, counts) -> np.ndarray:
    """The auc metric's value from every rank's SortedScores.rows()."""
    return np.array([metric.value([SortedScores.from_rows(rows, counts)])])


def _runs_rows(xp, runs) -> object:
    """One rank's auc runs of every output column as [m, 4] int64 rows: the column, the
    score's float64 bits, the positive and the negative weight."""
    blocks = [xp.zeros((0, 4), dtype=np.int64)]
    for k, r in enumerate(runs):
        if r is not None and r.score.shape[0]:
            blocks.append(xp.stack([xp.full(r.score.shape[0], k, dtype=np.int64),
                                    xp.asarray(r.score, dtype=np.float64).view(np.int64),
                                    r.pos, r.neg], axis=1))
    return xp.concatenate(blocks)


def _merged_value(metric, columns: int, rows, counts=None) -> np.ndarray:
    """The auc metric's value from every rank's runs (``_runs_rows``, concatenated in rank
    order: per column, one sorted run per rank, which the merge exploits)."""
    xp = array_module(rows)
    merged = []
    for k in range(columns):
        r = rows[rows[:, 0] == k]
        merged.append(RocRuns.of(xp.ascontiguousarray(r[:, 1]).view(np.float64), r[:, 2], r[:, 3],
                                 presorted_runs=True))
    return np.array([metric.value(merged)])
