"""The training loop of a linear booster (``booster="gblinear"``), in process.

Each round: the objective's gradients at the training rows' margins, one coordinate-descent
round over the weights (dgbdt.kernels.cpu_gblinear), the margins recomputed from the new weights
(XGBoost's gblinear predicts all rows again each round), then the evaluation sets scored with
the same metrics, history, early stopping, callbacks and log lines as a tree training
(dgbdt.engine.boosting). The rows are read raw (floats, not quantized pages), on the host:
GPU rows (cupy) are copied to the host once, and the training runs on the CPU.

Parameters (XGBoost's gblinear): ``eta`` (0.5 by default for gblinear), ``lambda`` and
``alpha`` (0 by default; normalized: scaled by the sum of the instance weights), ``updater``
("shotgun" or "coord_descent": the same here, dgbdt.kernels.cpu_gblinear), ``feature_selector``,
``top_k``, ``tolerance`` (no update once a round changed no weight by more than it; the rounds
still count), ``seed`` (the shuffle and random selectors).

The intercept: as XGBoost's gblinear, the first output's estimated (or given) base_score is
every output's (XGBoost's linear prediction reads base_score[0] for all of them); the biases
are fitted from there.
"""
from __future__ import annotations

import numpy as np

from ..backends.device import to_host
from ..callback import RoundStopper, check_callbacks, emit, format_eval_line, report_round
from ..engine.evaluation import EvalRows, values
from ..model.booster import Booster
from ..objectives.base import model_params
from ..model.gblinear import LinearWeights
from ..kernels.cpu_gblinear import linear_round

#: objectives whose gradients need a tree training's seam (whole query groups, risk sets)
_SEAM_ONLY = ("rank:", "survival:cox")


def host_columns(data):
    """The rows as scipy CSC float32 for the column sums (NaN entries 0: they add nothing, as
    absent ones), and as the host matrix the margins read (dense with NaN, or CSR)."""
    import scipy.sparse as sp
    if getattr(data, "format", None) == "csr":
        X = data.get() if not isinstance(data.data, np.ndarray) else data     # cupyx: host
        X = sp.csr_matrix(X)
        cols = X.tocsc()
        cols.data = np.where(np.isnan(cols.data), 0.0, cols.data).astype(np.float32)
        return cols, X
    X = np.asarray(to_host(data), dtype=np.float32)
    return sp.csc_matrix(np.where(np.isnan(X), np.float32(0.0), X)), X


def check_linear_objective(objective) -> None:
    """Objectives whose gradients need more than each row's margin and label are not built
    for gblinear (their gradients come from the tree training's seam)."""
    name = objective.name
    if not getattr(objective, "user_gradients", False) and name.startswith(_SEAM_ONLY):
        raise NotImplementedError(
            f"booster='gblinear' with objective {name!r} is not built in dgbdt (its gradients "
            "need whole query groups or risk sets, which only the tree training gathers). "
            "Fix: booster='gbtree', or a pointwise objective with gblinear.")


class _Rows:
    """The training rows as a custom objective (dgbdt.objectives.custom) sees a seam: their
    margins, and a place for the gradients it computes."""

    def __init__(self, margin):
        self.margin, self.g, self.h = margin, None, None

    def margins(self):
        return self.margin

    def set_gradients(self, g, h):
        self.g, self.h = g, h


def _gradients(objective, margin, label, weight):
    """float64 [n, K] (g, h) of the objective at these margins (the user's with obj=)."""
    custom = getattr(objective, "seam_gradients", None)
    if custom is not None:
        rows = _Rows(margin)
        custom(rows)
        return (np.array(to_host(rows.g), np.float64), np.array(to_host(rows.h), np.float64))
    g, h = objective.gradients(margin, label, weight)
    return np.array(g, np.float64), np.array(h, np.float64)


class _Source:
    """An evaluation set: its rows on the host, the metrics' rows, and its margins now."""

    def __init__(self, d, booster, train_margin=None):
        self.d = d
        self.X = None if train_margin is not None else host_columns(d.data)[1]
        self.base = booster.initial_margin(d.num_row, None if d.base_margin is None
                                           else to_host(d.base_margin))
        self.rows = EvalRows.whole(np.asarray(to_host(d.label)),
                                   None if d.weight is None else np.asarray(to_host(d.weight)),
                                   d.qid)
        self.margin = train_margin

    def update(self, booster, train_margin) -> None:
        self.margin = train_margin if self.X is None else \
            booster.linear.margins(self.X, self.base)

    def custom_margins(self):
        return self.margin, self.d


