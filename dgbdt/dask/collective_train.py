"""The collective modes of dgbdt.dask.train: one long task per worker, all-reduces between them.

Each worker that holds training rows is one *rank*. Its task joins the worker's partitions into
one shard (on its GPU for GPU data) and runs dgbdt.engine.boosting.boost over ``CollectiveSeam``: the
local seam whose reductions are collectives (dgbdt.dask.collective: NCCL between GPU workers,
TCP between CPU workers). Per round the ranks all-reduce the gradient maxima (one global
fixed-point scale; on GPUs a queued NCCL max the host reads only with the round's trees);
per level they all-reduce the int64 histograms (linear trees: their 9-sum
payload, and the leaves' ridge sums), exact in any order, so every rank evaluates the same
splits, grows the same tree and partitions its own rows. No task hop, no scheduler and no
client round trip sits inside the loop. Rank 0 returns the booster; all ranks hold copies.

Set-up: the ranks meet through the scheduler and connect; each rank's process keeps the
communicator of its last successful training for the next one on the same workers
(dgbdt.dask.comm_cache: a notebook's second fit skips NCCL's initialisation).

The quantile sketch and the base score are reduced once, before, through the task graph
(dgbdt.dask.data), as in graph mode, so the cuts and hence the model are the same in every mode.

Failure: a rank that raises sets the training's abort flag (a distributed.Event) and aborts its
communicator; the client sets the flag when a rank's task errs or its worker leaves the
cluster. Ranks waiting in a collective see the flag within ABORT_POLL seconds (or their own
``collective_timeout``), abort, and end with CollectiveError; the client cancels what is left
and raises the first real error. The cluster stays usable; the training must be restarted.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import time
import uuid

import numpy as np

from ..backends import array_ops
from ..backends.device import array_module, device_scope, own_stream, to_host
from ..callback import log_to_client
from ..data.page_store import gpu_memory_errors
from ..metrics.registry import get_metric
from ..objectives.registry import get_objective
from ..engine import approx
from ..engine.exchange import run
from ..engine.seam import LocalSeam
from ..tree import linear_device, tree_graph
from ..tree.linear_growth import level_payload, merged_level
from ..tree.spec import max_nodes as tree_max_nodes
from ..engine.boosting import boost
from .collective import ABORT_POLL, RECOVERY_HINT, CollectiveError
from .collective_scores import collective_scores_later, rank_rows
from .placement import by_rank, placed, rank_workers, used_ranks
from ..objectives.custom import objective_on
from . import comm_cache
from .rank_connect import comm_key, connect
from .recovery import WorkerLostError, alive_workers, later, outcome
from .shards import concat_parts, local_shards, start_of
from .stop import LetGo
from .worker import training_task

__all__ = ["CollectiveSeam", "train_rank", "train_collective"]

logger = logging.getLogger("dgbdt.dask")


class CollectiveSeam(LocalSeam):
    """The local seam of one rank; gradient maxima and level histograms are reduced over ranks.

    ``n_rows`` is the global row count (it sets the fixed-point scale, as in every mode).
    """

    @property
    def graph_trees(self) -> bool:
        """NCCL's all-reduces are kernels on the stream, so a device-grown tree, all-reduces
        and all, is captured and replayed as one CUDA graph (dgbdt.tree.tree_graph) like an
        in-process one, and its launch is watched (abort, timeout) as one queued all-reduce
        is; TCP's reductions run on the host, so those trees grow level by level
        (DGBDT_NCCL_GRAPHS=0 turns it off: dgbdt.tree.tree_graph.collective_enabled)."""
        return self.comm.capturable and tree_graph.collective_enabled()

    @property
    def scores_lag(self) -> int:
        """NCCL runs a communicator's collectives in the order queued, so a round's eval gather,
        queued behind the next round's trees, ends when that tree ends: the loop reads round
        r's scores after round r + 2's trees are queued (two rounds behind), not r + 1's, so
        the device has a tree to work on while the host reads (figures: docs/benchmarks.md,
        "An eval set on several GPUs"). TCP's complete at the call: one round."""
        return 2 if self.comm.queues_results else 1

    def __init__(self, shards, hist_ptrs, comm, n_rows: int, slots: int = 2):
        super().__init__(shards, hist_ptrs, slots)
        self.comm, self.n_rows = comm, int(n_rows)
        self._parents = None     # the previous level's merged histograms

    def device_maxima(self, objective, wait: bool = False):
        """The ranks' maxima merged on the device: NCCL's max of their float64 bits (ordered
        as the values: none is negative), queued (settle() watches it with the tree after
        it) or, ``wait``, waited for; the same NCCL call either way. None over TCP, on CPUs."""
        mx = super().device_maxima(objective) if self.comm.capturable else None
        if mx is not None:
            self.comm.allreduce(mx.view(np.int64), "max", wait=wait)
        return mx

    def compute_gradients(self, objective):
        # the round's first host read: the previous round's trees may still be queued
        # (engine.boosting reads them a round late), behind a peer that may be stuck
        self.comm.watch_queued()
        mx = self.device_maxima(objective, wait=True)
        if mx is not None:
            both = to_host(mx).view(np.float64)
            return both[0], both[1]
        max_g, max_h = super().compute_gradients(objective)
        both = self.comm.allreduce_host(np.concatenate([max_g, max_h]).astype(np.float64), "max")
        k = len(max_g)
        return both[:k], both[k:]

    def reduce_host(self, a, op):
        return self.comm.allreduce_host(a, op)

    def merge_summaries(self, local, max_keys: int):
        """Every rank's sketch summary merged (exact: dgbdt.data.sketch), from an all-gather
        of their bytes (tree_method="approx", dgbdt.engine.approx)."""
        mine = approx.summaries_bytes(local)
        counts = self.comm.rank_counts(mine.shape[0])
        return approx.merged_bytes(self.comm.allgather_rows(mine, counts), counts, max_keys)

    def _compact_seam(self, shards):
        """The compact shards' seam (dgbdt.engine.sampled_rounds): their levels all-reduced as these."""
        from ..engine.sampled_rounds import recording
        seam = recording(CollectiveSeam)(shards, self.hist_ptrs, self.comm, self.n_rows)
        seam.records = []
        return seam

    def level(self, request):
        """The level's merged histograms [small + large, S, 2] with half the traffic: only the
        smaller children are all-reduced; each larger sibling is the merged parent (kept from
        the previous level) minus the merged smaller child, exact in integers, so the same
        as summing every rank's own sibling."""
        local = super().level(request)
        if request.linear is not None:       # linear trees: 9 sums a slot, p~ pass of large
            merged = merged_level(self.comm.allreduce(level_payload(local, request), "sum"),
                                  request, self._parents)
            self._parents = merged if request.keep else None
            return merged
        m = len(request.small)
        # a copy: the shards keep their own partials (they derive siblings from them). A
        # device-grown tree (its requests are device arrays) does not wait for the sums: the
        # next level's kernels follow them on the stream, and settle() watches them at the
        # tree's end; the host grower reads them at once, so it waits here (watched)
        device = hasattr(request.small, "__cuda_array_interface__")
        small = self.comm.allreduce(array_ops.copy(local[:m]), "sum", wait=not device)
        if len(request.large):
            merged = self.shards[0].be.siblings(small, self._parents, request.parent_slot)
        else:
            merged = small
        self._parents = merged if request.keep else None
        return merged

    def leaf_sums(self, request):
        """A linear tree's leaf ridge sums [leaves, D + 1, D + 2] over every rank's rows
        (fixed-point integers, all-reduced: exact in any order)."""
        local = super().leaf_sums(request)
        return self.comm.allreduce(array_module(local).ascontiguousarray(local).copy(), "sum")

    def captures(self, growth) -> bool:
        """Linear trees' levels and leaf sums are all-reduced with a host wait (their sums
        feed the host's checks and solve), which a graph cannot record: they grow level by
        level; the others' all-reduces are only enqueued (level())."""
        return not isinstance(growth, linear_device.DeviceLinearGrowth)

    def capture_start(self):
        return self.comm.captured

    def capture_end(self, mark):
        calls, n_bytes = self.comm.captured
        return calls - mark[0], n_bytes - mark[1]

    def launch_graph(self, graph, held) -> None:
        stream = self.comm.xp.cuda.get_current_stream()
        self.comm.launch_watched(lambda: graph.launch(stream=stream), *held)

    def settle(self):
        """Watch the all-reduces a device-grown tree enqueued (before the host waits on it)."""
        self.comm.settle()

    def settle_later(self):
        return self.comm.settle_later()

    def _quantiles(self, alpha, values, weights):
        """The leaves' quantiles over every rank's rows: each step of the descent's sums
        all-reduced (the exchange of dgbdt.objectives.leaf_quantiles), so every rank finds the
        in-process values."""
        from ..objectives.leaf_quantiles import QuantileDescent
        return run(QuantileDescent(alpha, values, weights), self.comm.allreduce_host).values


