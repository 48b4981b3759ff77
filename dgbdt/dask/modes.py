"""The ways the workers' histograms meet, as strategies over one prepared attempt.

dgbdt.dask.train prepares a training once (the front door, dgbdt.engine.setup; the pages on
the workers; where they live) into an ``Attempt``, picks a mode, and runs the mode's strategy
on it. Every strategy runs the same boosting loop (dgbdt.engine.boosting.boost) over a seam and gives
the same model bytes:

* ``one_task``: every partition on one worker; the whole training is one task there;
* ``collective`` (modes "collective" and "nccl"): one long task per worker, the level
  histograms all-reduced between them (TCP between CPUs, NCCL between GPUs);
* ``graph``: the client drives the loop, each worker's part of a level a task, the
  histograms tree-reduced in the task graph (dgbdt.dask.graph).

A new mode is one more function of an Attempt, in ``STRATEGIES``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid

import numpy as np

from ..backends.device import array_module, device_scope
from .. import progressbar
from ..callback import ClientLog, log_to_client
from ..data.dataset import Dataset
from ..data.page_store import gpu_memory_errors
from ..engine.evaluation import DatasetEval, SeamEval
from ..engine.seam import LocalSeam
from ..metrics.registry import get_metric
from ..objectives.custom import objective_on
from ..objectives.registry import get_objective
from ..tree.spec import max_nodes as tree_max_nodes
from ..engine.boosting import boost
from .reduce import by_worker
from .graph import DaskSeam, GraphModeError, TrainEval, make_unit
from .graph import DatasetEval as GraphDatasetEval
from .recovery import watched_result
from .shards import local_shards
from .stop import LetGo
from .worker import training_task


@dataclasses.dataclass
class Attempt:
    """One attempt at a training, prepared for any mode: the front door's results, the
    training rows as units on their workers, and the loop's arguments."""

    client: object
    p: dict
    cuts: object                # a future of the Cuts (dgbdt.dask.data)
    base: object                # dgbdt.model.margins.MarginStart: where every margin starts
    booster: object             # the model so far (the prior's trees, or none)
    objective: object
    metrics: list
    rounds: int
    dtrain: object
    evals: list
    units: list                 # futures of the training pages (with margins where needed)
    workers: list               # the worker of each unit
    early_stopping_rounds: int | None
    verbose_eval: object
    callbacks: list
    obj: object
    progress: object            # dgbdt.engine.progress.Progress, resumed or fresh
    linear: object              # linear leaves' normalization (LinearSpec), or None
    fan_in: int
    collective_timeout: float
    recovering: bool
    t0: float                   # when the attempt's preparation started



def one_task(a: Attempt) -> dict:
    """Every partition on one worker: the whole training is one task there."""
    if len(set(a.workers)) != 1 and not a.recovering:   # after a loss, Dask moves the parts there
        raise ValueError("mode='task' needs every partition on one worker")
    eval_sets = [(None if d is a.dtrain else d.persisted_parts(), name) for d, name in a.evals]
    log = _client_log(a.client, bool(a.evals) and bool(a.verbose_eval))
    fut = a.client.submit(_train_in_task, a.p, a.cuts, a.base, a.booster, a.rounds,
                          a.dtrain.num_row, a.units,
                          eval_sets, a.early_stopping_rounds, a.verbose_eval,
                          log and log.topic, a.callbacks, a.obj, a.progress, a.linear,
                          workers=[a.workers[0]], allow_other_workers=False, pure=False,
                          key=f"dgbdt-train-in-task-{uuid.uuid4().hex[:8]}")
    try:
        with _closing(log):
            # the progress lives on that worker: its loss restarts from ``progress``
            booster, history = watched_result(a.client, fut, a.workers[0],
                                              "the one-task training")
    finally:
        # an interrupt (or any error here) lets go of the task: it ends at its next round
        # (dgbdt.dask.stop); a finished task's key is released the same way
        a.client.cancel(fut)
    return {"booster": booster, "history": history}


def collective(a: Attempt) -> dict:
    """One long task per worker, the level histograms all-reduced between them (modes
    "collective" and "nccl": dgbdt.dask.collective_train)."""
    from .collective_train import train_collective
    log = _client_log(a.client, bool(a.evals) and bool(a.verbose_eval))
    t = time.perf_counter()
    with _closing(log):
        booster, history = train_collective(
            a.client, a.p, a.cuts, a.base, a.booster, a.rounds, a.dtrain, a.units,
            a.workers, a.evals, a.early_stopping_rounds, a.verbose_eval, a.collective_timeout,
            log and log.topic, a.callbacks, a.obj, a.progress, a.linear)
    # the client's clock: the fit's set-up before the ranks' tasks (sketch, pages, placement:
    # mostly waits on the dataset's tasks), then the ranks' tasks from submit to result in hand
    booster.timings["client_setup"] = t - a.t0
    booster.timings["client_ranks"] = time.perf_counter() - t
    return {"booster": booster, "history": history}


