"""XGBoost's Booster.save_config / load_config and get_split_value_histogram for dgbdt's
Booster (dgbdt.compat.booster.Booster calls these).

save_config gives the training configuration as XGBoost writes it (a JSON string, every value
a string): the sections XGBoost's tools read (learner.generic_param, learner_train_param,
learner_model_param, gradient_booster's gbtree_model_param / gbtree_train_param /
tree_train_param, objective, metrics), filled from the parameters the Booster was trained
with (``Booster.config_params``, set by the estimators' fit; absent: dgbdt's defaults) and
from the model itself (intercept, outputs, parallel trees).
"""
from __future__ import annotations

import json
import re

import numpy as np

# tree_train_param's keys (XGBoost's names and aliases both, as XGBoost writes them) and the
# canonical dgbdt parameter each one reads
_TREE = {"alpha": "alpha", "colsample_bylevel": "colsample_bylevel",
         "colsample_bynode": "colsample_bynode", "colsample_bytree": "colsample_bytree",
         "eta": "eta", "gamma": "gamma", "grow_policy": "grow_policy",
         "interaction_constraints": "interaction_constraints", "lambda": "lambda",
         "learning_rate": "eta", "max_bin": "max_bin", "max_cat_threshold": "max_cat_threshold",
         "max_cat_to_onehot": "max_cat_to_onehot", "max_delta_step": "max_delta_step",
         "max_depth": "max_depth", "max_leaves": "max_leaves",
         "min_child_weight": "min_child_weight", "min_split_loss": "gamma",
         "monotone_constraints": "monotone_constraints", "reg_alpha": "alpha",
         "reg_lambda": "lambda", "sampling_method": "sampling_method", "subsample": "subsample"}
# the estimators' names of parameters: their canonical names
_RENAMED = {"learning_rate": "eta", "reg_lambda": "lambda", "reg_alpha": "alpha",
            "random_state": "seed", "n_jobs": "nthread", "min_split_loss": "gamma"}


def _text(value) -> str:
    """A value as XGBoost's configuration writes it (booleans 0/1, floats as float32)."""
    if isinstance(value, (bool, np.bool_)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return str(np.float32(value))
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value)
    return str(value)


def _given(booster) -> dict:
    """The parameters the Booster was trained with (canonical names), strings kept as given."""
    given = {}
    for k, v in (getattr(booster, "config_params", None) or {}).items():
        if v is not None:
            given[_RENAMED.get(k, k)] = v
    return given


def trained_objective(booster):
    """The objective with the parameters the Booster was trained with (``config_params``:
    ndcg_exp_gain, lambdarank_*, aft_loss_*, ...); a model keeps only what it needs to
    predict, so without them (a loaded model) the model's own objective, at its defaults."""
    from ..objectives.registry import get_objective
    given = {k: v for k, v in _given(booster).items() if k != "num_target"}
    if not given:
        return booster.objective
    try:
        return get_objective(booster.objective.name, {**given, **booster.objective_params})
    except (ValueError, TypeError):     # settings the objective refuses: not what trained it
        return booster.objective


def _metric_config(name: str, obj, given: dict) -> dict:
    """A metric's section as XGBoost writes it: aft-nloglik with the AFT parameters, the
    ranking metrics (ndcg, map, pre) with lambdarank's, their ``@n`` as the pairs per
    sample (none: XGBoost's 2**32 - 1)."""
    from ..model.xgboost_format import _objective_config
    from ..objectives.registry import get_objective
    base, _, at = name.partition("@")
    base = base.rstrip("-")
    if base == "aft-nloglik":
        aft = obj if obj.name == "survival:aft" else get_objective("survival:aft", given)
        return {"aft_loss_param": _objective_config(aft, 0)["aft_loss_param"], "name": name}
    if base in ("ndcg", "map", "pre"):
        rank = obj if obj.name.startswith("rank:") else get_objective("rank:ndcg", given)
        section = dict(_objective_config(rank, 0)["lambdarank_param"])
        n = at.rstrip("-")
        section["lambdarank_num_pair_per_sample"] = n if n.isdigit() else "4294967295"
        return {"lambdarank_param": section, "name": name}
    return {"name": name}


