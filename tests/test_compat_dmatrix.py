"""dgbdt.compat.xgboost.DMatrix (dgbdt.compat.dmatrix) against real XGBoost's DMatrix: the
meta info (set_info, get_*_info, groups), feature names and types, slices, get_data, the input
kinds XGBoost takes and the errors and warnings it gives."""
import warnings

import numpy as np
import pytest

import dgbdt.compat.xgboost as dx

sp = pytest.importorskip("scipy.sparse")


def _real():
    return pytest.importorskip("xgboost")


def _both():
    return [dx, _real()]


def test_meta_info_fields_as_xgboost():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 3))
    for xgb in _both():
        d = xgb.DMatrix(X)
        for f in ("label", "weight", "base_margin", "label_lower_bound",
                  "label_upper_bound", "feature_weights"):
            v = d.get_float_info(f)
            assert v.dtype == np.float32 and v.shape == (0,), (xgb, f)
        assert d.get_uint_info("group_ptr").dtype == np.uint32
        assert d.get_group().size == 0
        with pytest.raises(ValueError, match="qid"):
            d.get_uint_info("qid")
        with pytest.raises(ValueError, match="Unknown key"):
            d.get_float_info("foo")
        d.set_info(label=np.arange(6), weight=np.ones(6), qid=[0, 0, 1, 1, 1, 2])
        assert d.get_label().dtype == np.float32 and list(d.get_label()) == list(range(6))
        assert list(d.get_uint_info("group_ptr")) == [0, 2, 5, 6]
        assert list(d.get_group()) == [2, 3, 1]
        d.set_group([1, 5])                    # checked against the rows at training only
        assert list(d.get_group()) == [1, 5]
        d.set_uint_info("group", np.array([12, 34, 56], np.uint32)[::2])    # a view
        assert list(d.get_uint_info("group_ptr")) == [0, 12, 68]
        with pytest.raises(ValueError, match="sorted"):
            d.set_info(qid=[1, 0, 1, 1, 1, 2])
        with pytest.raises(ValueError, match="positive"):
            d.set_weight(-np.ones(6))
        with pytest.raises(ValueError, match="NaN"):
            d.set_label([1, 2, np.nan, 4, 5, 6])
        with pytest.raises(ValueError, match="label"):
            d.set_label(np.arange(5))
        with pytest.raises(ValueError, match="group"):
            xgb.DMatrix(X, group=[6], qid=np.zeros(6))


def test_base_margin_and_label_layout_as_xgboost():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 2)).astype(np.float32)
    got = []
    for xgb in _both():
        d = xgb.DMatrix(X, X[:, 0], base_margin=X)
        a = d.get_base_margin()
        d.set_info(base_margin=X.T)            # an F-ordered (2, 50): its values in C order
        b = d.get_base_margin()
        d.set_base_margin(X[:, 0].reshape(1, 50))
        c = d.get_base_margin()
        with pytest.raises(ValueError, match="base_margin"):
            d.set_base_margin(np.ones((2, 5, 2, 5)))
        with pytest.raises(ValueError, match="base_margin"):
            d.set_base_margin(np.ones(49))
        e = xgb.DMatrix(np.array([[]]), label=np.array([12, 34, 56], np.float32)[::2])
        got.append((a, b, c, e.num_row(), e.num_col(), e.get_label()))
    for mine, theirs in zip(*got):
        assert np.array_equal(np.asarray(mine), np.asarray(theirs))
        assert np.shape(mine) == np.shape(theirs)
    # a 2-D label (multi-target): one output per target (tests/test_multi_output.py)
    d = dx.DMatrix(X, np.ones((50, 2)))
    assert dx.train({}, d, 1).predict(d).shape == (50, 2)


def test_group_and_weight_checked_at_training():
    X = np.random.default_rng(2).standard_normal((50, 2))
    d = dx.DMatrix(X, X[:, 0])
    d.set_group([2, 3])
    with pytest.raises(ValueError, match="query group"):
        dx.train({}, d, 1)
    d = dx.DMatrix(X, X[:, 0], weight=np.ones(10))
    with pytest.raises(ValueError, match="weights"):
        dx.train({}, d, 1)


