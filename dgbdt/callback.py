"""Training callbacks (XGBoost's protocol), early stopping and the evaluation log line.

A callback is a ``TrainingCallback``: the boosting loop calls ``before_training(model)`` (which
returns the model), then for each round ``before_iteration(model, epoch, evals_log)`` and, after
the round's trees and scores, ``after_iteration(model, epoch, evals_log)``; either returning
True stops the training; last ``after_training(model)`` returns the model ``train`` returns.
``epoch`` counts from the model's first round (continued training included); ``evals_log`` is
``{eval set name: {metric: [value per round]}}``. Callbacks run where the boosting loop runs:
in this process for dgbdt.train and graph mode; inside the training on the workers for the task
and collective modes (copies of the callbacks, on every rank: what they keep or write stays
there, and their decisions must follow from the model and the log, which every rank shares).
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from typing import Callable, Sequence

from . import progressbar


class TrainingCallback:
    """The base of training callbacks (XGBoost's ``xgboost.callback.TrainingCallback``)."""

    #: the evaluation log's type, as XGBoost names it (``{eval set: {metric: [values]}}``)
    EvalsLog = dict

    def before_training(self, model):
        return model

    def after_training(self, model):
        return model

    def before_iteration(self, model, epoch: int, evals_log: dict) -> bool:
        return False

    def after_iteration(self, model, epoch: int, evals_log: dict) -> bool:
        return False


class EarlyStopping(TrainingCallback):
    """Stop when a metric has not improved for ``rounds`` rounds (XGBoost's callback).

    ``metric_name`` / ``data_name``: the metric and eval set watched (default: the last of
    each); ``maximize``: default from the metric (auc, aucpr: higher is better; a custom
    metric's name by XGBoost's rule: higher when it starts with auc, pre, map or ndcg);
    ``min_delta``: an improvement must exceed it; ``save_best``: the trained model is cut to
    its best round (``model[: best_iteration + 1]``). Sets ``best_iteration``/``best_score``;
    ``stopping_history`` is ``{eval set: {metric: [value per round]}}`` of the watched
    metric, as XGBoost's. A training resumed from a checkpoint rebuilds its state from the
    history (``resume``).
    """

    def __init__(self, rounds: int, metric_name: str | None = None, data_name: str | None = None,
                 maximize: bool | None = None, save_best: bool = False, min_delta: float = 0.0):
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise ValueError(f"rounds must be a positive integer; got {rounds!r}")
        if not min_delta >= 0:
            raise ValueError(f"min_delta must be >= 0; got {min_delta!r}")
        self.rounds, self.metric_name, self.data_name = rounds, metric_name, data_name
        self.maximize, self.save_best, self.min_delta = maximize, save_best, float(min_delta)
        self.best_score: float | None = None
        self.best_iteration: int | None = None
        self.stopping_history: dict = {}

    def _watched(self, evals_log) -> tuple[list, bool, str, str]:
        """The values of the watched metric, whether larger is better, the eval set's and
        the metric's names."""
        if not evals_log:
            raise ValueError("EarlyStopping needs at least one eval set (evals=...)")
        data = self.data_name or list(evals_log)[-1]
        if data not in evals_log:
            raise ValueError(f"EarlyStopping: no eval set named {data!r}; the sets are "
                             f"{list(evals_log)}")
        metric = self.metric_name or list(evals_log[data])[-1]
        if metric not in evals_log[data]:
            raise ValueError(f"EarlyStopping: eval set {data!r} has no metric {metric!r}; it "
                             f"has {list(evals_log[data])}")
        maximize = self.maximize
        if maximize is None:
            from .metrics.registry import get_metric
            try:
                maximize = get_metric(metric).higher_is_better
            except ValueError:     # a custom metric's name: XGBoost's rule, by its prefix
                maximize = metric.startswith(("auc", "aucpr", "pre", "map", "ndcg"))
        return evals_log[data][metric], maximize, data, metric

    def before_training(self, model):
        if self.save_best and hasattr(model, "cvfolds"):      # dgbdt.cv's PackedBooster
            raise ValueError("`save_best` is not applicable to the `cv` function as it "
                             "doesn't return a model.")
        return model

    def after_iteration(self, model, epoch, evals_log) -> bool:
        values, maximize, data, metric = self._watched(evals_log)
        score = values[-1]          # cv's logs hold (mean, std) of the folds: the mean counts
        self.stopping_history.setdefault(data, {}).setdefault(metric, []).append(
            score if isinstance(score, tuple) else float(score))
        return self._update(model, epoch,
                            float(score[0] if isinstance(score, tuple) else score), maximize)

    def resume(self, model, epoch, evals_log) -> None:
        """A training resumed from a checkpoint (dgbdt.engine.checkpoint): replay the rounds before
        ``epoch`` from their recorded scores, as if this callback had watched them."""
        if not evals_log:
            return
        values, maximize, data, metric = self._watched(evals_log)
        self.stopping_history = {data: {metric: [float(v) for v in values]}}
        for i, v in enumerate(values):
            self._update(model, epoch - len(values) + i, float(v), maximize)

    def _update(self, model, epoch: int, score: float, maximize: bool) -> bool:
        better = self.best_score is None or (
            score - self.min_delta > self.best_score if maximize
            else score + self.min_delta < self.best_score)
        if better:
            self.best_score, self.best_iteration = score, epoch
        model.best_score, model.best_iteration = self.best_score, self.best_iteration
        return epoch - self.best_iteration >= self.rounds

    def after_training(self, model):
        if self.save_best and self.best_iteration is not None:
            best, score = self.best_iteration, self.best_score
            model = model[: best + 1]
            model.best_iteration, model.best_score = best, score
        return model


class LearningRateScheduler(TrainingCallback):
    """Schedule the learning rate (eta): after round ``epoch``, ``learning_rates(epoch)`` (or
    the list's entry) becomes the rate of the rounds that follow (as XGBoost's callback)."""

    def __init__(self, learning_rates: Callable[[int], float] | Sequence[float]):
        if not callable(learning_rates) and not isinstance(learning_rates, (list, tuple)):
            raise TypeError(f"learning_rates must be a callable or a sequence; got "
                            f"{type(learning_rates).__name__}")
        self.rates = learning_rates

    def after_iteration(self, model, epoch, evals_log) -> bool:
        rate = self.rates(epoch) if callable(self.rates) else self.rates[epoch]
        model.set_param("learning_rate", rate)
        return False


class EvaluationMonitor(TrainingCallback):
    """Print the round's scores every ``period`` rounds (and the last), XGBoost's format.
    XGBoost's other arguments are taken: ``rank`` (the printing worker: one process prints
    here), ``show_stdv`` (cv's scores, (mean, std) of the folds: ``mean+std``, else the mean
    alone), ``logger`` (a function given each line instead of printing it)."""

    def __init__(self, period: int = 1, rank: int = 0, show_stdv: bool = False, logger=None):
        self.period = max(int(period), 1)
        self.rank, self.show_stdv, self._logger = rank, show_stdv, logger
        self._last = None

    def after_iteration(self, model, epoch, evals_log) -> bool:
        scores = [(d, m, v[-1]) for d, ms in evals_log.items() for m, v in ms.items()]
        self._last = None
        if not scores:
            return False
        line = format_eval_line(epoch, scores, self.show_stdv)
        if epoch % self.period == 0:
            self._print(line)
        else:
            self._last = line          # printed at the end if no later round is
        return False

    def after_training(self, model):
        if self._last is not None:     # the last round, when the period skipped it
            self._print(self._last)
            self._last = None
        return model

    def _print(self, line: str) -> None:
        if self._logger is not None:
            self._logger(line + "\n")          # XGBoost's loggers get the newline
        else:
            emit(line)


class TrainingCheckPoint(TrainingCallback):
    """Save the model to ``directory/{name}_{epoch}.json`` (JSON, never pickle) at XGBoost's
    rounds: epoch ``interval``, then every ``interval`` epochs (models to keep or to continue
    with ``xgb_model=``; file names as XGBoost's, ``default_format`` the extension). To resume a
    killed training to the same model, history and early stopping, pass train's
    ``checkpoint_dir=`` instead (dgbdt.engine.checkpoint)."""

    default_format = "json"

    def __init__(self, directory: str | os.PathLike, name: str = "model", as_pickle=False,
                 interval: int = 100):
        if as_pickle:
            raise ValueError("as_pickle=True: dgbdt does not pickle models; checkpoints are "
                             "JSON model files (dgbdt.load_model reads them)")
        self.directory, self.name, self.interval = os.fspath(directory), name, max(interval, 1)
        self._since = 0          # epochs since the last save (XGBoost's counter)

    def after_iteration(self, model, epoch, evals_log) -> bool:
        if self._since == self.interval:
            os.makedirs(self.directory, exist_ok=True)
            model.save_model(os.path.join(self.directory,
                                          f"{self.name}_{epoch}.{self.default_format}"))
            self._since = 0
        self._since += 1
        return False


def check_callbacks(callbacks) -> list:
    """The callbacks as a list, each a TrainingCallback."""
    out = list(callbacks or [])
    for cb in out:
        if not isinstance(cb, TrainingCallback):
            raise TypeError(f"callbacks must be dgbdt.callback.TrainingCallback instances; got "
                            f"{type(cb).__name__} (subclass TrainingCallback)")
    return out


class RoundStopper:
    """Stop when the watched metric has not improved for ``rounds`` rounds.

    Improvement is strict (XGBoost's rule): a larger value for metrics where higher is better
    (auc), a smaller one otherwise. ``best_iteration`` is the 0-based round of the best score.
    """

    def __init__(self, rounds: int, metric, maximize: bool | None = None):
        if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
            raise ValueError(f"early_stopping_rounds must be a positive integer; got {rounds!r}")
        self.rounds = rounds
        self.maximize = metric.higher_is_better if maximize is None else bool(maximize)
        self.best_score: float | None = None
        self.best_iteration: int | None = None

    def update(self, iteration: int, score: float) -> bool:
        """Record this round's score; True when training should stop."""
        better = (self.best_score is None
                  or (score > self.best_score if self.maximize else score < self.best_score))
        if better:
            self.best_score, self.best_iteration = score, iteration
        return iteration - self.best_iteration >= self.rounds


def format_eval_line(iteration: int, scores, show_stdv: bool = True) -> str:
    """XGBoost's log format: ``[3]\tvalid-auc:0.91234\tvalid-logloss:0.40112``; a cv score,
    (mean, std) of the folds, as ``0.91234+0.01021`` (the mean alone without ``show_stdv``)."""
    def text(v) -> str:
        if isinstance(v, tuple):
            return f"{v[0]:.5f}+{v[1]:.5f}" if show_stdv else f"{v[0]:.5f}"
        return f"{v:.5f}"
    return f"[{iteration}]\t" + "\t".join(f"{name}-{metric}:{text(value)}"
                                          for name, metric, value in scores)


_sink = threading.local()


def emit(line: str) -> None:
    """Print a log line where the user sees it: here, or, inside a Dask task running under
    ``log_to_client`` (a whole training in one task, a collective rank), on the client that
    started the training (the worker's own stdout is not the user's)."""
    topic = getattr(_sink, "topic", None)
    if topic is None:
        bar = progressbar.current()
        if bar is not None:            # above the bar, not through it
            bar.write(line)
        else:
            print(line, flush=True)
        return
    from distributed import get_worker
    get_worker().log_event(topic, line)


def report_round(done: int, total: int, scores) -> None:
    """``done`` rounds of ``total`` are complete, the last with ``scores`` [(set, metric,
    value)]: the progress bar (dgbdt.progressbar) shows it, here or, inside a Dask task under
    ``log_to_client``, on the client (a small event with the log lines)."""
    topic = getattr(_sink, "topic", None)
    if topic is not None:
        from distributed import get_worker
        get_worker().log_event(topic, ("round", int(done), int(total),
                                       progressbar.postfix(scores)))
        return
    bar = progressbar.current()
    if bar is not None:
        bar.update(done, progressbar.postfix(scores))


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

    def __init__(self, client, topic: str, n_senders: int = 1, grace: float = 5.0, bar=None):
        self.client, self.topic, self.grace, self.bar = client, topic, grace, bar
        self._left = n_senders
        self._done = threading.Event()
        # the lines are shown from the client's event-loop thread in the caller's context: a
        # Jupyter kernel keeps the running cell in a ContextVar, and the loop's tasks carry the
        # context of the cell that started the Client (the lines would go there)
        self._context = contextvars.copy_context()
        client.subscribe_topic(topic, self._handle)

    def _handle(self, event) -> None:
        self._context.run(self._show, event)

    def _show(self, event) -> None:
        _, line = event
        if line is None:
            self._left -= 1
            if self._left <= 0:
                self._done.set()
        elif isinstance(line, (tuple, list)):      # ("round", done, total, postfix)
            if self.bar is not None:
                self.bar.update(line[1], line[3])
        elif self.bar is not None:
            self.bar.write(line)
        else:
            print(line, flush=True)

    def close(self, finished: bool) -> None:
        if finished:
            self._done.wait(self.grace)
        self.client.unsubscribe_topic(self.topic)
