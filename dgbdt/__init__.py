"""dgbdt: gradient-boosted decision trees for Dask collections, on CPUs and GPUs.

In-process API (XGBoost's names and semantics)::

    import dgbdt
    dtrain = dgbdt.Dataset(X, label=y)
    booster = dgbdt.train({"objective": "binary:logistic", "max_depth": 6}, dtrain, 100,
                          evals=[(dgbdt.Dataset(Xv, label=yv), "valid")])
    booster.predict(Xv)
"""
from .booster import Booster, load_model
from .data.dataset import Dataset
from .params import ParameterError
from .sklearn import GBDTClassifier, GBDTRegressor
from .train import train
from .tree.model import ModelFormatError

__version__ = "0.5.0"

__all__ = ["Booster", "Dataset", "GBDTClassifier", "GBDTRegressor", "ModelFormatError",
           "ParameterError", "load_model", "train", "__version__"]
