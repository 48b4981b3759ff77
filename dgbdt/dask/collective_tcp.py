"""TCP between CPU workers: ``SocketComm``, the collective primitives of dgbdt.dask.collective
over a star of sockets (rank 0 reduces in rank order), with the same waits that end: slices of
ABORT_POLL seconds that ask the abort flag, a closed peer socket ending the wait at once."""
from __future__ import annotations

import socket
import time

import numpy as np

from .collective import ABORT_POLL, CollectiveError, Communicator

__all__ = ["SocketComm"]


class SocketComm(Communicator):
    """One rank of a star over TCP, for CPU workers (numpy arrays).

    Every rank sends its array to rank 0, which reduces them in rank order and sends the result
    back (all-gather: the stacked arrays). Rank 0 listens; ``publish(address)`` tells the other
    ranks where (dgbdt.dask.collective_train passes it through the scheduler). Sockets wait in
    slices of ABORT_POLL seconds, asking ``aborted()`` between them; a peer that dies closes its
    socket, which ends the wait at once.
    """

    def __init__(self, n_ranks: int, rank: int, timeout: float, aborted, host: str,
                 publish, lookup):
        super().__init__()
        self.rank, self.n_ranks = int(rank), int(n_ranks)
        self.timeout, self._flag = float(timeout), aborted
        self._peers: list = []
        if self.rank == 0:
            self._listen(host, publish)
        else:
            self._connect(lookup)

    # set-up
    def _deadline_check(self, t0: float, what: str) -> None:
        reason = self._flag()
        if reason is not None:
            raise CollectiveError(f"rank {self.rank}: {what}: stopped because {reason}")
        if time.perf_counter() - t0 > self.timeout:
            raise CollectiveError(f"rank {self.rank}: {what}: the other ranks did not answer "
                                  f"within {self.timeout:g} s (collective_timeout)")

    def _listen(self, host: str, publish) -> None:
        server = socket.create_server((host, 0))
        server.settimeout(ABORT_POLL)
        publish(server.getsockname()[:2])
        peers = {}
        t0 = time.perf_counter()
        try:
            while len(peers) < self.n_ranks - 1:
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    self._deadline_check(t0, "waiting for the other ranks to connect")
                    continue
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conn.settimeout(ABORT_POLL)
                peers[int(self._recv(conn, np.empty(1, np.int64))[0])] = conn
        finally:
            server.close()
        self._peers = [peers[r] for r in range(1, self.n_ranks)]

    def _connect(self, lookup) -> None:
        t0 = time.perf_counter()
        while (address := lookup()) is None:
            self._deadline_check(t0, "waiting for rank 0's address")
        conn = socket.create_connection(tuple(address), timeout=self.timeout)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(ABORT_POLL)
        self._peers = [conn]
        self._send(conn, np.array([self.rank], dtype=np.int64))

    # transfers
    def _send(self, conn, x: np.ndarray) -> None:
        if x.nbytes:        # (a memoryview of an empty array cannot be cast to bytes)
            self._move(memoryview(np.ascontiguousarray(x)).cast("B"), conn.send, "sending")

    def _recv(self, conn, out: np.ndarray) -> np.ndarray:
        if out.nbytes:
            self._move(memoryview(out).cast("B"), conn.recv_into, "receiving")
        return out

    def _move(self, view, step, what: str) -> None:
        """Send or receive all of view through step (conn.send / conn.recv_into)."""
        t0 = time.perf_counter()
        while view:
            try:
                n = step(view)
            except TimeoutError:
                self._deadline_check(t0, what)
                continue
            except OSError as e:
                raise CollectiveError(f"rank {self.rank}: a peer went away ({e})") from None
            if n == 0:
                raise CollectiveError(f"rank {self.rank}: a peer closed its connection (its "
                                      "worker stopped or failed)")
            view = view[n:]

    def _allreduce(self, x, op):
        if self.rank:
            self._send(self._peers[0], x)
            self._recv(self._peers[0], x)
            return
        part = np.empty_like(x)
        for conn in self._peers:              # rank order: the same result on every run
            self._recv(conn, part)
            if op == "sum":
                x += part
            else:
                np.maximum(x, part, out=x)
        for conn in self._peers:
            self._send(conn, x)

    def _allgather(self, x):
        out = np.empty((self.n_ranks,) + x.shape, dtype=x.dtype)
        if self.rank:
            self._send(self._peers[0], x)
            return self._recv(self._peers[0], out)
        out[0] = x
        for r, conn in enumerate(self._peers, start=1):
            self._recv(conn, out[r])
        for conn in self._peers:
            self._send(conn, out)
        return out

    def gather_apply(self, a, fn, counts=None) -> np.ndarray:
        """One round trip: each rank sends its row count and rows to rank 0, which
        concatenates them in rank order, applies ``fn`` and sends back only the result (the
        default all-gather would send every rank all the rows and have each apply ``fn``).
        ``counts`` is not needed: the counts travel with the rows."""
        self._asked_to_stop()
        t = time.perf_counter()
        a = np.ascontiguousarray(a)
        tail = a.shape[1:]
        if self.rank:
            conn = self._peers[0]
            self._send(conn, np.array([a.shape[0]], dtype=np.int64))
            self._send(conn, a)
            k = int(self._recv(conn, np.empty(1, np.int64))[0])
            out = self._recv(conn, np.empty(k, np.float64))
        else:
            parts = [a]
            for conn in self._peers:           # rank order
                n = int(self._recv(conn, np.empty(1, np.int64))[0])
                parts.append(self._recv(conn, np.empty((n,) + tail, dtype=a.dtype)))
            got = np.array([p.shape[0] for p in parts], dtype=np.int64)
            out = np.ascontiguousarray(np.asarray(fn(np.concatenate(parts), got),
                                                  dtype=np.float64).ravel())
            for conn in self._peers:
                self._send(conn, np.array([out.size], dtype=np.int64))
                self._send(conn, out)
        seconds = time.perf_counter() - t
        self.seconds += seconds
        self.comm_seconds += seconds
        self.n_bytes += a.nbytes
        self.calls += 1
        return out

    def abort(self) -> None:
        self.close()

    def park(self) -> bool:
        return bool(self._peers) or self.n_ranks == 1

    def close(self) -> None:
        for conn in self._peers:
            try:
                conn.close()
            except OSError:
                pass
        self._peers = []
