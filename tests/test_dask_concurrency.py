"""Trainings that share a cluster: a fit submitted as a task (its worker's client, the thread
seceded while the training's tasks run) and two collective trainings at once (each rank
secedes from its worker's pool), each bounded in time and with the in-process bytes. On
one-thread workers both used to wait for ever."""
import concurrent.futures

import numpy as np
import pytest

import dgbdt

da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
from dgbdt import dask as dgd  # noqa: E402

pytestmark = pytest.mark.slow

PARAMS = {"objective": "binary:logistic", "max_depth": 3}


def data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    return X, (X[:, 0] + rng.standard_normal(n) * 0.3 > 0).astype(np.float64)


def test_fits_submitted_as_tasks(client2):
    X, y = data()
    ests = [dgd.DaskGBDTClassifier(n_estimators=i + 2, max_depth=3) for i in range(2)]
    futs = [client2.submit(est.fit, dd.from_array(X, chunksize=400),
                           dd.from_array(y, chunksize=400), pure=False) for est in ests]
    fitted = [f.result(timeout=120) for f in futs]
    for i, est in enumerate(fitted):
        ref = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y), i + 2)
        assert est.get_booster().num_boosted_rounds() == i + 2
        np.testing.assert_allclose(est.get_booster().predict(X), ref.predict(X), rtol=1e-6)


def test_two_collective_trainings_at_once(client2):
    X, y = data()
    ref = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y), 4).save_raw()

    def one():
        d = dgd.DaskDataset(client2, da.from_array(X, chunks=(500, 5)),
                            da.from_array(y, chunks=500))
        return dgd.train(client2, PARAMS, d, 4, mode="collective",
                         verbose_eval=False)["booster"].save_raw()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(one) for _ in range(2)]
        assert [r.result(timeout=120) for r in runs] == [ref, ref]


def _leftovers(dask_scheduler=None):
    """The collective trainings' events and variables the scheduler still holds."""
    names = list(dask_scheduler.extensions["events"]._events) + list(
        dask_scheduler.extensions["variables"].variables)
    return sorted(n for n in names if str(n).startswith("dgbdt-collective-"))


def test_a_finished_collective_training_leaves_nothing_on_the_scheduler(client2):
    """Its abort flag and variables are let go without the client waiting for it (sent from
    the client's loop), so a notebook's many fits do not pile them up."""
    import time
    X, y = data(seed=3)
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(500, 5)), da.from_array(y, chunks=500))
    before = set(client2.run_on_scheduler(_leftovers))   # (earlier tests' stopped trainings)
    dgd.train(client2, PARAMS, d, 2, mode="collective", verbose_eval=False)
    deadline = time.monotonic() + 10
    while set(client2.run_on_scheduler(_leftovers)) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(client2.run_on_scheduler(_leftovers)) - before == set()


def test_async_clients_await_datasets_training_and_estimators(on_async_client):
    """On an asynchronous client's loop, DaskDataset, train and the estimators' methods are
    awaited (each blocking call runs in a thread, where the client blocks): the models of a
    synchronous client, and the loop serves the client meanwhile."""
    X, y = data()
    local = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y), 3)

    async def main(client):
        Xd, yd = da.from_array(X, chunks=(500, 5)), da.from_array(y, chunks=500)
        d = dgd.DaskDataset(client, Xd, yd)
        with pytest.raises(RuntimeError, match="await"):
            d.num_row
        d = await d
        out = await dgd.train(client, PARAMS, d, 3, verbose_eval=False)
        pred = await client.compute(dgd.predict(client, out["booster"], d))
        est = await dgd.DaskGBDTRegressor(n_estimators=3, max_depth=3, learning_rate=0.3)
        est.client = client
        assert await est.fit(Xd, yd) is est
        p = await client.compute(await est.predict(Xd))
        clf = dgd.DaskGBDTClassifier(n_estimators=2)
        clf.client = client
        await clf.fit(Xd, yd)
        proba = await client.compute(await clf.predict_proba(Xd))
        return out["booster"].save_raw(), pred, p, proba

    model, pred, p, proba = on_async_client(main)
    assert model == local.save_raw()
    np.testing.assert_array_equal(pred, local.predict(X))
    assert p.shape == (len(X),) and proba.shape == (len(X), 2)


def test_an_async_client_works_from_a_thread(on_async_client):
    """Any other dgbdt.dask call: off its event loop the asynchronous client blocks as a
    synchronous one, so the call runs in a thread with it (what the refusal advises)."""
    import asyncio
    X, y = data()
    ref = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y), 3).save_raw()

    async def main(client):
        def fit():
            d = dgd.DaskDataset(client, da.from_array(X, chunks=(500, 5)),
                                da.from_array(y, chunks=500))
            return dgd.train(client, PARAMS, d, 3, verbose_eval=False)["booster"]
        return (await asyncio.to_thread(fit)).save_raw()
    assert on_async_client(main) == ref


def test_compat_predict_takes_a_scattered_booster(client2):
    import dgbdt.compat.xgboost as xgb
    X, y = data()
    Xd = da.from_array(X, chunks=(500, 5))
    booster = xgb.dask.train(client2, PARAMS, xgb.dask.DaskDMatrix(client2, Xd,
                                                                   da.from_array(y, chunks=500)),
                             num_boost_round=2)["booster"]
    assert "learner" in __import__("json").loads(booster.save_config())
    scattered = client2.scatter(booster, broadcast=True)
    np.testing.assert_allclose(client2.compute(xgb.dask.predict(client2, scattered, Xd)).result(),
                               booster.predict(xgb.DMatrix(X)), rtol=1e-6)
    est = xgb.dask.DaskXGBRegressor(n_estimators=2)
    est.client = client2
    assert "learner" in __import__("json").loads(
        est.fit(Xd, da.from_array(y, chunks=500)).get_booster().save_config())