class _TrainScores:
    """The training set in evals: each rank's shard margins."""

    def __init__(self, comm, seam: CollectiveSeam):
        ss, xp = seam.shards, comm.xp
        self.comm, self.seam = comm, seam
        self.rows = rank_rows(comm, xp.concatenate([s.label for s in ss]),
                              None if ss[0].weight is None
                              else xp.concatenate([s.weight for s in ss]),
                              None if ss[0].qid is None
                              else np.concatenate([s.qid for s in ss]))

    _margin = None       # set on a snapshot (see SeamEval.snapshot)

    def snapshot(self) -> "_TrainScores":
        out = copy.copy(self)
        out._margin = self.seam.margins()
        return out

    def submit_scores(self, booster, new_trees, objective, metrics):
        margin = self.seam.margins() if self._margin is None else self._margin
        return collective_scores_later(self.comm, self.rows, margin, objective, metrics)


class _EvalScores:
    """An eval set: this rank's share of its partitions, margins advanced by the new trees."""

    def __init__(self, comm, part, base, n_outputs: int):
        from ..model.margins import add_tree_margins
        self.comm, self.add = comm, add_tree_margins
        xp = comm.xp
        qid = None
        if part is None:      # this rank holds none of the set's rows
            self.X, label, weight = None, xp.zeros(0), None
            self.margin = xp.zeros((0, n_outputs))
        else:
            self.X, label, weight, qid = part.X, part.label, part.weight, part.qid
            self.margin = start_of(base).of(part.X, part.base_margin, xp)
        self.rows = rank_rows(comm, label, weight, qid)

    def submit_scores(self, booster, new_trees, objective, metrics):
        if self.X is not None and self.X.shape[0]:
            self.add(self.X, *booster.round_trees(new_trees), self.margin)
        return collective_scores_later(self.comm, self.rows, self.margin, objective, metrics)


