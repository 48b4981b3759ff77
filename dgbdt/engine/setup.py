"""One front door for training: the preparation that ``dgbdt.train`` and ``dgbdt.dask.train``
share, written once.

``prepare`` turns a call's arguments into a ``Setup``: the model to continue and its objective,
the parameters normalized (constraints resolved against the feature names, the device resolved
once), the objective, the metrics scored each round, and the checked eval sets. It reads a
dataset through the few members that both dataset kinds expose — ``num_col``, ``num_row``,
``feature_names``, ``on_device``, ``has_label``, ``has_intervals``, ``has_qid`` — and a
``DatasetKind`` says what differs between them (the class, how its query ids and label bounds
are passed, whether each worker picks its own GPU, whether a metric may be a function of all
the predictions). What is particular to one kind (Dask's modes and timeouts, in-process label
views) stays with its caller, after this step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backends.device import resolve_device
from ..data.checks import check_feature_names
from ..metrics.registry import get_metric, is_metric_custom, with_custom
from ..model.booster import Booster, load_model
from ..objectives.custom import CustomObjective
from ..objectives.rank_bias import refuse_unsupported
from ..objectives.registry import get_objective
from ..params.normalize import normalize_params
from ..tree.constraints import resolve as resolve_monotone, resolve_interactions


@dataclass(frozen=True)
class DatasetKind:
    """What differs between the datasets a training takes."""

    cls: type                 # dgbdt.Dataset or dgbdt.dask.DaskDataset
    what: str                 # its name in messages
    qid_hint: str             # how its rows get query ids
    intervals_hint: str       # how it gets survival:aft's label bounds
    #: the rows live on Dask workers: "cuda" is each worker's own GPU, labels are checked and
    #: a custom obj= runs where the rows are, and a metric cannot be a function of all the
    #: predictions (they are never in one place)
    on_workers: bool


@dataclass
class Setup:
    """A training's prepared arguments (see ``prepare``)."""

    p: dict                   # normalized parameters; device and constraints resolved
    dtrain: object            # the training rows (survival:aft's: a view with interval labels)
    objective: object         # dgbdt.objectives (a CustomObjective around it with obj=)
    metrics: list             # dgbdt.metrics, scored on every eval set each round
    evals: list               # checked (dataset, name) pairs
    prior: Booster | None     # the model to continue (xgb_model)
    num_class: int | None
    custom_metric: object     # a function of all the predictions (in-process), or None
    maximize: bool | None


def resolve_prior(xgb_model, params) -> Booster | None:
    """The model to continue (``xgb_model``): a Booster, or what load_model reads. A params
    objective (or num_class) other than the model's is an error: a model's trees and intercept
    belong to its objective."""
    if xgb_model is None:
        return None
    prior = xgb_model if isinstance(xgb_model, Booster) else load_model(xgb_model)
    given = (params or {}).get("objective")
    if given is not None and given != prior.objective.name:
        raise ValueError(f"params objective {given!r} differs from xgb_model's "
                         f"{prior.objective.name!r}; continued training keeps the model's "
                         "objective (leave it out of params, or train a new model)")
    nc = (params or {}).get("num_class")
    if nc is not None and prior.num_class is not None and int(nc) != prior.num_class:
        raise ValueError(f"params num_class={nc} differs from xgb_model's {prior.num_class}")
    # its outputs' quantiles, or its number of targets
    for k, v in getattr(prior, "objective_params", {}).items():
        mine = (params or {}).get(k)
        if mine is not None and list(np.atleast_1d(mine).astype(float)) != list(
                np.atleast_1d(v).astype(float)):
            raise ValueError(f"params {k}={mine!r} differs from xgb_model's {v}; continued "
                             f"training keeps the model's (leave {k} out of params)")
    return prior


