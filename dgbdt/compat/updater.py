"""XGBoost's ``updater`` / ``process_type`` parameters on dgbdt: the updater sequences that
are what a tree_method does (XGBoost's defaults) map to that tree_method;
``process_type="update"`` with ``refresh`` / ``prune`` is dgbdt's own (dgbdt.engine.update_process);
the rest is refused by name."""
from __future__ import annotations

import warnings

from ..params.normalize import TREE_UPDATERS


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

    ``process_type="update"`` with ``refresh``, ``prune`` or both: kept for dgbdt's update
    process. ``process_type="default"`` with an updater sequence (a comma-separated string
    or a list) that is one grower (grow_colmaker: exact, grow_histmaker: approx,
    grow_quantile_histmaker: hist), optionally followed by ``prune`` (a no-op after growth:
    no grown split gains less than min_split_loss or lies below max_depth) and by
    ``refresh`` where it is one too (no row sampling, no bounds on the leaves), and by
    ``sync`` (a no-op: dgbdt's trees are the same on every worker). As XGBoost, the updater
    decides the tree_method, with XGBoost's warning. Anything else raises
    NotImplementedError."""
    process = params.pop("process_type", "default")
    updater = params.pop("updater", None)
    if process not in ("default", "update"):
        raise ValueError(f"process_type must be 'default' or 'update'; got {process!r}")
    seq = None if updater is None else [
        u.strip() for u in (updater.split(",") if isinstance(updater, str) else list(updater))
        if u.strip() and u.strip() != "sync"]
    if process == "update":         # xgb_model's trees refreshed / pruned, none grown
        steps = ",".join(seq or [])
        if steps not in TREE_UPDATERS:
            _unsupported(f"process_type='update' with updater={updater!r}",
                         "dgbdt updates a model's trees with updater 'refresh', 'prune' or "
                         "'refresh,prune'")
        _updater_warning(updater, "updates xgb_model's trees")
        params.update(process_type="update", updater=steps)
        return
    if updater is None:
        return
    # a refresh right after growth, on the rows and gradients the trees grew from, gives
    # them back unchanged (tests/test_tree_updates.py): without row sampling or bounds
    # on the leaves, it is the sequence without it
    if seq and seq[-1] == "refresh" and float(params.get("subsample", 1.0)) == 1.0 \
            and not params.get("monotone_constraints"):
        seq = seq[:-1]
    rest = seq[1:]
    method = GROWERS.get(seq[0]) if seq else None
    # a prune after growth changes nothing: the growth split no node gaining less than
    # min_split_loss, nor below max_depth (tests/test_tree_updates.py)
    if method is None or rest not in ([], ["prune"]):
        _unsupported(f"updater={updater!r}", "dgbdt grows trees as XGBoost's tree_method "
                     "'hist' (updater grow_quantile_histmaker), 'approx' (grow_histmaker) or "
                     "'exact' (grow_colmaker), optionally followed by prune and refresh; "
                     "refresh after growth with subsample < 1 or monotone constraints is not "
                     "built, nor other sequences")
    _updater_warning(updater, f"grows as tree_method={method!r}")
    params["tree_method"] = method


def _updater_warning(updater, what: str) -> None:
    warnings.warn("You have manually specified the `updater` parameter. The `tree_method` "
                  "parameter will be ignored. Incorrect sequence of updaters will produce "
                  "undefined behavior. For common uses, we recommend using `tree_method` "
                  f"parameter instead. (dgbdt: updater={updater!r} {what})", UserWarning,
                  stacklevel=5)
