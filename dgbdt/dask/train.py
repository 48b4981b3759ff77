"""dgbdt.dask.train: the boosting loop of dgbdt.train over data held by Dask workers.

The loop itself is dgbdt.engine.boosting.boost; the modes supply its seam:

* **one task** — every partition on one worker: the whole training runs inside one task there
  (``_train_in_task``): the in-process seam over that worker's shards;
* **the graph** — rounds submitted as one task graph, one task per worker and level, every
  worker merging the same integer histograms (dgbdt.dask.graph);
* **collective** — one long task per worker, histograms all-reduced with NCCL or TCP
  (dgbdt.dask.collective_train).

Histograms are integer sums and metrics exact reductions, so every mode gives the in-process
model, byte for byte, for any number of workers or partitions. Piecewise-linear trees
(``linear_tree``) train on CPU workers in the task, graph and collective modes: the workers
keep their rows' raw values beside the pages, the normalization's min / max is tree-reduced
over them (dgbdt.dask.linear), and the seams merge the linear histograms and leaf sums as they
merge the constant ones (dgbdt.tree.linear_growth.level_payload).
"""
from __future__ import annotations

import dataclasses
import logging
import time

import numpy as np

from ..model.booster import Booster

from ..model.margins import MarginStart
from .. import progressbar
from ..engine.checkpoint import DEFAULT_INTERVAL, Checkpointer, check_interval, fingerprint
from ..data.queries import weight_norm, weight_norm_stats
from ..objectives.registry import get_objective
from ..objectives.base import model_params
from ..engine.approx import check_raw_rows, needs_raw_rows
from ..engine.progress import Progress
from ..engine.setup import DatasetKind, check_exact, prepare, training_max_bin
from ..tree.spec import max_nodes as tree_max_nodes
from ..backends.device import to_host
from ..callback import check_callbacks
from .data import DaskDataset, workers_of
from .parts import results_in_order
from .linear import check_linear, linear_spec
from .memory import check_worker_memory
from . import nccl_preload
from .recovery import RecoveryError, WorkerLostError, later, wait_for_partitions
from .modes import STRATEGIES, Attempt, auto_mode
from .placement import rank_workers
from .shards import make_shard, needs_rows, start_margins
from .worker import reaching_client

_INF = float("inf")
logger = logging.getLogger("dgbdt.dask")


# -- tasks on the workers ----------------------------------------------------------------------
#: Dask datasets (dgbdt.engine.setup): the rows stay on the workers
ON_WORKERS = DatasetKind(DaskDataset, "dgbdt.dask.DaskDataset",
                         qid_hint="pass qid= to DaskDataset (a query's rows within one "
                                  "partition, sorted by qid there)",
                         intervals_hint="DaskDataset arguments, partitioned like the data",
                         on_workers=True)


def _label_stats(part, obj, num_class):
    """The objective's (an Objective: it carries its parameters) intercept statistics of a
    partition's labels, checked."""
    if part.n_rows == 0:
        return None
    label, weight = part.label, part.weight
    obj.check_label_array(label, num_class)
    if not obj.stats_on_device():           # device labels stay there when they can
        label, weight = to_host(label), None if weight is None else to_host(weight)
    return obj.label_stats(label, weight, num_class)


def _checked_rows(part, obj):
    """A partition's labels and weights (host arrays), checked: for an intercept that needs
    every row in dataset order (survival:cox's)."""
    label = to_host(part.label)
    obj.check_labels(label)
    return label, None if part.weight is None else to_host(part.weight)


def _weight_norm_stats(part):
    """A partition's [queries, sum of their weights] (exact sums; dgbdt.data.queries)."""
    return weight_norm_stats(to_host(part.weight), part.qid)


def _label_part(part, objective_name: str):
    """A partition's labels (and weights) for the intercept's quantile, checked."""
    from ..objectives.leaf_quantiles import Part
    label = to_host(part.label)
    get_objective(objective_name).check_labels(label)
    w = None if part.weight is None else [to_host(part.weight)]
    return Part([label], w)


def _part_stats(part):
    return part.stats()


def _part_histogram(part, scales, prefixes, step, groups):
    return part.histogram(prefixes, step, part.masses(scales), groups)


