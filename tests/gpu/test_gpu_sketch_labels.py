"""The device sketch's kernels (cuda/sketch.cu) against their array specification, and device
labels checked and summed where they are (no host copy) with the host's results."""
import numpy as np
import pytest

import cupy as cp

import dgbdt
from dgbdt.data import sketch_device as sd
from dgbdt.data.sketch import summarize
from dgbdt.objectives.registry import get_objective


def _awkward(n, nf, seed):
    """Values the keys must order right: NaN (one feature all NaN, one none), -0.0 and +0.0,
    negatives, many ties, denormals."""
    rng = np.random.default_rng(seed)
    X = np.floor(rng.standard_normal((n, nf)) * 3).astype(np.float32)
    X[rng.random((n, nf)) < 0.2] = np.nan
    if nf > 2:
        X[:, 0] = np.nan
        X[:, 1] = rng.standard_normal(n).astype(np.float32)
    X[::7, -1] = -0.0
    X[1::7, -1] = 0.0
    X[2::11, -1] = np.float32(1e-42)
    return X


@pytest.mark.parametrize("n,nf", [(1, 1), (2, 3), (33, 31), (1000, 5), (4097, 70)])
def test_sketch_kernels_equal_their_specification(n, nf):
    X = _awkward(n, nf, seed=n)
    X[n // 2, nf // 2] = np.inf            # counted, not raised, by the keys pass
    comp_h, cnt_h, inf_h = sd._sort_keys([X], np)
    comp_d, cnt_d, inf_d = sd._sort_keys([cp.asarray(X)], cp)
    np.testing.assert_array_equal(cp.asnumpy(comp_d), comp_h)
    np.testing.assert_array_equal(cp.asnumpy(cnt_d), cnt_h)
    np.testing.assert_array_equal(cp.asnumpy(inf_d), inf_h)
    assert sd._sort_features(comp_h, n, nf, None, np) is None
    sd._sort_features(comp_d, n, nf, None, cp)
    np.testing.assert_array_equal(cp.asnumpy(comp_d), comp_h)
    for max_keys in (1, 3, 16, 4096):
        np.testing.assert_array_equal(
            cp.asnumpy(sd._shifts(comp_d, n, nf, cnt_d, max_keys, cp)),
            sd._shifts(comp_h, n, nf, cnt_h, max_keys, np))
    no_inf = np.zeros(nf, np.int64)
    for seed in range(3):           # the bucket kernels at any shifts (32 included)
        shifts = np.random.default_rng(n + seed).integers(0, 33, nf)
        shifts[::5] = 32
        host = sd._host_buckets(comp_h, n, nf, cnt_h, shifts, no_inf, None, 4096)
        dev = sd._device_buckets(comp_d, n, nf, cnt_d, cp.asarray(shifts), cp.asarray(no_inf),
                                 None, 4096)
        assert host.equals(dev)
        w = np.random.default_rng(seed).integers(0, 1 << 40, nf * n, dtype=np.int64)
        assert sd._host_buckets(comp_h, n, nf, cnt_h, shifts, no_inf, w, 4096).equals(
            sd._device_buckets(comp_d, n, nf, cnt_d, cp.asarray(shifts),
                               cp.asarray(no_inf), cp.asarray(w), 4096))


@pytest.mark.parametrize("layout", ["fortran", "column_slice", "reversed_rows"])
def test_sketch_of_strided_device_arrays(layout):
    X = _awkward(3000, 9, seed=5)
    d = cp.asarray(X)
    view = {"fortran": lambda a: cp.asfortranarray(a), "column_slice": lambda a: a[:, 2:7],
            "reversed_rows": lambda a: a[::-1]}[layout]
    host = {"fortran": lambda a: a, "column_slice": lambda a: a[:, 2:7],
            "reversed_rows": lambda a: a[::-1]}[layout](X)
    assert summarize(np.ascontiguousarray(host), None, 64).equals(
        sd.summarize_device(view(d), None, 64))


def test_sketch_keys_of_several_blocks_equal_their_specification():
    """The keys kernel fills each block's rows of every feature's run, whatever the blocks'
    layouts (a Fortran block, a row-reversed view, an empty block), counts added up."""
    X = _awkward(2500, 9, seed=4)
    X[100, 3] = np.inf
    cuts = [0, 700, 700, 1900, 2500]
    host = [X[a:b] for a, b in zip(cuts, cuts[1:])]
    dev = [cp.asarray(host[0]), cp.asarray(host[1]), cp.asfortranarray(cp.asarray(host[2])),
           cp.asarray(host[3][::-1].copy())[::-1]]
    for h, d in zip(sd._sort_keys(host, np), sd._sort_keys(dev, cp)):
        np.testing.assert_array_equal(cp.asnumpy(d), h)


@pytest.mark.parametrize("chunk,join", [(1 << 24, 1 << 25), (3000, 1 << 25), (3000, 2000)])
@pytest.mark.parametrize("weighted", [False, True])
def test_blocks_summary_on_the_device_equals_the_host_summary(chunk, join, weighted,
                                                              monkeypatch):
    """summarize_blocks_device on a GPU (one sort a feature over several blocks, in runs of
    JOIN_ROWS rows and feature groups of CHUNK_VALUES values) is the CPU summary of the
    concatenated rows, weights with zeros included."""
    from dgbdt.data.sketch import summarize_weighted
    monkeypatch.setattr(sd, "CHUNK_VALUES", chunk)
    monkeypatch.setattr(sd, "JOIN_ROWS", join)
    X = _awkward(4000, 7, seed=6)
    rng = np.random.default_rng(6)
    w = rng.exponential(size=4000)
    w[::5] = 0.0
    cuts = [0, 1500, 1500, 2600, 4000]
    blocks = [cp.asarray(X[a:b]) for a, b in zip(cuts, cuts[1:])]
    ws = [cp.asarray(w[a:b]) for a, b in zip(cuts, cuts[1:])] if weighted else None
    scale = 2.0 ** 40
    for mk in (16, 4096):
        got = sd.summarize_blocks_device(blocks, ws, scale if weighted else None, mk)
        assert got.equals(summarize_weighted(X, w if weighted else None, scale, mk))


def test_infinite_values_reported_over_every_feature_group(monkeypatch):
    X = _awkward(500, 8, seed=2)
    X[3, 1] = np.inf
    X[7, 6] = -np.inf
    monkeypatch.setattr(sd, "CHUNK_VALUES", 500 * 2)      # groups of two features
    with pytest.raises(ValueError, match=r"infinite values in feature\(s\) \[1, 6\]"):
        sd.summarize_device(cp.asarray(X), None, 64)


@pytest.mark.parametrize("name,params", [("reg:squarederror", {}), ("binary:logistic", {}),
                                         ("binary:logistic", {"scale_pos_weight": 2.5}),
                                         ("multi:softprob", {"num_class": 3}),
                                         ("reg:gamma", {})])
def test_device_labels_give_the_host_labels_model(name, params):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3000, 6)).astype(np.float32)
    y = {"reg:squarederror": X[:, 0] * 2 + rng.standard_normal(3000),
         "binary:logistic": (X[:, 0] > 0.3).astype(np.float64),
         "multi:softprob": np.digitize(X[:, 0], [-0.5, 0.5]).astype(np.float64),
         "reg:gamma": np.exp(X[:, 0]) + 0.1}[name]
    w = rng.random(3000) + 0.5
    p = {"objective": name, "max_depth": 3, "device": "cuda", **params}
    host = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 3, verbose_eval=False)
    dev = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y),
                                       weight=cp.asarray(w)), 3, verbose_eval=False)
    np.testing.assert_array_equal(dev.base_margin, host.base_margin)
    assert dev.save_raw() == host.save_raw()


