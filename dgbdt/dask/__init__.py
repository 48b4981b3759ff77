"""dgbdt on Dask: train and predict on dask collections without moving data to the client.

    from dgbdt import dask as dgd
    dtrain = dgd.DaskDataset(client, X, y)                 # dask DataFrame or dask array
    out = dgd.train(client, params, dtrain, 100, evals=[(dtrain, "train")])
    pred = dgd.predict(client, out["booster"], X)          # lazy, partition-aligned

The names and signatures follow xgboost.dask, so code ports by changing the import.
"""
from ..model.booster import Booster
from .collective import CollectiveError
from .data import DaskDataset
from .graph import GraphModeError
from .memory import WorkerMemoryError
from .predict import predict
from .recovery import RecoveryError, WorkerLostError
from .train import train


def __getattr__(name):
    # the estimators load scikit-learn (slow to import): only when one is used, not at import
    # (docs/benchmarks-archive.md#figures-behind-code-choices)
    if name in ("DaskGBDTClassifier", "DaskGBDTRegressor", "DaskGBDTRanker",
                "DaskGBDTRFClassifier", "DaskGBDTRFRegressor"):
        from . import sklearn
        return getattr(sklearn, name)
    raise AttributeError(f"module 'dgbdt.dask' has no attribute {name!r}")

__all__ = ["Booster", "CollectiveError", "DaskDataset", "DaskGBDTClassifier", "DaskGBDTRanker",
           "DaskGBDTRegressor", "DaskGBDTRFClassifier", "DaskGBDTRFRegressor",
           "GraphModeError", "RecoveryError", "WorkerLostError", "WorkerMemoryError", "predict",
           "train"]
