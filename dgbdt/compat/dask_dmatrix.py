"""xgboost.dask's DaskDMatrix / DaskQuantileDMatrix over dgbdt's DaskDataset, and the
workers' thread count as XGBoost's Dask interface reports it (re-exported by
dgbdt.compat.xgboost_dask; its estimators, dgbdt.compat.xgboost_dask_sklearn, use them too)."""
from __future__ import annotations

import asyncio
import functools

import numpy as np

from ..dask.data import DaskDataset
from ._common import _unsupported, refuse_unsupported
from .dask_async import on_loop


class DaskDMatrix:
    """xgboost.dask.DaskDMatrix: a dgbdt DaskDataset of dask collections. Made with an
    asynchronous client on its loop, it is built when awaited (``await DaskDMatrix(client,
    X, y)``, XGBoost's way; dgbdt.compat.dask_async)."""

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
        build = functools.partial(
            DaskDataset, client, data, label, weight, base_margin,
            feature_names=feature_names, feature_types=feature_types,
            enable_categorical=enable_categorical, qid=qid,
            label_lower_bound=label_lower_bound, label_upper_bound=label_upper_bound,
            missing=np.nan if missing is None else missing)
        self._build = build if on_loop(client) else None
        self._dataset = None if on_loop(client) else build()

    def __await__(self):
        async def built():
            if self._dataset is None:
                self._dataset = await asyncio.to_thread(self._build)
            return self
        return built().__await__()

    @property
    def dataset(self) -> DaskDataset:
        if self._dataset is None:
            raise RuntimeError("a DaskDMatrix made with an asynchronous client is built when "
                               "awaited: m = await DaskDMatrix(client, ...)")
        return self._dataset


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
