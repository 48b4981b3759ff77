"""Where a training stands: enough to resume it on other workers and finish the same model.

The boosting loop (dgbdt.engine.boosting.boost) keeps a ``Progress`` up to date: after each *completed*
round (its trees grown, its scores recorded, the callbacks' ``after_iteration`` called) it
stores the round count, the evaluation history and the learning rate the next round will use.
A training that stops part-way (dgbdt.dask: a worker left) hands its Progress to the next
attempt, which resumes at round ``rounds`` as continued training from ``booster``:

* the margins of every row start from the model so far (dgbdt.model.margins.MarginStart), which are
  the same float64 values the uninterrupted training had accumulated;
* round r keeps its index, so row and column sampling draw the same rows and features
  (dgbdt.engine.sampling keys its draws by the round);
* early stopping's state is replayed from the history (``replay``), the callbacks carry their
  own state, and the learning rate is the one the next round would have used.

A Progress may have a ``sink`` (dgbdt.engine.checkpoint.Checkpointer) told of every record: it writes
the checkpoints that let a training killed with its process resume the same way.

So the resumed model is the uninterrupted model, byte for byte: the same guarantee as for any
worker count and partitioning, which is what lets the next attempt use fewer workers.
"""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field

from ..tree.device_grower import PendingTree


@dataclass
class Progress:
    """A training's state at the end of its last completed round."""

    rounds: int = 0                 # rounds completed by this training (xgb_model's excluded)
    started: bool = False           # the callbacks' before_training has run
    booster: object = None          # the model (its trees may run ahead of ``rounds``)
    history: dict = field(default_factory=dict)     # {eval set: {metric: [value per round]}}
    callbacks: list | None = None   # the callbacks, as they stand after ``rounds`` rounds
    #                                 (None once started: the caller's, new: a checkpoint's)
    eta: float | None = None        # the learning rate of round ``rounds``
    sink: object = None             # told of every record (dgbdt.engine.checkpoint.Checkpointer)
    finished: bool = False          # the training has ended (its last round, or a stop)

    def record(self, rounds: int, booster, history: dict, callbacks, eta: float,
               finished: bool = False) -> None:
        """The loop has completed ``rounds`` rounds (``finished``: and ended there)."""
        self.rounds, self.booster, self.history = rounds, booster, history
        self.callbacks, self.eta, self.started = callbacks, eta, True
        self.finished = finished
        if self.sink is not None:
            self.sink.recorded(self)

    def frozen(self, prior_rounds: int, trees=None) -> "Progress":
        """A copy that later training does not change, cut to the completed rounds.

        ``prior_rounds``: the rounds of the model training started from (xgb_model);
        ``trees``: the trees to keep instead of the booster's own (Dask's graph mode, whose
        booster holds futures). A copy with fewer trees than ``rounds`` needs is cut to the
        rounds those trees complete."""
        b = self.booster.snapshot()
        K = b.trees_per_round
        if trees is not None:
            b.trees = list(trees)
        else:       # a GPU's last trees may be pending (engine.boosting): not kept
            b.trees = list(itertools.takewhile(lambda t: not isinstance(t, PendingTree),
                                               b.trees))
        rounds = min(self.rounds, len(b.trees) // K - prior_rounds)
        keep = (prior_rounds + rounds) * K
        b.trees, b.tree_class = b.trees[:keep], b.tree_class[:keep]
        b.best_iteration = b.best_score = None
        next_eta = self.booster.__dict__.get("_next_eta") if rounds == self.rounds else None
        if next_eta is not None:
            b._next_eta = next_eta
        history = {name: {m: list(v[:rounds]) for m, v in metrics.items()}
                   for name, metrics in self.history.items()}
        return Progress(rounds, self.started, b, history, self.callbacks, self.eta)

    def resume_history(self) -> dict:
        """A fresh copy of the history, to go on appending to."""
        return copy.deepcopy(self.history)


def replay(stopper, history: dict, rounds: int) -> None:
    """Bring early stopping up to round ``rounds`` from the recorded scores: it watches the
    last metric of the last eval set (dgbdt.engine.boosting.boost's rule)."""
    if stopper is None or not history or rounds == 0:
        return
    last = history[list(history)[-1]]
    values = last[list(last)[-1]]
    for r in range(rounds):
        stopper.update(r, values[r])


def resume_callbacks(callbacks, booster, history: dict, epoch: int) -> None:
    """A training resumed from a checkpoint runs the caller's callbacks, new: each one with a
    ``resume(model, epoch, evals_log)`` method rebuilds its state there from the history of
    the rounds before ``epoch`` (EarlyStopping replays its best score and round)."""
    for cb in callbacks:
        fn = getattr(cb, "resume", None)
        if callable(fn):
            fn(booster, epoch, copy.deepcopy(history))
