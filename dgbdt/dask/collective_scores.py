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

__all__ = ["rank_rows", "collective_scores_later", "ScoresLater"]


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


class ScoresLater:
    """A round's metric values on the ranks, read by ``result()``: between the two, NCCL ranks
    leave the round's collectives and the kernels behind them queued on the device
    (Communicator.gather_apply_later), so the boosting loop can queue the next round's trees
    before it reads these (dgbdt.engine.boosting, a collective seam's ``scores_lag``)."""

    def __init__(self, reads):
        self.reads = reads

    def result(self) -> list[float]:
        return [float(read()) for read in self.reads]


def collective_scores_later(comm, rows: EvalRows, margin, objective, metrics) -> ScoresLater:
    """Metric values over every rank's rows from this rank's summaries (the same on every
    rank), read by the result's ``result()``: ratio metrics' exact sums all-reduced as limbs
    in one call; each auc metric's rows gathered and scored in one ``gather_apply`` (on TCP:
    once, on rank 0, which sends back the value): a unit-weight binary auc's sorted rows
    (scored by one kernel), else its score runs (each rank's distinct scores, not its rows).
    On NCCL the sums, the sorted rows' gather and the auc kernel are only queued here and
    waited for at ``result()``; other auc and row-summary metrics are computed now (their
    merges run on the host)."""
    local = rows.summaries(objective, metrics, margin)
    columns = margin.shape[1] if margin.shape[1] > 1 else 1
    sums = []
    for m, s in zip(metrics, local):
        if not isinstance(m, AUC) and not getattr(m, "row_summary", False):
            sums.extend([ExactSum(0), ExactSum(0)] if s is None else s)
    sums_later = comm.sum_exact_later(sums)
    reads, at = [], 0
    for m, s in zip(metrics, local):
        if isinstance(m, AUC) and _sorted(comm, rows, margin):
            # unit-weight binary auc: every rank's sorted rows, known counts
            mine = s[0].rows() if s is not None else comm.xp.zeros((0, 3), dtype=np.int64)
            later = comm.gather_apply_later(mine, functools.partial(_sorted_later, m),
                                            counts=rows.rank_counts)
            reads.append(lambda later=later: later()[0])
        elif getattr(m, "row_summary", False):
            # a summary of the rows themselves (cox-nloglik's): every rank's, gathered
            mine = np.stack(s, axis=1) if s is not None else np.zeros((0, m.row_summary))
            value = float(comm.gather_apply(mine, functools.partial(_rows_value, m))[0])
            reads.append(lambda value=value: value)
        elif isinstance(m, AUC):
            runs = s if s is not None else [None] * columns
            value = float(comm.gather_apply(_runs_rows(comm.xp, runs),
                                            functools.partial(_merged_value, m, columns))[0])
            reads.append(lambda value=value: value)
        else:
            reads.append(lambda m=m, at=at: m.value(sums_later()[at:at + 2]))
            at += 2
    return ScoresLater(reads)


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


def _sorted_later(metric, rows, counts):
    """A callable that gives the auc metric's value (as a [1] array) from every rank's
    SortedScores.rows(), its kernels queued now (AUC.value_later)."""
    value = metric.value_later([SortedScores.from_rows(rows, counts)])
    return lambda: np.array([value()])


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
