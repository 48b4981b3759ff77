"""k-fold cross-validation (XGBoost's ``xgboost.cv``): ``dgbdt.cv(params, dtrain, rounds,
nfold=5, early_stopping_rounds=...)``.

Each fold trains on the other folds' rows and is scored on its own ("test") and its training
rows ("train") every round; the result holds, per round, the mean and standard deviation
(numpy's, ddof=0) over the folds of every metric. With ``early_stopping_rounds`` training stops
when the mean of the last metric on the test folds has not improved for that many rounds, and
the result then ends at the best round; a training that ran all its rounds keeps them all (as
XGBoost's).

The folds train in lockstep chunks of rounds: each chunk continues every fold's model
(continued training gives the same trees as one longer run, byte for byte), so early stopping
decides on the mean after each chunk without training any fold far past the stop.
"""
from __future__ import annotations

import numpy as np

from .kernels.arrays import to_host
from .data.dataset import Dataset


def _folds(n: int, nfold: int, labels, stratified: bool, shuffle: bool, seed: int):
    """Test indices of each fold: shuffled by ``seed``; stratified: each class dealt round
    robin over the folds, so every fold holds its share of every class."""
    rng = np.random.default_rng(seed)
    idx = rng.permutation(n) if shuffle else np.arange(n)
    if not stratified:
        return [np.sort(f) for f in np.array_split(idx, nfold)]
    y = np.asarray(labels)[idx]
    out = [[] for _ in range(nfold)]
    pos = 0
    for cls in np.unique(y):
        members = idx[y == cls]
        for j, i in enumerate(members):
            out[(pos + j) % nfold].append(i)
        pos += len(members)
    return [np.sort(np.asarray(f, dtype=np.int64)) for f in out]


