"""A device-grown tree's node table in one buffer, and its way to the host in one copy.

``DeviceGrowth`` (dgbdt.tree.device_grower) writes a tree's nodes into fixed arrays: the node
count, then per node id ``left``, ``right``, ``parent``, ``feature``, ``totals`` [cap, 2]
(int64), ``threshold``, ``loss_change`` (float32) and ``default_left`` (bool). Here they are
views of one byte buffer, each at an 8-byte aligned offset, so the host reads a tree with one
transfer instead of one a field (each a wait for the device: nine a tree, most of a GPU
round's evaluation when the host read them one by one; docs/benchmarks.md, "An eval set's
round"). A GPU's copy goes asynchronously into pinned host memory behind the tree's work
(``HostCopy``); the host waits only for that copy's event when it reads the tree.
"""
from __future__ import annotations

import numpy as np

from ..backends.array_ops import fill
from ..kernels.host_copy import HostCopy, HostNow

#: (name, dtype, columns) of the table's fields, in buffer order; columns 0: a vector [cap]
FIELDS = (("n_nodes", np.int64, None), ("left", np.int64, 0), ("right", np.int64, 0),
          ("parent", np.int64, 0), ("feature", np.int64, 0), ("totals", np.int64, 2),
          ("threshold", np.float32, 0), ("loss_change", np.float32, 0),
          ("default_left", np.bool_, 0))
#: what a node table starts as (reset): the root alone
_RESET = {"n_nodes": 1, "left": -1, "right": -1, "parent": -1}


def layout(cap: int) -> tuple[list, int]:
    """[(name, dtype, shape, byte offset)] of a table of ``cap`` node ids, and its bytes."""
    out, at = [], 0
    for name, dtype, cols in FIELDS:
        shape = (1,) if cols is None else (cap,) if cols == 0 else (cap, cols)
        out.append((name, dtype, shape, at))
        at += -(-int(np.prod(shape)) * np.dtype(dtype).itemsize // 8) * 8
    return out, at


def _views(buffer, fields) -> dict:
    return {name: buffer[o:o + int(np.prod(shape)) * np.dtype(dt).itemsize].view(dt)
            .reshape(shape) for name, dt, shape, o in fields}


class NodeTable:
    """The fields (attributes of FIELDS' names) as views of ``buffer``, arrays of ``xp``."""

    def __init__(self, cap: int, xp):
        self.fields, nbytes = layout(cap)
        self.buffer = xp.empty(nbytes, dtype=np.uint8)
        self.__dict__.update(_views(self.buffer, self.fields))

    def reset(self) -> None:
        """The root alone (in place: a captured CUDA graph resets the same memory)."""
        for name, _, _, _ in self.fields:
            fill(getattr(self, name), _RESET.get(name, 0))

    def read(self, host: np.ndarray) -> dict:
        """The fields of the tree in ``host`` (this table's bytes on the host), each cut to
        the tree's node count (copies: ``host`` may go back to its pool)."""
        v = _views(host, self.fields)
        n = int(v.pop("n_nodes")[0])
        return {name: np.array(a[:n]) for name, a in v.items()}

    def send(self, extra=()) -> "HostCopy | HostNow":
        """The table's bytes (and the ``extra`` device arrays') on their way to the host,
        ordered behind the work queued now on the current stream."""
        arrays = [self.buffer, *extra]
        if isinstance(self.buffer, np.ndarray):
            return HostNow([a.copy() for a in arrays])
        return HostCopy(arrays)


__all__ = ["FIELDS", "NodeTable", "layout"]
