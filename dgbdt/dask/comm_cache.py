"""Communicators kept between collective trainings on the same workers.

Setting up a communicator costs every collective fit a barrier through the scheduler and, on
GPUs, NCCL's initialisation (its bootstrap, topology search and connections). A notebook fits
again and again on the same workers, so each rank's process keeps the communicator of its
last successful training, keyed by the ranks' workers in rank order, its own rank and its
device. A new training reuses it only when every rank still keeps the one of the same clique
(the ranks compare the token of the training that made it, through the scheduler, before any
collective): a rank whose worker restarted, a training that failed anywhere (its ranks do not
keep what they aborted), or another training holding the communicator at that moment makes
the ranks agree on a new one, and the kept ones are aborted. Nothing here waits.
"""
from __future__ import annotations

import atexit
import threading

#: communicators a process keeps (different worker sets); the oldest is aborted beyond this
KEEP = 2

_lock = threading.Lock()
_kept: dict = {}         # key -> (ident, communicator), oldest first


def claim(key):
    """The (ident, communicator) kept for ``key``, taken out (so that no concurrent training
    can take it too); None when there is none."""
    with _lock:
        return _kept.pop(key, None)


def keep(key, ident: str, comm) -> None:
    """Keep ``comm`` (made by the training ``ident``) for the next training with ``key``."""
    with _lock:
        _kept[key] = (ident, comm)
        old = [_kept.pop(k) for k in list(_kept)[:-KEEP]] if len(_kept) > KEEP else []
    for _, c in old:
        c.abort()


def drop_all() -> None:
    """Abort every kept communicator (tests; a worker may call it to free NCCL's buffers)."""
    with _lock:
        old = list(_kept.values())
        _kept.clear()
    for _, c in old:
        c.abort()


@atexit.register
def _close_sockets() -> None:
    """At exit, the kept TCP connections are closed (quietly; NCCL's go with the process:
    aborting them while CUDA shuts down could fail)."""
    with _lock:
        tcp = [k for k in _kept if k[0] == "tcp"]
        old = [_kept.pop(k) for k in tcp]
    for _, c in old:
        c.close()


def kept() -> list:
    """(key, ident) of every kept communicator, oldest first."""
    with _lock:
        return [(k, v[0]) for k, v in _kept.items()]


__all__ = ["KEEP", "claim", "drop_all", "keep", "kept"]