def train_rank(comm, p, cuts, base, booster, rounds: int, n_rows: int, train_parts,
               eval_sets, early_stopping_rounds, verbose_eval, callbacks=None, obj=None,
               progress=None, linear=None):
    """One rank's training over ``comm`` (the body of a rank's task; the tests run it in
    threads). train_parts: this rank's Parts; eval_sets: (this rank's Parts of the set, or None
    for the training set itself, name). Returns (booster, history), the same on every rank.
    ``progress`` (dgbdt.engine.progress.Progress) is kept up to date, and resumed when started.
    ``linear``: the LinearSpec of piecewise-linear trees (the shards keep their raw rows)."""
    objective = get_objective(p["objective"], p)
    metrics = [get_metric(m, p) for m in (p["eval_metric"] or [objective.default_metric])]
    t = time.perf_counter()
    with gpu_memory_errors(p, f"building rank {comm.rank}'s pages"):
        shards, slots = local_shards(train_parts, cuts, tree_max_nodes(p, n_rows), base, p)
    objective = objective_on(get_objective(p["objective"], p), obj, shards)
    quantize_seconds = time.perf_counter() - t
    with device_scope(shards[0].be):
        seam = CollectiveSeam(shards, cuts.hist_ptrs(), comm, n_rows, slots)
        sources = [(_TrainScores(comm, seam) if parts is None else
                    _EvalScores(comm, concat_parts(parts) if parts else None, base,
                                booster.n_outputs), name)
                   for parts, name in eval_sets]
        history: dict = {}
        t = time.perf_counter()
        try:
            with gpu_memory_errors(p, f"training on rank {comm.rank}"):
                booster = boost(p, seam, cuts, booster, objective, metrics, rounds, sources,
                                early_stopping_rounds, history,
                                verbose_eval if comm.rank == 0 else False, callbacks,
                                progress=progress, linear=linear)
        finally:        # before the communicator is kept, closed or aborted
            seam.release_graphs()
    # the boosting loop's wall time: the stages plus what no stage timer covers (the first
    # trees' captures, reading the trees, the host between launches)
    booster.timings["boost_loop"] = time.perf_counter() - t
    booster.timings["quantize"] = quantize_seconds
    booster.memory = seam.stream_stats()
    booster.timings["collectives"] = comm.seconds
    booster.timings["communication"] = comm.comm_seconds
    booster.timings["communication_bytes"] = float(comm.n_bytes)
    booster.timings["communication_calls"] = float(comm.calls)
    # all-reduces inside trees replayed as CUDA graphs: in "communication" only when eager
    booster.timings["communication_graph_calls"] = float(comm.graph_calls)
    return booster, history