def check_evals(evals, dtrain, kind: DatasetKind, intervals: bool = False) -> list:
    """(dataset, name) pairs of ``kind``, labelled (or with label bounds for survival:aft),
    with dtrain's features: their number, and their names in dtrain's order where both are
    named (dgbdt.data.checks.check_feature_names)."""
    out = []
    for item in evals or []:
        if not (isinstance(item, (tuple, list)) and len(item) == 2
                and isinstance(item[0], kind.cls) and isinstance(item[1], str)):
            raise TypeError(f"evals must be a list of ({kind.cls.__name__}, name) pairs")
        d, name = item
        if not d.has_label and not intervals:
            raise ValueError(f"eval set '{name}' has no label")
        if d.num_col != dtrain.num_col:
            raise ValueError(f"eval set '{name}' has {d.num_col} features; dtrain has "
                             f"{dtrain.num_col}")
        check_feature_names(d.feature_names, dtrain.feature_names, f"eval set '{name}'")
        out.append((d, name))
    return out


def prepare(params, dtrain, evals, kind: DatasetKind, *, num_boost_round,
            early_stopping_rounds=None, xgb_model=None, obj=None, custom_metric=None,
            maximize=None, checkpoint_dir=None, mode: str | None = None,
            label_views=None) -> Setup:
    """The checks and the preparation every training makes, in one order (module doc).
    ``label_views(dtrain, evals)``: the datasets survival:aft trains on, whose label is the
    [n, 2] interval of their label bounds (in-process; on Dask the workers make them)."""
    prior = resolve_prior(xgb_model, params)
    if prior is not None:       # the model's objective (and its parameters) continue
        params = {**(params or {}), "objective": prior.objective.name,
                  **({"num_class": prior.num_class} if prior.num_class else {}),
                  **prior.objective_params}
    p = normalize_params(params)
    if not isinstance(dtrain, kind.cls):
        raise TypeError(f"dtrain must be a {kind.what}; got {type(dtrain).__name__}"
                        + ("" if kind.on_workers
                           else " (wrap arrays with dgbdt.Dataset(X, label=y))"))
    if isinstance(num_boost_round, bool) or not isinstance(num_boost_round, (int, np.integer)) \
            or num_boost_round < 0:
        raise ValueError(f"num_boost_round must be an integer >= 0; got {num_boost_round!r}")
    intervals = p["objective"] == "survival:aft"       # label bounds, checked below
    if not dtrain.has_label and not intervals:
        raise ValueError(f"dtrain has no label; pass label= to {kind.cls.__name__}" + (
            " (its label bounds are survival:aft's labels, read by that objective only)"
            if dtrain.has_intervals else ""))
    evals = check_evals(evals, dtrain, kind, intervals)
    _resolve_targets(p, dtrain, evals, obj is not None)
    if early_stopping_rounds is not None and not evals:
        raise ValueError("early_stopping_rounds needs at least one entry in evals")
    if prior is not None and prior.n_features != dtrain.num_col:
        raise ValueError(f"xgb_model has {prior.n_features} features; dtrain has "
                         f"{dtrain.num_col}")
    objective = get_objective(p["objective"], p)
    if isinstance(p["base_score"], tuple):       # a vector: one value per model output
        K = objective.n_outputs(p["num_class"])
        if len(p["base_score"]) != K:
            raise ValueError(f"base_score has {len(p['base_score'])} values; the model has "
                             f"{K} output(s) (pass one value, or one per output)")
    if getattr(objective, "interval_labels", False):
        for d, name in [(dtrain, "dtrain")] + [(d, f"eval set '{n}'") for d, n in evals]:
            if not d.has_intervals:
                raise ValueError(f"survival:aft trains on label intervals: {name} needs "
                                 f"label_lower_bound and label_upper_bound "
                                 f"({kind.intervals_hint})")
        if label_views is not None:
            dtrain, evals = label_views(dtrain, evals)
    if getattr(objective, "needs_qid", False) and not dtrain.has_qid:
        raise ValueError(f"{objective.name} needs query ids: {kind.qid_hint}")
    p["device"] = _device(p["device"], dtrain, kind)
    refuse_unsupported(objective, xgb_model, checkpoint_dir,
                       "cpu" if p["device"] == "cpu" else "cuda", mode)
    p["monotone_constraints"] = resolve_monotone(p["monotone_constraints"], dtrain.num_col,
                                                 dtrain.feature_names)
    p["interaction_constraints"] = resolve_interactions(p["interaction_constraints"],
                                                        dtrain.num_col, dtrain.feature_names)
    if is_metric_custom(custom_metric):     # Metric instances: scored as the built-in ones
        p["eval_metric"] = with_custom(p["eval_metric"], objective.default_metric,
                                       custom_metric, maximize)
        custom_metric = maximize = None
    elif custom_metric is not None and kind.on_workers:
        raise NotImplementedError(
            "custom_metric on Dask takes dgbdt.metrics.registry.Metric instances (a row loss, "
            "or a summary per partition with its merge and value: exact across workers); a "
            "function of all the predictions would need them in one place. Subclass "
            "Metric (e.g. define name and _row_loss(xp, y, p)), or train in-process")
    elif maximize is not None and custom_metric is None and kind.on_workers:
        raise ValueError("maximize goes with custom_metric (the built-in metrics know it)")
    names = p["eval_metric"] or [objective.default_metric]
    if p["disable_default_eval_metric"] and not p["eval_metric"] and custom_metric is not None:
        names = []          # the user's function alone (XGBoost's rule)
    metrics = [get_metric(m, p) for m in names]
    if obj is not None:
        if not callable(obj):
            raise TypeError(f"obj must be a callable (preds, dtrain) -> (grad, hess); got "
                            f"{type(obj).__name__}")
        # in-process the rows are dtrain's; on Dask each worker's own
        objective = CustomObjective(objective, obj, None if kind.on_workers else dtrain)
        if p["base_score"] is None:        # XGBoost's intercept with a custom objective
            p["base_score"] = 0.5
    elif not kind.on_workers:           # (on Dask each worker checks its partitions' labels)
        objective.check_label_array(dtrain.label, p["num_class"])
    return Setup(p, dtrain, objective, metrics, evals, prior, p["num_class"], custom_metric,
                 maximize)


