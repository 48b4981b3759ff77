"""A GPU worker killed mid-training (dask-cuda, one GPU): the nanny brings it back, the lost
cupy partitions are recomputed there, and the training resumes to the undisturbed model."""
import os
import uuid

import numpy as np
import pytest

import cupy as cp

import dgbdt
import dgbdt.dask as dgd
from dgbdt.callback import TrainingCallback

dask_cuda = pytest.importorskip("dask_cuda")
da = pytest.importorskip("dask.array")

P = {"objective": "binary:logistic", "max_depth": 5, "eval_metric": ["logloss", "auc"],
     "subsample": 0.8, "colsample_bytree": 0.8, "seed": 1}


class KillAt(TrainingCallback):
    """Exits its worker's process after round ``at`` (once: a marker file says it happened)."""

    def __init__(self, at, marker):
        self.at, self.marker = at, marker

    def after_iteration(self, model, epoch, evals_log):
        if epoch == self.at and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        return False


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 8)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + rng.standard_normal(n) > 0).astype(np.float64)
    return X, y


def _dask(X, y, chunks):
    tag = uuid.uuid4().hex
    return (da.from_array(cp.asarray(X), chunks=(chunks, -1), asarray=False, name=f"X{tag}"),
            da.from_array(cp.asarray(y), chunks=(chunks,), asarray=False, name=f"y{tag}"))


def _kill_level(n):
    def patch():
        from dgbdt.engine.seam import LocalSeam
        original, calls = LocalSeam.level, [0]

        def level(self, *args):
            calls[0] += 1
            if calls[0] == n:
                os._exit(1)
            return original(self, *args)
        LocalSeam.level = level
    return patch


def test_killed_gpu_worker_restarts_to_the_same_model(tmp_path):
    from distributed import Client
    X, y = _data(20000, 0)
    Xv, yv = _data(5000, 1)
    ref: dict = {}
    booster = dgbdt.train(P, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 20,
                          evals=[(dgbdt.Dataset(cp.asarray(Xv), label=cp.asarray(yv)), "v")],
                          early_stopping_rounds=5, evals_result=ref, verbose_eval=False)
    with dask_cuda.LocalCUDACluster(n_workers=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        d = dgd.DaskDataset(client, *_dask(X, y, 5000))
        dv = dgd.DaskDataset(client, *_dask(Xv, yv, 2500))
        kw = dict(evals=[(dv, "v")], early_stopping_rounds=5, verbose_eval=False)
        # the one-task mode: the worker's loss loses its progress, round 0 again
        out = dgd.train(client, P, d, 20, callbacks=[KillAt(6, str(tmp_path / "a"))], **kw)
        assert os.path.exists(tmp_path / "a")
        assert out["mode"] == "task" and out["restarts"] == 1
        assert out["booster"].save_raw() == booster.save_raw()
        assert out["history"] == ref
        # graph mode, its only unit lost mid-tree (device growth runs inside the level tasks)
        client.wait_for_workers(1, timeout=120)
        d = dgd.DaskDataset(client, *_dask(X, y, 5000))
        dv = dgd.DaskDataset(client, *_dask(Xv, yv, 2500))
        client.run(_kill_level(20))
        out = dgd.train(client, P, d, 20, mode="graph", evals=[(dv, "v")],
                        early_stopping_rounds=5, verbose_eval=False)
        assert out["restarts"] == 1
        assert out["booster"].save_raw() == booster.save_raw()
        assert out["history"] == ref
