"""``process_type="update"`` (XGBoost's): an existing model's trees updated, none grown.

For round r = 0 .. num_boost_round - 1 of ``xgb_model``: the gradients of dtrain's rows at the
margins of the model updated so far (the intercept, or dtrain's base_margin, plus rounds
0 .. r - 1 as updated), then each tree of round r goes through the updater sequence
(dgbdt.tree.tree_updates: ``refresh``, ``prune``), and its rows' margins take its new leaf
values. The result holds the updated rounds only, as XGBoost's.

The rows live in ``UpdateRows`` holders: one in process, one a partition on Dask
(dgbdt.dask.update maps and reduces them; the algorithm is here). A holder finds a row's path
through an old tree once, as its leaf (Booster.predict's pred_leaf on the raw rows, the
trees' float thresholds); prune needs no rows and says where each old node's rows end, so a
tree's refresh sums its rows by that map. Per round the holders give their gradient maxima
(max-reduced: the fixed-point scale of each class, from the maxima and the row count, as in
training), then the fixed-point node sums of the trees to refresh (added: exact, so any
partitioning gives the same model), then take the updated trees into their margins. A forest
round (num_parallel_tree P) refreshes and prunes with eta / P, XGBoost's rescaling.
"""
from __future__ import annotations

import time

import numpy as np

from ..backends.device import to_host
from ..callback import emit, format_eval_line
from ..kernels.fixedpoint import scale_for, to_fixed
from ..model.booster import Booster
from ..tree.split import SplitParams
from ..tree.tree_updates import node_sums, pruned, refreshed
from .evaluation import EvalRows, merge, values


def check_updatable(prior: Booster | None, rounds: int, objective, on_dask: bool) -> None:
    """What an update needs of xgb_model, num_boost_round (XGBoost's limits) and the
    objective: a row's gradients from its own margin and label (on Dask: its partition's)."""
    whole = getattr(objective, "needs_qid", False) or hasattr(objective, "seam_gradients") \
        or (on_dask and objective.name in ("survival:cox", "survival:aft"))
    if whole:
        raise NotImplementedError(
            f"process_type='update' with objective {objective.name!r} is not built"
            + (" on Dask" if on_dask else "") + ": its gradients need more than a row's own "
            "margin and label (query groups, the rows' order, label bounds)")
    if prior is None:
        raise ValueError("process_type='update' updates the trees of xgb_model: pass the "
                         "model to update (a Booster, or a model file)")
    if prior.linear is not None or prior.tree_weights is not None or prior.vector_leaf \
            or any(t.linear for t in prior.trees):
        raise NotImplementedError(
            "process_type='update' is built for gbtree models of constant, one-output leaves; "
            "this model is " + ("gblinear" if prior.linear is not None else
                                "dart" if prior.tree_weights is not None else
                                "of vector leaves" if prior.vector_leaf else
                                "of linear leaves"))
    if rounds > prior.num_boosted_rounds():
        raise ValueError(f"num_boost_round={rounds}, but xgb_model has "
                         f"{prior.num_boosted_rounds()} rounds: for updating existing trees, "
                         "boosting rounds can not exceed the previous training's rounds "
                         "(XGBoost's limit)")


class UpdateRows:
    """Rows under update, on the host: each row's leaf in every old tree, labels, weights, the
    margins of the model updated so far. Its methods are pure (``advanced`` returns a new
    holder), so a Dask partition's holder can be computed again from its lineage."""

    def __init__(self, leaves, label, weight, margin, qid=None, rows=None):
        self.leaves, self.label, self.weight, self.margin = leaves, label, weight, margin
        self.qid = qid
        self._grad = None
        self._rows = rows       # an eval set's EvalRows (its weight sum), made once

    @classmethod
    def of(cls, prior: Booster, data, n: int, rounds: int, label, weight, base_margin,
           qid=None):
        """The holder of the ``n`` rows ``data`` (what Booster.predict reads) for ``prior``'s
        first ``rounds`` rounds."""
        leaves = to_host(prior.predict(data, pred_leaf=True, iteration_range=(0, rounds))
                         ).reshape(n, -1).astype(np.int64) if rounds else np.zeros((n, 0), int)
        margin = prior.initial_margin(n, None if base_margin is None else to_host(base_margin))
        return cls(leaves, None if label is None else to_host(label),
                   None if weight is None else to_host(weight), margin, qid)

    @property
    def n_rows(self) -> int:
        return int(self.margin.shape[0])

    def _gradients(self, objective):
        if self._grad is None:
            self._grad = objective.gradients(self.margin, self.label, self.weight)
        return self._grad

    def maxima(self, objective) -> np.ndarray:
        """float64 [2, K]: each class's max |g| and max |h| at these margins."""
        g, h = self._gradients(objective)
        if g.shape[0] == 0:
            return np.zeros((2, g.shape[1]))
        return np.stack([np.abs(g).max(axis=0), np.abs(h).max(axis=0)])

    def sums(self, objective, jobs) -> list:
        """Each job's (G, H) int64 node sums: jobs are (tree index, tree, old leaf -> node
        map, class, scale_g, scale_h)."""
        g, h = self._gradients(objective)
        return [node_sums(tree, at[self.leaves[:, i]], to_fixed(g[:, k], sg),
                          to_fixed(h[:, k], sh)) for i, tree, at, k, sg, sh in jobs]

    def advanced(self, jobs) -> "UpdateRows":
        """The holder with these trees in its margins: jobs are (tree index, tree, old leaf
        -> node map, class)."""
        margin = self.margin.copy()
        for i, tree, at, k in jobs:
            margin[:, k] += tree.threshold[at[self.leaves[:, i]]].astype(np.float64)
        return UpdateRows(self.leaves, self.label, self.weight, margin, self.qid, self._rows)

    def summaries(self, objective, metrics, scale) -> list:
        """The metrics' summaries of these rows (an eval set's) at their margins."""
        if self._rows is None:
            self._rows = EvalRows(self.label, self.weight, scale, self.qid)
        return self._rows.summaries(objective, metrics, self.margin)