def cv(params: dict | None, dtrain: Dataset, num_boost_round: int = 10, nfold: int = 3,
       stratified: bool = False, folds=None, metrics=(), early_stopping_rounds=None,
       as_pandas: bool = True, verbose_eval=None, show_stdv: bool = True, seed: int = 0,
       shuffle: bool = True, obj=None, feval=None, maximize=None, callbacks=None,
       custom_metric=None, fpreproc=None):
    """Cross-validate: a pandas DataFrame (or, without pandas or with as_pandas=False, a dict
    of lists) with columns ``{train,test}-{metric}-{mean,std}``, a row per round.

    folds: a list of (train indices, test indices) pairs, or an sklearn splitter
    (``split(X, y)``), instead of nfold/stratified/shuffle/seed. With query ids (ranking)
    the nfold folds are made of whole queries (as xgboost.cv's group folds). metrics: eval metric(s)
    (default: params' eval_metric, else the objective's).
    """
    from .train import train
    for name, v in (("obj", obj), ("feval", feval), ("custom_metric", custom_metric),
                    ("callbacks", callbacks), ("fpreproc", fpreproc), ("maximize", maximize)):
        if v is not None:
            raise NotImplementedError(f"cv({name}=...) is not supported yet; use dgbdt's "
                                      "metrics and early_stopping_rounds")
    if not isinstance(dtrain, Dataset) or (dtrain.label is None
                                           and dtrain.label_lower_bound is None):
        raise TypeError("dtrain must be a dgbdt.Dataset with labels")
    params = dict(params or {})
    if metrics:
        params["eval_metric"] = [metrics] if isinstance(metrics, str) else list(metrics)
    n = dtrain.num_row
    if folds is None and dtrain.qid is not None:     # ranking: folds of whole queries
        from .data.queries import group_pointers
        gptr = group_pointers(dtrain.qid)[0]
        q = gptr.shape[0] - 1
        if stratified:
            raise ValueError("stratified folds are not defined for ranking data (qid): the "
                             "folds are made of whole queries; pass stratified=False")
        if isinstance(nfold, bool) or not isinstance(nfold, int) or not 2 <= nfold <= q:
            raise ValueError(f"nfold must be an integer in [2, {q}] (the folds are made of "
                             f"whole queries); got {nfold!r}")
        tests = [np.concatenate([np.arange(gptr[g], gptr[g + 1]) for g in f])
                 for f in _folds(q, nfold, None, False, shuffle, seed)]
        pairs = [(np.setdiff1d(np.arange(n), t), t) for t in tests]
    elif folds is None:
        if isinstance(nfold, bool) or not isinstance(nfold, int) or not 2 <= nfold <= n:
            raise ValueError(f"nfold must be an integer in [2, {n}]; got {nfold!r}")
        tests = _folds(n, nfold, to_host(dtrain.label) if stratified else None, stratified,
                       shuffle, seed)
        pairs = [(np.setdiff1d(np.arange(n), t), t) for t in tests]
    elif hasattr(folds, "split"):
        pairs = [(np.asarray(a), np.asarray(b))
                 for a, b in folds.split(dtrain.data if dtrain.sparse else to_host(dtrain.data),
                                         to_host(dtrain.label))]
    else:
        pairs = [(np.asarray(a), np.asarray(b)) for a, b in folds]
    sets = [(dtrain.slice(a), dtrain.slice(b)) for a, b in pairs]
    chunk = int(early_stopping_rounds) if early_stopping_rounds else int(num_boost_round)
    chunk = max(chunk, 1)
    models: list = [None] * len(sets)
    logs: list[dict] = [{} for _ in sets]
    done, best, stop = 0, None, False
    while done < num_boost_round and not stop:
        step = min(chunk, num_boost_round - done)
        for i, (tr, te) in enumerate(sets):
            hist: dict = {}
            models[i] = train(params, tr, step, evals=[(tr, "train"), (te, "test")],
                              evals_result=hist, verbose_eval=False, xgb_model=models[i])
            for name, ms in hist.items():
                for m, v in ms.items():
                    logs[i].setdefault(name, {}).setdefault(m, []).extend(v)
        done += step
        table = _table(logs)
        if early_stopping_rounds:
            best, stop = _early_stop(table, logs, int(early_stopping_rounds), done)
        if verbose_eval:
            every = 1 if verbose_eval is True else int(verbose_eval)
            for r in range(done - step, done):
                if r % every == 0:
                    print(_line(table, r, show_stdv), flush=True)
    table = _table(logs)
    if stop:      # as XGBoost's cv: a training that ran all its rounds keeps them all
        table = {k: v[:best + 1] for k, v in table.items()}
    if as_pandas:
        try:
            import pandas as pd
        except ImportError:
            return table
        return pd.DataFrame(table)
    return table


def _table(logs) -> dict:
    out: dict = {}
    for name in ("train", "test"):
        for m in logs[0][name]:
            values = np.array([log[name][m] for log in logs])      # [folds, rounds]
            out[f"{name}-{m}-mean"] = values.mean(axis=0).tolist()
            out[f"{name}-{m}-std"] = values.std(axis=0).tolist()
    return out


def _early_stop(table, logs, rounds: int, done: int):
    """(best round, whether to stop) of the test folds' mean of the last metric."""
    from .metrics.registry import get_metric
    metric = list(logs[0]["test"])[-1]
    mean = table[f"test-{metric}-mean"]
    maximize = get_metric(metric).higher_is_better
    best = 0
    for r in range(1, len(mean)):
        if (mean[r] > mean[best]) if maximize else (mean[r] < mean[best]):
            best = r
        if r - best >= rounds:
            return best, True
    return best, False


def _line(table, r: int, show_stdv: bool) -> str:
    parts = []
    for key in table:
        if key.endswith("-mean"):
            name = key[:-5]
            s = f"{name}:{table[key][r]:.5f}"
            if show_stdv:
                s += f"+{table[name + '-std'][r]:.5f}"
            parts.append(s)
    return f"[{r}]\t" + "\t".join(parts)
