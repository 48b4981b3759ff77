"""Streamed DaskDatasets (persist=False): the same model, without keeping the raw partitions.

A streamed dataset reads its partitions again for each pass (row counts, sketch, label
statistics, packing) and keeps only the packed pages. These tests check the model bytes
against persisted and in-process training in every mode, and measure on the scheduler how many
raw partitions are ever held at once.
"""
import numpy as np
import pytest

pytest.importorskip("distributed")
dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

import dask.array as da  # noqa: E402
import pandas as pd  # noqa: E402

import dgbdt  # noqa: E402
from datagen import binary_with_missing  # noqa: E402
import dgbdt.dask as dgd  # noqa: E402
from raw_parts import watch  # noqa: E402

F = 6
PARAMS = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["logloss", "error"]}


def make(n, seed=0):
    return binary_with_missing(n, F, seed)


@pytest.mark.parametrize("mode", ["task", "graph"])
def test_streamed_equals_persisted_and_in_process(client2, client1, mode):
    client = client1 if mode == "task" else client2
    X, y, w = make(4000)
    Xv, yv, _ = make(1000, seed=1)
    chunks = (500,)

    def dataset(persist, Xa, ya, wa=None):
        return dgd.DaskDataset(client, da.from_array(Xa, chunks=chunks + (F,)),
                               da.from_array(ya, chunks=chunks),
                               None if wa is None else da.from_array(wa, chunks=chunks),
                               persist=persist)

    runs = {}
    for persist in (True, False):
        d, dv = dataset(persist, X, y, w), dataset(persist, Xv, yv)
        runs[persist] = dgd.train(client, PARAMS, d, 5, evals=[(d, "train"), (dv, "valid")],
                                  mode=mode, verbose_eval=False)
    ref_hist = {}
    ref = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y, weight=w), 5,
                      evals=[(dgbdt.Dataset(X, label=y, weight=w), "train"),
                             (dgbdt.Dataset(Xv, label=yv), "valid")],
                      evals_result=ref_hist, verbose_eval=False)
    for out in runs.values():
        assert out["booster"].save_raw() == ref.save_raw()
        assert out["history"] == ref_hist


def test_streamed_parquet_keeps_few_raw_partitions(client2, tmp_path):
    """16 parquet files read lazily on 2 one-thread workers: persisted holds all 16 raw parts,
    streamed at most a few at a time (one per worker thread and pass, plus scheduling slack)."""
    X, y, _ = make(16 * 2000, seed=2)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(F)]).assign(label=y)
    for i in range(16):
        frame.iloc[i * 2000:(i + 1) * 2000].to_parquet(tmp_path / f"part{i:02d}.parquet")
    ref = None
    for persist in (True, False):
        plugin = watch(client2)
        ddf = dd.read_parquet(str(tmp_path))
        d = dgd.DaskDataset(client2, ddf[[f"f{j}" for j in range(F)]], ddf["label"],
                            persist=persist)
        out = dgd.train(client2, {"max_depth": 4}, d, 3, mode="graph", verbose_eval=False)
        model = out["booster"].save_raw()
        ref = ref or model
        assert model == ref
        if persist:
            assert plugin.peak == 16
        else:
            assert 1 <= plugin.peak <= 6, plugin.peak
            assert plugin.peak_bytes < 0.4 * frame.memory_usage().sum()
        del d, out


def test_streamed_dataset_predicts_and_refuses_bad_persist(client1):
    X, y, _ = make(1000, seed=3)
    d = dgd.DaskDataset(client1, da.from_array(X, chunks=(300, F)),
                        da.from_array(y, chunks=300), persist=False)
    b = dgd.train(client1, {"max_depth": 3}, d, 3, verbose_eval=False)["booster"]
    np.testing.assert_array_equal(client1.compute(dgd.predict(client1, b, d)).result(),
                                  b.predict(X))
    with pytest.raises(TypeError, match="persist must be True or False"):
        dgd.DaskDataset(client1, da.from_array(X, chunks=(300, F)), da.from_array(y, chunks=300),
                        persist="no")
