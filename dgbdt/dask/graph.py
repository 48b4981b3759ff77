"""Graph mode: the boosting rounds as one Dask task graph, one level a task hop.

Each worker holding training rows keeps one ``WorkerUnit`` in its memory: a LocalSeam over its
shards (its partitions joined into one shard, or pages cut to ``device_memory_budget``) and its
copy of the tree in growth. A round is a static graph, submitted whole and ahead of time:

    hist_L0_w(grad_*)           every worker's gradient maxima give the fixed-point scale; the
                                tree starts; w's partial histograms of the root
    hist_Ld_w(hist_L(d-1)_*)    the sum of every worker's partials of level d-1's smaller
                                children (exact integers; each larger sibling is the merged
                                parent minus it), split evaluation, then w's partials of
                                level d's smaller children
    [leafsums_w(hist_L(D-1)_*)  linear trees: the last split evaluation; w's part of every
                                leaf's ridge sums (then finish_w reads every worker's)]
    [quantile_Ss_w(...)         the quantile losses: the last split evaluation, then one hop
                                per reduction of the leaves' exact quantile descent, every
                                worker's answers merged (dgbdt.dask.graph_leaves)]
    finish_w(hist_L(D-1)_*)     the last split evaluation; leaf values into w's margins;
                                worker 0's returns the tree; after a round's last tree, the
                                next round's gradients on w's rows and their maxima (grad_w;
                                the first round has a task of its own for them)
    [gather_w(finish_*)         survival:cox: the round's gradients from every worker's rows
                                (dgbdt.dask.graph_gradients), a hop a round]
    [sample_S*_w(...)           gradient-based sampling: its threshold over every worker's
                                rows, a hop per descent step (dgbdt.dask.graph_sampling)]

With one unit (one worker holds every training row) no level waits for another worker's
partials, so a round is one task: the in-process round on the unit's seam (gradients, then the
trees; CUDA graphs on a GPU), with the same model; a task hop a round instead of a level.
When no round's trees are read before the end (no eval set, no callbacks), 32 rounds go as
one task.

Every worker merges the same integer histograms and so grows the same tree (as the collective
ranks do), so a level costs one dependent task hop and the histograms travel worker to worker
(an all-gather through Dask), never through the client. Nothing inside a round waits on the
client; without evaluation sets the client submits every round at once and gathers the trees
at the end (the trees are futures until then); with them, it waits once per round for the
metrics early stopping needs (reduced by a tree-reduce of summaries over the workers).

Units are mutated in place by their tasks (pinned to their worker), as shards were before. A
worker that leaves takes its unit's state with it and its pinned tasks could never run: every
wait of the client is watched, and the attempt stops with ``GraphModeError`` naming the worker
within ``WATCH`` seconds. Every unit keeps the trees it finished (every unit grows the same
trees), so the error carries the survivors' model of the completed rounds and
dgbdt.dask.train resumes from it (dgbdt.dask.recovery).
"""
from __future__ import annotations

import collections
import functools
import operator
import uuid

import numpy as np

from ..model.margins import add_tree_margins
from ..engine.evaluation import EvalRows, merge, values, weight_scale
from ..kernels.fixedpoint import scale_for
from ..metrics.registry import get_metric
from ..objectives.leaf_quantiles import requests
from ..engine.boosting import TrainingHalted
from ..engine.seam import leaf_alpha_of
from .data import DaskDataset
from . import graph_sampling
from .graph_gradients import first_gradients, gathered, gathers_rows, timed_gradients
from .graph_sampling import sample_start, sample_step
from .graph_leaves import descent_start, descent_step, finish_request, leaf_sums
from .graph_unit import WorkerUnit, make_unit, merged, on, smalls, unit_objective
from .recovery import WATCH, WorkerLostError, alive_workers, watched_wait
from .reduce import by_worker, tree_reduce
from .stop import LetGo
from .worker import training_task

__all__ = ["DaskSeam", "GraphModeError", "TrainEval", "DatasetEval", "make_unit"]


