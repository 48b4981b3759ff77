"""The boosting loop, one for every seam (in-process, collective ranks, graph mode).

Each round: gradients of the objective at the current margins (on the shards); for each output
class k, one fixed-point scale per round from the global max |g| and max h
(dgbdt.kernels.fixedpoint), then a depth-wise tree grown over the seam; its leaf values are
added to the shards' margins through their row segments (no traversal) and to each evaluation
set's margins by traversal of the new trees only. Metrics are computed on the eval sets after
every round; callbacks (dgbdt.callback) see each round and may stop the training.
"""
from __future__ import annotations

import dataclasses
import functools
import time

from ..callback import RoundStopper, check_callbacks, emit, format_eval_line, report_round
from ..model.booster import Booster
from ..tree.device_grower import PendingTree
from ..tree.spec import GrowthSpec
from ..tree.split import SplitParams
from .dart import Dropout, dart_round
from .progress import Progress, replay, resume_callbacks
from .sampling import Sampling


class TrainingHalted(RuntimeError):
    """The training was ended from outside before it finished (boost's ``halt``)."""


STAGES = ("quantize", "gradients", "histograms", "split_evaluation", "partition",
          "leaf_update", "device_wait", "evaluation")


def boost(p, seam, cuts, booster: Booster, objective, metrics, rounds: int, sources,
          early_stopping_rounds, evals_result, verbose_eval, callbacks=None,
          custom_metric=None, maximize=None, progress: Progress | None = None,
          linear=None, halt=None) -> Booster:
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
    ``linear_tree`` set (the seam's shards then hold their raw rows). ``halt``: asked before
    every round, None or why the training must end now (dgbdt.dask.stop: the client let go);
    a reason raises TrainingHalted, and nothing more is recorded (no checkpoint).
    """
    if p.get("linear_tree") and linear is None:     # a caller's bug, not the user's input
        raise RuntimeError("boost() with linear_tree needs the training's LinearSpec "
                           "(linear=): dgbdt.train and dgbdt.dask.train compute it from the "
                           "raw rows")
    timers = dict.fromkeys(STAGES, 0.0)
    K = booster.n_outputs
    P = p.get("num_parallel_tree", 1)
    if booster.trees and booster.num_parallel_tree != P:
        raise ValueError(f"num_parallel_tree={P}, but the model continued has "
                         f"{booster.num_parallel_tree} trees a round for each output: a "
                         "training continues with the model's num_parallel_tree")
    booster.num_parallel_tree = P
    # multi_strategy="multi_output_tree": one vector-leaf tree a round for every output
    vector = p.get("multi_strategy") == "multi_output_tree" and K > 1
    if booster.trees and booster.vector_leaf != vector:
        raise ValueError(f"multi_strategy={p.get('multi_strategy')!r}, but the model continued "
                         f"was trained with multi_strategy={booster.multi_strategy!r}: a "
                         "training continues with the model's multi_strategy")
    if vector:
        from ..tree.multi_target import check_vector_leaf
        check_vector_leaf(p, cuts)
        booster.multi_strategy = "multi_output_tree"
    T = (1 if vector else K) * P    # trees a round: each output's P parallel trees, in turn
    dropout = Dropout.from_params(p)
    if dropout is not None and booster.tree_weights is None:   # a gbtree model goes on as dart
        booster.tree_weights = [1.0] * len(booster.trees)
    progress = progress if progress is not None else Progress()
    resumed = progress.started
    start = progress.rounds if resumed else 0
    prior_rounds = booster.num_boosted_rounds() - start
    hist_ptrs = cuts.hist_ptrs()
    sp = SplitParams.from_params(p)
    stopper = (RoundStopper(early_stopping_rounds, metrics[-1] if metrics else None,
                            bool(maximize) if custom_metric is not None else None)
               if early_stopping_rounds else None)
    history: dict = evals_result if evals_result is not None else {}
    history.clear()
    spec = GrowthSpec(cuts, hist_ptrs, p["max_depth"], sp, Sampling.from_params(p),
                      p["grow_policy"], p["max_leaves"], linear, P,
                      p["max_bin"] if p["tree_method"] == "approx" else 0, K if vector else 0,
                      exact=p["tree_method"] == "exact")
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
    defer = bool(sources) and not callbacks and bool(getattr(seam, "defers_scores", False)) \
        and dropout is None     # a dart round reads its new trees (dgbdt.engine.dart)
    ahead = (bool(getattr(seam, "runs_ahead", False)) or defer) and not callbacks
    # rounds between a round and the one after whose trees its scores are read: deferred,
    # the seam's (a scoring whose collectives wait behind the next round's is read later)
    lag = seam.scores_lag if defer else 1
    pending: list = []       # rounds whose scores are submitted, not yet recorded
    # running ahead, the wait for a round's scores overlaps the next round's work: it is
    # timed as "scores_wait", not as the evaluation's cost (which bench_user_path measures
    # as a fit with the eval set beside one without)
    eval_key = "scores_wait" if ahead else "evaluation"
    # nothing reads a round's trees before the end (no eval set, no callbacks, no checkpoint
    # sink): on a GPU each round's trees stay pending while the next round is queued and are
    # read a round later, so the device does not idle while the host copies and builds them
    trail = (not sources and not callbacks and dropout is None and progress.sink is None
             and bool(getattr(seam, "defers_scores", False)))
    if defer or trail:
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
        why = halt() if halt is not None else None
        if why is not None:
            raise TrainingHalted(f"training stopped before round {epoch}: {why}")
        if callbacks and any(cb.before_iteration(booster, epoch, history) for cb in callbacks):
            break
        eta = booster.__dict__.pop("_next_eta", None)     # set_param("learning_rate")
        if eta is not None and eta != spec.p.eta:
            spec = dataclasses.replace(spec, p=dataclasses.replace(spec.p, eta=eta))
        def grow():
            for i, tree in enumerate(seam.grow_round(objective, K, spec, timers, epoch)):
                booster.trees.append(tree)
                booster.tree_class.append(i // P)

        change = None
        if dropout is not None:
            change = dart_round(dropout, booster, seam, epoch, grow, spec.p.eta)
        else:
            grow()
            if booster.tree_weights is not None:     # a dart model goes on as gbtree
                booster.tree_weights.extend([1.0] * T)
        if callbacks:        # Dask graph mode: the round's trees are futures until fetched
            # (under watch: a plain result() on a lost worker's tree waited for ever)
            booster.trees[-T:] = seam.trees_now(booster.trees[-T:])
        if trail and len(booster.trees) >= 2 * T:
            # (a PendingTree waits for its own copy only, not for the round just queued)
            booster.trees[-2 * T:-T] = seam.trees_now(booster.trees[-2 * T:-T])
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
        new = list(range(len(booster.trees) - T, len(booster.trees))) if change is None \
            else change
        # deferred, a source scored from the training's own margins takes them now: the next
        # round's trees will have moved them by the time it is scored
        now = [(getattr(s, "snapshot", lambda s=s: s)(), n) for s, n in sources] if defer \
            else sources
        scores = functools.partial(_round_scores, now, booster, new, objective, metrics,
                                   custom_metric)
        pending.append((r, _Deferred(scores, seam.scores_beside()) if defer else scores()))
        if defer and len(pending) > 1:
            pending[-2][1].submit()        # round r - 1's scores queued behind round r's trees
        if not (ahead and len(pending) <= lag and r < rounds - 1):
            stopped = record(*pending.pop(0))
        timers[eval_key] = timers.get(eval_key, 0.0) + time.perf_counter() - t
        if callbacks and any(cb.after_iteration(booster, epoch, history) for cb in callbacks):
            stopped = True
        done = r + 1 - len(pending)    # rounds whose scores are recorded (running ahead: fewer)
        if not pending or done > start:
            progress.record(done, booster, history, callbacks, spec.p.eta)
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
        del booster.trees[-T * len(pending):], booster.tree_class[-T * len(pending):]
        if booster.tree_weights is not None:     # (dart does not run ahead: gbtree's 1s)
            del booster.tree_weights[-T * len(pending):]
    if defer or trail:
        seam.lazy_trees = False
        _resolve(booster, range(len(booster.trees)))
    if blocks:
        seam.block_rounds = False
    progress.record(len(booster.trees) // T - prior_rounds, booster, history, callbacks,
                    spec.p.eta, finished=True)
    if stopper is not None:    # counted from the model's first round (continued training)
        booster.best_iteration = prior_rounds + stopper.best_iteration
        booster.best_score = stopper.best_score
    timers.update(seam.stage_times())
    booster.timings = timers
    bias = getattr(seam, "rank_position_bias", None)
    if bias is not None:    # lambdarank_unbiased's estimates: after_training reads them too
        booster.position_bias = bias.as_dict()
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
        self.handles = None

    def submit(self) -> None:
        """Make the handles now (their work queued; their values read by ``result``)."""
        if self.handles is None:
            with self.scope:
                self.handles = self.fn()

    def result(self):
        self.submit()
        return self.handles


def _round_scores(sources, booster, new, objective, metrics, custom_metric) -> list:
    """(name, scores handle, custom pairs) of every source for the trees ``new``."""
    _resolve(booster, [c[0] if isinstance(c, tuple) else c for c in new])
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