def label_quantile(client, dtrain, objective) -> np.ndarray:
    """The quantile losses' intercept [K]: the labels' alpha quantile (one per output) over every partition
    (dgbdt.objectives.leaf_quantiles: each step's sums over the partitions, gathered here), the value the
    in-process training finds."""
    from ..objectives.leaf_quantiles import quantiles
    parts = dtrain.map_rows(_label_part, objective.name)
    try:
        def stats():
            got = client.gather([client.submit(_part_stats, f, pure=False) for f in parts])
            s = np.array(got)
            return np.stack([s[:, :, 0].sum(axis=0), s[:, :, 1].max(axis=0)], axis=1)

        def histogram(scales, prefixes, step, groups):
            futs = [client.submit(_part_histogram, f, scales, prefixes, step, groups,
                                  pure=False) for f in parts]
            return np.sum(client.gather(futs), axis=0)
        return np.array([quantiles(a, 1, dtrain.has_weight, stats, histogram)[0]
                         for a in getattr(objective, "leaf_alphas", (objective.leaf_alpha,))])
    finally:
        client.cancel(parts)


# -- one task: everything on one worker --------------------------------------------------------
# -- the public entry point --------------------------------------------------------------------
MODES = ("auto", "task", "graph", "nccl", "collective")


@reaching_client
def train(client, params: dict | None, dtrain: DaskDataset, num_boost_round: int = 10,
          evals=None, early_stopping_rounds: int | None = None, callbacks=None,
          verbose_eval: bool | int = True, fan_in: int = 8, mode: str = "auto",
          collective_timeout: float = 300.0, xgb_model=None, obj=None, max_restarts: int = 3,
          recovery_timeout: float = 300.0, checkpoint_dir=None,
          checkpoint_interval: int = DEFAULT_INTERVAL, progress_bar: bool | None = None,
          custom_metric=None, maximize: bool | None = None) -> dict:
    """Train on a DaskDataset; returns {"booster": Booster, "history": {name: {metric: [...]}}}.

    Same parameters and semantics as dgbdt.train (and xgboost.dask.train). ``fan_in``: inputs
    per merge task of the histogram tree-reduce. ``mode`` says how the workers' histograms meet;
    every mode gives the same model, byte for byte:

    * "graph": a tree-reduce over the task graph, one task hop per level; runs anywhere;
    * "task": the whole training in one task, when every partition lives on one worker;
    * "nccl": one long task per GPU worker, histograms all-reduced with NCCL
      (dgbdt.dask.collective_train); the fastest on several GPUs (a rank that fails or hangs
      stops every rank within ``collective_timeout`` seconds at most, never a hang);
    * "collective": the same on any workers: NCCL between GPU workers, TCP (a star through
      the first worker) between CPU workers;
    * "auto": the fastest mode that works here: "task" when all partitions live on one
      worker; on several workers "nccl" for GPU data when every worker has NCCL, "collective"
      for host data (TCP between CPU workers: faster than the graph; docs/benchmarks.md),
      else "graph".
      The mode used is logged (logger "dgbdt.dask", INFO) and returned as ``out["mode"]``.

    ``xgb_model``: continue training a model, as dgbdt.train (the workers start each
    partition's rows from the model's margins). ``callbacks``: as dgbdt.train's; they run
    where the boosting loop runs: here in graph mode, inside the training on the workers in the
    task and collective modes (see dgbdt.callback). ``obj``: a custom objective
    (dgbdt.objectives.custom), run on each worker over the rows it holds. ``custom_metric``: a
    dgbdt.metrics.registry.Metric instance (or a list): its summary is computed where each partition's
    rows are and merged as the built-in metrics' are, so its value is exact for any
    partitioning (a function of all the predictions, XGBoost's form, is refused: it would
    need every prediction in one place); early stopping watches the last one.

    A worker lost during the training costs a restart, not the training
    (dgbdt.dask.recovery): the lost partitions are recomputed from lineage and the training
    resumes, on the workers left or a replacement, from the last round the survivors completed
    (the one-task mode: from its start), up to ``max_restarts`` times; the model is the one an
    undisturbed training gives, byte for byte. ``recovery_timeout``: the seconds to wait for
    the lost partitions' recomputation. The restarts made are returned as ``out["restarts"]``
    and logged (WARNING). RecoveryError ends a training that cannot be resumed.

    ``checkpoint_dir``: a directory for the training's checkpoint, rewritten every
    ``checkpoint_interval`` rounds and at the end (dgbdt.engine.checkpoint, as dgbdt.train's): a
    training killed with its client resumes there when the same call runs again, to the
    uninterrupted model and history, byte for byte, in any mode and on any number of workers.
    The checkpoint is written where the boosting loop runs, which holds the model: by the
    client in graph mode, by the training's task in the one-task mode, by rank 0 in the
    collective modes. No model crosses the network for it, and no rank waits on the client
    inside the loop; but on a cluster of several machines ``checkpoint_dir`` must be one
    directory shared by the client and every worker (NFS, a cluster file system), at the
    same path: a worker that finds another training's checkpoint there stops with
    CheckpointError. A relative path is made absolute on the client. The one-task mode,
    whose progress is lost with its worker, also restarts from the checkpoint.

    ``progress_bar``: as dgbdt.train's, drawn here on the client in every mode (the workers'
    rounds come with the evaluation log lines), over restarts too.
    """
    callbacks = check_callbacks(callbacks)
    if checkpoint_dir is not None:
        check_interval(checkpoint_interval)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}; got {mode!r}")
    for name, value in (("collective_timeout", collective_timeout),
                        ("recovery_timeout", recovery_timeout)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name} must be a number of seconds > 0; got {value!r}")
    if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
        raise ValueError(f"max_restarts must be an integer >= 0; got {max_restarts!r}")
    s = prepare(params, dtrain, evals, ON_WORKERS, num_boost_round=num_boost_round,
                early_stopping_rounds=early_stopping_rounds, xgb_model=xgb_model, obj=obj,
                custom_metric=custom_metric, maximize=maximize, checkpoint_dir=checkpoint_dir,
                mode=mode)
    p, objective, metrics, evals, prior = s.p, s.objective, s.metrics, s.evals, s.prior
    num_class = s.num_class
    if p["booster"] == "gblinear" or (prior is not None and prior.linear is not None):
        raise NotImplementedError(
            "booster='gblinear' is not built on Dask (XGBoost's Dask interface has no "
            "gblinear either). Fix: gather the rows and train in process with dgbdt.train "
            "(dgbdt.compat.xgboost.train), or booster='gbtree' (linear_tree=True for linear "
            "leaves) on Dask.")
    if p["process_type"] == "update":     # xgb_model's trees updated, none grown
        return _update(client, p, s, int(num_boost_round), fan_in, verbose_eval,
                       early_stopping_rounds, callbacks, checkpoint_dir, obj)
    if p["linear_tree"]:
        check_linear(p, dtrain, mode)
    check_raw_rows(p, False)
    if p["booster"] == "dart" and mode == "graph":
        raise NotImplementedError('booster="dart" in graph mode is not built (a task hop for '
                                  'every drop). Fix: mode="collective" or "task" (the same '
                                  'model), or mode="auto"')
    if prior is not None and prior.categories is not None:
        dtrain.recode_to_model(prior.categories)    # the model's codes, by value (XGBoost's)
    if getattr(dtrain, "categories", None) is not None:
        for d, name in evals:       # category codes as the training's, by value
            d.with_categories(dtrain.categories, name)
    if getattr(objective, "needs_qid", False) and dtrain.has_weight:
        # n_queries / sum of weights over every partition
        futs = dtrain.map_rows(_weight_norm_stats)
        objective.weight_norm = weight_norm([sum(c) for c in zip(*client.gather(futs))])
    ranked = [m.name for m in metrics if getattr(m, "by_query", False)]
    for d, name in evals:
        if ranked and not d.has_qid:
            raise ValueError(f"eval set '{name}': the ranking metric {ranked[0]!r} needs query "
                             "ids on Dask (rows without them would be one query per "
                             "partition): pass qid= to its DaskDataset")
    t0 = time.perf_counter()
    first_rows = np.concatenate([[0], np.cumsum(dtrain.part_rows)])

    def before(i, _):      # a bad label's row, counted in the dataset (dgbdt.dask.parts.located)
        return int(first_rows[i])
    _preload_nccl(client, p, mode, dtrain)
    cuts = dtrain.cuts(training_max_bin(p, dtrain), fan_in)
    if p["tree_method"] == "exact":     # (a wait for the sketch only then)
        check_exact(p, cuts.result())
    if dtrain.persisted and p["device"] == "cpu":  # before a worker dies of it (dgbdt.dask.memory)
        check_worker_memory(client, dtrain, p, objective.n_outputs(num_class),
                            dtrain.holders() or dtrain.workers_of_parts())
    if prior is not None:
        booster = prior.snapshot()
        booster.best_iteration = booster.best_score = None
    else:
        if p["base_score"] is not None:
            intercept = objective.base_score_to_margin(p["base_score"], num_class)
        elif getattr(objective, "leaf_alpha", None) is not None:
            intercept = label_quantile(client, dtrain, objective)
        elif getattr(objective, "needs_all_rows", False):      # survival:cox
            got = results_in_order(dtrain.map_rows(_checked_rows, objective), before)
            label = np.concatenate([g[0] for g in got])
            weight = None if got[0][1] is None else np.concatenate([g[1] for g in got])
            intercept = objective.base_margin_from_labels(label, weight, num_class)
        else:
            futs = dtrain.map_rows(_label_stats, objective, num_class)
            if dtrain.persisted:
                # the training pages (``_attempt`` waits for them) need no intercept: they
                # pack while the client waits for these statistics, submitted after the
                # statistics' tasks, which read the raw parts the pages release
                dtrain.pages(cuts, p["device"], p["device_memory_budget"],
                             objective.n_outputs(num_class), tree_max_nodes(p, dtrain.num_row),
                             raw=needs_raw_rows(p), wait=False)
            try:
                stats = [s for s in results_in_order(futs, before) if s is not None]
            except BaseException:
                client.cancel(futs)       # a bad label: the other partitions' checks stop
                raise
            intercept = objective.base_margin_from_stats([sum(c) for c in zip(*stats)],
                                                         num_class)
        booster = Booster(objective.name, num_class, intercept, dtrain.num_col,
                          dtrain.feature_names, model_params(objective))
    booster.set_feature_types(dtrain)      # categorical features (dgbdt.data.categorical)
    progress, sink = Progress(), None
    if checkpoint_dir is not None:      # resume from this training's checkpoint, if any
        sink = Checkpointer(checkpoint_dir, checkpoint_interval, fingerprint(
            p, num_boost_round, early_stopping_rounds, None, rows=dtrain.num_row,
            features=dtrain.num_col, feature_names=dtrain.feature_names,
            weighted=dtrain.has_weight, base_margin=dtrain.has_base_margin,
            cuts=cuts.result(), intercept=booster.base_margin,
            evals=[(name, d.num_row) for d, name in evals], metrics=[m.name for m in metrics],
            prior=prior, obj=obj), booster.num_boosted_rounds())
        progress = sink.resume() or progress
    restarts = 0
    offsets = np.concatenate([[0], np.cumsum(dtrain.part_rows)[:-1]])
    bar = progressbar.open_bar(progress_bar, p["verbosity"], int(num_boost_round))
    with progressbar.showing(bar):
        while True:
            try:
                # a copy: the attempt's own loop updates it (in graph mode its trees are futures)
                out = _attempt(client, p, cuts, booster, prior, offsets, objective, metrics,
                               int(num_boost_round), dtrain, evals, early_stopping_rounds,
                               callbacks, verbose_eval, fan_in, mode, float(collective_timeout),
                               obj, dataclasses.replace(progress, sink=sink), t0,
                               recovering=restarts > 0)
                out["restarts"] = restarts
                return out
            except WorkerLostError as e:
                lost, why = e.progress, str(e)
            restarts += 1
            if restarts > max_restarts:
                raise RecoveryError(f"{why}; gave up after {max_restarts} restart"
                                    f"{'' if max_restarts == 1 else 's'} (max_restarts="
                                    f"{max_restarts})") from None
            progress = later(progress, lost)
            if sink is not None:    # the one-task mode's progress went with its worker
                progress = later(progress, sink.resume())
            logger.warning("dgbdt.dask.train: %s; restart %d of at most %d, from round %d",
                           why, restarts, max_restarts, progress.rounds if progress.started else 0)
            wait_for_partitions(client, [dtrain] + [d for d, _ in evals], float(recovery_timeout))