class GraphModeError(WorkerLostError):
    """Graph-mode training could not go on: a worker holding a unit left the cluster."""


# -- tasks on the workers ----------------------------------------------------------------------
def _level(unit: WorkerUnit, nthread, start, after, *inputs):
    """One level on this worker. ``start`` = (spec, k, n_rows, epoch) at the root: ``inputs``
    are then every worker's gradient maxima; else they are every worker's partials of the last
    level. ``after``: this worker's previous tree's finish (a root after the first), for order."""
    with on(unit, nthread):
        if start is not None:
            spec, k, n_rows, epoch = start
            maxima = [i[1] for i in inputs]     # (tree or None, (max |g|, max h)) each
            if k is None:       # a vector-leaf tree: every target's scales
                max_g = np.max([np.asarray(m[0], np.float64) for m in maxima], axis=0)
                max_h = np.max([np.asarray(m[1], np.float64) for m in maxima], axis=0)
                unit.growth = spec.start_vector(
                    np.array([scale_for(float(v), n_rows) for v in max_g]),
                    np.array([scale_for(float(v), n_rows) for v in max_h]), epoch)
            else:
                max_g = max(float(m[0][k]) for m in maxima)
                max_h = max(float(m[1][k]) for m in maxima)
                unit.growth = spec.start(k, scale_for(max_g, n_rows),
                                         scale_for(max_h, n_rows), epoch)
            unit.parents = None
        else:
            if unit.growth.done:
                return None
            unit.growth.advance(merged(unit, inputs))
            if unit.growth.done:
                return None
        return smalls(unit)


def _finish(unit: WorkerUnit, nthread, want_tree: bool, next_gradients, *inputs):
    """The tree's leaf values (from the hop before: the last level's partials, or every
    worker's linear leaf sums or last quantile descent answers: graph_leaves.finish_request)
    into the unit's margins; returns (the tree on worker 0, else None; with ``next_gradients``
    ((objective spec, sampling, epoch), after a round's last tree) the next round's gradient
    maxima, computed here: one task hop less per round; or this unit's rows, for objectives
    whose gradients need every unit's: graph_gradients)."""
    with on(unit, nthread):
        g = unit.growth
        fin = finish_request(unit, inputs)
        unit.seam.finish(fin)
        unit.timers["split_evaluation"] += g.eval_seconds
        unit.growth = None
        tree = g.tree()
        unit.trees.append(tree)
        grads = None if next_gradients is None else timed_gradients(unit, next_gradients)
        return (tree if want_tree else None), grads


def _round(unit: WorkerUnit, nthread, grow, *after):
    """A whole round on the only unit (no other worker's partials to wait for between levels):
    the in-process round (LocalSeam.grow_round: gradients, then the K trees, as CUDA graphs on a
    GPU). ``grow`` = (objective spec, K, growth spec, epoch). Returns the round's trees."""
    objective_spec, K, spec, epoch = grow
    with on(unit, nthread):
        trees = unit.seam.grow_round(unit_objective(unit, objective_spec), K, spec, unit.timers,
                                     epoch)
        unit.trees.extend(trees)
        return trees


def _rounds(unit: WorkerUnit, nthread, grows, *after):
    """Several rounds on the only unit, one after the other (see ``_round``): ``grows`` holds
    each round's (objective spec, K, growth spec, epoch). Returns every round's trees, in
    order. A block is long: it ends early when the client lets go of it (dgbdt.dask.stop)."""
    let_go, trees = LetGo(), []
    for grow in grows:
        why = let_go.reason()
        if why is not None:
            raise TrainingHalted(f"graph-mode rounds stopped: {why}")
        trees.extend(_round(unit, nthread, grow))
    return trees


def _tree_of(finished):
    return finished[0]


def _unit_trees(unit: WorkerUnit) -> list:
    return list(unit.trees)


def _unit_times(unit: WorkerUnit, *after) -> dict:
    return {**unit.seam.stage_times(), **unit.timers}


