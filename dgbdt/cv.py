"""k-fold cross-validation (XGBoost's ``xgboost.cv``): ``dgbdt.cv(params, dtrain, rounds,
nfold=5, early_stopping_rounds=...)``.

Each fold trains on the other folds' rows and is scored on its own ("test") and its training
rows ("train") every round; the result holds, per round, the mean and standard deviation
(numpy's, ddof=0) over the folds of every metric. With ``early_stopping_rounds`` training stops
when the mean of the last metric on the test folds has not improved for that many rounds, and
the result then ends at the best round; a training that ran all its rounds keeps them all (as
XGBoost's).

The folds train in lockstep, a round at a time (``run_folds``): every fold's model is one
dgbdt.train, in a thread of its own, and the folds take turns (one trains while the others
wait at a callback), so a fold's model is the one it would be trained alone, and no round is
trained twice or re-predicted. Between rounds the callbacks (XGBoost's protocol) see the folds'
means: ``evals_log`` is ``{"train"|"test": {metric: [(mean, std) per round]}}`` and ``model``
is a ``PackedBooster`` of every fold (``model.cvfolds[i].dtrain``, ``.dtest``, ``.bst``;
``set_param`` reaches every fold's next round); they may stop the cross-validation.
"""
from __future__ import annotations

import queue
import threading

import numpy as np