def add_sums(a: list, b: list) -> list:
    """Two holders' node sums, job by job (exact)."""
    return [(ga + gb, ha + hb) for (ga, ha), (gb, hb) in zip(a, b)]


class LocalRows:
    """The holders of one process (dgbdt.train): the training rows and each eval set's."""

    def __init__(self, rows: UpdateRows, evals: list):
        self.rows, self.evals = rows, evals
        self.n_rows = rows.n_rows

    def maxima(self, objective):
        return self.rows.maxima(objective)

    def sums(self, objective, jobs):
        return self.rows.sums(objective, jobs)

    def advance(self, jobs) -> None:
        self.rows = self.rows.advanced(jobs)
        self.evals = [(e.advanced(jobs), scale) for e, scale in self.evals]

    def scores(self, objective, metrics) -> list[list[float]]:
        return [values(metrics, e.summaries(objective, metrics, scale))
                for e, scale in self.evals]


def eval_holder(prior, d, rounds) -> tuple:
    """(holder, auc weight scale) of an in-process eval set."""
    rows = UpdateRows.of(prior, d, d.num_row, rounds, d.label, d.weight, d.base_margin, d.qid)
    whole = EvalRows.whole(rows.label, rows.weight, rows.qid)
    return rows, whole.scale


def update_model(p: dict, holders, rounds: int, prior: Booster, objective, metrics,
                 eval_names: list, evals_result: dict | None, verbose_eval) -> Booster:
    """The model of ``prior``'s first ``rounds`` rounds, each tree updated (module doc);
    ``holders``: LocalRows, or dgbdt.dask.update's partitions, with the eval sets'
    (check_updatable first)."""
    t0 = time.perf_counter()
    steps = p["updater"].split(",")
    T, P = prior.trees_per_round, prior.num_parallel_tree
    # XGBoost rescales the learning rate its updaters see by the trees of a round and
    # output (a forest's P), as a forest's trees grow with eta / P
    sp = SplitParams.from_params({**p, "eta": p["eta"] / P})
    out = prior[0:rounds]
    old_trees, classes = out.trees, out.tree_class
    out.trees, out.tree_class = [], []
    out.best_iteration = out.best_score = None
    n = holders.n_rows
    history: dict = evals_result if evals_result is not None else {}
    history.clear()
    refresh = "refresh" in steps       # the prunes before it, and after it
    before, after = (steps[:steps.index("refresh")], steps[steps.index("refresh") + 1:]) \
        if refresh else (steps, [])

    def prunes(tree, at, count):
        """``count`` prunes of the tree; ``at``: each old node's node, carried along."""
        for _ in range(count):
            tree, moved = pruned(tree, sp, p["max_depth"])
            at = moved[at]
        return tree, at

    for r in range(rounds):
        ids = range(r * T, (r + 1) * T)
        done = [prunes(old_trees[i], np.arange(old_trees[i].n_nodes, dtype=np.int64),
                       len(before)) for i in ids]
        if refresh:     # the nodes' sums at this round's gradients, over every holder
            mx = holders.maxima(objective)
            jobs = [(i, tree, at, classes[i], scale_for(float(mx[0, classes[i]]), n),
                     scale_for(float(mx[1, classes[i]]), n)) for i, (tree, at) in zip(ids, done)]
            done = [prunes(refreshed(tree, G / sg, H / sh, sp, p["refresh_leaf"]), at,
                           len(after))
                    for (_, tree, at, _, sg, sh), (G, H) in zip(jobs, holders.sums(objective,
                                                                                   jobs))]
        trees, maps = [t for t, _ in done], [a for _, a in done]
        # a round's trees all start from its gradients: into the margins together
        holders.advance([(i, tree, at, classes[i]) for i, tree, at in zip(ids, trees, maps)])
        out.trees += trees
        out.tree_class += [classes[i] for i in ids]
        scores = [(name, m.name, v) for name, vals in zip(eval_names,
                                                          holders.scores(objective, metrics))
                  for m, v in zip(metrics, vals)]
        for name, metric, v in scores:
            history.setdefault(name, {}).setdefault(metric, []).append(v)
        if scores and verbose_eval and (verbose_eval is True or r % int(verbose_eval) == 0
                                        or r == rounds - 1):
            emit(format_eval_line(r, scores))
    out.timings = {"update": time.perf_counter() - t0}
    return out
