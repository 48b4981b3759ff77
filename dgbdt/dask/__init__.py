"""dgbdt on Dask: train and predict on dask collections without moving data to the client.

    from dgbdt import dask as dgd
    dtrain = dgd.DaskDataset(client, X, y)                 # dask DataFrame or dask array
    out = dgd.train(client, params, dtrain, 100, evals=[(dtrain, "train")])
    pred = dgd.predict(client, out["booster"], X)          # lazy, partition-aligned

The names and signatures follow xgboost.dask, so code ports by changing the import.
"""
from ..booster import Booster
from .data import DaskDataset
from .predict import predict
from .sklearn import DaskGBDTClassifier, DaskGBDTRegressor
from .train import train

__all__ = ["Booster", "DaskDataset", "DaskGBDTClassifier", "DaskGBDTRegressor", "predict", "train"]
