"""What the XGBoost-compatible modules share (dgbdt.compat.xgboost and its dask twin)."""
from __future__ import annotations

import warnings

from ..estimator_extras import positional_warned  # noqa: F401  (the compat modules' import)


class XGBoostError(ValueError):
    """XGBoost's error type (``xgb.core.XGBoostError``), where the compat layer raises what
    XGBoost raises as one."""


def _unsupported(what: str, instead: str):
    raise NotImplementedError(f"dgbdt.compat.xgboost: {what} is not supported by dgbdt; "
                              f"{instead}")


def refuse_categorical(method, booster, feature_types) -> None:
    """XGBoost's rule: tree_method="exact" and booster="gblinear" take no categorical data
    (a ValueError, as XGBoost's; ``feature_types``: the training data's)."""
    from ..data.categorical import mask_of
    if mask_of(feature_types) is not None and (method == "exact" or booster == "gblinear"):
        what = 'tree_method="exact"' if method == "exact" else 'booster="gblinear"'
        # both of XGBoost's words: its DMatrix says "categorical features", its Dask
        # estimators "categorical data" (users' code and XGBoost's tests match either)
        raise ValueError(f"{what} does not support categorical features (categorical data; "
                         'XGBoost\'s rule). Fix: tree_method="hist" or "approx" with '
                         'booster="gbtree"')


def xgb_params(params, dtrain=None) -> dict:
    """XGBoost's parameters as dgbdt's: verbosity dropped; tree_method hist, approx or exact
    (gpu_hist: device cuda); a GPU device without a usable GPU: the CPU, with a warning, as XGBoost does; a
    QuantileDMatrix's max_bin as the parameter; num_class > 1 without an objective:
    multi:softmax (XGBoost's learner, ConfigureObjective); a list of (name, value) pairs
    with every eval_metric kept, in order (XGBoost's way to ask for several)."""
    if isinstance(params, (list, tuple)):
        pairs, params = params, {}
        for k, v in pairs:
            if k == "eval_metric" and "eval_metric" in params:
                have = params[k] if isinstance(params[k], list) else [params[k]]
                params[k] = have + (list(v) if isinstance(v, (list, tuple)) else [v])
            else:
                params[k] = v
    params = dict(params or {})
    for k, v in params.items():           # XGBoost passes every value as a string: "2" is 2
        if isinstance(v, str) and k != "eval_metric":
            params[k] = _number(v)
    max_bin = getattr(dtrain, "max_bin", None)
    if max_bin is not None:
        params.setdefault("max_bin", max_bin)
    # logging, and XGBoost's own memory and validation knobs: nothing to change in dgbdt's model
    for key in ("verbosity", "silent", "max_cached_hist_node", "validate_parameters",
                "debug_synchronize"):
        params.pop(key, None)
    num_class = params.get("num_class")
    if "objective" not in params and num_class is not None and int(num_class) > 1:
        params["objective"] = "multi:softmax"     # XGBoost's learner does the same

    from .updater import read_updater
    read_updater(params)            # XGBoost's updater= sets the tree_method
    method = params.pop("tree_method", None)
    if method == "gpu_hist":                 # XGBoost < 2's spelling of device="cuda"
        params.setdefault("device", "cuda")
    elif method in ("approx", "exact"):
        params["tree_method"] = method
    elif method not in (None, "hist", "auto"):
        _unsupported(f"tree_method={method!r}", "dgbdt grows trees with tree_method 'hist', "
                     "'approx' or 'exact'")
    return cpu_fallback(params, stacklevel=4)


def cpu_fallback(params: dict, stacklevel: int = 3) -> dict:
    """A GPU device without a usable GPU: the CPU, with a warning, as XGBoost trains (dgbdt
    itself refuses; the compat layer follows XGBoost). ``params`` is changed in place."""
    device = str(params.get("device") or "")
    if device.startswith(("cuda", "gpu")):
        from ..backends.device import cuda_available
        if not cuda_available():
            warnings.warn(f"device={device!r} was asked for but no usable CUDA GPU is "
                          "visible: training on the CPU (dgbdt itself refuses; "
                          "dgbdt.compat.xgboost follows XGBoost)", UserWarning,
                          stacklevel=stacklevel)
            params["device"] = "cpu"
    return params


def _number(text: str):
    """A parameter's string as XGBoost reads it: an int or a float when it is one, else the
    string (objective names, metric names, constraints)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def refuse_unsupported(*, group=None, qid=None, label_lower_bound=None,
                       label_upper_bound=None, feature_weights=None, enable_categorical=False,
                       feature_types=None, weight=None) -> None:
    """A DMatrix's (or DaskDMatrix's) arguments that dgbdt does not read, refused by name."""
    if (group is not None or qid is not None) and weight is not None:
        _unsupported("query weights on Dask (weight= with qid: XGBoost's one per query)",
                     "pass dgbdt.dask.DaskDataset(..., weight=..., qid=...) with each row's "
                     "query weight (partitioned like the data), or train in-process")
    if label_lower_bound is not None or label_upper_bound is not None:
        _unsupported("label bounds (survival:aft) in a DataIter's batches", "train "
                     "survival:aft on a DMatrix of arrays, or a DaskDMatrix")
    if feature_weights is not None:
        _unsupported("feature_weights in a DataIter's batches", "pass them to train as the "
                     "feature_weights parameter (or in the DMatrix made without an iterator)")
    # categorical features (enable_categorical, feature_types "c") pass through to dgbdt's
    # Dataset / DaskDataset (dgbdt.data.categorical); a DataIter's batches refuse them