# -- on the workers ----------------------------------------------------------------------------
class _Flag:
    """The training's abort flag, from inside a rank's task (distributed.Event + a reason)."""

    def __init__(self, name: str):
        from distributed import Event, Variable
        self.event, self.why = Event(name), Variable(name + "-reason")

    def set(self, reason: str) -> None:
        try:
            if not self.event.is_set():
                self.why.set(reason)
            self.event.set()
        except Exception:   # best effort: the cluster may be going down
            pass

    def reason(self):
        if not self.event.is_set():
            return None
        try:
            return self.why.get(timeout=1)
        except Exception:
            return "another rank or the client stopped the training"


class Interrupted:
    """What a rank stopped by another's failure returns: why, and its progress (cut to the
    completed rounds, which every rank shares), from which the training can resume."""

    def __init__(self, reason: str, progress):
        self.reason, self.progress = reason, progress


def _rank_task(rank, ranks, token, timeout, p, cuts, base, booster, rounds, n_rows,
               train_parts, eval_sets, early_stopping_rounds, verbose_eval, log_topic,
               callbacks=None, obj=None, progress=None, linear=None):
    from distributed import get_worker

    from ..backends.device import get_backend
    from ..engine.progress import Progress
    n_ranks = len(ranks)
    flag = _Flag(f"{token}-abort")
    let_go = LetGo()
    if let_go.in_task:
        # out of the worker's thread pool: a rank waits for the others for a whole training,
        # and two trainings sharing one-thread workers would each wait for a thread the
        # other's rank holds (the worker starts another pool thread meanwhile)
        from distributed import secede
        secede()

    def stop_reason():     # cheap question first: the client's, then the other ranks'
        return let_go.reason() or flag.reason()
    comm = None
    # rank 0 writes the checkpoints (dgbdt.engine.checkpoint), the others hold the same model
    progress = Progress() if progress is None else dataclasses.replace(
        progress, sink=progress.sink if rank == 0 else None)
    prior_rounds = booster.num_boosted_rounds() - (progress.rounds if progress.started else 0)
    t_task = time.perf_counter()
    try:
        backend = get_backend(p["device"])
        # its own stream: NCCL kernels left waiting for a lost peer must not hold up the
        # worker's other device work (own_stream says what that did)
        with training_task(p["nthread"]), device_scope(backend), own_stream(backend), \
                log_to_client(log_topic if rank == 0 else None):
            try:
                key = comm_key(p, ranks, rank)
                t = time.perf_counter()
                preload: dict = {}
                comm, ident = connect(p, rank, n_ranks, token, timeout, key,
                                       stop_reason, preload)
                comm.halt = let_go.reason
                connect_seconds = time.perf_counter() - t
                out = train_rank(comm, p, cuts, base, booster, rounds, n_rows, train_parts,
                                 eval_sets, early_stopping_rounds, verbose_eval, callbacks, obj,
                                 progress, linear)
            except BaseException as e:
                # tell the others and end this rank's collectives before leaving the device
                # scope: leaving it may free pooled memory, and cudaFree waits for the whole
                # device, behind an all-reduce that a stopped peer will never answer
                what = ("stopped" if isinstance(e, CollectiveError)
                        else f"failed: {type(e).__name__}")
                flag.set(f"rank {rank} on {get_worker().address} {what}: {e}")
                if comm is not None:
                    comm.abort()
                raise
        if comm.park():
            comm_cache.keep(key, ident, comm)
        else:
            comm.close()
        out[0].timings["connect"] = connect_seconds
        out[0].timings.update(preload)
        # the task's time on the worker: connect + quantize + boost_loop + the rest (the
        # training's set-up, the communicator kept)
        out[0].timings["rank_task"] = time.perf_counter() - t_task
        return out if rank == 0 else None
    except CollectiveError as e:
        # stopped by another rank's failure, a lost peer or the client: the rounds completed
        # so far are every rank's, and the client may resume from them
        return Interrupted(str(e), progress.frozen(prior_rounds) if progress.started else None)