def _resolve_targets(p: dict, dtrain, evals, custom: bool) -> None:
    """``p["num_target"]``: the columns of dtrain's label (XGBoost reads the number of targets
    from the label); a num_target given must match it, except with a custom objective, whose
    gradients set the outputs (XGBoost's rule: there it says how many). Eval sets' labels must
    have as many columns. None for one target."""
    T = dtrain.num_target
    given = p.get("num_target")
    if given is not None and given != T and not (custom and T == 1):
        raise ValueError(f"num_target={given} but the label has {T} column(s) (one per "
                         "target); leave num_target out (it is read from the label)")
    for d, name in evals:
        if d.has_label and d.num_target != T:
            raise ValueError(f"eval set '{name}' has a label of {d.num_target} target(s); "
                             f"dtrain's has {T}")
    T = max(T, given or 1)
    p["num_target"] = T if T > 1 else None
    if T > 1:
        from ..objectives.multi_target import check_multi_target
        check_multi_target(p["objective"], T)


def _device(device: str | None, dtrain, kind: DatasetKind) -> str:
    """The training's device, resolved once: the parameter, else where the rows live; on Dask
    "cuda" is each worker's own GPU."""
    if kind.on_workers:
        return "cpu" if (device or ("cuda" if dtrain.on_device else "cpu")) == "cpu" \
            else "cuda"
    return resolve_device(device, dtrain.device_hint())


#: tree_method="exact": the cuts are every distinct value of a feature, up to the bins a page
#: symbol holds (the max_bin limit)
EXACT_MAX_BIN = 65535


def training_max_bin(p: dict, dtrain) -> int:
    """The max_bin a training's cuts are made with: the parameter (or the dataset's own), or
    for tree_method="exact" room for every distinct value (XGBoost's exact greedy method
    evaluates the split between every two consecutive values: a bin a value does the same)."""
    if p.get("tree_method") == "exact":
        return EXACT_MAX_BIN
    return dtrain.resolve_max_bin(p["max_bin"])


def check_exact(p: dict, cuts) -> None:
    """tree_method="exact" needs a bin for each distinct value: refuse a feature with more."""
    if p.get("tree_method") != "exact":
        return
    full = np.flatnonzero(np.asarray(cuts.n_bins()) >= EXACT_MAX_BIN)
    if full.size:
        raise NotImplementedError(
            f'tree_method="exact": feature {int(full[0])} has {EXACT_MAX_BIN} or more distinct '
            f"values, more bins than a page holds, so its splits would not be exact. Fix: "
            f'tree_method="hist" or "approx" (max_bin up to {EXACT_MAX_BIN})')
