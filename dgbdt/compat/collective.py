"""``xgboost.collective`` for code written for XGBoost: where that code asks which worker
it is, outside a distributed training.

dgbdt has no XGBoost tracker communicator to join: it trains across workers with
``dgbdt.dask`` (``dgbdt.compat.xgboost.dask``), whose workers talk through dgbdt's own
collectives. So here every process is on its own, as XGBoost reports one that has not
joined a communicator: ``get_world_size()`` is 1, ``get_rank()`` 0, ``is_distributed()``
False, and ``allreduce`` / ``broadcast`` of one worker return the data itself. ``init``
and ``CommunicatorContext`` (joining XGBoost's tracker) raise NotImplementedError.
"""
from __future__ import annotations

import socket
from enum import IntEnum
from typing import Any

import numpy as np

from ._common import _unsupported


class Op(IntEnum):
    """XGBoost's reduction operations (its codes)."""
    MAX = 0
    MIN = 1
    SUM = 2
    BITWISE_AND = 3
    BITWISE_OR = 4
    BITWISE_XOR = 5


def get_world_size() -> int:
    """The number of workers of this process's communicator: 1 (see the module doc)."""
    return 1


def get_rank() -> int:
    """This worker's rank: 0 (see the module doc)."""
    return 0


def is_distributed() -> bool:
    """Whether this process is one of several workers of a communicator: False."""
    return False


def get_processor_name() -> str:
    """The name of this worker's host."""
    return socket.gethostname()


def communicator_print(msg: Any) -> None:
    """Print ``msg`` (the one worker is the tracker's printer too)."""
    print(str(msg), flush=True)


def allreduce(data: np.ndarray, op: Op) -> np.ndarray:
    """The reduction of ``data`` over the workers: of one worker, a copy of ``data``."""
    if not isinstance(data, np.ndarray):
        raise TypeError(f"allreduce reduces a numpy array; got {type(data).__name__}")
    Op(op)            # an unknown operation is an error even for one worker
    return data.copy()


def broadcast(data: Any, root: int) -> Any:
    """``data`` of the worker ``root``: with one worker, root must be 0 and it is ``data``."""
    if int(root) != 0:
        raise ValueError(f"broadcast: root {root} is not a worker; the only worker is rank 0")
    return data


def init(**args: Any) -> None:
    _unsupported("xgboost.collective.init (joining XGBoost's tracker communicator)",
                 "train across workers with dgbdt.compat.xgboost.dask (dgbdt.dask)")


def finalize() -> None:
    """Leave the communicator: nothing to leave."""


class CommunicatorContext:
    def __init__(self, **args: Any) -> None:
        _unsupported("xgboost.collective.CommunicatorContext (XGBoost's tracker "
                     "communicator)", "train across workers with dgbdt.compat.xgboost.dask "
                     "(dgbdt.dask)")


__all__ = ["CommunicatorContext", "Op", "allreduce", "broadcast", "communicator_print",
           "finalize", "get_processor_name", "get_rank", "get_world_size", "init",
           "is_distributed"]
