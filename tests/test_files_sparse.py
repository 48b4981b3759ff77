"""Sparse input (absent entries are missing values, as XGBoost) and data files by XGBoost's URI
convention (libsvm, CSV with a label column, parquet)."""
import numpy as np
import pytest

import dgbdt

sp = pytest.importorskip("scipy.sparse")


def sparse_data(n=1500, f=8, density=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(n, f, density=density, format="csr", random_state=seed, dtype=np.float64)
    X.data = rng.standard_normal(X.nnz)
    X.data[0] = 0.0                    # a stored zero stays a value, not a missing one
    dense = np.full((n, f), np.nan)
    coo = X.tocoo()
    dense[coo.row, coo.col] = coo.data
    y = (np.nan_to_num(dense[:, 0]) + np.nan_to_num(dense[:, 1]) > 0).astype(np.float64)
    return X, dense, y


def test_sparse_is_the_dense_matrix_with_missing_values():
    X, dense, y = sparse_data()
    r, c = X.tocoo().row[0], X.tocoo().col[0]
    assert X.nnz == X.tocoo().nnz and dense[r, c] == 0.0
    p = {"objective": "binary:logistic", "max_depth": 4}
    for fmt in ("csr", "csc", "coo"):
        b = dgbdt.train(p, dgbdt.Dataset(X.asformat(fmt), y), 5, verbose_eval=False)
        ref = dgbdt.train(p, dgbdt.Dataset(dense, y), 5, verbose_eval=False)
        assert b.save_raw() == ref.save_raw()
    np.testing.assert_array_equal(b.predict(X), ref.predict(dense))


def test_sparse_against_xgboost():
    xgb = pytest.importorskip("xgboost")
    X, dense, y = sparse_data(seed=1)
    xb = xgb.train({"objective": "binary:logistic", "max_depth": 4, "tree_method": "hist"},
                   xgb.DMatrix(X, y), 20)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 4}, dgbdt.Dataset(X, y), 20,
                    verbose_eval=False)
    # XGBoost reads the absent entries as missing too: the same fit (its sketch differs in
    # near-ties, so a few rows land in other leaves)
    diff = np.abs(b.predict(X) - xb.predict(xgb.DMatrix(X)))
    assert diff.mean() < 0.005 and np.mean(diff > 0.02) < 0.02


def test_files(tmp_path):
    sk = pytest.importorskip("sklearn.datasets")
    X, dense, y = sparse_data(n=400, seed=2)
    svm = tmp_path / "train.svm"
    sk.dump_svmlight_file(X, y, str(svm))
    d = dgbdt.Dataset(f"{svm}?format=libsvm")
    ref = dgbdt.Dataset(X, y)
    assert d.sparse and ref.sparse
    np.testing.assert_array_equal(d.rows(), ref.rows())
    np.testing.assert_array_equal(d.label, ref.label)
    csv = tmp_path / "train.csv"
    table = np.column_stack([y, np.nan_to_num(dense)])
    np.savetxt(csv, table, delimiter=",")
    d = dgbdt.Dataset(f"{csv}?format=csv&label_column=0")
    np.testing.assert_allclose(d.label, y)
    np.testing.assert_allclose(d.data, np.nan_to_num(dense).astype(np.float32))
    with pytest.raises(ValueError, match="cannot tell the format"):
        dgbdt.Dataset(str(tmp_path / "train.bin"))
    with pytest.raises(FileNotFoundError, match="no such data file"):
        dgbdt.Dataset(f"{tmp_path / 'nope.svm'}?format=libsvm")


def test_parquet_file(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    X, dense, y = sparse_data(n=400, seed=2)
    pq = tmp_path / "train.parquet"
    df = pd.DataFrame(np.nan_to_num(dense), columns=[f"c{i}" for i in range(8)])
    df["target"] = y
    df.to_parquet(pq)
    d = dgbdt.Dataset(str(pq), label_column="target")
    assert d.feature_names == [f"c{i}" for i in range(8)] and d.num_row == 400
    np.testing.assert_array_equal(d.label, y)
    with pytest.raises(ValueError, match="has no column 'label'"):
        dgbdt.Dataset(str(pq), label_column="label")


def test_dask_arrays_of_sparse_chunks(client2):
    """A dask array whose chunks are scipy.sparse matrices: each partition is read as the
    dense matrix with missing values where it lives; the in-process model of the same rows,
    for any chunking; dgbdt.dask.predict of the sparse chunks."""
    da = pytest.importorskip("dask.array")
    dgd = pytest.importorskip("dgbdt.dask")
    X, dense, y = sparse_data(seed=4)
    p = {"objective": "binary:logistic", "max_depth": 4}
    ref = dgbdt.train(p, dgbdt.Dataset(dense, y), 4, verbose_eval=False)
    for rows in (1500, 400):
        dX = da.from_array(X, chunks=(rows, X.shape[1]), asarray=False)
        d = dgd.DaskDataset(client2, dX, da.from_array(y, chunks=rows))
        out = dgd.train(client2, p, d, 4, verbose_eval=False)
        assert out["booster"].save_raw() == ref.save_raw()
    pred = client2.compute(dgd.predict(client2, out["booster"], dX)).result()
    np.testing.assert_array_equal(np.asarray(pred), ref.predict(dense))


def test_libsvm_ids_as_xgboost_reads_them(tmp_path):
    """A libsvm file whose ids start at 1 (XGBoost's agaricus demo data) has XGBoost's columns:
    feature i is id i, feature 0 empty (scikit-learn's reader guessed 1-based and shifted
    every feature down by one: 126 columns where XGBoost has 127, and a feature map's names
    one off)."""
    xgb = pytest.importorskip("xgboost")
    path = tmp_path / "one_based.svm"
    path.write_text("1 1:0.5 3:1\n0 2:0.25\n1 3:2 5:1\n0 1:0.75 4:3\n")
    mine = dgbdt.Dataset(f"{path}?format=libsvm")
    theirs = xgb.DMatrix(f"{path}?format=libsvm")
    assert mine.num_col == theirs.num_col() == 6
    np.testing.assert_array_equal(np.nan_to_num(mine.rows()),
                                  theirs.get_data().toarray())
