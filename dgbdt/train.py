"""dgbdt.train(params, dtrain, num_boost_round, evals=...) -> Booster: XGBoost's train, in
process. The front door (dgbdt.engine.setup) checks and prepares the call once; the training
itself is dgbdt.engine.in_process over the boosting loop (dgbdt.engine.boosting)."""
from __future__ import annotations

from typing import Sequence

from .backends.device import device_scope, get_backend, release_pooled
from .callback import check_callbacks
from .data.dataset import Dataset
from .engine.checkpoint import DEFAULT_INTERVAL, check_interval
from .engine.in_process import train_in_process
from .engine.setup import DatasetKind, prepare
from .kernels.interrupts import keyboard_interrupts
from .model.booster import Booster
from .progressbar import open_bar, showing


#: in-process datasets (dgbdt.engine.setup)
LOCAL = DatasetKind(Dataset, "dgbdt.Dataset",
                    qid_hint="pass qid= (or group=) to dgbdt.Dataset (rows of a query "
                             "contiguous, ids sorted)",
                    intervals_hint="Dataset arguments, or set_float_info as XGBoost's DMatrix",
                    on_workers=False)


def _set_threads(nthread: int | None) -> int:
    import numba
    previous = numba.get_num_threads()
    numba.set_num_threads(min(nthread, numba.config.NUMBA_NUM_THREADS) if nthread
                          else numba.config.NUMBA_NUM_THREADS)
    return previous


def train(params: dict | None, dtrain: Dataset, num_boost_round: int = 10,
          evals: Sequence[tuple[Dataset, str]] | None = None,
          early_stopping_rounds: int | None = None, evals_result: dict | None = None,
          verbose_eval: bool | int = True, xgb_model=None, callbacks=None,
          obj=None, custom_metric=None, maximize: bool | None = None,
          checkpoint_dir=None, checkpoint_interval: int = DEFAULT_INTERVAL,
          progress_bar: bool | None = None) -> Booster:
    """Train a boosted tree model (XGBoost's ``xgboost.train`` signature and semantics).

    evals: (Dataset, name) pairs scored after each round with every eval_metric; the last
    metric of the last pair drives early stopping, which stops after ``early_stopping_rounds``
    rounds without improvement and records ``best_iteration``/``best_score`` on the booster (all
    trained rounds are kept, as in XGBoost; predict with iteration_range to use the best).
    evals_result: a dict filled with {name: {metric: [value per round]}}.
    verbose_eval: True prints every round, an int n every n rounds, False nothing.
    xgb_model: continue training a model (a Booster, or a path / JSON of a dgbdt or XGBoost
    model): its trees come first, ``num_boost_round`` new rounds follow, and the rows start
    from its margins. Training 10 rounds and continuing for 10 gives the model of 20 rounds,
    byte for byte. The objective is the model's (params may repeat it, not change it).
    callbacks: dgbdt.callback.TrainingCallback instances (XGBoost's protocol: EarlyStopping,
    LearningRateScheduler, EvaluationMonitor, TrainingCheckPoint or your own).
    obj: a custom objective ``obj(preds, dtrain) -> (grad, hess)`` (dgbdt.objectives.custom): raw margins
    in, gradients out; the configured objective keeps the intercept (base_score 0.5 unless
    given, as XGBoost) and the prediction transform.
    custom_metric: ``custom_metric(preds, dataset) -> (name, value)`` (or a list of pairs),
    scored on every eval set after the built-in metrics, on the objective's predictions (raw
    margins with a custom ``obj``); early stopping then watches it, larger being better with
    ``maximize=True``. Or a dgbdt.metrics.registry.Metric instance (or a list): a row loss or a
    summary / merge / value, scored like the built-in metrics (so also on Dask, exactly).
    checkpoint_dir: a directory for this training's checkpoint, rewritten every
    ``checkpoint_interval`` rounds and at the end (dgbdt.engine.checkpoint). When it holds one of
    this training (the same parameters, data, eval sets, num_boost_round), training resumes
    there and gives the uninterrupted model and history, byte for byte: after a kill, run the
    same call again. One of another training is an error saying what differs (delete it with
    dgbdt.engine.checkpoint.discard to start afresh). A finished training's checkpoint returns its
    model again without training.
    progress_bar: a bar of the rounds with the time left and the latest eval metric
    (dgbdt.progressbar; needs tqdm): True, False, or None to show it when someone watches (a
    notebook or a terminal, ``verbosity`` above 0) once training has run for 2 s.
    """
    callbacks = check_callbacks(callbacks)
    if checkpoint_dir is not None:
        check_interval(checkpoint_interval)
    s = prepare(params, dtrain, evals, LOCAL, num_boost_round=num_boost_round,
                early_stopping_rounds=early_stopping_rounds, xgb_model=xgb_model, obj=obj,
                custom_metric=custom_metric, maximize=maximize, checkpoint_dir=checkpoint_dir,
                label_views=with_intervals)
    p, dtrain = s.p, s.dtrain
    if s.prior is not None and s.prior.linear is not None and p["booster"] != "gblinear":
        p = _continue_gblinear(params, p)
    if p["booster"] == "gblinear":
        return _train_gblinear(s, p, int(num_boost_round), early_stopping_rounds,
                               evals_result, verbose_eval, callbacks, checkpoint_dir,
                               progress_bar)
    if p["process_type"] == "update":     # xgb_model's trees updated, none grown
        return _update(s, p, int(num_boost_round), early_stopping_rounds, evals_result,
                       verbose_eval, callbacks, checkpoint_dir, obj, custom_metric)
    if p["linear_tree"]:
        _check_linear(dtrain)
    backend = get_backend(p["device"])
    K = s.objective.n_outputs(s.num_class)
    bar = open_bar(progress_bar, p["verbosity"], int(num_boost_round))
    previous_threads = _set_threads(p["nthread"])
    try:
        with keyboard_interrupts(), device_scope(backend), showing(bar):
            return train_in_process(p, dtrain, int(num_boost_round), s.evals,
                                    early_stopping_rounds, evals_result, verbose_eval,
                                    s.objective, s.num_class, K, s.metrics, backend, s.prior,
                                    callbacks, s.custom_metric, s.maximize,
                                    None if checkpoint_dir is None
                                    else (checkpoint_dir, checkpoint_interval, obj))
    finally:
        import numba
        numba.set_num_threads(previous_threads)
        release_pooled()


