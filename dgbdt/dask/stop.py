"""Whether the client still wants the training a worker's task runs.

A Dask task that runs a whole training (a collective rank, the one-task mode's task) cannot
be stopped from outside: ``client.cancel`` only tells the worker that nobody wants the
result, and the task's thread runs on to the end. So the training asks: when the client
lets go of the task's key (an interrupt in a notebook, whose handler cancels the futures;
``client.cancel``; the client's death, after which the scheduler releases its keys), the
worker moves the running task to the ``cancelled`` state, and ``LetGo.reason`` says so.

The boosting loop asks at the top of every round (dgbdt.engine.boosting's ``halt``) and a
collective rank at every collective too (dgbdt.dask.collective), so a training ends within
a round, or within a level when ranks wait on each other. The question reads the worker's
own task table (no scheduler round trip, no client), so it is cheap enough to ask that often
and safe from any thread.
"""
from __future__ import annotations

__all__ = ["LetGo"]

_UNWANTED = ("cancelled", "released", "forgotten")


class LetGo:
    """Made in the task's thread (where the worker and the key are known); ``reason()`` from
    any thread: None while the client wants the task, else why the training stops."""

    def __init__(self):
        from distributed import get_worker
        from distributed.worker import thread_state
        self._worker = get_worker()
        self._key = getattr(thread_state, "key", None)

    @property
    def in_task(self) -> bool:
        """Whether it was made in a worker's task (not a test's thread)."""
        return self._key is not None

    def reason(self) -> str | None:
        if self._key is None:      # not a worker task (a test's thread): nothing to ask
            return None
        # a plain dict read: atomic under the GIL, from whatever thread asks
        ts = self._worker.state.tasks.get(self._key)
        if ts is None or ts.state in _UNWANTED:
            return ("the client let go of the training (an interrupt, client.cancel, or the "
                    "client's exit)")
        return None
