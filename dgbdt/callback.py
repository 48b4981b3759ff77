"""Training callbacks: early stopping and the evaluation log line."""
from __future__ import annotations

import sys


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


def emit(line: str) -> None:
    """Print a log line where the user sees it. Inside a Dask worker's task (a whole training in
    one task, or a collective rank) the line goes to the clients as distributed's "print"
    event, which they print (a notebook shows it under the cell); the worker's own stdout is
    not the user's. Elsewhere it is printed here."""
    worker = None
    if "distributed" in sys.modules:
        from distributed import get_worker
        try:
            worker = get_worker()
        except ValueError:        # not in a worker
            worker = None
    if worker is None:
        print(line, flush=True)
        return
    worker.log_event("print", {"args": (line,), "sep": " ", "end": "\n", "flush": True})
