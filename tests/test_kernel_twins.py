"""Parallel kernels' serial twins (dgbdt.kernels.twins): a one-thread caller runs (and a first fit
compiles) the serial build alone, with the same results; a Dask worker's data tasks run on the
worker's thread count (dgbdt.dask.worker.data_task_threads)."""
import numba
import numpy as np
import pytest
from numba import njit, prange

from dgbdt.data.sketch import summarize
from dgbdt.kernels import cpu_data, cpu_objective
from dgbdt.kernels.threads import kernel_threads
from dgbdt.kernels.twins import serial_twin


@njit(parallel=True)
def _double(x, out):
    for i in prange(x.shape[0]):
        out[i] = 2.0 * x[i]


def test_twin_runs_the_serial_build_on_one_thread():
    twin = serial_twin(_double)
    x, out = np.arange(5.0), np.empty(5)
    with kernel_threads(1):
        assert twin.pick() is twin.serial
        twin(x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert twin.serial.signatures and not twin.parallel.signatures   # only the serial compiled
    assert twin.serial.py_func.__qualname__.endswith("_serial")       # its own cache files
    if numba.get_num_threads() > 1:
        assert twin.pick() is twin.parallel


def test_twin_refuses_a_serial_kernel():
    with pytest.raises(ValueError, match="not a parallel kernel"):
        serial_twin(njit(lambda x: x))


def test_dgbdt_kernels_are_twins_with_cache():
    for k in (cpu_data.summarize_columns, cpu_data.quantize_rows, cpu_objective.logistic):
        assert k.serial.targetoptions.get("parallel") is None
        assert k.parallel.targetoptions["parallel"]


def test_summaries_same_on_one_thread_and_many():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    with kernel_threads(1):
        one = summarize(X, max_keys=64)
    many = summarize(X, max_keys=64)
    for name in ("keys", "weights", "lo", "hi", "ptrs", "shifts"):
        np.testing.assert_array_equal(getattr(one, name), getattr(many, name))


def test_data_tasks_run_on_the_workers_threads(client1):
    from dgbdt.dask.worker import data_task_threads

    def inside():
        before = numba.get_num_threads()
        with data_task_threads():
            n, build = numba.get_num_threads(), cpu_data.summarize_columns.pick()
        return n, build is cpu_data.summarize_columns.serial, numba.get_num_threads() == before

    assert client1.submit(inside, pure=False).result() == (1, True, True)
    before = numba.get_num_threads()
    with data_task_threads():             # outside a worker: unchanged
        assert numba.get_num_threads() == before


def test_split_search_same_on_one_thread_and_many():
    """evaluate_splits' serial build (a one-thread worker's) finds the parallel build's splits,
    node j's features cut into several ranges or one."""
    from dgbdt.kernels.cpu_split import _evaluate_ranges, evaluate_splits
    rng = np.random.default_rng(5)
    n_features, bins = 200, 16          # >= 128 features: several ranges a node
    ptrs = np.arange(0, (bins + 1) * (n_features + 1), bins + 1, dtype=np.int64)
    hist = np.zeros((3, ptrs[-1], 2), dtype=np.int64)
    hist[..., 0] = rng.integers(-50, 50, hist.shape[:2])
    hist[..., 1] = rng.integers(1, 40, hist.shape[:2])
    totals = np.stack([hist[:, ptrs[0]:ptrs[1], 0].sum(1), hist[:, ptrs[0]:ptrs[1], 1].sum(1)], 1)
    args = (hist, ptrs, totals, 0.01, 0.01, 1.0, 0.0, 0.0, 0.1)
    many = evaluate_splits(*args, serial_slots=0)
    with kernel_threads(1):
        assert _evaluate_ranges.pick() is _evaluate_ranges.serial
        one = evaluate_splits(*args, serial_slots=0)
        ranged = _evaluate_ranges(*args, 4)
    for a, b, c in zip(one, many, ranged):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    assert (one[1] >= 0).all()


def test_dask_predictions_run_on_the_workers_threads(client1, monkeypatch):
    """dgbdt.dask.predict's tasks run on the worker's thread count (one here), so they run
    and compile the serial builds as the training's tasks do."""
    import dask.array as da

    import dgbdt
    from dgbdt import dask as dgd
    from dgbdt.model.booster import Booster
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4)).astype(np.float32)
    b = dgbdt.train({"max_depth": 3}, dgbdt.Dataset(X, X[:, 0]), 3)
    seen, predict = [], Booster.predict

    def spy(self, *a, **k):
        from distributed import get_worker
        try:
            get_worker()
        except ValueError:          # the client's own calls (the output's meta)
            return predict(self, *a, **k)
        seen.append(numba.get_num_threads())
        return predict(self, *a, **k)

    monkeypatch.setattr(Booster, "predict", spy)
    out = client1.compute(dgd.predict(client1, b, da.from_array(X, chunks=200))).result()
    np.testing.assert_array_equal(out, predict(b, X))
    assert seen == [1, 1]          # one task a chunk