def graph(a: Attempt) -> dict:
    """The client drives the boosting loop over a DaskSeam: one unit per worker holding
    training rows (its partitions joined into one shard, or its streamed shards), built
    there; empty partitions add nothing."""
    client, p, booster, progress = a.client, a.p, a.booster, a.progress
    keep = [(u, w) for u, w, n in zip(a.units, a.workers, a.dtrain.part_rows) if n]
    groups = by_worker([u for u, _ in keep], [w for _, w in keep])
    max_nodes = tree_max_nodes(p, a.dtrain.num_row)
    unit_futures = {w: client.submit(make_unit, p, a.cuts, max_nodes, a.base, *groups[w],
                                     workers=[w], allow_other_workers=False, pure=False,
                                     key=f"dgbdt-unit-{i}-{uuid.uuid4().hex[:8]}")
                    for i, w in enumerate(groups)}
    seam = DaskSeam(client, unit_futures, a.dtrain.num_row, a.fan_in, p["nthread"],
                    weighted=a.dtrain.has_weight)
    if progress.sink is not None:       # the client writes the checkpoints: trees gathered
        progress.sink = progress.sink.on_client(seam.result)
    seam.wait(seam.units)
    quantize_seconds = time.perf_counter() - a.t0
    sources = [(TrainEval(seam, d) if d is a.dtrain
                else GraphDatasetEval(seam, d, a.base, a.fan_in), name) for d, name in a.evals]
    history: dict = {}
    prior_rounds = booster.num_boosted_rounds() - (progress.rounds if progress.started else 0)
    n_prior = prior_rounds * booster.trees_per_round
    try:
        booster = boost(p, seam, a.cuts.result(), booster, a.objective, a.metrics, a.rounds,
                        sources, a.early_stopping_rounds, history, a.verbose_eval, a.callbacks,
                        progress=progress, linear=a.linear)
        booster.trees = seam.result(booster.trees)       # futures until now (dgbdt.dask.graph)
    except GraphModeError as e:
        # every unit grew the same trees: a survivor's are the model so far
        lost = None
        if progress.started:
            trees = seam.survivors_trees()
            if trees is not None:
                lost = progress.frozen(prior_rounds, progress.booster.trees[:n_prior] + trees)
        seam.release()
        raise GraphModeError(str(e), e.worker, lost) from None
    except BaseException:
        # an interrupt: dropping the futures releases the queued rounds (they never run) and
        # a running block ends at its next round (dgbdt.dask.stop); not client.cancel, whose
        # walk over a unit's dependents asserts on round tasks nobody holds any more
        seam.release()
        raise
    booster.timings["quantize"] = quantize_seconds
    return {"booster": booster, "history": history}


#: each mode's strategy (dgbdt.dask.train's ``mode``; "auto" picks one: ``auto_mode``)
STRATEGIES = {"task": one_task, "collective": collective, "nccl": collective, "graph": graph}


# -- the one-task mode's worker side --------------------------------------------------------
def _concat_dataset(parts, intervals: bool = False) -> Dataset:
    """The parts' rows as one Dataset (an eval set here); ``intervals``: their [n, 2] labels
    are survival:aft's label bounds (else a 2-D label is one of several targets)."""
    parts = [p for p in parts if p.n_rows] or parts[:1]
    xp = array_module(parts[0].X)
    cat = (lambda xs: None if xs[0] is None else xp.concatenate(xs))
    d = Dataset(xp.concatenate([p.X for p in parts]), weight=cat([p.weight for p in parts]),
                base_margin=cat([p.base_margin for p in parts]))
    d.label = cat([p.label for p in parts])     # checked by the parts
    # the partitions' query ids: each partition's sorted, queries within one partition (the
    # DaskDataset checked), so contiguous here though not sorted across partitions
    d.qid = None if parts[0].qid is None else np.concatenate([p.qid for p in parts])
    if intervals and d.label is not None:       # survival:aft's intervals [n, 2]
        d.label_lower_bound, d.label_upper_bound = d.label[:, 0], d.label[:, 1]
    return d


