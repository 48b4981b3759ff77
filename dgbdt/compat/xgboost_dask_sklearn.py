"""The Dask estimators' XGBoost habits (xgboost.dask.DaskXGBRegressor, ...; built by
dgbdt.compat.xgboost_dask over dgbdt.dask.sklearn's estimators). Its own module: it loads
scikit-learn, which importing xgboost.dask does not."""
from __future__ import annotations

from ._common import refuse_categorical
from .dask_dmatrix import DaskQuantileDMatrix, worker_nthreads
from .xgboost_sklearn import _TrainedObjective, _XGBBehaviour


class _DaskXGBBehaviour(_XGBBehaviour):
    """XGBoost's habits (dgbdt.compat.xgboost_sklearn) on the Dask estimators: the training
    data made as XGBoost's are, one DaskQuantileDMatrix per distinct collection (an eval
    set of the training's own objects is the training's), and the workers' threads in
    the configuration (save_config's nthread), as xgboost.dask's."""

    def _doc_link_url_param_generator(self) -> dict:
        return {"estimator_module": "xgboost.dask", "estimator_name": type(self).__name__}

    def _fit_callbacks(self):
        # dgbdt.dask's: the callbacks run on the workers, with dgbdt's Booster
        return super(_XGBBehaviour, self)._fit_callbacks()

    #: the classes first, then one DaskQuantileDMatrix per collection (not together)
    _classes_with_datasets = False

    def _datasets(self, client, specs: list[dict]) -> list:
        made = [DaskQuantileDMatrix(client=client, **kw).dataset for kw in specs]
        refuse_categorical(self.tree_method, self.booster, made[0].feature_types)
        return made

    def _fit(self, X, y, params, *args, **kwargs):
        super()._fit(X, y, params, *args, **kwargs)
        self._Booster.config_params = dict(self._Booster.config_params or {},
                                           nthread=worker_nthreads(self.client, params))
        return self


class _DaskXGBClassifierBehaviour(_TrainedObjective, _DaskXGBBehaviour):
    """The Dask classifiers' habits: _DaskXGBBehaviour's, and ``objective`` after fit the
    objective trained with, as xgboost.dask.DaskXGBClassifier sets it (_TrainedObjective)."""
