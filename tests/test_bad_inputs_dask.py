"""A catalogue of bad inputs on a real cluster (worker processes): each must end within seconds
with an error that says what was wrong and what to do, and leave the cluster usable.

Every case builds its input and calls dgbdt the way a user would; the error's type and the
words that say what is wrong are asserted. After the catalogue the same cluster trains.
"""
import functools
import time

import numpy as np
import pytest
from datagen import binary_with_missing

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
import dgbdt  # noqa: E402
import dgbdt.dask as dgd  # noqa: E402

pytestmark = pytest.mark.slow  # process clusters with bad partitions

# an error must come within this: well under a second once warm, but a fresh worker (a CI
# machine of 2 cores, no numba cache) first compiles the kernels the failing check runs; a hang
# would wait for the cluster's timeouts (minutes)
SECONDS = 45.0
N, F = 1200, 4
NAMES = [f"f{i}" for i in range(F)]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as c, \
            distributed.Client(c, set_as_default=False) as client:
        client.wait_for_workers(2)
        # the workers' first use of the kernels (numba's compile on a machine without its
        # cache: tens of seconds on 2 busy cores) is not what a case times or waits for: a task
        # busy compiling cannot be cancelled, and would be "left running"
        X, y, _ = _xy()
        _train(client, dgd.DaskDataset(client, _arr(X), _arr(y)), rounds=1)
        yield client


def _xy():
    X, y, w = binary_with_missing(N, F, seed=5)
    return X, y, w


def _arr(v, parts=3):
    rows = int(np.ceil(v.shape[0] / parts))
    return da.from_array(v, chunks=(rows,) + v.shape[1:])


def _frame(X, y, parts=3):
    df = pd.DataFrame(X, columns=NAMES)
    df["label"] = y
    ddf = dd.from_pandas(df, npartitions=parts)
    return ddf[NAMES], ddf["label"]


def _train(client, d, params=None, rounds=2, **kw):
    return dgd.train(client, params or {}, d, rounds, verbose_eval=False, **kw)


# -- the cases: (id, function of the client that must raise, exception type, regex) -----------
def mismatched_partitions(c):
    X, y, _ = _xy()
    Xd, _ = _frame(X, y, 4)
    _, yd = _frame(X, y, 3)
    dgd.DaskDataset(c, Xd, yd)


def mismatched_row_chunks(c):
    X, y, _ = _xy()
    dgd.DaskDataset(c, _arr(X, 3), _arr(y, 4))


def misaligned_frame_partitions(c):
    """Same partition count, different rows per partition."""
    X, y, _ = _xy()
    Xd, _ = _frame(X, y, 3)
    yd = dd.from_pandas(pd.Series(y[::-1].copy()), npartitions=3).repartition(
        divisions=[0, 100, 700, N - 1])
    dgd.DaskDataset(c, Xd, yd)


def nan_label_in_one_partition(c):
    X, y, _ = _xy()
    y = y.copy()
    y[900] = np.nan
    dgd.DaskDataset(c, _arr(X), _arr(y))


def inf_label(c):
    X, y, _ = _xy()
    y = y.copy()
    y[10] = np.inf
    dgd.DaskDataset(c, _arr(X), _arr(y))


def negative_weight_in_one_partition(c):
    X, y, w = _xy()
    w = w.copy()
    w[1000] = -1.0
    dgd.DaskDataset(c, _arr(X), _arr(y), _arr(w))


def all_zero_weights(c):
    X, y, _ = _xy()
    dgd.DaskDataset(c, _arr(X), _arr(y), _arr(np.zeros(N)))


def category_column_in_one_partition(c):
    """A column that is numeric in the meta and text in one partition (a dirty file)."""
    from dask import delayed
    X, y, _ = _xy()
    frames = [pd.DataFrame(X[i:i + 400], columns=NAMES) for i in range(0, N, 400)]
    frames[2] = frames[2].astype({"f1": object})
    frames[2].loc[frames[2].index[0], "f1"] = "n/a"
    # verify_meta=False: what a loader that does not check types hands over
    Xd = dd.from_delayed([delayed(f) for f in frames], meta=frames[0], verify_meta=False)
    yd = dd.from_delayed([delayed(pd.Series(y[i:i + 400])) for i in range(0, N, 400)],
                         meta=pd.Series([], dtype=float))
    dgd.DaskDataset(c, Xd, yd)