def test_bad_device_labels_name_the_first_bad_row():
    X = cp.zeros((10, 2), dtype=cp.float32)
    y = cp.asarray([0, 1, 0, 1, 3, 1, 0, 0, 1, 1], dtype=cp.float32)
    with pytest.raises(ValueError, match=r"label must be in \[0, 1\].*first bad at row 4"):
        dgbdt.train({"objective": "binary:logistic", "device": "cuda"},
                    dgbdt.Dataset(X, label=y), 1, verbose_eval=False)
    y[4] = cp.nan
    with pytest.raises(ValueError, match=r"NaN or infinite.*first at row 4"):
        get_objective("reg:squarederror").check_label_array(y)
    get_objective("multi:softprob").check_label_array(cp.asarray([0.0, 2.0, 1.0]), 3)
    with pytest.raises(ValueError, match="integer in"):
        get_objective("multi:softprob").check_label_array(cp.asarray([0.0, 1.5, 1.0]), 3)


@pytest.mark.parametrize("labels", [
    np.array([3.0, 1.0, 1.0, -2.0, 7.0, 3.0]),                 # float integers, negatives
    np.array([5, 5, 9, 0, 2 ** 40], dtype=np.int64),           # int64: range too wide -> sort
    np.array([0, 1, 1, 0, 1], dtype=np.int64),
    np.array([0.5, 1.0, 0.5]),                                  # not integers -> sort
    np.array([-0.0, 0.0, 1.0]),
    np.array([1.0, 0.0, 4.0, 1.0], dtype=np.float32),          # 32-bit labels: kernels too
    np.array([3, -1, 3, 8], dtype=np.int32),
    np.array([0.5, 1.0], dtype=np.float32),
])
def test_class_kernels_equal_numpy(labels):
    """distinct / encode of device labels (integer ones by gpu_checks' kernels, others by a
    sort) give numpy's classes and indices; an unseen label raises as on the host."""
    from dgbdt.data.labels import distinct, encode
    from dgbdt.kernels.gpu_checks import integer_classes
    d = cp.asarray(labels)
    classes = distinct(d)
    np.testing.assert_array_equal(classes, np.unique(labels))
    assert classes.dtype == labels.dtype
    fast = integer_classes(d)
    wide = labels.dtype.kind == "i" and labels.max() - labels.min() >= 2 ** 20
    assert (fast is None) == (wide or bool(np.any(labels != np.floor(labels))))
    np.testing.assert_array_equal(cp.asnumpy(encode(d, classes)), encode(labels, classes))
    with pytest.raises(ValueError, match="not seen in fit"):
        encode(cp.asarray(np.append(labels, labels.max() + 1)), classes)


def test_device_classifier_labels_with_nan_name_the_row():
    from dgbdt.data.labels import label_values
    y = cp.asarray(np.array([0.0, 1.0, np.inf, np.nan, 1.0]))
    with pytest.raises(ValueError, match="first at row 3"):
        label_values(y)
    with pytest.raises(ValueError, match="first at row 3"):
        label_values(y.astype(cp.float32))
    assert label_values(cp.asarray(np.array([0.0, 1.0, np.inf]))).shape == (3,)
