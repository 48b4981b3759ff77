"""Whether a Dask training fits its workers' memory, asked before it starts.

A worker over its ``memory_limit`` is killed and restarted by its nanny (at the fraction
``distributed.worker.memory.terminate``, 0.95 by default); its partitions are recomputed on
the next worker, which then dies the same way, until Dask gives up (KilledWorker) or no
worker is left. Nothing in that says "memory". So before the first attempt each CPU worker's
need is bounded from below and compared with its limit:

    need(w) = process memory now (its held partitions included)
              + packed pages: rows(w) * features * bits / 8, bits = bit length of max_bin
              + the rows' training state: rows(w) * (24 K + 16) bytes
                (margins, gradients and hessians of K outputs in float64; row ids, positions)

A worker whose need passes the terminate fraction of its limit stops the training with
``WorkerMemoryError`` naming the worker, the need and the limit. The bound leaves out the
histograms and Python's temporaries, so passing it does not promise a fit; failing it
promises the nanny's kill. GPU workers are not checked here: their pages live in device
memory (dgbdt.data.page_store plans those within ``device_memory_budget``).
"""
from __future__ import annotations

from ..engine.setup import training_max_bin

__all__ = ["WorkerMemoryError", "check_worker_memory"]

ROW_STATE = 16        # bytes a row beyond its outputs': row id and node position (int64)
OUTPUT_STATE = 24     # bytes a row and output: margin, gradient, hessian (float64)


class WorkerMemoryError(MemoryError):
    """A Dask worker's memory_limit is below what the training needs there."""


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def check_worker_memory(client, dtrain, p, n_outputs: int, workers: list[str]) -> None:
    """Raise WorkerMemoryError when a worker's need (module docstring) passes its limit;
    ``workers``: the worker holding each of dtrain's partitions."""
    if p["device"] != "cpu":
        return
    import dask
    terminate = dask.config.get("distributed.worker.memory.terminate")
    if not terminate:
        return
    info = client.scheduler_info(n_workers=-1)["workers"]
    rows: dict[str, int] = {}
    for w, n in zip(workers, dtrain.part_rows):
        rows[w] = rows.get(w, 0) + int(n)
    bits = (int(training_max_bin(p, dtrain)) + 1).bit_length()
    for w, n in rows.items():
        limit = int((info.get(w) or {}).get("memory_limit") or 0)
        if not limit:
            continue
        now = int(((info.get(w) or {}).get("metrics") or {}).get("memory") or 0)
        pages = n * dtrain.num_col * bits // 8
        state = n * (OUTPUT_STATE * n_outputs + ROW_STATE)
        need = now + pages + state
        if need > terminate * limit:
            raise WorkerMemoryError(
                f"dgbdt.dask.train: worker {w} would need at least {_gib(need)} for this "
                f"training and its memory_limit is {_gib(limit)} (its nanny restarts it at "
                f"{terminate:.0%}, {_gib(terminate * limit)}): it uses {_gib(now)} now, with "
                f"its partitions, and its {n:,} rows of {dtrain.num_col} features add "
                f"{_gib(pages)} of packed pages and {_gib(state)} of training state. Give "
                "the workers more memory (memory_limit), add workers, or spread the data "
                "over more of them (repartition, then persist)")
