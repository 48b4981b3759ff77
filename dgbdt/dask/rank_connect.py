"""How the ranks of a collective training meet and get their communicator (dgbdt.dask.
collective_train's rank tasks): a barrier and values exchanged through the scheduler
(distributed Variables), the communicator kept from the last training on the same workers
(dgbdt.dask.comm_cache) or a new one, NCCL between GPU workers (rank 0's unique id shared) or
TCP between CPU workers (rank 0's address shared). Every wait asks whether the training is
still wanted and ends at ``collective_timeout``."""
from __future__ import annotations

import time

from . import comm_cache, nccl_preload
from .collective import ABORT_POLL, CollectiveError, NcclComm, unique_id
from .collective_tcp import SocketComm


def _exchange(token: str, rank: int, n_ranks: int, mine: str, stop_reason,
              timeout: float) -> list[str]:
    """Every rank's ``mine``, in rank order, through the scheduler; a barrier too (NCCL's
    init blocks holding the GIL: every rank must be alive and ready, or it would wait for
    ever)."""
    from distributed import Variable
    Variable(f"{token}-kept-{rank}").set(mine)
    deadline = time.monotonic() + timeout
    return [str(_awaited(Variable(f"{token}-kept-{r}"), rank, stop_reason, deadline,
                         f"rank {r} was not ready within {timeout:g} s (collective_timeout)"))
            for r in range(n_ranks)]


def _unique_id(token: str, rank: int, stop_reason, timeout: float):
    """The new NCCL communicator's unique id: rank 0 makes it (its bootstrap listener lives
    in the process that made it) and shares it through the scheduler. Only a training that
    connects anew asks: a kept communicator needs none, so a warm fit makes no id."""
    from distributed import Variable
    var = Variable(f"{token}-uid")
    if rank == 0:
        uid = unique_id()
        var.set(uid)
        return uid
    uid = _awaited(var, rank, stop_reason, time.monotonic() + timeout,
                   f"rank 0's NCCL id did not come within {timeout:g} s (collective_timeout)")
    # bytes (CuPy 14); an older CuPy's tuple comes back as a list
    return tuple(uid) if isinstance(uid, list) else uid


def _awaited(var, rank: int, stop_reason, deadline: float, late: str):
    """A distributed Variable's value once another rank has set it, asking ``stop_reason``
    every ABORT_POLL seconds; CollectiveError when the training stops or ``deadline``
    (time.monotonic) passes (``late`` says what did not come)."""
    while True:
        try:
            return var.get(timeout=ABORT_POLL)
        except TimeoutError:
            pass
        why = stop_reason()
        if why is not None:
            raise CollectiveError(f"rank {rank}: stopped before training because {why}")
        if time.monotonic() > deadline:
            raise CollectiveError(f"rank {rank}: {late}")


def comm_key(p, ranks, rank: int) -> tuple:
    """What a kept communicator must match: the kind, the ranks' workers in order, this rank,
    its device."""
    device = -1
    if p["device"] == "cuda":
        import cupy
        device = int(cupy.cuda.runtime.getDevice())
    return ("nccl" if p["device"] == "cuda" else "tcp", tuple(ranks), int(rank), device)


def connect(p, rank: int, n_ranks: int, token: str, timeout: float, key: tuple,
            stop_reason, preload: dict):
    """This rank's communicator and the token of the training that made it: the one kept
    from the last training on these workers when every rank kept the same (dgbdt.dask.
    comm_cache), else a new one: NCCL between GPU workers, TCP (SocketComm) between CPU ones,
    both set up through the scheduler (a barrier, or rank 0's address). ``stop_reason``: what
    its waits ask (the abort flag, and whether the client still wants the training);
    ``preload`` gets the timings of dgbdt.dask.nccl_preload's wait."""
    from distributed import Variable, get_worker
    kept = comm_cache.claim(key)
    idents = _exchange(token, rank, n_ranks, kept[0] if kept else "", stop_reason, timeout)
    if kept is not None and all(i == kept[0] for i in idents):
        kept[1].rebind(timeout, stop_reason)
        return kept[1], kept[0]
    if kept is not None:       # another clique's: no rank can use it any more
        kept[1].abort()
    if p["device"] == "cuda":
        # NCCL's kernels, loaded while the dataset was built
        preload.update(nccl_preload.wait(key[3]))
        uid = _unique_id(token, rank, stop_reason, timeout)
        return NcclComm(n_ranks, uid, rank, timeout, stop_reason), token
    root = Variable(f"{token}-root")

    def lookup():
        try:
            return root.get(timeout=ABORT_POLL)
        except TimeoutError:
            return None
    return SocketComm(n_ranks, rank, timeout, stop_reason, _host(get_worker().address),
                      lambda address: root.set(list(address)), lookup), token


def _host(address: str) -> str:
    """The host part of a worker address (tcp://10.0.0.5:8786 -> 10.0.0.5); loopback for an
    in-process worker (inproc://...)."""
    scheme, _, rest = address.partition("://")
    if scheme not in ("tcp", "tls", "ucx", "ws", "wss"):
        return "127.0.0.1"
    return rest.rsplit(":", 1)[0].strip("[]")


__all__ = ["comm_key", "connect"]
