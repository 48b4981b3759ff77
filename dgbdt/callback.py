"""Training callbacks: early stopping and the evaluation log line."""
from __future__ import annotations

import contextlib
import threading


class EarlyStopping:
    """Stop when the watched metric has not improved for ``rounds`` rounds.

    Improvement is strict (XGBoost's rule): a larger value for metrics where higher is better
    (auc), a smaller one otherwise. ``best_iteration`` is the 0-based round of the best score.
    """

    def __init__(self, rounds: int, metric):
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise ValueError(f"early_stopping_rounds must be a positive integer; got {rounds!r}")
        self.rounds = rounds
        self.maximize = metric.higher_is_better
        self.best_score: float | None = None
        self.best_iteration: int | None = None

    def update(self, iteration: int, score: float) -> bool:
        """Record this round's score; True when training should stop."""
        better = (self.best_score is None
                  or (score > self.best_score if self.maximize else score < self.best_score))
        if better:
            self.best_score, self.best_iteration = score, iteration
        return iteration - self.best_iteration >= self.rounds


def format_eval_line(iteration: int, scores) -> str:
    """XGBoost's log format: ``[3]\tvalid-auc:0.91234\tvalid-logloss:0.40112``."""
    return f"[{iteration}]\t" + "\t".join(f"{name}-{metric}:{value:.5f}"
                                          for name, metric, value in scores)


_sink = threading.local()


def emit(line: str) -> None:
    """Print a log line where the user sees it: here, or, inside a Dask task running under
    ``log_to_client`` (a whole training in one task, a collective rank), on the client that
    started the training (the worker's own stdout is not the user's)."""
    topic = getattr(_sink, "topic", None)
    if topic is None:
        print(line, flush=True)
        return
    from distributed import get_worker
    get_worker().log_event(topic, line)


@contextlib.contextmanager
def log_to_client(topic: str | None):
    """Send this thread's ``emit`` lines to ``topic`` (dgbdt.dask.train's ClientLog prints them
    on the client); a last ``None`` says the task is done."""
    if topic is None:
        yield
        return
    _sink.topic = topic
    try:
        yield
    finally:
        from distributed import get_worker
        _sink.topic = None
        get_worker().log_event(topic, None)


class ClientLog:
    """On the client: print the lines a training's tasks send to its topic, in order of
    arrival, until each of ``n_senders`` has said it is done (or ``grace`` seconds after the
    training ended)."""

    def __init__(self, client, topic: str, n_senders: int = 1, grace: float = 5.0):
        self.client, self.topic, self.grace = client, topic, grace
        self._left = n_senders
        self._done = threading.Event()
        client.subscribe_topic(topic, self._handle)

    def _handle(self, event) -> None:
        _, line = event
        if line is None:
            self._left -= 1
            if self._left <= 0:
                self._done.set()
        else:
            print(line, flush=True)

    def close(self, finished: bool) -> None:
        if finished:
            self._done.wait(self.grace)
        self.client.unsubscribe_topic(self.topic)
