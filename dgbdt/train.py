"""The boosting loop: dgbdt.train(params, dtrain, num_boost_round, evals=...) -> Booster.

Each round: gradients of the objective at the current margins (on the shards); for each output
class k, one fixed-point scale per round from the global max |g| and max h (dgbdt.kernels.fixedpoint),
then a depth-wise tree grown over the seam; its leaf values are added to the shards' margins
through their row segments (no traversal) and to each evaluation set's margins by traversal of
the new trees only. Metrics are computed on the eval sets after every round.
"""
from __future__ import annotations

import dataclasses
import functools
import time
from typing import Sequence

import numpy as np

from .backends.device import device_scope, get_backend, release_pooled, to_host
from .model.booster import Booster, MarginStart
from .engine.linear_setup import linear_setup
from .callback import RoundStopper, check_callbacks, emit, format_eval_line, report_round
from .engine.checkpoint import DEFAULT_INTERVAL, Checkpointer, check_interval, fingerprint
from .data.dataset import Dataset
from .engine.setup import DatasetKind, prepare
from .data.page_store import gpu_memory_errors, move_page, plan_pages
from .engine.evaluation import DatasetEval, SeamEval
from .objectives.base import model_params
from .engine.progress import Progress, replay, resume_callbacks
from .progressbar import open_bar, showing
from .engine.sampling import Sampling
from .engine.seam import LocalSeam
from .engine.shard import Shard
from .tree.device_grower import PendingTree
from .tree.spec import GrowthSpec
from .tree.spec import max_nodes as tree_max_nodes
from .tree.split import SplitParams

