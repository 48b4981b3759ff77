"""device_memory_budget on the CPU backend: pages beyond the budget live in memory-mapped spill
files, and the model is byte-identical to in-memory training for every budget."""
import os

import numpy as np
import pytest

import dgbdt
from dgbdt.data import page_store
from dgbdt.data.page_store import PageStore, page_rows_for, spill
from dgbdt.data.pages import pack
from dgbdt.kernels.cpu import CPU
from dgbdt.params import ParameterError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40_000, 12)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 > 0.8).astype(np.float64)
    return X, y


@pytest.fixture
def small_pages(monkeypatch):
    """Pages of ~64 KiB, so a small budget cuts the 40k rows into several."""
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 16)


PARAMS = {"objective": "binary:logistic", "max_depth": 5, "max_bin": 64, "eval_metric": "auc"}


def _train(X, y, **extra):
    res = {}
    d = dgbdt.Dataset(X, label=y)
    b = dgbdt.train({**PARAMS, **extra}, d, 6, evals=[(d, "train")], evals_result=res,
                    verbose_eval=False)
    return b, res


@pytest.mark.parametrize("budget", [1, 100_000, 200_000, 0.5, 10**12])
def test_model_identical_for_any_budget(data, small_pages, budget, tmp_path, monkeypatch):
    monkeypatch.setenv("DGBDT_SPILL_DIR", str(tmp_path))
    X, y = data
    ref, ref_res = _train(X, y)
    b, res = _train(X, y, device_memory_budget=budget)
    assert b.save_raw() == ref.save_raw()
    assert res == ref_res
    m = b.memory
    total = m["pages_in_memory_bytes"] + m["pages_spilled_bytes"]
    if isinstance(budget, int) and budget < total:
        assert m["pages_spilled"] >= 1 and m["pages_in_memory_bytes"] <= budget
    if budget == 10**12:
        assert m["pages_spilled"] == 0
    assert os.listdir(tmp_path) == []        # spill files are unlinked once mapped


def test_spilled_pages_are_memory_maps_and_budget_is_kept(data, small_pages, tmp_path):
    X, _ = data
    from dgbdt.data.dataset import Dataset
    d = Dataset(X)
    cuts = d.cuts(64)
    store = PageStore(150_000, CPU, spill_dir=str(tmp_path))
    step = page_rows_for(150_000, X.shape[1], 7)
    placed = [store.place(d.build_page(a, min(a + step, len(X)), cuts))
              for a in range(0, len(X), step)]
    kinds = [isinstance(p.words, np.memmap) for p in placed]
    assert kinds[0] is False and any(kinds)
    assert store.in_memory_bytes <= 150_000
    assert store.spilled_pages == sum(kinds)
    for p in placed:        # the same symbols as the in-memory pages
        if isinstance(p.words, np.memmap):
            assert not p.words.flags.writeable


def test_spill_roundtrip(tmp_path):
    words = np.arange(1000, dtype=np.uint32)
    m = spill(words, str(tmp_path))
    np.testing.assert_array_equal(m, words)
    assert os.listdir(tmp_path) == []


def test_gpu_budget_smaller_than_pages_is_a_clear_error():
    class FakeCuda:
        name = "cuda"
    page = pack(np.zeros((1000, 4), np.uint16) + 3)
    store = PageStore(10, FakeCuda())
    with pytest.raises(MemoryError, match="device_memory_budget=10 .*not implemented yet"):
        store.place(page)


@pytest.mark.parametrize("bad", [0, -5, 1.5, 0.0, "1GB", True])
def test_bad_budget_values(bad):
    with pytest.raises(ParameterError, match="device_memory_budget must be"):
        dgbdt.train({"device_memory_budget": bad}, dgbdt.Dataset(np.zeros((4, 1)), label=[0, 1, 0, 1]), 1)


def test_dask_task_and_graph_mode_with_budget(data, tmp_path, monkeypatch):
    dd = pytest.importorskip("dask.array")
    from distributed import Client, LocalCluster

    import dgbdt.dask as dgd
    monkeypatch.setenv("DGBDT_SPILL_DIR", str(tmp_path))
    X, y = data
    ref, _ = _train(X, y)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        d = dgd.DaskDataset(client, dd.from_array(X, chunks=(10_000, -1)),
                            dd.from_array(y, chunks=10_000))
        for mode in ("graph", "task") if len(set(d.workers_of_parts())) == 1 else ("graph",):
            out = dgd.train(client, {**PARAMS, "device_memory_budget": 1}, d, 6, mode=mode,
                            verbose_eval=False)
            assert out["booster"].save_raw() == ref.save_raw()