# -- evaluation tasks --------------------------------------------------------------------------
def _summaries(margin, label, weight, scale, objective, metric_names, qid=None):
    """Per-metric summaries of some rows, on their device (dgbdt.engine.evaluation); ``qid``: their
    query ids (whole queries) for the ranking metrics."""
    metrics = [get_metric(m) for m in metric_names]
    return EvalRows(label, weight, scale, qid).summaries(objective,
                                                         metrics, margin)


def _merge(metric_names, *parts) -> list:
    """Merged summaries of several workers' rows (a tree-reduce step)."""
    return merge([get_metric(m) for m in metric_names], *parts)


def _values(metric_names, *parts) -> list[float]:
    """Metric values from the summaries of the last merge step (the tree-reduce's root)."""
    metrics = [get_metric(m) for m in metric_names]
    return values(metrics, merge(metrics, *parts))


def reduce_scores(client, parts, metric_names, fan_in: int, name: str):
    """The future of the metric values: summaries merged over the task graph; only floats
    reach the client."""
    return tree_reduce(client, parts, functools.partial(_merge, metric_names), fan_in, name,
                       final=_values, final_args=(metric_names,))


def _unit_summaries(unit: WorkerUnit, scale, objective, metric_names, *after):
    ss = unit.seam.shards
    xp = unit.be.xp
    with on(unit, None):
        if unit.seam.n_rows == 0:
            return None
        label = xp.concatenate([s.label for s in ss])
        weight = None if ss[0].weight is None else xp.concatenate([s.weight for s in ss])
        qid = None if ss[0].qid is None else np.concatenate([s.qid for s in ss])
        return _summaries(unit.seam.margins(), label, weight, scale, objective,
                          metric_names, qid)


class EvalPart:
    """An eval set's rows on one worker (its partitions joined) and their margins."""

    def __init__(self, parts, base):
        from .shards import concat_parts, start_of
        self.part = concat_parts(list(parts))
        self.margin = start_of(base).of(self.part.X, self.part.base_margin)


def _eval_part(base, *parts):
    return EvalPart(parts, base)


def _eval_summaries(ev: EvalPart, trees, classes, scale, objective, metric_names,
                    *after):
    if ev.part.n_rows == 0:
        return None
    with training_task(None, whole_training=False):
        add_tree_margins(ev.part.X, trees, classes, ev.margin)
        return _summaries(ev.margin, ev.part.label, ev.part.weight, scale, objective,
                          metric_names, ev.part.qid)


# -- on the client -----------------------------------------------------------------------------
def _scored(objective):
    """The Objective the metrics read margins through, with its parameters (several quantiles'
    margins are [n, K], one quantile's a column): a user's gradient function's configured
    objective (dgbdt.objectives.custom: everything but the gradients is that one's)."""
    return getattr(objective, "base", objective)


def _grads(objective, spec, epoch: int, j: int) -> tuple:
    """What a unit computes a set of trees' gradients from (dgbdt.dask.graph_gradients):
    (objective spec, sampling, round, (parallel tree j, P), its sampling draw)."""
    return (_spec(objective), spec.sampling, epoch, (j, spec.parallel), spec.draw(epoch, j))


def _spec(objective):
    """What the units need to rebuild the objective: the Objective (small; it carries its
    parameters), with a custom objective's function (dgbdt.objectives.custom)."""
    fn = getattr(objective, "fn", None)
    return objective if fn is None else (objective.base, fn)


