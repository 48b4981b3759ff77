"""xgboost.dask's DaskDMatrix / DaskQuantileDMatrix over dgbdt's DaskDataset, and the
workers' thread count as XGBoost's Dask interface reports it (re-exported by
dgbdt.compat.xgboost_dask; its estimators, dgbdt.compat.xgboost_dask_sklearn, use them too)."""
from __future__ import annotations

import numpy as np

from ..dask.data import DaskDataset
from ._common import _unsupported, refuse_unsupported


class DaskDMatrix:
    """xgboost.dask.DaskDMatrix: a dgbdt DaskDataset of dask collections. Made with an
    asynchronous client on its loop, it is built when awaited (``await DaskDMatrix(client,
    X, y)``, XGBoost's way, as the DaskDataset)."""

    def __init__(self, client, data, label=None, *, weight=None, base_margin=None,
                 missing=None, silent=False, feature_names=None, feature_types=None,
                 group=None, qid=None, label_lower_bound=None, label_upper_bound=None,
                 feature_weights=None, enable_categorical=False, **kwargs):
        refuse_unsupported(group=group, qid=qid, weight=weight,
                           enable_categorical=enable_categorical, feature_types=feature_types)
        # column sampling's weights: a training parameter in dgbdt (train adds them)
        self.feature_weights = None if feature_weights is None else \
            [float(w) for w in np.asarray(feature_weights).ravel()]
        if group is not None:
            _unsupported("group= on Dask", "pass qid= partitioned like data (each query "
                         "within one partition), as xgboost.dask does")
        # made on an asynchronous client's loop, the dataset is built when awaited
        self.dataset = DaskDataset(client, data, label, weight, base_margin,
                                   feature_names=feature_names, feature_types=feature_types,
                                   enable_categorical=enable_categorical, qid=qid,
                                   label_lower_bound=label_lower_bound,
                                   label_upper_bound=label_upper_bound,
                                   missing=np.nan if missing is None else missing)

    def __await__(self):
        async def built():
            await self.dataset
            return self
        return built().__await__()


class DaskQuantileDMatrix(DaskDMatrix):
    def __init__(self, client, data, label=None, *, ref=None, max_bin=None, **kwargs):
        super().__init__(client, data, label, **kwargs)
        self.max_bin = max_bin


def worker_nthreads(client, params: dict) -> int:
    """The threads a training uses on a worker, as XGBoost's Dask interface reports them
    (the configuration's nthread): the parameter nthread / n_jobs when given, else the
    workers' thread count (the smallest, when the workers differ)."""
    for key in ("nthread", "n_jobs"):
        if params.get(key) not in (None, 0):
            return int(params[key])
    workers = client.scheduler_info().get("workers", {}).values()
    counts = [int(w["nthreads"]) for w in workers if w.get("nthreads")]
    return min(counts) if counts else 0
