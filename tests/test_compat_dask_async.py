"""xgboost.dask's asynchronous interface through dgbdt.compat: with
Client(asynchronous=True) the matrices, train, predict and the estimators are awaited, the
blocking dgbdt call running in a thread (dgbdt.dask.worker.off_loop); the same models as a
synchronous client's."""
import numpy as np
import pytest

pytest.importorskip("distributed")
pytestmark = pytest.mark.dask

import dask.array as da  # noqa: E402

import dgbdt.compat.xgboost as xgb  # noqa: E402

dxgb = xgb.dask


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.normal(size=600)).astype(np.float32)
    return X, y


def test_train_and_predict_are_awaited(on_async_client):
    X, y = _data()
    ref = xgb.train({"max_depth": 3}, xgb.DMatrix(X, y), 3)

    async def main(client):
        Xd, yd = da.from_array(X, chunks=(200, 5)), da.from_array(y, chunks=200)
        m = await dxgb.DaskDMatrix(client, Xd, yd)
        out = await dxgb.train(client, {"max_depth": 3}, m, num_boost_round=3)
        with_m = await dxgb.predict(client, out, m)
        with_x = await dxgb.inplace_predict(client, out, Xd)
        assert isinstance(with_m, da.Array)
        return out, await client.compute(with_m), await client.compute(with_x)

    out, with_m, with_x = on_async_client(main)
    assert out["booster"].save_raw("dgbdt") == ref.save_raw("dgbdt")
    np.testing.assert_array_equal(with_m, with_x)
    np.testing.assert_allclose(with_m, ref.predict(xgb.DMatrix(X)), rtol=1e-6)


def test_estimators_are_awaited(on_async_client):
    X, y = _data()
    labels = (y > 0).astype(np.int32)

    async def main(client):
        Xd = da.from_array(X, chunks=(200, 5))
        reg = await dxgb.DaskXGBRegressor(n_estimators=2)
        reg.client = client
        fitted = await reg.fit(Xd, da.from_array(y, chunks=200), eval_set=[(Xd, da.from_array(y, chunks=200))])
        assert fitted is reg
        p = await client.compute(await reg.predict(Xd))
        clf = dxgb.DaskXGBClassifier(n_estimators=2)
        clf.client = client
        await clf.fit(Xd, da.from_array(labels, chunks=200))
        proba = await client.compute(await clf.predict_proba(Xd))
        return reg, p, clf, proba

    reg, p, clf, proba = on_async_client(main)
    assert len(reg.evals_result()["validation_0"]["rmse"]) == 2
    assert p.shape == (600,) and proba.shape == (600, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-6)


def test_a_matrix_not_awaited_says_so(on_async_client):
    X, y = _data()

    async def main(client):
        m = dxgb.DaskDMatrix(client, da.from_array(X, chunks=300), da.from_array(y, chunks=300))
        with pytest.raises(RuntimeError, match="await"):
            m.dataset.num_row
        return True

    assert on_async_client(main)
