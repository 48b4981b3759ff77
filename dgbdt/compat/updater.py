"""XGBoost's ``updater`` / ``process_type`` parameters on dgbdt: the updater sequences that
are what a tree_method does (XGBoost's defaults) map to that tree_method; the rest, and
``process_type="update"`` (XGBoost's refresh / prune of an existing model's trees), are
refused by name."""
from __future__ import annotations

import warnings



def _unsupported(what: str, instead: str):
    """compat/_common.py's refusal, written here: _common reads the updater through this
    module, which would otherwise import it back."""
    raise NotImplementedError(f"dgbdt.compat.xgboost: {what} is not supported by dgbdt; "
                              f"{instead}")

#: XGBoost's tree-growing updaters and the tree_method dgbdt grows their trees with
GROWERS = {"grow_colmaker": "exact", "grow_histmaker": "approx",
           "grow_quantile_histmaker": "hist"}


def read_updater(params: dict) -> None:
    """``params`` without ``updater`` and ``process_type``, their tree_method set (in place).

    Accepted: ``process_type`` "default", and an updater sequence (a comma-separated
    string or a list) that is one grower (grow_colmaker: exact, grow_histmaker: approx,
    grow_quantile_histmaker: hist), optionally followed by ``prune`` where XGBoost's pruner
    changes nothing (min_split_loss 0: it removes splits whose gain is below it) or where
    the sequence is the tree_method's own (exact: grow_colmaker,prune), and by ``sync`` (a
    no-op: dgbdt's trees are the same on every worker). As XGBoost, the updater decides the
    tree_method, with XGBoost's warning. Anything else raises NotImplementedError."""
    process = params.pop("process_type", "default")
    updater = params.pop("updater", None)
    if process not in ("default", "update"):
        raise ValueError(f"process_type must be 'default' or 'update'; got {process!r}")
    if process == "update":
        _unsupported("process_type='update' (XGBoost's refresh / prune of an existing "
                     "model's trees on new data)", "continue training with xgb_model= (new "
                     "trees after the model's), or train anew with the pruning you want "
                     "(min_split_loss / gamma, max_depth)")
    if updater is None:
        return
    seq = [u.strip() for u in (updater.split(",") if isinstance(updater, str)
                               else list(updater)) if u.strip()]
    rest = [u for u in seq[1:] if u != "sync"]
    method = GROWERS.get(seq[0]) if seq else None
    gamma = float(params.get("gamma", params.get("min_split_loss", 0.0)) or 0.0)
    own = method == "exact" and rest == ["prune"]       # XGBoost's exact: colmaker, prune
    if method is None or not (rest == [] and method != "exact" or own
                              or rest in ([], ["prune"]) and gamma == 0.0):
        _unsupported(f"updater={updater!r}", "dgbdt grows trees as XGBoost's tree_method "
                     "'hist' (updater grow_quantile_histmaker), 'approx' (grow_histmaker) or "
                     "'exact' (grow_colmaker,prune): pass tree_method= instead (refresh, and "
                     "prune with min_split_loss > 0 after hist or approx, are not built)")
    warnings.warn("You have manually specified the `updater` parameter. The `tree_method` "
                  "parameter will be ignored. Incorrect sequence of updaters will produce "
                  "undefined behavior. For common uses, we recommend using `tree_method` "
                  f"parameter instead. (dgbdt: updater={updater!r} grows as tree_method="
                  f"{method!r})", UserWarning, stacklevel=4)
    params["tree_method"] = method
