"""xgboost.callback over dgbdt.callback: dgbdt's callbacks, XGBoost's Booster handed to them
(``as_xgboost``) and XGBoost's ``TrainingCheckPoint(as_pickle=True)``."""
from __future__ import annotations

import os
import pickle

from .. import callback as _dgbdt_callback
from ..callback import TrainingCallback, TrainingCheckPoint as _CheckPoint

# dgbdt.callback's names (EarlyStopping, EvaluationMonitor, ...); TrainingCheckPoint below
globals().update({k: v for k, v in vars(_dgbdt_callback).items() if not k.startswith("_")
                  and k not in ("annotations", "TrainingCheckPoint")})


class TrainingCheckPoint(_CheckPoint):
    """XGBoost's TrainingCheckPoint: at epoch ``interval`` and every ``interval`` epochs
    after it, the model in ``directory/{name}_{epoch}.json`` (JSON, as dgbdt's), or with
    ``as_pickle=True``, as XGBoost's, the pickled Booster (XGBoost's Booster,
    dgbdt.compat.booster.Booster, whose pickle holds the JSON model and the training's
    parameters) in ``directory/{name}_{epoch}.pkl``."""

    def __init__(self, directory: str | os.PathLike, name: str = "model", as_pickle=False,
                 interval: int = 100):
        super().__init__(directory, name, False, interval)
        self.as_pickle = bool(as_pickle)

    def after_iteration(self, model, epoch, evals_log) -> bool:
        if not self.as_pickle:
            return super().after_iteration(model, epoch, evals_log)
        if self._since == self.interval:
            from .booster import Booster, _compat
            os.makedirs(self.directory, exist_ok=True)
            # a dgbdt Booster (dgbdt.train's): pickled as a copy in XGBoost's class
            obj = model if isinstance(model, Booster) else _compat(model.snapshot())
            with open(os.path.join(self.directory, f"{self.name}_{epoch}.pkl"), "wb") as f:
                pickle.dump(obj, f)
            self._since = 0
        self._since += 1
        return False


class Wrapped(TrainingCallback):
    """A user's callback, each of its calls made through ``_run`` (what a wrapper changes:
    the model handed over, the configuration it runs under)."""

    def __init__(self, callback):
        self.callback = callback

    def _run(self, method: str, model, *args):
        return getattr(self.callback, method)(model, *args)

    def before_training(self, model):
        return self._run("before_training", model)

    def after_training(self, model):
        return self._run("after_training", model)

    def before_iteration(self, model, epoch, evals_log):
        return self._run("before_iteration", model, epoch, evals_log)

    def after_iteration(self, model, epoch, evals_log):
        return self._run("after_iteration", model, epoch, evals_log)

    def resume(self, model, epoch, evals_log):
        if getattr(self.callback, "resume", None) is not None:    # a checkpoint's replay
            return self._run("resume", model, epoch, evals_log)


class _AsXGBoost(Wrapped):
    """A callback given XGBoost's Booster (dgbdt.compat.booster.Booster: save_config, ...)
    for the model being trained: the same object, its class set to XGBoost's."""

    def _run(self, method: str, model, *args):
        return getattr(self.callback, method)(_as_compat(model), *args)


def _as_compat(model):
    from ..model.booster import Booster as _Booster
    from .booster import _compat
    # dgbdt's Booster becomes XGBoost's in place; anything else (cv's folds) is left as it is
    return _compat(model) if type(model) is _Booster else model


def as_xgboost(callbacks):
    """The callbacks, each given XGBoost's Booster for the model (_AsXGBoost); None stays
    None."""
    from ..callback import check_callbacks
    return None if callbacks is None else [_AsXGBoost(cb) for cb in check_callbacks(callbacks)]