# -- on the client -----------------------------------------------------------------------------
def train_collective(client, p, cuts, base, booster, rounds, dtrain, units, workers, evals,
                     early_stopping_rounds, verbose_eval, timeout: float,
                     log_topic: str | None = None, callbacks=None, obj=None, progress=None,
                     linear=None):
    """Run the collective training over the workers holding dtrain's rows (see the module
    docstring); cuts: the Cuts or their future (each rank's task then reads them where it
    runs, and the client need not fetch them); units: futures of dtrain's parts (or of its
    shards, when streamed) and the worker holding each; rank 0's eval lines go to
    ``log_topic`` (dgbdt.callback.ClientLog); ``progress``: where to resume
    (dgbdt.engine.progress); ``linear``: the LinearSpec of linear trees
    (dgbdt.kernels.linear_math), or None. Returns (booster, history); raises
    WorkerLostError with the survivors' progress when a rank's worker leaves."""
    from distributed import Event, Variable

    # empty partitions add nothing (and a streamed one is a shard that should not travel)
    units, workers, rows = zip(*[(u, w, n) for u, w, n in zip(units, workers, dtrain.part_rows)
                                 if n])
    # a streamed dataset's units are shards built where their rows were read: they stay
    ranks = rank_workers(client, p, workers, dtrain.persisted)
    ranks, owners = used_ranks(ranks, placed(p, rows, workers, ranks, dtrain.persisted,
                                             "the training rows"))
    n_ranks = len(ranks)
    train_by_rank = by_rank(units, owners, n_ranks)
    evals_by_rank = []
    for d, name in evals:
        if d is dtrain:
            evals_by_rank.append((None, name))
            continue
        parts = d.persisted_parts()
        owners = placed(p, d.part_rows, d.workers_of_parts(), ranks, True,
                         f"eval set {name!r}")
        evals_by_rank.append((by_rank(parts, owners, n_ranks), name))
    token = f"dgbdt-collective-{uuid.uuid4().hex[:8]}"
    futures = [client.submit(
        _rank_task, r, list(ranks), token, timeout, p, cuts, base, booster, rounds,
        dtrain.num_row, train_by_rank[r],
        [(None if by is None else by[r], name) for by, name in evals_by_rank],
        early_stopping_rounds, verbose_eval, log_topic, callbacks, obj, progress, linear,
        workers=[w],
        allow_other_workers=False, pure=False, key=f"{token}-rank{r}")
        for r, w in enumerate(ranks)]
    flag, why = Event(f"{token}-abort", client=client), Variable(f"{token}-abort-reason",
                                                                  client=client)
    seen: dict = {"submitted": time.perf_counter()}
    try:
        booster, history = _watch(client, futures, ranks, flag, why, timeout, seen)
        # the client's side of the ranks' end (figures: docs/benchmarks.md, issue 46): from
        # the submit until it saw every rank finished, then rank 0's result fetched
        if "fetched" in seen:       # not after a loss that rank 0 outlived
            booster.timings["client_ranks_seen"] = seen["finished"] - seen["submitted"]
            booster.timings["client_result"] = seen["fetched"] - seen["finished"]
        return booster, history
    finally:
        done = all(f.status != "pending" for f in futures)
        client.cancel(futures)
        if done:  # the scheduler forgets cleared events; a rank still running keeps the flag
            _forget(client, token, n_ranks)


def _forget(client, token: str, n_ranks: int) -> None:
    """Clear a finished training's abort flag and delete its variables on the scheduler,
    without waiting: a variable's delete is a message, and the flag's clear (a round trip
    at the fit's end when it blocked) is sent from the client's event loop."""
    from distributed import Variable
    try:
        for name in [f"{token}-kept-{r}" for r in range(n_ranks)] + [
                f"{token}-abort-reason", f"{token}-root", f"{token}-uid"]:
            Variable(name, client=client).delete()

        async def clear():
            try:
                await client.scheduler.event_clear(name=f"{token}-abort")
            except Exception:  # noqa: BLE001  (best effort: the cluster may be going down)
                pass
        client.loop.add_callback(clear)
    except Exception:  # noqa: BLE001  (best effort: the cluster may be going down)
        pass