def category_dtype_column(c):
    X, y, _ = _xy()
    Xd, yd = _frame(X, y)
    Xd = Xd.assign(f2=Xd["f2"].round().astype("category"))
    dgd.DaskDataset(c, Xd, yd)


def empty_partitions_everywhere(c):
    X, y, _ = _xy()
    Xd, yd = _frame(X, y)
    dgd.DaskDataset(c, Xd[Xd["f0"] > 1e9], yd[yd > 1e9])


def string_labels(c):
    X, y, _ = _xy()
    Xd, _ = _frame(X, y)
    yd = dd.from_pandas(pd.Series(np.where(y > 0, "yes", "no")), npartitions=3)
    dgd.DaskDataset(c, Xd, yd)


def unknown_chunk_sizes(c):
    X, y, _ = _xy()
    Xd = _arr(X)
    dgd.DaskDataset(c, Xd[Xd[:, 0] > 0], _arr(y))


def string_array_data(c):
    dgd.DaskDataset(c, da.from_array(np.array([["a", "b"]] * 10), chunks=5))


def one_dimensional_data(c):
    X, y, _ = _xy()
    dgd.DaskDataset(c, _arr(X[:, 0]), _arr(y))


def numpy_label_with_frame(c):
    X, y, _ = _xy()
    Xd, _ = _frame(X, y)
    dgd.DaskDataset(c, Xd, y)


def infinite_feature(c):
    X, y, _ = _xy()
    X = X.copy()
    X[700, 2] = np.inf
    dgd.DaskDataset(c, _arr(X), _arr(y))


def duplicate_feature_names(c):
    X, y, _ = _xy()
    dgd.DaskDataset(c, _arr(X), _arr(y), feature_names=["a", "b", "a", "c"])


def base_margin_wrong_rows(c):
    X, y, _ = _xy()
    bm = np.zeros(N)
    dgd.DaskDataset(c, _arr(X), _arr(y), base_margin=da.from_array(bm, chunks=500))


def logistic_labels_outside_unit_interval(c):
    X, y, _ = _xy()
    y = y.copy()
    y[1100] = 3.0
    _train(c, dgd.DaskDataset(c, _arr(X), _arr(y)), {"objective": "binary:logistic"})


def class_label_beyond_num_class(c):
    X, y, _ = _xy()
    y = y.copy()
    y[5] = 7
    _train(c, dgd.DaskDataset(c, _arr(X), _arr(y)),
           {"objective": "multi:softprob", "num_class": 3})


def softprob_without_num_class(c):
    X, y, _ = _xy()
    _train(c, dgd.DaskDataset(c, _arr(X), _arr(y)), {"objective": "multi:softprob"})


def eval_set_other_width(c):
    X, y, _ = _xy()
    d = dgd.DaskDataset(c, _arr(X), _arr(y))
    dv = dgd.DaskDataset(c, _arr(X[:, :3]), _arr(y))
    _train(c, d, evals=[(dv, "valid")])


def nccl_on_cpu_data(c):
    X, y, _ = _xy()
    _train(c, dgd.DaskDataset(c, _arr(X), _arr(y)), mode="nccl")


def unknown_parameter(c):
    X, y, _ = _xy()
    _train(c, dgd.DaskDataset(c, _arr(X), _arr(y)), {"max_dept": 3})


def in_memory_dataset(c):
    X, y, _ = _xy()
    _train(c, dgbdt.Dataset(X, label=y))


@functools.lru_cache(maxsize=None)
def _booster():
    X, y, _ = _xy()
    return dgbdt.train({}, dgbdt.Dataset(X, label=y), 2, verbose_eval=False)


def predict_wrong_width(c):
    X, _, _ = _xy()
    c.compute(dgd.predict(c, _booster(), _arr(X[:, :3]))).result()