def train_linear(p, dtrain, rounds, evals, early_stopping_rounds, evals_result, verbose_eval,
                 objective, num_class, metrics, base_margin, prior=None, callbacks=None,
                 custom_metric=None, maximize=None) -> Booster:
    """Train a gblinear model (module docstring) for ``rounds`` rounds; continue ``prior``
    (a gblinear Booster) when given. ``base_margin``: the intercept [K] of a new model."""
    from ..data.batches import BatchDataset
    from ..data.categorical import mask_of
    from ..engine.boosting import _custom_scores
    check_linear_objective(objective)
    if isinstance(dtrain, BatchDataset):
        raise NotImplementedError("booster='gblinear' on rows read in batches (a DataIter, "
                                  "BatchDataset) is not built: it reads the raw rows whole. "
                                  "Fix: a Dataset (DMatrix) of the rows in memory.")
    if mask_of(getattr(dtrain, "feature_types", None)) is not None:
        raise ValueError("booster='gblinear' takes numerical features only (XGBoost refuses "
                         "categorical data with gblinear): one-hot encode the categories")
    if prior is None:
        # XGBoost's gblinear adds the first output's intercept to every output (its
        # prediction reads base_score[0]); the biases learn the rest
        K = objective.n_outputs(num_class)
        base_margin = np.full(K, np.asarray(base_margin, np.float64).reshape(-1)[0])
        booster = Booster(objective.name, num_class, base_margin, dtrain.num_col,
                          dtrain.feature_names, model_params(objective))
        booster.linear = LinearWeights(dtrain.num_col, booster.n_outputs)
    else:
        if prior.linear is None:
            raise ValueError("xgb_model is a tree model: booster='gblinear' continues a "
                             "gblinear model only (train a new one, or keep the model's "
                             f"booster={prior.booster_type!r})")
        booster = prior.snapshot()
        booster.best_iteration = booster.best_score = None
    prior_rounds = booster.num_boosted_rounds()
    cols, X = host_columns(dtrain.data)
    n = dtrain.num_row
    label = np.asarray(to_host(dtrain.label))
    weight = None if dtrain.weight is None else np.asarray(to_host(dtrain.weight), np.float64)
    sum_weight = float(n if weight is None else weight.sum())
    base = booster.initial_margin(n, None if dtrain.base_margin is None
                                  else to_host(dtrain.base_margin))
    margin = booster.linear.margins(X, base)
    sources = [(_Source(d, booster, margin if d is dtrain else None), name)
               for d, name in evals]
    for s, _ in sources:
        s.update(booster, margin)
    stopper = (RoundStopper(early_stopping_rounds, metrics[-1] if metrics else None,
                            bool(maximize) if custom_metric is not None else None)
               if early_stopping_rounds else None)
    history: dict = evals_result if evals_result is not None else {}
    history.clear()
    callbacks = check_callbacks(callbacks)
    for cb in callbacks:
        booster = cb.before_training(booster)
    eta, previous, converged = float(p["eta"]), None, False
    for r in range(rounds):
        epoch = prior_rounds + r
        if callbacks and any(cb.before_iteration(booster, epoch, history) for cb in callbacks):
            break
        eta = booster.__dict__.pop("_next_eta", eta)        # set_param("learning_rate")
        if p["tolerance"] > 0 and not converged:     # XGBoost's check: the last round's change
            now = booster.linear.weights
            converged = previous is not None and \
                float(np.abs(now - previous).max()) <= p["tolerance"]
            previous = now.copy()
        if not converged:
            g, h = _gradients(objective, margin, label, weight)
            linear_round(cols, g, h, booster.linear.weights, eta, p["alpha"], p["lambda"],
                         sum_weight, p["feature_selector"], p["top_k"], p["seed"], epoch)
            margin = booster.linear.margins(X, base)
        booster.linear.rounds += 1
        scores = []
        for s, name in sources:
            s.update(booster, margin)
            pairs = [(m.name, v) for m, v in zip(
                metrics, values(metrics, s.rows.summaries(objective, metrics, s.margin)))]
            for metric_name, v in pairs + _custom_scores(s, custom_metric, objective):
                history.setdefault(name, {}).setdefault(metric_name, []).append(v)
                scores.append((name, metric_name, v))
        stop = stopper is not None and bool(scores) and stopper.update(r, scores[-1][2])
        if scores and verbose_eval and (verbose_eval is True or r % int(verbose_eval) == 0
                                        or r == rounds - 1 or stop):
            emit(format_eval_line(epoch, scores))
        report_round(r + 1, rounds, scores or None)
        if callbacks and any(cb.after_iteration(booster, epoch, history) for cb in callbacks):
            stop = True
        if stop:
            break
    if stopper is not None and stopper.best_iteration is not None:
        booster.best_iteration = prior_rounds + stopper.best_iteration
        booster.best_score = stopper.best_score
    booster.timings = {}
    for cb in callbacks:
        booster = cb.after_training(booster)
    return booster