def save_config(booster) -> str:
    """The Booster's configuration as XGBoost's save_config writes it (see module doc)."""
    from ..model.xgboost_format import _num, _objective_config
    from ..params.normalize import SCHEMA
    given = _given(booster)

    def value(name):
        if name in given:
            return given[name]
        spec = SCHEMA.get(name)
        default = None if spec is None else spec.default
        return {"monotone_constraints": "()", "interaction_constraints": ""}.get(
            name, default if default is not None else 0)

    obj = trained_objective(booster)
    num_class = booster.num_class if obj.name.startswith("multi:") else 0
    base = obj.margin_to_base_score(booster.base_margin)
    metrics = given.get("eval_metric") or obj.default_metric
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    method = str(given.get("tree_method", "auto"))
    updater = "grow_histmaker" if method == "approx" else "grow_quantile_histmaker"
    learner = {
        "generic_param": {"device": _text(value("device") or "cpu"),
                          "fail_on_invalid_gpu_id": "0",
                          "n_jobs": _text(value("nthread")), "nthread": _text(value("nthread")),
                          "random_state": _text(value("seed")), "seed": _text(value("seed")),
                          "seed_per_iteration": "0", "validate_parameters": "1"},
        "gradient_booster": {
            "gbtree_model_param": {"num_parallel_tree": str(booster.num_parallel_tree),
                                   "num_trees": str(len(booster.trees))},
            "gbtree_train_param": {"process_type": "default",
                                   "tree_method": method, "updater": updater,
                                   "updater_seq": updater},
            "name": "gbtree", "specified_updater": False,
            "tree_train_param": {k: _text(value(canon)) for k, canon in sorted(_TREE.items())},
        },
        "learner_model_param": {
            "base_score": "[" + ",".join(str(np.float32(v)) for v in base) + "]",
            "boost_from_average": "1", "num_class": str(num_class),
            "num_feature": str(booster.n_features),
            "num_target": str(booster.n_outputs if booster.objective_params else 1)},
        "learner_train_param": {"booster": booster.booster_type,
                                "disable_default_eval_metric": _text(
                                    bool(given.get("disable_default_eval_metric", False))),
                                "multi_strategy": "one_output_per_tree",
                                "objective": obj.name},
        "metrics": [_metric_config(str(m), obj, given) for m in metrics if isinstance(m, str)],
        "objective": _objective_config(obj, num_class),
    }
    if booster.tree_weights is not None:     # dart: its gbtree's sections and its own
        learner["gradient_booster"] = {
            "dart_train_param": {k: _text(value(k)) for k in (
                "normalize_type", "one_drop", "rate_drop", "sample_type", "skip_drop")},
            "gbtree": learner["gradient_booster"], "name": "dart"}
    if booster.linear is not None:     # gblinear: its updater's sections (XGBoost's keys)
        lin = {"alpha": _text(value("alpha")), "eta": _text(value("eta")),
               "feature_selector": _text(value("feature_selector")),
               "lambda": _text(value("lambda"))}
        lin.update(learning_rate=lin["eta"], reg_alpha=lin["alpha"], reg_lambda=lin["lambda"])
        if "eta" not in given and "learning_rate" not in given:     # gblinear's defaults
            lin["eta"] = lin["learning_rate"] = "0.5"
        if "lambda" not in given and "reg_lambda" not in given:
            lin["lambda"] = lin["reg_lambda"] = "0"
        updater = str(given.get("updater", "shotgun"))
        section = {"linear_train_param": lin}
        if updater == "coord_descent":
            section["coordinate_param"] = {"top_k": _text(value("top_k"))}
        learner["gradient_booster"] = {
            "gblinear_train_param": {"max_row_perbatch": "18446744073709551615",
                                     "tolerance": _text(value("tolerance")),
                                     "updater": updater},
            "name": "gblinear", "updater": section}
    rank = learner["objective"].get("lambdarank_param")
    if rank is not None:
        rank["lambdarank_unbiased"] = _text(bool(given.get("lambdarank_unbiased", False)))
        rank["lambdarank_bias_norm"] = _num(float(given.get("lambdarank_bias_norm", 1.0)))
        bias = getattr(booster, "position_bias", None)
        if bias:    # lambdarank_unbiased's estimates of the last training (XGBoost's ti+, tj-)
            learner["objective"].update({k: [float(v) for v in bias[k]] for k in ("ti+", "tj-")})
    return json.dumps({"learner": learner, "version": [3, 2, 0]})


def load_config(booster, config: str) -> None:
    """XGBoost's load_config: the generic and tree training parameters of a configuration
    (save_config's JSON) become the Booster's (what save_config reports, and what the
    estimators record); the model (trees, intercept, objective) is not changed."""
    learner = json.loads(config)["learner"]
    params = dict(getattr(booster, "config_params", None) or {})
    gb = learner.get("gradient_booster", {})
    for section in (learner.get("generic_param", {}), gb.get("tree_train_param", {})):
        for k, v in section.items():
            if k in ("fail_on_invalid_gpu_id", "seed_per_iteration", "validate_parameters",
                     "n_jobs", "random_state"):
                continue
            params[_RENAMED.get(k, _TREE.get(k, k))] = v
    tm = gb.get("gbtree_train_param", {}).get("tree_method")
    if tm not in (None, "auto"):
        params["tree_method"] = tm
    booster.config_params = params


def split_value_histogram(booster, feature: str, fmap="", bins=None, as_pandas=True):
    """XGBoost's get_split_value_histogram: the histogram of the thresholds the trees split
    ``feature`` on (at most ``bins`` bins, default one per distinct threshold), rows
    (upper bin edge, count) of the non-empty bins; a DataFrame (SplitValue, Count) when
    ``as_pandas`` and pandas is installed, else an array."""
    regexp = re.compile(r"\[{0}<([\d.Ee+-]+)\]".format(re.escape(feature)))
    values = [float(x) for dump in booster.get_dump(fmap=fmap) for x in regexp.findall(dump)]
    n_unique = len(np.unique(values))
    bins = max(min(n_unique, bins) if bins is not None else n_unique, 1)
    counts, edges = np.histogram(values, bins=bins)
    out = np.column_stack((edges[1:], counts))
    out = out[out[:, 1] > 0]
    if out.size == 0 and booster.feature_types is not None:
        names = booster._names()
        if feature in names and booster.feature_types[names.index(feature)] == "c":
            raise ValueError("Split value histogram doesn't support categorical split.")
    if as_pandas:
        try:
            from pandas import DataFrame
        except ImportError:
            import warnings
            warnings.warn("Returning histogram as ndarray (as_pandas == True, but pandas is "
                          "not installed).", UserWarning, stacklevel=2)
            return out
        return DataFrame(out, columns=["SplitValue", "Count"])
    return out
