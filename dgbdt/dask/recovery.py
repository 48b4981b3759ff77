"""A lost worker costs a restart of the round in progress, not the training.

Every participant of a Dask training grows the same trees (collective ranks, graph-mode units),
so any survivor holds the model of the rounds completed so far. When a worker leaves the
cluster during dgbdt.dask.train:

1. the mode notices within a bounded time (every wait of the client is watched: graph mode
   checks its units' workers every WATCH seconds, the collective ranks see their abort flag
   within ABORT_POLL seconds, the one-task mode watches its worker) and raises
   ``WorkerLostError`` carrying the survivors' ``Progress`` (dgbdt.engine.progress);
2. dgbdt.dask.train waits, at most ``recovery_timeout`` seconds, until every partition the
   datasets hold (raw parts, a persisted training set's pages) is in memory again: Dask
   recomputes the lost ones from their lineage (the graph that read or made them), on the
   surviving workers or on a replacement;
3. it trains again, in the mode ``auto`` picks for the new placement (or the one asked for),
   resuming from the progress as continued training (dgbdt.engine.progress says why the model is the
   uninterrupted one, byte for byte).

After ``max_restarts`` restarts, or when a lost partition cannot be recomputed (data scattered
from the client has no lineage), the training ends with an error that says so.

What survives what: the one-task mode's progress lives on its one worker, so a lost worker
restarts that training from its first round (or from its checkpoint, with checkpoint_dir);
the collective and graph modes resume from the last round every survivor completed. The
client and the scheduler are not recoverable: their loss ends the training, which resumes
from its checkpoint when run again with the same ``checkpoint_dir`` (dgbdt.engine.checkpoint).
"""
from __future__ import annotations

import time

WATCH = 0.5      # seconds between the client's checks that the workers it waits on are alive
NO_WORKER_GRACE = 15.0   # seconds with no worker at all before recovery gives up (a nanny
#                          restarts a worker in a few)


class WorkerLostError(RuntimeError):
    """Training could not go on because a worker left the cluster; ``progress`` is what the
    survivors hold (dgbdt.engine.progress.Progress, or None when nothing survived)."""

    def __init__(self, message: str, worker: str | None = None, progress=None):
        super().__init__(message)
        self.worker, self.progress = worker, progress


class RecoveryError(RuntimeError):
    """A training that lost workers could not be resumed (see the message for why)."""


def alive_workers(client) -> set[str]:
    """The addresses of the workers in the cluster now."""
    return set(client.run_on_scheduler(_worker_addresses))


def _worker_addresses(dask_scheduler=None):
    return list(dask_scheduler.workers)


def watched_wait(client, futures, workers) -> str | None:
    """Wait for the futures, checking every WATCH seconds that the ``workers`` (where their
    tasks must run) are still in the cluster: a task pinned to a lost worker would wait for
    ever. Returns None when the futures are done, else the first worker found gone."""
    from distributed import wait
    while True:
        with client.as_current():
            try:
                wait(futures, timeout=WATCH)
                return None
            except TimeoutError:
                pass
        alive = alive_workers(client)
        gone = sorted(w for w in workers if w not in alive)
        if gone:
            return gone[0]


def watched_result(client, future, worker: str, what: str):
    """The future's result, waited for under watch of its ``worker`` (watched_wait)."""
    if watched_wait(client, [future], [worker]) is not None:
        raise WorkerLostError(f"{what}: its worker {worker} left the cluster", worker)
    return future.result()


def outcome(future):
    """A finished future's result, or None when it is gone (its worker left with it)."""
    try:
        return future.result(timeout=10 * WATCH) if future.status == "finished" else None
    except Exception:  # noqa: BLE001  (cancelled, lost or forgotten with its worker)
        return None


def wait_for_partitions(client, datasets, timeout: float) -> None:
    """Wait until every partition of the datasets is in a worker's memory again (Dask
    recomputes those lost with a worker from lineage). Raises RecoveryError when one cannot
    be (it had no lineage, or its recomputation failed) or when ``timeout`` seconds pass."""
    from distributed import wait
    deadline = time.monotonic() + timeout
    alone = None                    # since when no worker has been in the cluster
    for d in datasets:
        # what the dataset holds: raw parts, pages (a streamed one reads again each pass)
        held = d.held()
        if not held:
            continue
        index, futures = [i for i, _ in held], [f for _, f in held]
        while True:
            states = client.run_on_scheduler(_key_states, [f.key for f in futures])
            bad = [i for i, s in enumerate(states)
                   if s in ("forgotten", "erred", "no-lineage", "pinned")]
            if bad:
                i = index[bad[0]]
                s = states[bad[0]]
                why = {"erred": f"its recomputation failed ({_failure(futures[bad[0]])})",
                       "pinned": "it may only be computed on workers that are gone (worker "
                                 "restrictions)"}.get(
                    s, "it has no lineage to recompute it from (e.g. it was scattered "
                               "from the client)")
                raise RecoveryError(
                    f"partition {i} of the data was lost with a worker and {why}. Build the "
                    "DaskDataset from a collection Dask can recompute (read_parquet, "
                    "from_array, from_delayed of a loading function) to survive lost workers")
            if alive_workers(client):
                alone = None
            elif alone is None:
                alone = time.monotonic()
            elif time.monotonic() - alone > NO_WORKER_GRACE:
                raise RecoveryError(
                    f"no worker has been in the cluster for {NO_WORKER_GRACE:g} s: the lost "
                    "partitions cannot be recomputed. Start workers (or find why they died: "
                    "their logs; a worker over its memory_limit is killed by its nanny)")
            left = deadline - time.monotonic()
            if left <= 0:
                raise RecoveryError(
                    f"the partitions lost with a worker were not recomputed within "
                    f"{timeout:g} s (recovery_timeout): is any worker left in the cluster?")
            with client.as_current():
                try:
                    wait(futures, timeout=min(WATCH, left))
                    break
                except TimeoutError:
                    pass


def _failure(future) -> str:
    """What an erred future's task raised, in a line; KilledWorker (it took its workers down
    with it, every time) with the likeliest cause."""
    try:
        e = future.exception(timeout=10 * WATCH)
    except Exception as got:  # noqa: BLE001  (gone meanwhile: say what is known)
        e = got
    text = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if type(e).__name__ == "KilledWorker":
        text += ("; every worker that ran it died, as a worker over its memory_limit does "
                 "(its nanny kills it)")
    return text


def _key_states(keys, dask_scheduler=None) -> list[str]:
    """Each key's state on the scheduler; "no-lineage" for data lost with no task to
    recompute it (scattered data)."""
    out = []
    for k in keys:
        ts = dask_scheduler.tasks.get(k)
        if ts is None:
            out.append("forgotten")
        elif ts.state != "memory" and ts.run_spec is None:
            out.append("no-lineage")
        elif (ts.state == "no-worker" and ts.worker_restrictions and not ts.loose_restrictions
              and not set(ts.worker_restrictions) & set(dask_scheduler.workers)):
            out.append("pinned")
        else:
            out.append(ts.state)
    return out


def later(a, b):
    """The progress that completed more rounds (either may be None)."""
    if b is None or not b.started:
        return a
    if a is None or not a.started:
        return b
    return b if b.rounds > a.rounds else a