CASES = [
    (mismatched_partitions, ValueError, r"label has 3 partitions but data has 4"),
    (mismatched_row_chunks, ValueError, r"row chunks .* do not match .*rechunk"),
    (misaligned_frame_partitions, ValueError, r"partition 0: label has \d+ entries.*400"),
    (nan_label_in_one_partition, ValueError,
     r"label contains NaN.*row 900 of the dataset \(row 100 of partition 2\)"),
    (inf_label, ValueError,
     r"label .*(inf|finite).*row 10 of the dataset \(row 10 of partition 0\)"),
    (negative_weight_in_one_partition, ValueError,
     r"weight must be >= 0.*row 1000 of the dataset \(row 200 of partition 2\)"),
    (all_zero_weights, ValueError, r"all sample weights are zero"),
    (category_column_in_one_partition, TypeError, r"partition 2: .*non-numeric columns: 'f1'"),
    (category_dtype_column, TypeError, r"f2.*categor"),
    (empty_partitions_everywhere, ValueError, r"data is empty: every partition has zero rows"),
    (string_labels, (TypeError, ValueError), r"partition 0: label.*(numbers|numeric)"),
    (unknown_chunk_sizes, ValueError, r"unknown chunk sizes.*compute_chunk_sizes"),
    (string_array_data, TypeError, r"data must hold numbers"),
    (one_dimensional_data, ValueError, r"2-D dask array"),
    (numpy_label_with_frame, TypeError, r"label must be a dask Series"),
    (infinite_feature, ValueError, r"infinite.*row 700 of the dataset \(row 300 of partition 1\)"),
    (duplicate_feature_names, ValueError, r"feature names must be unique"),
    (base_margin_wrong_rows, ValueError, r"base_margin.*(chunks|rows)"),
    (logistic_labels_outside_unit_interval, ValueError,
     r"label.*\[0, ?1\].*row 1100 of the dataset \(row 300 of partition 2\)"),
    (class_label_beyond_num_class, ValueError, r"num_class"),
    (softprob_without_num_class, ValueError, r"num_class"),
    (eval_set_other_width, ValueError, r"eval set 'valid' has 3 features; dtrain has 4"),
    (nccl_on_cpu_data, ValueError, r"mode='nccl' trains on GPU workers.*collective"),
    (unknown_parameter, ValueError, r"max_dept.*max_depth"),
    (in_memory_dataset, TypeError, r"dtrain must be a dgbdt.dask.DaskDataset"),
    (predict_wrong_width, ValueError, r"4 features; got shape \(\d+, 3\)"),
]


@pytest.mark.parametrize("make,error,match", CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_input_fails_fast_and_clearly(cluster, make, error, match):
    if make is predict_wrong_width:
        _booster()       # the in-process training (numba's first compile) is not the error's
    t = time.perf_counter()
    with pytest.raises(error, match=match):
        make(cluster)
    assert time.perf_counter() - t < SECONDS
    deadline = time.time() + 5       # the rest of the failed work is cancelled, not left running
    while any(cluster.processing().values()) and time.time() < deadline:
        time.sleep(0.05)
    assert not any(cluster.processing().values()), "a task was left running"


def test_accepted_inputs_that_look_odd(cluster):
    """Unknown divisions and chunks along the columns are fine: the same model as in-process."""
    X, y, _ = _xy()
    ref = dgbdt.train({}, dgbdt.Dataset(X, label=y), 3, verbose_eval=False).save_raw()
    Xd, yd = _frame(X, y)
    d = dgd.DaskDataset(cluster, Xd.clear_divisions(), yd.clear_divisions())
    assert _train(cluster, d, rounds=3)["booster"].save_raw() != ""
    cols = da.from_array(X, chunks=(400, 2))
    d = dgd.DaskDataset(cluster, cols, _arr(y))
    assert _train(cluster, d, rounds=3)["booster"].save_raw() == ref


def test_closed_client(cluster):
    X, y, _ = _xy()
    client = distributed.Client(cluster.scheduler.address, set_as_default=False)
    client.close()
    t = time.perf_counter()
    with pytest.raises(Exception, match=r"(?i)closed|not running|no longer"):
        dgd.DaskDataset(client, _arr(X), _arr(y))
    assert time.perf_counter() - t < SECONDS


def test_the_cluster_trains_after_the_catalogue(cluster):
    X, y, _ = _xy()
    out = _train(cluster, dgd.DaskDataset(cluster, _arr(X), _arr(y)), rounds=3)
    ref = dgbdt.train({}, dgbdt.Dataset(X, label=y), 3, verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