def test_feature_weights_stored_and_drive_column_sampling():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((400, 5))
    fw = rng.uniform(size=5)
    for xgb in _both():
        m = xgb.DMatrix(X, X[:, 0])
        m.set_info(feature_weights=fw)
        np.testing.assert_allclose(m.get_float_info("feature_weights"), fw, rtol=1e-6)
        with pytest.raises(ValueError):
            m.set_info(feature_weights=fw - 1)
        assert xgb.train({}, m, 1).num_boosted_rounds() == 1   # no column sampling: unused
    # a weighted draw: only the weighted feature is ever drawn for a node
    only_f4 = dx.DMatrix(X, X[:, 0] + X[:, 4], feature_weights=[0, 0, 0, 0, 1.0])
    b = dx.train({"colsample_bynode": 0.2, "max_depth": 3}, only_f4, 5)
    assert set(b.get_score("weight")) == {"f4"}
    # equal weights draw as no weights do (the same model bytes)
    p = {"colsample_bytree": 0.6, "colsample_bynode": 0.5, "seed": 2}
    even = dx.train(p, dx.DMatrix(X, X[:, 0], feature_weights=np.ones(5)), 5)
    plain = dx.train(p, dx.DMatrix(X, X[:, 0]), 5)
    assert even.save_raw("dgbdt") == plain.save_raw("dgbdt")
    m = dx.DMatrix(X, X[:, 0], feature_weights=fw)
    m.set_info(feature_weights=np.empty((0,)))          # empty resets them
    assert m.get_float_info("feature_weights").shape == (0,)
    assert dx.train({"colsample_bynode": 0.5}, m, 1).num_boosted_rounds() == 1
    res = dx.cv({"colsample_bytree": 0.5}, dx.DMatrix(X, X[:, 0], feature_weights=fw), 2,
                nfold=2)
    assert len(res) == 2


def test_feature_names_and_types_setters_as_xgboost():
    X = np.random.default_rng(4).standard_normal((5, 5))
    for xgb in _both():
        for bad in (list("abcdef"), list("abcdd"), ["a", "b", "c", "d", "e<1"]):
            with pytest.raises(ValueError):
                xgb.DMatrix(X, feature_names=bad)
        dm = xgb.DMatrix(X)
        dm.feature_names = list("abcde")
        assert dm.feature_names == list("abcde")
        assert dm.slice([0, 1]).feature_names == list("abcde")
        with pytest.raises(ValueError, match=r"Duplicates found: \[.*'bar'.*\]"):
            dm.feature_names = ["bar"] * 3 + ["a", "b"]
        dm.feature_types = list("qiqiq")
        assert dm.feature_types == list("qiqiq")
        assert dm.slice([0, 1]).feature_types == list("qiqiq")
        with pytest.raises(ValueError):
            dm.feature_types = list("abcde")
        with pytest.raises(ValueError, match="same length"):
            dm.feature_types = ["q", "q"]
        dm.feature_names = None
        dm.feature_types = None
        assert dm.feature_names is None and dm.feature_types is None


def test_slice_as_xgboost():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((20, 4))
    y = rng.integers(0, 3, 20).astype(np.float32)
    bm = rng.standard_normal((20, 3)).astype(np.float32)
    fw = rng.uniform(size=4)
    out = []
    for xgb in _both():
        d = xgb.DMatrix(X, y, base_margin=bm)
        d.set_info(feature_weights=fw, label_lower_bound=y, label_upper_bound=y + 1)
        s = d.slice(np.array([1, 2, 3, 4, 5, 6])[1:])     # a view
        t = d.slice([5, 0, 5])                              # any order, repeats
        out.append([s.get_label(), s.get_base_margin(), s.get_float_info("feature_weights"),
                    s.get_float_info("label_upper_bound"), t.get_label(),
                    s.get_data().toarray(), t.num_row()])
        d.set_group([10, 10])
        with pytest.raises(ValueError, match="group"):
            d.slice([0, 1])
        assert d.slice([0, 1], allow_groups=True).get_group().size == 0   # groups dropped
    for mine, theirs in zip(*out):
        np.testing.assert_array_equal(mine, theirs)
    with pytest.raises(IndexError):
        dx.DMatrix(X).slice([20])


def test_get_data_and_num_nonmissing_as_xgboost():
    dense = np.array([[1.0, np.nan, 0.0], [np.nan, np.nan, np.nan], [3.0, 4.0, 5.0]])
    csr = sp.csr_matrix(np.array([[1, 0, 2], [0, 0, 0], [3, 4, 0]], np.float32))
    csr.data[0] = np.nan                    # a stored NaN is missing too
    for data, kw in ((dense, {}), (dense, {"missing": 0.0}), (csr, {}),
                     (sp.csr_matrix(np.empty((0, 0))), {}), (np.empty((0, 3)), {})):
        got = [xgb.DMatrix(data, **kw) for xgb in _both()]
        a, b = (m.get_data() for m in got)
        assert sp.issparse(a) and a.shape == b.shape
        for f in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        assert got[0].num_nonmissing() == got[1].num_nonmissing()
        assert (got[0].num_row(), got[0].num_col()) == (got[1].num_row(), got[1].num_col())
    with pytest.warns(UserWarning, match="Empty dataset"):      # XGBoost trains on it too
        assert dx.train({}, dx.DMatrix(np.empty((0, 3))), 1).num_boosted_rounds() == 1