def _update(s, p, rounds, early_stopping_rounds, evals_result, verbose_eval, callbacks,
            checkpoint_dir, obj, custom_metric) -> Booster:
    """process_type="update": dgbdt.engine.update_process, on the host."""
    from .engine.update_process import (LocalRows, UpdateRows, check_updatable, eval_holder,
                                        update_model)
    given = [name for name, v in (("early_stopping_rounds", early_stopping_rounds),
                                  ("callbacks", callbacks or None),
                                  ("checkpoint_dir", checkpoint_dir), ("obj", obj),
                                  ("custom_metric", custom_metric)) if v is not None]
    if given:
        raise NotImplementedError(f"process_type='update' with {', '.join(given)} is not "
                                  "built: it takes evals, evals_result and verbose_eval")
    previous_threads = _set_threads(p["nthread"])
    try:
        with keyboard_interrupts():
            check_updatable(s.prior, rounds, s.objective, on_dask=False)
            d = s.dtrain
            rows = UpdateRows.of(s.prior, d, d.num_row, rounds, d.label, d.weight,
                                 d.base_margin, d.qid)
            holders = LocalRows(rows, [eval_holder(s.prior, e, rounds) for e, _ in s.evals])
            return update_model(p, holders, rounds, s.prior, s.objective, s.metrics,
                                [name for _, name in s.evals], evals_result, verbose_eval)
    finally:
        import numba
        numba.set_num_threads(previous_threads)


def _continue_gblinear(params, p) -> dict:
    """A gblinear model continued (xgb_model) goes on as gblinear when params do not name a
    booster, as XGBoost's learner keeps a loaded model's; another booster is an error."""
    from .params.normalize import normalize_params
    if dict(params or {}).get("booster") is not None:
        raise ValueError(f"xgb_model is a gblinear model: booster={p['booster']!r} cannot "
                         "continue it (pass booster='gblinear', or train a new model)")
    return dict(normalize_params({**dict(params or {}), "booster": "gblinear"}),
                device=p["device"])


def _train_gblinear(s, p, rounds, early_stopping_rounds, evals_result, verbose_eval,
                    callbacks, checkpoint_dir, progress_bar):
    """booster="gblinear": dgbdt.engine.gblinear, on the host (GPU rows are copied there)."""
    from .engine.in_process import _base_margin
    from .engine.gblinear import train_linear
    if checkpoint_dir is not None:
        raise NotImplementedError("checkpoint_dir with booster='gblinear' is not built (a "
                                  "linear round is cheap). Fix: save the model and continue "
                                  "it with xgb_model=, or a TrainingCheckPoint callback.")
    base = None if s.prior is not None else _base_margin(
        p, s.objective, s.dtrain.label, s.dtrain.weight, s.num_class)
    bar = open_bar(progress_bar, p["verbosity"], rounds)
    previous_threads = _set_threads(p["nthread"])
    try:
        with keyboard_interrupts(), showing(bar):
            return train_linear(p, s.dtrain, rounds, s.evals, early_stopping_rounds,
                                evals_result, verbose_eval, s.objective, s.num_class,
                                s.metrics, base, s.prior, callbacks, s.custom_metric,
                                s.maximize)
    finally:
        import numba
        numba.set_num_threads(previous_threads)


def _check_linear(dtrain) -> None:
    """What in-process linear_tree training needs that params alone do not say."""
    from .data.categorical import mask_of
    if mask_of(getattr(dtrain, "feature_types", None)) is not None:
        raise ValueError("linear_tree with categorical features is not built yet (linear "
                         "leaves regress on numerical features; categorical splits beside them "
                         "are not wired in): encode the categories as numbers, or "
                         "linear_tree=False")


def with_intervals(dtrain, evals):
    """survival:aft's datasets: views of dtrain and the eval sets whose label is the [n, 2]
    interval of their label_lower_bound and label_upper_bound (dgbdt.objectives.survival;
    the front door has checked that every one has both)."""
    import copy

    from .objectives.survival import interval_labels
    views: dict = {}

    def view(d):
        if id(d) not in views:
            v = copy.copy(d)
            v.label = interval_labels(d.label_lower_bound, d.label_upper_bound, d.num_row)
            views[id(d)] = v
        return views[id(d)]
    return view(dtrain), [(view(d), n) for d, n in evals]