class DaskSeam:
    """The graph-mode seam (see the module docstring): ``grow_round`` submits a round and
    returns the futures of its trees; the boosting loop may run a round ahead."""

    runs_ahead = True
    block_rounds = False      # set by the boosting loop when no round's trees are read before
    #                           the end (no eval set, no callbacks): a lone unit then grows
    #                           BLOCK rounds a task
    BLOCK = 32
    AHEAD = 4                 # submissions queued beyond the finished ones (``_bounded``)

    def __init__(self, client, units: dict, n_rows: int, fan_in: int, nthread,
                 weighted: bool = False):
        self.client, self.fan_in, self.nthread = client, fan_in, nthread
        self.weighted = weighted      # whether rows have weights (the quantile descent's hops)
        self.workers = list(units)
        self.units = [units[w] for w in self.workers]
        self.watched = set(self.workers)  # workers whose loss stops the training (eval sets')
        self.n_rows = int(n_rows)
        self.last = list(self.units)      # each unit's latest task: keeps per-unit order
        self.token = uuid.uuid4().hex[:8]
        self.n_trees = 0
        self.n_rounds = 0
        self.grads = None                 # futures holding each unit's gradient maxima
        self.queued: list = []            # one unit, blocks: rounds not submitted yet
        self.queued_trees: list = []      # their trees' Queued handles
        self.in_flight: collections.deque = collections.deque()  # submitted rounds' last tasks

    def wait(self, futures) -> None:
        """Wait for the futures, checking every WATCH seconds that every unit's worker (and
        eval part's) is still in the cluster (a lost unit's pinned tasks would wait for ever).
        No cancel on a loss: the tasks go when their futures are released, and cancelling the
        units also cancelled the recomputation of lost partitions (seen in the fault test)."""
        from distributed import Future
        futures = [f for f in self._submitted(futures) if isinstance(f, Future)]
        w = watched_wait(self.client, futures, self.watched)
        if w is not None:
            what = (f"the worker of unit {self.workers.index(w)} ({w})"
                    if w in self.workers else f"the worker {w} holding eval rows")
            raise GraphModeError(f"graph-mode training stopped: {what} left the cluster, and "
                                 "its training state with it", w)

    def survivors_trees(self) -> list | None:
        """The trees finished so far, from a unit whose worker is still here (None if none
        is): every unit grows the same trees, so any survivor has the whole model."""
        from distributed import wait
        alive = alive_workers(self.client)
        for i, w in enumerate(self.workers):
            if w not in alive:
                continue
            fut = self.client.submit(_unit_trees, self.units[i], workers=[w],
                                     allow_other_workers=False, pure=False)
            with self.client.as_current():
                try:
                    wait([fut], timeout=10 * WATCH)
                except TimeoutError:
                    continue
            if fut.status == "finished":
                return fut.result()
        return None

    def release(self) -> None:
        """Drop every future of the training (the units' memory goes with them)."""
        self.units, self.last, self.grads = [], [], None
        self.queued, self.queued_trees = [], []
        self.in_flight.clear()

    def _bounded(self) -> None:
        """Keep at most AHEAD submissions (rounds, or blocks of rounds) beyond those finished:
        with no eval set the loop never waits, and would submit every round of the training
        at once (tasks without end for the scheduler, and an interrupt that leaves them all
        queued)."""
        self.in_flight.append(list(self.last))
        while len(self.in_flight) > self.AHEAD:
            self.wait(self.in_flight.popleft())

    def trees_now(self, trees: list) -> list:
        """The round's trees for callbacks: fetched under watch (``result``)."""
        return self.result(list(trees))

    def result(self, futures):
        """The futures' results (a list for a list), waited for under watch. A result can be
        lost with its worker between the wait and the fetch (its task pinned there cannot run
        again): a fetch that has not answered within WATCH seconds goes back to the watched
        wait, which then raises GraphModeError (an unwatched gather hung tests/test_recovery.py)."""
        import asyncio
        from distributed import Future
        many = isinstance(futures, (list, tuple))
        items = self._submitted(list(futures) if many else [futures])
        while True:
            self.wait(items)
            try:
                out = [f.result(timeout=WATCH) if isinstance(f, Future) else f for f in items]
            except (TimeoutError, asyncio.TimeoutError):     # (distinct before Python 3.11)
                continue
            except UnboundLocalError:
                # the same timeout lost in a race: on Python 3.11 asyncio.wait_for can end a
                # fetch that completes as it times out with CancelledError, which
                # distributed's sync() then reports as its unassigned ``result`` (seen once
                # in CI on a loaded 2-core machine); the futures are intact: fetch again
                continue
            return out if many else out[0]

    def on_unit(self, i, fn, *args, key: str):
        return self.client.submit(fn, self.units[i], *args, workers=[self.workers[i]],
                                  allow_other_workers=False, pure=False,
                                  key=f"{key}-{self.token}")

    def grow_round(self, objective, K: int, spec, timers, epoch: int = 0) -> list:
        if len(self.units) == 1:
            return self._whole_round(objective, K, spec, epoch)
        r, W, nt = self.n_rounds, range(len(self.units)), self.nthread
        P = spec.parallel
        if spec.approx_bins:
            raise NotImplementedError(
                'tree_method="approx" in graph mode on several workers is not built (a sketch '
                'exchange a tree). Fix: mode="collective" (the same model), or '
                'tree_method="hist"')
        if P > 1 and (gathers_rows(objective) or (spec.sampling is not None
                                                  and spec.sampling.by_gradient)):
            raise NotImplementedError(
                "num_parallel_tree > 1 in graph mode on several workers takes uniform row "
                "sampling and objectives whose gradients are per row. Fix: mode=\"collective\" "
                "(the same model), or sampling_method=\"uniform\"")
        if self.grads is None:       # the first round; later ones come with the last finish
            self.grads = self._gathered(objective, spec, epoch, r, [
                self.on_unit(i, first_gradients, _grads(objective, spec, epoch, 0), nt,
                             self.last[i], key=f"dgbdt-grad-r{r}-w{i}") for i in W], K)
        grads = self.grads
        tspec = spec.forest_trees()
        sets, after = [], list(self.last)    # the unit's last task (a finish, or its eval)
        # a vector-leaf training (spec.targets) grows one tree (k = None) for the K outputs
        ks, last_k = ([None], None) if spec.targets else (range(K), K - 1)
        for j in range(P):
            trees = []
            for k in ks:
                t = self.n_trees
                parts = [self.on_unit(i, _level, nt, (tspec, k, self.n_rows, spec.draw(epoch, j)),
                                      after[i], *grads, key=f"dgbdt-hist-t{t}-L0-w{i}")
                         for i in W]
                # one hop a request; a tree that ends sooner (lossguide: no split left to gain)
                # passes the rest through as no-ops (_level on a done growth)
                for level in range(1, spec.max_requests()):
                    parts = [self.on_unit(i, _level, nt, None, None, *parts,
                                          key=f"dgbdt-hist-t{t}-L{level}-w{i}") for i in W]
                parts = self._leaf_hops(parts, spec, None if k is None
                                        else leaf_alpha_of(objective, k), t)
                # after a set's last tree: the next set's gradients (a forest), or the next
                # round's
                following = None if k != last_k else _grads(objective, spec, epoch, j + 1) \
                    if j < P - 1 else _grads(objective, spec, epoch + 1, 0)
                after = [self.on_unit(i, _finish, nt, i == 0, following,
                                      *parts, key=f"dgbdt-finish-t{t}-w{i}") for i in W]
                trees.append(self.client.submit(_tree_of, after[0], pure=False,
                                                key=f"dgbdt-tree-t{t}-{self.token}"))
                self.n_trees += 1
            sets.append(trees)
            if j < P - 1:
                grads = after
        trees = [sets[j][k] for k in range(len(ks)) for j in range(P)]
        self.last = after
        self.grads = self._gathered(objective, spec, epoch + 1, r + 1, after, K)
        self.n_rounds += 1
        self._bounded()
        return trees

    def _leaf_hops(self, parts, spec, alpha, t: int) -> list:
        """The hops between a tree's last level and its finish (dgbdt.dask.graph_leaves): one
        for linear leaves' sums; for the quantile losses' leaves (``alpha``) one per exchange
        of their descent; none for constant Newton leaves."""
        W, nt = range(len(self.units)), self.nthread
        if getattr(spec, "linear", None) is not None:
            return [self.on_unit(i, leaf_sums, nt, *parts, key=f"dgbdt-leafsums-t{t}-w{i}")
                    for i in W]
        if alpha is None:
            return parts
        parts = [self.on_unit(i, descent_start, nt, alpha, *parts,
                              key=f"dgbdt-quantile-t{t}-S0-w{i}") for i in W]
        for step in range(1, requests(self.weighted)):
            parts = [self.on_unit(i, descent_step, nt, *parts,
                                  key=f"dgbdt-quantile-t{t}-S{step}-w{i}") for i in W]
        return parts

    def _gathered(self, objective, spec, epoch: int, r: int, results: list, K: int) -> list:
        """The futures holding each unit's gradient maxima for round ``epoch``: ``results``
        (finishes', or the first round's gradient tasks') themselves, or for an objective
        whose gradients need every unit's rows (dgbdt.dask.graph_gradients) a hop more, each
        unit's gradients from every unit's rows in ``results``; with gradient-based sampling
        the 3 K + 1 hops of its threshold (K classes; dgbdt.dask.graph_sampling) after
        those."""
        W = range(len(self.units))
        if gathers_rows(objective):
            grads = _grads(objective, spec, epoch, 0)
            results = [self.on_unit(i, gathered, grads, self.nthread, *results,
                                    key=f"dgbdt-gather-r{r}-w{i}") for i in W]
        s = spec.sampling
        if s is None or not s.by_gradient:
            return results
        # gradient-based sampling: its threshold's descent, a hop a step (graph_sampling)
        results = [self.on_unit(i, sample_start, self.nthread, s, epoch, self.n_rows,
                                *results, key=f"dgbdt-sample-r{r}-S0-w{i}") for i in W]
        for step in range(1, graph_sampling.hops(K) + 1):
            results = [self.on_unit(i, sample_step, self.nthread, *results,
                                    key=f"dgbdt-sample-r{r}-S{step}-w{i}") for i in W]
        return results

    def _whole_round(self, objective, K: int, spec, epoch: int) -> list:
        """One unit: the round is one task (levels need no other worker's partials, so they
        need no task hop); its trees are futures of items of its result. With
        ``block_rounds``, rounds are queued and BLOCK of them go as one task (a task hop
        costs a sizable part of a GPU round:
        docs/benchmarks-archive.md#figures-behind-code-choices); the trees are
        ``Queued`` handles until then (``result`` and ``wait`` submit what is queued)."""
        grow = (_spec(objective), K, spec, epoch)
        n = (1 if spec.targets else K) * spec.parallel      # the round's trees
        if not self.block_rounds:
            self._flush()
            r = self.n_rounds
            fut = self.on_unit(0, _round, self.nthread, grow, self.last[0],
                               key=f"dgbdt-round-r{r}-w0")
            trees = self._items(fut, n)
            self.n_rounds += 1
            self._bounded()
            return trees
        self.queued.append(grow)
        trees = [Queued() for _ in range(n)]
        self.queued_trees.extend(trees)
        if len(self.queued) >= self.BLOCK:
            self._flush()
        return trees

    def _items(self, fut, n: int) -> list:
        """Futures of the ``n`` trees of a round task's result; the task is the unit's last."""
        trees = [self.client.submit(operator.getitem, fut, k, pure=False,
                                    key=f"dgbdt-tree-t{self.n_trees + k}-{self.token}")
                 for k in range(n)]
        self.last = [fut]
        self.n_trees += n
        return trees

    def _flush(self) -> None:
        """Submit the queued rounds as one task; their Queued handles get its trees' futures."""
        if not self.queued:
            return
        r = self.n_rounds
        fut = self.on_unit(0, _rounds, self.nthread, self.queued, self.last[0],
                           key=f"dgbdt-rounds-r{r}-{r + len(self.queued) - 1}-w0")
        for handle, tree in zip(self.queued_trees, self._items(fut, len(self.queued_trees))):
            handle.future = tree
        self.n_rounds += len(self.queued)
        self.queued, self.queued_trees = [], []
        self._bounded()

    def _submitted(self, items: list) -> list:
        """``items`` with each Queued handle replaced by its tree's future (submitting the
        queued rounds first)."""
        if any(isinstance(i, Queued) for i in items):
            self._flush()
        return [i.future if isinstance(i, Queued) else i for i in items]

    def drain(self) -> None:
        """Nothing to wait for here: evaluation tasks follow each unit's last task."""

    def stage_times(self) -> dict[str, float]:
        """Stage seconds summed over the workers; split evaluation (the same on every worker)
        as worker 0 spent it."""
        self._flush()
        times = self.result([self.on_unit(i, _unit_times, self.last[i],
                                          key=f"dgbdt-times-w{i}")
                             for i in range(len(self.units))])
        out: dict[str, float] = {}
        for d in times:
            for k, v in d.items():
                if k != "split_evaluation":
                    out[k] = out.get(k, 0.0) + v
        out["split_evaluation"] = times[0].get("split_evaluation", 0.0)
        return out