def test_input_kinds_errors_and_warnings_as_xgboost():
    X = np.random.default_rng(6).random((10, 10))
    for xgb in _both():
        for bad in (np.array(1), np.array([1, 2, 3]), np.zeros((2, 2, 2)),
                    np.array([["a", "b"], ["c", "d"]]), [["1", "2"]]):
            with pytest.raises(ValueError):
                xgb.DMatrix(bad)
        assert xgb.DMatrix(np.array([[1, None]], dtype=object)).num_nonmissing() == 1
        assert xgb.DMatrix([[1, 2], [3, 4]], missing=4).num_nonmissing() == 3
        assert xgb.DMatrix(((1, 2), (3, 4))).num_row() == 2
        with pytest.raises(TypeError, match="Not supported type"):
            with pytest.warns(UserWarning, match="Unknown data type"):
                xgb.DMatrix(object())
        for kind in (sp.dok_matrix, sp.lil_matrix):
            with pytest.warns(UserWarning, match=kind.__name__):
                assert xgb.DMatrix(kind(X), X[:, 0]).num_col() == 10
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            xgb.DMatrix(X, X[:, 0], missing=4)
        for dtype in (np.int8, np.uint64, np.float16, np.bool_):
            a, b = xgb.DMatrix(X > 0.5), xgb.DMatrix((X > 0.5).astype(dtype))
            assert (a.get_data() != b.get_data()).nnz == 0


def test_files_ignore_missing_with_xgboosts_warning(tmp_path):
    pytest.importorskip("sklearn")
    path = tmp_path / "d.txt"
    path.write_text("1 1:0.5 3:2\n0 2:1 3:4\n")
    got = []
    for xgb in _both():
        with pytest.warns(UserWarning, match="`missing` is not used"):
            d = xgb.DMatrix(f"{path}?format=libsvm", missing=4)
        one = xgb.DMatrix(f"{path}?indexing_mode=1&format=libsvm",
                          feature_types=["q", "c", "q"])
        got.append((d.num_col(), d.num_nonmissing(), one.num_col(), one.feature_types,
                    list(one.get_label())))
    assert got[0] == got[1]


def test_save_binary_same_rows_same_file(tmp_path):
    rng = np.random.default_rng(7)
    x = sp.random(50, 200, density=0.01, format="csr", random_state=0)
    x.data[:] = 1
    files = []
    for i, d in enumerate((dx.DMatrix(x.astype(np.int32)), dx.DMatrix(x.astype(np.float32)),
                           dx.DMatrix(x.toarray(), missing=0))):
        d.save_binary(str(tmp_path / f"{i}.dmatrix"))
        files.append((tmp_path / f"{i}.dmatrix").read_bytes())
    assert files[0] == files[1] == files[2]
    X = rng.standard_normal((30, 3))                     # dense rows stay dense
    d = dx.DMatrix(X, X[:, 0], base_margin=X[:, 1])
    d.set_group([10, 20])
    d.save_binary(str(tmp_path / "dense.dmatrix"))
    again = dx.DMatrix(str(tmp_path / "dense.dmatrix"))
    assert not again.dataset.sparse
    np.testing.assert_array_equal(again.get_label(), d.get_label())
    np.testing.assert_array_equal(again.get_base_margin(), d.get_base_margin())
    np.testing.assert_array_equal(again.get_group(), [10, 20])


def test_get_quantile_cut_has_xgboosts_layout():
    pd = pytest.importorskip("pandas")
    xgb_real = _real()
    rng = np.random.default_rng(0)
    X = rng.random((1024, 4)).astype(np.float32)
    y = rng.random(1024)
    for lib in (xgb_real, dx):
        q = lib.QuantileDMatrix(X, y, max_bin=16)
        indptr, data = q.get_quantile_cut()
        assert indptr.dtype == np.uint64 and data.dtype == np.float32
        assert indptr.tolist() == [0, 17, 34, 51, 68]          # min, then 16 upper bounds
        for f in range(4):
            seg = data[int(indptr[f]):int(indptr[f + 1])]
            assert np.all(np.diff(seg) > 0) and seg[-1] > X[:, f].max()
        m = lib.DMatrix(X, y)
        lib.train({"max_bin": 16}, m, 1)
        assert m.get_quantile_cut()[0].tolist() == indptr.tolist()
    frame = pd.DataFrame({"c": pd.Categorical([0, 1, 2, 1, 0]), "x": [1.0, 2, 3, 4, 5]})
    ours = dx.QuantileDMatrix(frame, np.arange(5.0), enable_categorical=True).get_quantile_cut()
    theirs = xgb_real.QuantileDMatrix(frame, np.arange(5.0),
                                      enable_categorical=True).get_quantile_cut()
    assert ours[0].tolist() == theirs[0].tolist()
    np.testing.assert_allclose(ours[1], theirs[1])
    with pytest.raises(ValueError, match="no cuts yet"):
        dx.DMatrix(X, y).get_quantile_cut()