STAGES = ("quantize", "gradients", "histograms", "split_evaluation", "partition",
          "leaf_update", "device_wait", "evaluation")


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
    if p["linear_tree"]:
        _check_linear(dtrain)
    backend = get_backend(p["device"])
    K = s.objective.n_outputs(s.num_class)
    bar = open_bar(progress_bar, p["verbosity"], int(num_boost_round))
    previous_threads = _set_threads(p["nthread"])
    try:
        with device_scope(backend), showing(bar):
            return _train(p, dtrain, int(num_boost_round), s.evals, early_stopping_rounds,
                          evals_result, verbose_eval, s.objective, s.num_class, K, s.metrics,
                          backend, s.prior, callbacks, s.custom_metric, s.maximize,
                          None if checkpoint_dir is None
                          else (checkpoint_dir, checkpoint_interval, obj))
    finally:
        import numba
        numba.set_num_threads(previous_threads)
        release_pooled()


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
    interval of their label_lower_bound and label_upper_bound (dgbdt.objectives.survival)."""
    import copy

    from .objectives.survival import interval_labels
    views: dict = {}

    def view(d, name):
        if id(d) not in views:
            if d.label_lower_bound is None or d.label_upper_bound is None:
                raise ValueError(f"survival:aft trains on label intervals: {name} needs "
                                 "label_lower_bound and label_upper_bound (Dataset arguments, "
                                 "or set_float_info as XGBoost's DMatrix)")
            v = copy.copy(d)
            v.label = interval_labels(d.label_lower_bound, d.label_upper_bound, d.num_row)
            views[id(d)] = v
        return views[id(d)]
    return view(dtrain, "dtrain"), [(view(d, f"eval set '{n}'"), n) for d, n in evals]


def _base_margin(p, objective, label, weight, num_class) -> np.ndarray:
    if p["base_score"] is not None:
        return objective.base_score_to_margin(p["base_score"], num_class)
    if not objective.stats_on_device():     # device labels stay there when they can
        label, weight = to_host(label), None if weight is None else to_host(weight)
    return objective.base_margin_from_labels(label, weight, num_class)



def _train(p, dtrain, rounds, evals, early_stopping_rounds, evals_result, verbose_eval,
           objective, num_class, K, metrics, backend, prior=None, callbacks=None,
           custom_metric=None, maximize=None, checkpoint=None) -> Booster:
    t = time.perf_counter()
    max_bin = dtrain.resolve_max_bin(p["max_bin"])
    with gpu_memory_errors(p, "quantizing the training rows"):
        cuts = dtrain.cuts(max_bin, backend)
        if prior is None:
            base = _base_margin(p, objective, dtrain.label, dtrain.weight, num_class)
            booster = Booster(objective.name, num_class, base, dtrain.num_col,
                              dtrain.feature_names, model_params(objective))
        else:       # continued training: the prior's intercept and trees, new trees after
            booster = prior.snapshot()
            booster.best_iteration = booster.best_score = None
        booster.set_feature_types(dtrain)      # categorical features (dgbdt.data.categorical)
        progress = Progress()
        if checkpoint:      # resume from this training's checkpoint, if there is one
            directory, interval, obj = checkpoint
            sink = Checkpointer(directory, interval, fingerprint(
                p, rounds, early_stopping_rounds,
                None if custom_metric is None else bool(maximize), rows=dtrain.num_row,
                features=dtrain.num_col, feature_names=dtrain.feature_names,
                weighted=dtrain.weight is not None,
                base_margin=dtrain.base_margin is not None, cuts=cuts,
                intercept=booster.base_margin,
                evals=[(name, d.num_row) for d, name in evals],
                metrics=[m.name for m in metrics], prior=prior, obj=obj,
                custom_metric=custom_metric), booster.num_boosted_rounds())
            progress = sink.resume() or Progress(sink=sink)
            if progress.started:    # its model so far is where every margin starts
                prior, booster = progress.booster, progress.booster.snapshot()
        start = MarginStart(booster.base_margin, prior)
        shards, store = _shards(p, dtrain, cuts, max_bin, booster, start, K, backend)
        linear = linear_setup(p, dtrain, cuts, shards)
    quantize_seconds = time.perf_counter() - t
    seam = LocalSeam(shards, cuts.hist_ptrs(), store.slots)
    sources = [(SeamEval(seam, d.label, d.weight, d, d.qid) if d is dtrain
                else DatasetEval(d, booster),
                name) for d, name in evals]
    with gpu_memory_errors(p, "training"):
        booster = boost(p, seam, cuts, booster, objective, metrics, rounds, sources,
                        early_stopping_rounds, evals_result, verbose_eval, callbacks,
                        custom_metric, maximize, progress=progress, linear=linear)
    booster.timings["quantize"] = quantize_seconds
    bias = getattr(seam, "rank_position_bias", None)
    if bias is not None:    # lambdarank_unbiased: the estimates, to look at (not saved)
        booster.position_bias = bias.as_dict()
    booster.memory = {**store.stats(), **seam.stream_stats()}
    return booster


def _shards(p, dtrain, cuts, max_bin, booster, start, K, backend):
    """The training's shards, one per page, their pages placed by a PageStore (kept, spilled
    or streamed within device_memory_budget); and the store."""
    max_nodes = tree_max_nodes(p)
    # linear trees' kernels read every feature of a row: dense pages for sparse rows too
    dense = bool(p.get("linear_tree"))
    width, bits = dtrain.num_col, None
    if dtrain.sparse:       # pages planned at their layout's size (ELLPACK: far smaller)
        from .data.sparse import planned_layout
        _, width, bits = planned_layout(dtrain.data, cuts, dense)
    store, ranges = plan_pages(p["device_memory_budget"], backend, dtrain.num_row,
                               width, cuts, max_nodes, K, dtrain.page_rows, bits)
    if ranges is None:
        ranges, pages = dtrain.row_ranges(), dtrain.pages(cuts, max_bin, backend, dense)
    else:   # pages cut to the budget, built, placed (kept, spilled or streamed) one at a time
        pages = (dtrain.build_page(a, b, cuts, backend, dense) for a, b in ranges)
    shards = []
    for (a, b), page in zip(ranges, pages):
        page = move_page(store.place(page), backend)
        if start.prior is None:
            margin = booster.initial_margin(
                b - a, None if dtrain.base_margin is None else dtrain.base_margin[a:b],
                like=backend.xp.empty(0) if backend.caps.device_memory else None)
        else:       # continued training: the prior model's margins of these rows
            margin = start.of(dtrain.rows(a, b), None if dtrain.base_margin is None
                              else dtrain.base_margin[a:b], backend.xp)
        shard = Shard(page, cuts.n_bins(), dtrain.label[a:b],
                      None if dtrain.weight is None else dtrain.weight[a:b],
                      margin, max_nodes, backend)
        shard.id_pieces = [(a, b - a)]        # the rows' dataset order (row sampling)
        if dtrain.qid is not None:
            shard.qid = dtrain.qid[a:b]
        shards.append(shard)
    return shards, store


def boost(p, seam, cuts, booster: Booster, objective, metrics, rounds: int, sources,
          early_stopping_rounds, evals_result, verbose_eval, callbacks=None,
          custom_metric=None, maximize=None, progress: Progress | None = None,
          linear=None) -> Booster:
    """The boosting loop over any seam; ``sources`` are (evaluation source, name) pairs.
    Returns the model (``callbacks``' after_training may replace it).

    A seam that ``runs_ahead`` (Dask's graph mode: trees and scores are futures) gets round
    r + 1 submitted before round r's scores are awaited, so the wait for the metrics overlaps
    the next round's work; when round r stops the training, round r + 1's trees are dropped
    (the model is the same as without running ahead). With callbacks it does not run ahead
    and each round's trees are fetched, so callbacks see the model of every round.

    ``progress`` (dgbdt.engine.progress.Progress) is kept up to date after every completed round; one
    that has started resumes the training it describes: ``booster`` is then its model, the
    loop starts at round ``progress.rounds`` with its history, callbacks and learning rate.
    ``linear``: the LinearSpec of piecewise-linear trees (dgbdt.kernels.linear_math), with
    ``linear_tree`` set (the seam's shards then hold their raw rows).
    """
    if p.get("linear_tree") and linear is None:     # a caller's bug, not the user's input
        raise RuntimeError("boost() with linear_tree needs the training's LinearSpec "
                           "(linear=): dgbdt.train and dgbdt.dask.train compute it from the "
                           "raw rows")
    timers = dict.fromkeys(STAGES, 0.0)
    K = booster.n_outputs
    progress = progress if progress is not None else Progress()
    resumed = progress.started
    start = progress.rounds if resumed else 0
    prior_rounds = booster.num_boosted_rounds() - start
    hist_ptrs = cuts.hist_ptrs()
    sp = SplitParams.from_params(p)
    stopper = (RoundStopper(early_stopping_rounds, metrics[-1],
                            bool(maximize) if custom_metric is not None else None)
               if early_stopping_rounds else None)
    history: dict = evals_result if evals_result is not None else {}
    history.clear()
    spec = GrowthSpec(cuts, hist_ptrs, p["max_depth"], sp, Sampling.from_params(p),
                      p["grow_policy"], p["max_leaves"], linear)
    # callbacks carried by the progress (a survivor's, dgbdt.dask) go on as they stand; the
    # caller's are new (a fresh training, or a checkpoint's resume: dgbdt.engine.checkpoint)
    carried = resumed and progress.callbacks is not None
    if resumed:
        history.update(progress.resume_history())
        replay(stopper, history, start)
        if carried:
            callbacks = progress.callbacks
        if progress.eta is not None:
            spec = dataclasses.replace(spec, p=dataclasses.replace(spec.p, eta=progress.eta))
    callbacks = check_callbacks(callbacks)
    if not carried:
        for cb in callbacks:
            booster = cb.before_training(booster)
        if resumed:
            resume_callbacks(callbacks, booster, history, prior_rounds + start)
        progress.record(start, booster, history, callbacks, spec.p.eta, progress.finished)
    # a GPU seam defers round r's scores until round r + 1's trees are enqueued: the
    # evaluation's host work then overlaps that tree's device time (the seam's trees come
    # back as PendingTrees meanwhile); with callbacks every round is scored before the next
    defer = bool(sources) and not callbacks and bool(getattr(seam, "defers_scores", False))
    ahead = (bool(getattr(seam, "runs_ahead", False)) or defer) and not callbacks
    pending: list = []       # rounds whose scores are submitted, not yet recorded
    # running ahead, the wait for a round's scores overlaps the next round's work: it is
    # timed as "scores_wait", not as the evaluation's cost (which bench_user_path measures
    # as a fit with the eval set beside one without)
    eval_key = "scores_wait" if ahead else "evaluation"
    if defer:
        seam.lazy_trees = True
    # a seam that can grow several rounds a step (graph mode on one worker) may, when nothing
    # reads a round's trees before the end: no eval set, no callbacks
    blocks = hasattr(seam, "block_rounds") and not sources and not callbacks
    if blocks:
        seam.block_rounds = True

    def record(r, handles) -> bool:
        """Round r's scores into the history and the log; whether training stops there."""
        if isinstance(handles, _Deferred):
            handles = handles.result()
        scores = []
        for name, handle, extra in handles:
            pairs = [(m.name, v) for m, v in zip(metrics, handle.result())] + extra
            for metric_name, value in pairs:
                history.setdefault(name, {}).setdefault(metric_name, []).append(value)
                scores.append((name, metric_name, value))
        stop = stopper is not None and stopper.update(r, scores[-1][2])
        if verbose_eval and (verbose_eval is True or r % int(verbose_eval) == 0
                             or r == rounds - 1 or stop):
            emit(format_eval_line(prior_rounds + r, scores))
        report_round(r + 1, rounds, scores)
        return stop

    stopped = False
    for r in range(start, start if progress.finished else rounds):
        epoch = prior_rounds + r
        if callbacks and any(cb.before_iteration(booster, epoch, history) for cb in callbacks):
            break
        eta = booster.__dict__.pop("_next_eta", None)     # set_param("learning_rate")
        if eta is not None and eta != spec.p.eta:
            spec = dataclasses.replace(spec, p=dataclasses.replace(spec.p, eta=eta))
        for k, tree in enumerate(seam.grow_round(objective, K, spec, timers, epoch)):
            booster.trees.append(tree)
            booster.tree_class.append(k)
        if callbacks:        # Dask graph mode: the round's trees are futures until fetched
            booster.trees[-K:] = [t.result() if hasattr(t, "result") else t
                                  for t in booster.trees[-K:]]
        if not sources:
            stopped = bool(callbacks) and any(cb.after_iteration(booster, epoch, history)
                                              for cb in callbacks)
            progress.record(r + 1, booster, history, callbacks, spec.p.eta)
            report_round(r + 1, rounds, None)
            if stopped:
                break
            continue
        if not defer:
            # the round's GPU work is queued, not done: wait for it here, so that "evaluation"
            # times the evaluation and "device_wait" the kernels no host timer saw finish
            t = time.perf_counter()
            seam.drain()
            timers["device_wait"] += time.perf_counter() - t
        t = time.perf_counter()
        new = list(range(len(booster.trees) - K, len(booster.trees)))
        # deferred, a source scored from the training's own margins takes them now: the next
        # round's trees will have moved them by the time it is scored
        now = [(getattr(s, "snapshot", lambda s=s: s)(), n) for s, n in sources] if defer \
            else sources
        scores = functools.partial(_round_scores, now, booster, new, objective, metrics,
                                   custom_metric)
        pending.append((r, _Deferred(scores, seam.scores_beside()) if defer else scores()))
        if not (ahead and len(pending) < 2 and r < rounds - 1):
            stopped = record(*pending.pop(0))
        timers[eval_key] = timers.get(eval_key, 0.0) + time.perf_counter() - t
        if callbacks and any(cb.after_iteration(booster, epoch, history) for cb in callbacks):
            stopped = True
        if not pending:      # round r's scores are recorded (running ahead: round r - 1's)
            progress.record(r + 1, booster, history, callbacks, spec.p.eta)
        elif r > start:
            progress.record(r, booster, history, callbacks, spec.p.eta)
        if stopped:
            break
    t = time.perf_counter()
    while pending and not stopped:           # the last round, when running ahead
        r_last = pending[0][0]
        stopped = record(*pending.pop(0))
        progress.record(r_last + 1, booster, history, callbacks, spec.p.eta)
    if sources:
        timers[eval_key] = timers.get(eval_key, 0.0) + time.perf_counter() - t
    if pending:                              # ran ahead past the stop: not part of the model
        del booster.trees[-K * len(pending):], booster.tree_class[-K * len(pending):]
    if defer:
        seam.lazy_trees = False
        _resolve(booster, range(len(booster.trees)))
    if blocks:
        seam.block_rounds = False
    progress.record(len(booster.trees) // K - prior_rounds, booster, history, callbacks,
                    spec.p.eta, finished=True)
    if stopper is not None:    # counted from the model's first round (continued training)
        booster.best_iteration = prior_rounds + stopper.best_iteration
        booster.best_score = stopper.best_score
    timers.update(seam.stage_times())
    booster.timings = timers
    for cb in callbacks:
        booster = cb.after_training(booster)
    return booster


def _resolve(booster, indices) -> None:
    """The model's PendingTrees at ``indices`` replaced by their trees (a wait, if the device
    has not finished them)."""
    for i in indices:
        t = booster.trees[i]
        if isinstance(t, PendingTree):
            booster.trees[i] = t.result()


class _Deferred:
    """A round's scores to be computed when asked for (``result()``: the handles), in
    ``scope`` (the seam's ``scores_beside``: made now, behind the round's queued work)."""

    def __init__(self, fn, scope):
        self.fn, self.scope = fn, scope

    def result(self):
        with self.scope:
            return self.fn()


def _round_scores(sources, booster, new, objective, metrics, custom_metric) -> list:
    """(name, scores handle, custom pairs) of every source for the trees ``new``."""
    _resolve(booster, new)
    return [(name, _submit_scores(source, booster, new, objective, metrics),
             _custom_scores(source, custom_metric, objective)) for source, name in sources]


def _custom_scores(source, fn, objective) -> list:
    """(name, value) pairs of the user's metric on the source's rows (XGBoost's custom_metric:
    transformed predictions, raw margins with a custom objective)."""
    if fn is None:
        return []
    margins = getattr(source, "custom_margins", None)
    if margins is None:
        raise NotImplementedError("custom_metric runs on in-process eval sets only (not yet "
                                  "on Dask)")
    m, d = margins()
    # raw margins only with the user's own gradients (CustomObjective): built-in objectives
    # whose gradients need all rows at once (Cox, ranking) still predict transformed values
    preds = (m[:, 0] if m.shape[1] == 1 else m) if getattr(objective, "user_gradients", False) \
        else objective.transform(m)
    out = fn(preds, d)
    pairs = out if isinstance(out, list) else [out]
    if not all(isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str) for x in pairs):
        raise TypeError("custom_metric must return (name, value) or a list of such pairs")
    return [(name, float(value)) for name, value in pairs]


class _Ready:
    """Scores already computed (a source without ``submit_scores``)."""

    def __init__(self, values):
        self.values = values

    def result(self):
        return self.values


def _submit_scores(source, booster, new, objective, metrics):
    """A handle whose ``result()`` is the source's scores of the new trees."""
    submit = getattr(source, "submit_scores", None)
    if submit is not None:
        return submit(booster, new, objective, metrics)
    return _Ready(source.scores(booster, new, objective, metrics))