def _watch(client, futures, ranks, flag, why, timeout, seen):
    """Wait for the ranks; on the first failure stop them all and raise a clear error:
    WorkerLostError with the survivors' progress when a rank's worker left the cluster (the
    training can resume from it), the rank's own error when one failed. ``seen`` gets the
    client's clock when every rank was seen finished and when rank 0's result was in hand."""
    outcomes: dict = {}     # a finished rank's result, fetched once: a round trip to its worker

    def result(r):
        if r not in outcomes:
            outcomes[r] = outcome(futures[r])
        return outcomes[r]
    gone: list = []
    while True:
        pending = [f for f in futures if f.status == "pending"]
        if pending:
            _wait(client, pending, ABORT_POLL, "FIRST_COMPLETED")
        if all(f.status == "finished" for f in futures):
            seen["finished"] = time.perf_counter()
            out = result(0)
            seen["fetched"] = time.perf_counter()
            if out is not None and not isinstance(out, Interrupted):
                return out
            if out is None:       # rank 0's result went with its worker (looked for below)
                failed = [0]
                break
        failed = [r for r, f in enumerate(futures) if f.status in ("error", "cancelled", "lost")]
        if failed:
            break
        # ranks that just finished: the others are finishing too, and a question to the
        # scheduler (or a finished rank's result: a round trip to its worker) each time put
        # the client's sight of the last one 10-40 ms late (4 GPUs); a wait that timed out,
        # or nothing left to wait for, asks whether a finished rank stopped early (then the
        # others wait for it in a collective until they see the abort flag) or a worker left
        if pending and any(f.status == "finished" for f in pending):
            continue
        failed = [r for r, f in enumerate(futures)
                  if f.status == "finished" and isinstance(result(r), Interrupted)]
        if failed:
            break
        alive = alive_workers(client)
        gone = [r for r, w in enumerate(ranks) if w not in alive]
        if gone:
            break
    reason = (f"the worker of rank {gone[0]} ({ranks[gone[0]]}) left the cluster" if gone
              else f"rank {failed[0]} failed")
    if not flag.is_set():
        why.set(reason)
        flag.set()
    # the other ranks see the flag within ABORT_POLL seconds and stop; their error messages
    # are worth a short wait, not a long one
    _wait(client, [f for r, f in enumerate(futures) if r not in gone],
          min(timeout, 10.0) + 2.0, "ALL_COMPLETED")
    running = [r for r, f in enumerate(futures) if r not in gone and f.status == "pending"]
    if running:     # it still holds its device and communicator: a next attempt there may wait
        logger.warning("dgbdt.dask.train: after %s, rank(s) %s (%s) had not stopped %.0f s "
                       "after the stop signal", reason, running,
                       ", ".join(ranks[r] for r in running), min(timeout, 10.0) + 2.0)
    if not gone:      # a dead peer is often first seen by a rank, as an NCCL error
        alive = alive_workers(client)
        gone = [r for r, w in enumerate(ranks) if w not in alive]
        if gone:
            reason = f"the worker of rank {gone[0]} ({ranks[gone[0]]}) left the cluster"
    for f in futures:     # the first real error, not a rank that stopped because of it
        if f.status == "error" and not isinstance(f.exception(), CollectiveError):
            f.result()
    outs = [result(r) if f.status == "finished" else outcome(f) for r, f in enumerate(futures)]
    if outs[0] is not None and not isinstance(outs[0], Interrupted):
        return outs[0]       # rank 0 had finished the training before the loss
    if gone:
        progress = None
        for out in outs:
            if isinstance(out, Interrupted):
                progress = later(progress, out.progress)
        raise LostRankError(f"collective training stopped: {reason}; every other rank "
                            f"was stopped", ranks[gone[0]], progress)
    for f in futures:
        if f.status == "error":
            raise CollectiveError(f"collective training stopped: {f.exception()}. "
                                  f"{RECOVERY_HINT}") from f.exception()
    stopped = [o.reason for o in outs if isinstance(o, Interrupted)]
    raise CollectiveError(f"collective training stopped: {stopped[0] if stopped else reason}. "
                          f"{RECOVERY_HINT}")


class LostRankError(WorkerLostError, CollectiveError):
    """A rank's worker left the cluster (a CollectiveError that the training recovers from)."""


def _wait(client, futures, seconds: float, return_when: str) -> None:
    from distributed import wait
    from distributed.client import FuturesCancelledError
    with client.as_current():
        try:
            wait(futures, timeout=seconds, return_when=return_when)
        except (TimeoutError, FuturesCancelledError):  # a cancelled rank: the caller looks
            pass