class Queued:
    """A tree of a round queued on the seam, not submitted yet (DaskSeam.block_rounds):
    ``future`` is set when its block is submitted."""

    __slots__ = ("future",)

    def __init__(self):
        self.future = None


class Watched:
    """A future whose ``result()`` is waited for under the seam's watch."""

    def __init__(self, seam: DaskSeam, future):
        self.seam, self.future = seam, future

    def result(self):
        return self.seam.result(self.future)


class TrainEval:
    """The training set in evals: metrics from the units' own margins."""

    def __init__(self, seam: DaskSeam, d: DaskDataset):
        self.seam, self.scale = seam, weight_scale(d.max_weight, d.num_row)

    def scores(self, booster, new_trees, objective, metrics):
        return self.submit_scores(booster, new_trees, objective, metrics).result()

    def submit_scores(self, booster, new_trees, objective, metrics):
        s, names = self.seam, list(metrics)     # Metrics (with their parameters), not names
        parts = [s.on_unit(i, _unit_summaries, self.scale, _scored(objective), names, s.last[i],
                           key=f"dgbdt-eval-train-r{s.n_rounds}-w{i}")
                 for i in range(len(s.units))]
        s.last = parts        # the next round's tasks on a unit wait for its margins' reading
        return Watched(s, reduce_scores(s.client, parts, names, s.fan_in,
                                        f"dgbdt-eval-train-r{s.n_rounds}"))