def _train_in_task(p, cuts, base, booster, rounds, n_rows, train_parts, eval_sets,
                   early_stopping_rounds, verbose_eval, log_topic, callbacks=None, obj=None,
                   progress=None, linear=None):
    with training_task(p["nthread"]), log_to_client(log_topic):
        return _train_here(p, cuts, base, booster, rounds, n_rows, train_parts, eval_sets,
                           early_stopping_rounds, verbose_eval, callbacks, obj, progress,
                           linear, LetGo().reason)


def _train_here(p, cuts, base, booster, rounds, n_rows, train_parts, eval_sets,
                early_stopping_rounds, verbose_eval, callbacks=None, obj=None, progress=None,
                linear=None, halt=None):
    metrics = [get_metric(m, p) for m in
               (p["eval_metric"] or [get_objective(p["objective"], p).default_metric])]
    max_nodes = tree_max_nodes(p, n_rows)
    t = time.perf_counter()
    # one shard of all the worker's rows: per level one launch of each kernel instead of one
    # per partition (the model is the same: histograms are integer sums); a streamed dataset
    # arrives as shards already
    with gpu_memory_errors(p, "building this worker's pages"):
        shards, slots = local_shards(train_parts, cuts, max_nodes, base, p)
    objective = objective_on(get_objective(p["objective"], p), obj, shards)
    quantize_seconds = time.perf_counter() - t
    be = shards[0].be
    with device_scope(be):
        seam = LocalSeam(shards, cuts.hist_ptrs(), slots)
        xp = be.xp
        label = xp.concatenate([s.label for s in shards])
        weight = None if shards[0].weight is None else xp.concatenate([s.weight for s in shards])
        qid = None if shards[0].qid is None else np.concatenate([s.qid for s in shards])
        sources = [(SeamEval(seam, label, weight, None, qid) if parts is None
                    else DatasetEval(_concat_dataset(parts, p["objective"] == "survival:aft"),
                                     booster), name)
                   for parts, name in eval_sets]
        history: dict = {}
        try:
            with gpu_memory_errors(p, "training on this worker"):
                booster = boost(p, seam, cuts, booster, objective, metrics, rounds, sources,
                                early_stopping_rounds, history, verbose_eval, callbacks,
                                progress=progress, linear=linear, halt=halt)
        finally:    # its tree graphs' capture pool, to the next training
            seam.release_graphs()
    booster.timings["quantize"] = quantize_seconds
    booster.memory = seam.stream_stats()
    return booster, history


# -- what the strategies share --------------------------------------------------------------
def _client_log(client, verbose) -> ClientLog | None:
    """A ClientLog for the eval lines and the rounds (the progress bar this thread shows,
    dgbdt.progressbar) of a training that runs in worker tasks; None when neither is shown."""
    bar = progressbar.current()
    if not verbose and bar is None:
        return None
    return ClientLog(client, f"dgbdt-log-{uuid.uuid4().hex[:8]}", bar=bar)


@contextlib.contextmanager
def _closing(log: ClientLog | None):
    """Close the log after the training: after its last line when it finished, at once when
    it failed."""
    finished = False
    try:
        yield
        finished = True
    finally:
        if log is not None:
            log.close(finished)


# -- mode="auto" -----------------------------------------------------------------------------
def _by_gradient(p: dict) -> bool:
    """Whether the rows are sampled by gradient (dgbdt.engine.gradient_sampling)."""
    from ..engine.sampling import Sampling
    s = Sampling.from_params(p)
    return s is not None and s.by_gradient


def auto_mode(client, workers, p: dict) -> str:
    """What mode="auto" picks (see dgbdt.dask.train): one worker trains in one task; several
    meet in a collective (NCCL between GPUs, TCP between CPUs); GPUs without NCCL use the
    graph, except for what the graph does slowly (leaf-wise trees: a task hop a split;
    sampling by gradient: 3 hops a class a round) or does not do (the approximate method's
    sketch a tree), which meets in the TCP collective."""
    if len(set(workers)) == 1:
        return "task"
    if p["device"] != "cuda":
        return "collective"
    if _nccl_everywhere(client, workers):
        return "nccl"
    return "collective" if p["grow_policy"] == "lossguide" or _by_gradient(p) \
        or p["tree_method"] == "approx" or p["booster"] == "dart" else "graph"


def _nccl_everywhere(client, workers) -> bool:
    """Whether every worker holding data can run NCCL through CuPy."""
    from .collective import nccl_status
    status = client.run(nccl_status, workers=sorted(set(workers)))
    return all(v is None for v in status.values())
