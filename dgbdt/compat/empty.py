"""XGBoost's training on a DMatrix without rows (``xgb.train`` through dgbdt.compat.xgboost).

XGBoost warns ("Empty dataset") and trains: with no gradients every tree is one leaf of value
0, the intercept is the objective's base_score given, else 0 (0.5 for the probability
objectives: a margin of 0), and a metric on no rows is 0. dgbdt's own train refuses a dataset
without rows (there is nothing to learn); this module gives XGBoost's answer to code written
for XGBoost, where a worker's or a fold's share may be empty.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..engine.batch_eval import dataset_eval
from ..metrics.registry import get_metric
from ..model.booster import Booster
from ..objectives.registry import get_objective
from ..params.normalize import normalize_params
from ..tree.model import Tree

_PROBABILITY = ("binary:logistic", "reg:logistic", "binary:logitraw", "binary:hinge")


def _leaf() -> Tree:
    """A tree of one leaf of value 0."""
    return Tree(left=np.array([-1], np.int32), right=np.array([-1], np.int32),
                parent=np.array([-1], np.int32), feature=np.zeros(1, np.int32),
                threshold=np.zeros(1, np.float32), default_left=np.zeros(1, np.bool_),
                base_weight=np.zeros(1, np.float32), loss_change=np.zeros(1, np.float32),
                sum_hessian=np.zeros(1, np.float32))


def train_empty(params: dict, n_features: int, feature_names, rounds: int, evals,
                evals_result) -> Booster:
    """The model of ``rounds`` rounds XGBoost trains on no rows (module doc); ``evals``:
    (dgbdt Dataset or None for a set without rows, name) pairs, scored every round."""
    warnings.warn("Empty dataset at worker: 0 (dgbdt.compat.xgboost trains one-leaf trees "
                  "of value 0, as XGBoost does)", UserWarning, stacklevel=3)
    p = normalize_params(params)
    objective = get_objective(p["objective"], p)
    base = p["base_score"]
    if base is None:       # survival:aft: its fixed intercept 0.5 (it has no estimate)
        base = 0.5 if p["objective"] in _PROBABILITY + ("survival:aft",) else 0.0
    booster = Booster(objective.name, p["num_class"],
                      objective.base_score_to_margin(base, p["num_class"]), n_features,
                      feature_names)
    booster.num_parallel_tree = p["num_parallel_tree"]
    metrics = [get_metric(m, p) for m in (p["eval_metric"] or [objective.default_metric])]
    history: dict = evals_result if evals_result is not None else {}
    history.clear()
    sources = [(None if d is None else dataset_eval(d, booster), name) for d, name in evals]
    for _ in range(rounds):
        for k in range(booster.n_outputs):
            for _ in range(booster.num_parallel_tree):
                booster.trees.append(_leaf())
                booster.tree_class.append(k)
        for source, name in sources:
            values = [0.0] * len(metrics) if source is None else \
                source.scores(booster, [], objective, metrics)
            for m, v in zip(metrics, values):
                history.setdefault(name, {}).setdefault(m.name, []).append(float(v))
    return booster
