"""``process_type="update"`` (XGBoost's): an existing model's trees updated, none grown.

For round r = 0 .. num_boost_round - 1 of ``xgb_model``: the gradients of dtrain's rows at the
margins of the model updated so far (the intercept, or dtrain's base_margin, plus rounds
0 .. r - 1 as updated), then each tree of round r goes through the updater sequence
(dgbdt.tree.tree_updates: ``refresh``, ``prune``), and its rows' margins take its new leaf
values. The result holds the updated rounds only, as XGBoost's.

A row's path through an old tree is found once, as its leaf (Booster.predict's pred_leaf on
the raw rows, the trees' float thresholds); refresh keeps the structure, and prune says
where each old node's rows end. The fixed-point scale of a tree's sums comes from its class's
gradient maxima and the row count, as in training. A forest round (num_parallel_tree P)
refreshes with eta / P, XGBoost's rescaling. The rows are read on the host: on a GPU the
leaves, labels and weights are copied there once.
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
from .evaluation import DatasetEval


def check_updatable(prior: Booster | None, rounds: int) -> None:
    """What an update needs of xgb_model and num_boost_round (XGBoost's limits)."""
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


def update_model(p: dict, dtrain, rounds: int, prior: Booster, objective, metrics, evals,
                 evals_result: dict | None, verbose_eval) -> Booster:
    """The model of ``prior``'s first ``rounds`` rounds, each tree updated (module doc)."""
    check_updatable(prior, rounds)
    t0 = time.perf_counter()
    steps = p["updater"].split(",")
    T, P = prior.trees_per_round, prior.num_parallel_tree
    sp = SplitParams.from_params(p)
    # XGBoost's refresher rescales the learning rate by the trees of a round and output
    refresh_sp = SplitParams.from_params({**p, "eta": p["eta"] / P})
    leaves = to_host(prior.predict(dtrain, pred_leaf=True, iteration_range=(0, rounds),
                                   strict_shape=False)).reshape(dtrain.num_row, -1)
    label = to_host(dtrain.label)
    weight = None if dtrain.weight is None else to_host(dtrain.weight)
    out = prior[0:rounds]
    old_trees, classes = out.trees, out.tree_class
    out.trees, out.tree_class = [], []
    out.best_iteration = out.best_score = None
    n = dtrain.num_row
    margin = out.initial_margin(
        n, None if dtrain.base_margin is None else to_host(dtrain.base_margin))
    sources = [(DatasetEval(d, out), name) for d, name in evals]
    history: dict = evals_result if evals_result is not None else {}
    history.clear()
    for r in range(rounds):
        g, h = objective.gradients(margin, label, weight)
        updated = []
        for i in range(r * T, (r + 1) * T):
            k = classes[i]
            tree, at = old_trees[i], leaves[:, i].astype(np.int64)
            for step in steps:
                if step == "refresh":
                    sg = scale_for(float(np.max(np.abs(g[:, k]), initial=0.0)), n)
                    sh = scale_for(float(np.max(np.abs(h[:, k]), initial=0.0)), n)
                    G, H = node_sums(tree, at, to_fixed(g[:, k], sg), to_fixed(h[:, k], sh))
                    tree = refreshed(tree, G / sg, H / sh, refresh_sp, p["refresh_leaf"])
                else:
                    tree, moved = pruned(tree, sp, p["max_depth"])
                    at = moved[at]
            updated.append((tree, k, at))
        for tree, k, at in updated:     # a round's trees all start from its gradients
            margin[:, k] += tree.threshold[at].astype(np.float64)
            out.trees.append(tree)
            out.tree_class.append(k)
        scores = []
        new = list(range(r * T, (r + 1) * T))
        for source, name in sources:
            for m, v in zip(metrics, source.scores(out, new, objective, metrics)):
                history.setdefault(name, {}).setdefault(m.name, []).append(v)
                scores.append((name, m.name, v))
        if scores and verbose_eval and (verbose_eval is True or r % int(verbose_eval) == 0
                                        or r == rounds - 1):
            emit(format_eval_line(r, scores))
    out.timings = {"update": time.perf_counter() - t0}
    return out