class DatasetEval:
    """A DaskDataset eval set: each worker's partitions joined, margins advanced by the new
    trees (passed as futures: they need not reach the client)."""

    def __init__(self, seam: DaskSeam, d: DaskDataset, base, fan_in: int):
        client = seam.client
        self.seam, self.client, self.fan_in, self.rounds = seam, client, fan_in, 0
        self.scale = weight_scale(d.max_weight, d.num_row)
        groups = by_worker(d.persisted_parts(), d.workers_of_parts())
        self.workers = list(groups)
        seam.watched.update(self.workers)     # its tasks are pinned there too
        self.parts = [client.submit(_eval_part, base, *groups[w], workers=[w],
                                    allow_other_workers=False, pure=False)
                      for w in self.workers]
        self.last = [None] * len(self.parts)

    def scores(self, booster, new_trees, objective, metrics):
        return self.submit_scores(booster, new_trees, objective, metrics).result()

    def submit_scores(self, booster, new_trees, objective, metrics):
        names = list(metrics)                   # Metrics (with their parameters), not names
        trees = [booster.trees[i] for i in new_trees]
        classes = [booster.tree_class[i] for i in new_trees]
        self.rounds += 1
        # after this part's previous round: margins advance tree by tree, in order
        parts = [self.client.submit(_eval_summaries, p, trees, classes, self.scale,
                                    _scored(objective), names,
                                    *([a] if a is not None else []),
                                    workers=[w], allow_other_workers=False, pure=False,
                                    key=f"dgbdt-eval-r{self.rounds}-w{i}-{uuid.uuid4().hex[:8]}")
                 for i, (p, w, a) in enumerate(zip(self.parts, self.workers, self.last))]
        self.last = parts
        return Watched(self.seam, reduce_scores(self.client, parts, names, self.fan_in,
                                                f"dgbdt-eval-r{self.rounds}"))