def _preload_nccl(client, p, mode: str, dtrain) -> None:
    """Start loading NCCL's kernels on the workers of a fit that will connect them
    (dgbdt.dask.nccl_preload), ahead of the dataset's tasks there."""
    if p["device"] != "cuda" or mode in ("graph", "task") or not dtrain.persisted:
        return
    workers = dtrain.holders_now()
    if mode == "auto" and len(workers) < 2:      # one worker trains in one task
        return
    # the workers holding no partition too, where they will be ranks
    nccl_preload.submit(client, rank_workers(client, p, workers, True))


def _attempt(client, p, cuts, booster, prior, offsets, objective, metrics, num_boost_round,
             dtrain, evals, early_stopping_rounds, callbacks, verbose_eval, fan_in, mode,
             collective_timeout, obj, progress, t0, recovering: bool) -> dict:
    """One attempt at the training, resuming from ``progress`` when it has started (a worker
    was lost before: dgbdt.dask.recovery). Raises WorkerLostError when one is lost now."""
    if progress.started:           # resume: the model so far is the start of every margin
        booster = progress.booster.snapshot()
        if "_next_eta" in progress.booster.__dict__:
            booster._next_eta = progress.booster._next_eta
        prior = booster
    else:       # graph mode appends to the booster's trees: an attempt's own list
        booster = booster.snapshot()
    # where every partition's margins start: the intercept, or the prior model's margins
    base = MarginStart(booster.base_margin, prior, offsets)
    max_nodes = tree_max_nodes(p, dtrain.num_row)
    if dtrain.persisted:
        # the pages every mode trains on (packed by the first training, the raw parts then
        # released: dgbdt.dask.pages), each with the margins of the model to continue from
        # where those need the raw rows (read from lineage for this attempt)
        margins = (dtrain.map_parts(start_margins, base) if needs_rows(base)
                   else [None] * len(dtrain.part_rows))
        pages = dtrain.pages(cuts, p["device"], p["device_memory_budget"], len(base),
                             max_nodes, raw=needs_raw_rows(p))
        units = list(zip(pages, margins))
        # every input in memory before a training task starts: a collective rank holds its
        # worker's thread while it waits for the others, so a margin still to be computed on
        # that worker for another rank would never be (a restart timed out that way)
        workers = workers_of(client, pages + [m for m in margins if m is not None])[:len(pages)]
    else:
        # streamed: every partition is read once more and packed into its page (a shard) on
        # the worker that read it; the raw rows are released, and every mode trains on these
        units = pages = dtrain.map_parts(make_shard, cuts, max_nodes, base, p["device"],
                                         p["device_memory_budget"], needs_raw_rows(p))
        workers = workers_of(client, pages)
    # linear trees: the regressors' normalization, from every holder's raw rows' min / max
    linear = linear_spec(client, p, pages, cuts, fan_in) if p["linear_tree"] else None
    if mode == "auto":
        mode = auto_mode(client, workers, p)
        logger.info("dgbdt.dask.train: mode='auto' trains in mode=%r (%d worker%s, device %s)",
                    mode, len(set(workers)), "" if len(set(workers)) == 1 else "s",
                    p["device"])
    if mode == "nccl" and p["device"] != "cuda":
        raise ValueError("mode='nccl' trains on GPU workers: the data live on the host "
                         "(device='cpu'); pass GPU partitions (cupy/cuDF) or params "
                         "device='cuda', or use mode='collective' (TCP between CPU "
                         "workers)")
    attempt = Attempt(client, p, cuts, base, booster, objective, metrics, int(num_boost_round),
                      dtrain, evals, units, workers, early_stopping_rounds, verbose_eval,
                      callbacks, obj, progress, linear, fan_in, collective_timeout, recovering,
                      t0)
    return {**STRATEGIES[mode](attempt), "mode": mode}


def _update(client, p, s, rounds, fan_in, verbose_eval, early_stopping_rounds, callbacks,
            checkpoint_dir, obj) -> dict:
    """process_type="update" over the partitions (dgbdt.dask.update; the algorithm is
    dgbdt.engine.update_process)."""
    from ..engine.update_process import check_updatable, update_model
    from .update import DaskRows
    given = [name for name, v in (("early_stopping_rounds", early_stopping_rounds),
                                  ("callbacks", callbacks or None),
                                  ("checkpoint_dir", checkpoint_dir), ("obj", obj))
             if v is not None]
    if given:
        raise NotImplementedError(f"process_type='update' with {', '.join(given)} is not "
                                  "built: it takes evals and verbose_eval")
    check_updatable(s.prior, rounds, s.objective, on_dask=True)
    if s.prior.categories is not None:
        s.dtrain.recode_to_model(s.prior.categories)
    holders = DaskRows(client, s.dtrain, [d for d, _ in s.evals], s.prior, rounds, fan_in)
    history: dict = {}
    booster = update_model(p, holders, rounds, s.prior, s.objective, s.metrics,
                           [name for _, name in s.evals], history, verbose_eval)
    return {"booster": booster, "history": history, "mode": "update", "restarts": 0}