from .callback import EarlyStopping, EvaluationMonitor, TrainingCallback, check_callbacks
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
    (default: params' eval_metric, else the objective's). verbose_eval: print the means (with
    ``show_stdv`` their deviations) every round (True) or every n rounds.
    obj, custom_metric, maximize: as dgbdt.train's (``obj(preds, fold's training Dataset)``,
    ``custom_metric(preds, fold's Dataset)``, its scores after the built-in ones, as XGBoost
    orders them); maximize also steers early stopping. callbacks: TrainingCallback instances
    run with the folds' means (see the module docstring). fpreproc: ``fpreproc(dtrain, dtest,
    params) -> (dtrain, dtest, params)`` of each fold, before it trains.
    """
    if feval is not None:
        raise NotImplementedError("cv(feval=...) is not supported (deprecated in XGBoost): "
                                  "pass the function as custom_metric=")
    if not isinstance(dtrain, Dataset) or (dtrain.label is None
                                           and dtrain.label_lower_bound is None):
        raise TypeError("dtrain must be a dgbdt.Dataset with labels")
    params = dict(params or {})
    metrics = fold_metrics(params, metrics)
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
    packs = []
    for a, b in pairs:
        tr, te, p = dtrain.slice(a), dtrain.slice(b), dict(params)
        if fpreproc is not None:
            tr, te, p = fpreproc(tr, te, p)
        packs.append(CVPack(tr, te, dict(p, eval_metric=metrics) if metrics else dict(p)))
    results = run_folds(packs, num_boost_round, callbacks=callbacks,
                        early_stopping_rounds=early_stopping_rounds, maximize=maximize,
                        verbose_eval=verbose_eval, show_stdv=show_stdv, obj=obj,
                        custom_metric=custom_metric)
    return as_frame(results) if as_pandas else results


def fold_metrics(params: dict, metrics) -> list:
    """The folds' eval metrics (XGBoost's rule): ``metrics`` (a name or several), else
    ``params``' eval_metric; taken out of ``params`` (each fold's parameters get them back
    after fpreproc)."""
    given = params.pop("eval_metric", None)
    if isinstance(metrics, str):
        return [metrics]
    if metrics:
        return list(metrics)
    if given is None:
        return []
    return [given] if isinstance(given, str) else list(given)


def as_frame(results: dict):
    """The results as a pandas DataFrame (the dict itself without pandas)."""
    try:
        import pandas as pd
    except ImportError:
        return results
    return pd.DataFrame.from_dict(results)


class CVPack:
    """One fold (XGBoost's CVPack): its training and test sets ``dtrain`` / ``dtest``, its
    parameters, ``watchlist`` (the two, named "train" and "test") and, from the start of its
    training, its model ``bst``; the fold's other names are its model's
    (``fold.num_boosted_rounds()``)."""

    def __init__(self, dtrain, dtest, params: dict):
        self.dtrain, self.dtest, self.params = dtrain, dtest, params
        self.watchlist = [(dtrain, "train"), (dtest, "test")]
        self.bst = None

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "bst":
            raise AttributeError(name)
        return getattr(self.bst, name)

    def adopt(self, booster):
        """The fold's model as callbacks see it (``bst``), from the Booster training it."""
        return booster

    def train(self, rounds: int, callbacks, obj=None, custom_metric=None, maximize=None):
        """The fold's whole training: dgbdt.train on its sets, scored on both every round."""
        from .train import train
        tr, te = _dataset(self.dtrain), _dataset(self.dtest)
        return train(self.params, tr, rounds, evals=[(tr, "train"), (te, "test")],
                     verbose_eval=False, callbacks=callbacks, obj=obj,
                     custom_metric=custom_metric, maximize=maximize, progress_bar=False)


def _dataset(d):
    return getattr(d, "__dgbdt_dataset__", d)


class PackedBooster:
    """The model callbacks get during cv (XGBoost's _PackedBooster): ``cvfolds``, the folds
    (CVPack); ``set_param`` / ``set_attr`` reach every fold's model, ``attr``,
    ``num_boosted_rounds``, ``best_iteration`` and ``best_score`` read the first fold's."""

    def __init__(self, cvfolds: list):
        self.cvfolds = cvfolds

    def set_param(self, params, value=None) -> None:
        for f in self.cvfolds:
            f.bst.set_param(params, value)

    def set_attr(self, **kwargs) -> None:
        for f in self.cvfolds:
            f.bst.set_attr(**kwargs)

    def attr(self, key: str):
        return self.cvfolds[0].bst.attr(key)

    def num_boosted_rounds(self) -> int:
        return self.cvfolds[0].bst.num_boosted_rounds()

    @property
    def best_iteration(self) -> int | None:
        v = self.attr("best_iteration")
        return None if v is None else int(v)

    @best_iteration.setter
    def best_iteration(self, iteration) -> None:
        self.set_attr(best_iteration=None if iteration is None else str(int(iteration)))

    @property
    def best_score(self) -> float | None:
        v = self.attr("best_score")
        return None if v is None else float(v)

    @best_score.setter
    def best_score(self, score) -> None:
        self.set_attr(best_score=None if score is None else str(float(score)))


def run_folds(folds: list, num_boost_round: int, callbacks=None, early_stopping_rounds=None,
              maximize=None, verbose_eval=None, show_stdv: bool = True, obj=None,
              custom_metric=None) -> dict:
    """Train the folds (CVPacks) in lockstep and return XGBoost's cv results:
    ``{"{train,test}-{metric}-{mean,std}": [value per round]}``, the built-in metrics' columns
    first, then a custom metric's (XGBoost's order). Callbacks run as XGBoost's cv runs them
    (``verbose_eval``: an EvaluationMonitor after them, ``early_stopping_rounds``: then an
    EarlyStopping); a callback that stops the training ends the results at the best round
    (``model.best_iteration``, when one is set)."""
    callbacks = check_callbacks(callbacks)
    if verbose_eval:
        callbacks.append(EvaluationMonitor(period=1 if verbose_eval is True else
                                           int(verbose_eval), show_stdv=show_stdv))
    if early_stopping_rounds:
        callbacks.append(EarlyStopping(int(early_stopping_rounds), maximize=maximize))
    callbacks = list(dict.fromkeys(callbacks))      # each once, in order (XGBoost's)
    custom: set = set()
    if callable(custom_metric):            # a function of the predictions: note its names
        custom_metric = _noting_names(custom_metric, custom)
    model = PackedBooster(folds)
    results: dict = {}
    history: dict = {}
    with _Lockstep(folds, int(num_boost_round), obj, custom_metric, maximize) as folds_:
        for cb in callbacks:
            cb.before_training(model)
        for epoch in range(int(num_boost_round)):
            if any(cb.before_iteration(model, epoch, history) for cb in callbacks):
                break
            scores = folds_.round()         # per fold: [(set, metric, value)]
            for key, mean, std in _aggregate(scores, custom):
                data, metric = key
                history.setdefault(data, {}).setdefault(metric, []).append((mean, std))
                results.setdefault(f"{data}-{metric}-mean", []).append(mean)
                results.setdefault(f"{data}-{metric}-std", []).append(std)
            if any(cb.after_iteration(model, epoch, history) for cb in callbacks):
                best = model.best_iteration
                if best is not None:
                    results = {k: v[:best + 1] for k, v in results.items()}
                break
    for cb in callbacks:
        cb.after_training(model)
    return results


def _aggregate(scores: list, custom: set) -> list:
    """((set, metric), mean, std) over the folds of each score, XGBoost's order: the built-in
    metrics of every set, then the custom metric's."""
    keys = [(d, m) for d, m, _ in scores[0]]
    keys = [k for k in keys if k[1] not in custom] + [k for k in keys if k[1] in custom]
    values = [{(d, m): v for d, m, v in fold} for fold in scores]
    out = []
    for k in keys:
        a = np.array([fold[k] for fold in values], dtype=np.float64)
        out.append((k, float(np.mean(a)), float(np.std(a))))
    return out


def _noting_names(fn, names: set):
    def metric(preds, d):
        out = fn(preds, d)
        for pair in (out if isinstance(out, list) else [out]):
            if isinstance(pair, tuple) and pair:
                names.add(pair[0])
        return out
    return metric


class _Lockstep:
    """The folds' trainings, each in a thread of its own, taking turns: a fold runs only
    between the coordinator's command and its answer (``_Turn``), so one trains at a time
    and the callbacks run while every fold waits. Leaving the block ends every training."""

    def __init__(self, folds, rounds, obj, custom_metric, maximize):
        self.turns = [_Turn(f, i, rounds, obj, custom_metric, maximize)
                      for i, f in enumerate(folds)]

    def __enter__(self) -> "_Lockstep":
        for t in self.turns:
            t.thread.start()
        try:
            for t in self.turns:         # each fold prepared, its model made
                t.step("start")
        except BaseException as e:
            self.__exit__(type(e), e, None)
            raise
        return self

    def round(self) -> list:
        scores = [t.step("round") for t in self.turns]
        if any(s is None for s in scores):       # a training that ended by itself
            raise RuntimeError("a fold's training ended before cv's last round")
        return scores

    def __exit__(self, kind, error, tb) -> None:
        first = None
        for t in self.turns:
            try:
                t.finish()
            except BaseException as e:      # noqa: BLE001  (the first one is raised)
                first = first or e
        if first is not None and kind is None:
            raise first


class _Turn:
    """One fold's training in its thread, paused at its callback (``_TurnCallback``) until
    the coordinator's next command: "round" trains the next round, "end" ends the
    training."""

    def __init__(self, fold, i, rounds, obj, custom_metric, maximize):
        self.fold, self.rounds = fold, rounds
        self.args = (obj, custom_metric, maximize)
        self.go: queue.SimpleQueue = queue.SimpleQueue()
        self.back: queue.SimpleQueue = queue.SimpleQueue()
        self.command = None
        self.finished = False
        self.thread = threading.Thread(target=self._run, name=f"dgbdt-cv-fold-{i}",
                                       daemon=True)

    # the coordinator's side
    def step(self, command: str):
        """Send a command; the fold's answer (a round's scores), once it is paused again."""
        self.go.put(command)
        return self._answer()

    def _answer(self):
        kind, value = self.back.get()
        if kind == "error":
            self.finished = True
            raise value
        if kind == "finished":
            self.finished = True
        return value

    def finish(self) -> None:
        """End the training (at once, if it is paused) and wait for its thread."""
        if not self.finished:
            self.go.put("end")
            while not self.finished:
                self._answer()
        self.thread.join()

    # the fold's side
    def _run(self) -> None:
        self.command = self.go.get()
        if self.command == "end":
            self.back.put(("finished", None))
            return
        try:
            self.fold.train(self.rounds, [_TurnCallback(self)], *self.args)
        except BaseException as e:       # noqa: BLE001  (raised by the coordinator)
            self.back.put(("error", e))
            return
        self.back.put(("finished", None))

    def pause(self, answer) -> bool:
        """Answer the coordinator and wait for its next command; whether it ends here."""
        self.back.put(("ok", answer))
        self.command = self.go.get()
        return self.command == "end"


class _TurnCallback(TrainingCallback):
    """The callback of a fold's training: its model becomes the fold's ``bst``; after each
    round it hands the round's scores to the coordinator and waits."""

    def __init__(self, turn: _Turn):
        self.turn = turn

    def before_training(self, model):
        model = self.turn.fold.bst = self.turn.fold.adopt(model)
        self.turn.pause(None)
        return model

    def before_iteration(self, model, epoch, evals_log) -> bool:
        return self.turn.command == "end"

    def after_iteration(self, model, epoch, evals_log) -> bool:
        return self.turn.pause([(d, m, v[-1]) for d, ms in evals_log.items()
                                for m, v in ms.items()])
