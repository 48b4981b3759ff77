"""dgbdt: gradient-boosted decision trees for Dask collections, on CPUs and GPUs.

In-process API (XGBoost's names and semantics)::

    import dgbdt
    dtrain = dgbdt.Dataset(X, label=y)
    booster = dgbdt.train({"objective": "binary:logistic", "max_depth": 6}, dtrain, 100,
                          evals=[(dgbdt.Dataset(Xv, label=yv), "valid")])
    booster.predict(Xv)
"""
import logging

from .model.booster import Booster, load_model
from .cv import cv
from .data.batches import BatchDataset
from .data.dataset import Dataset
from .params.normalize import ParameterError
from .train import train
from .tree.model import ModelFormatError


def __getattr__(name):
    # the estimators load scikit-learn (slow to import): only when one is used, not at import
    # (docs/benchmarks-archive.md#figures-behind-code-choices)
    if name in ("GBDTClassifier", "GBDTRegressor", "GBDTRanker", "GBDTRFClassifier",
                "GBDTRFRegressor"):
        from . import sklearn
        return getattr(sklearn, name)
    if name in ("plot_importance", "plot_metric", "plot_tree"):   # matplotlib on first use
        from . import plotting
        return getattr(plotting, name)
    raise AttributeError(f"module 'dgbdt' has no attribute {name!r}")

# the package's logger ("dgbdt", children per module: "dgbdt.dask", "dgbdt.engine.checkpoint"); silent
# until the application configures logging (a library adds no handler of its own)
logging.getLogger("dgbdt").addHandler(logging.NullHandler())

__version__ = "0.8.0.dev0"

__all__ = ["BatchDataset", "Booster", "Dataset", "GBDTClassifier", "GBDTRanker", "GBDTRegressor",
           "GBDTRFClassifier", "GBDTRFRegressor", "ModelFormatError",
           "ParameterError", "cv", "load_model", "plot_importance", "plot_metric", "plot_tree",
           "train", "__version__"]
