"""XGBoost's DataIter matrices (DMatrix / QuantileDMatrix / ExtMemQuantileDMatrix of an
iterator) on dgbdt.compat.xgboost: predicted on, evaluated as another set and read back
(get_data) by reading the batches again; XGBoost's batch checks and QuantileDMatrix rules."""
import gc
import weakref

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

import dgbdt.compat.xgboost as xgb


class Batches(xgb.DataIter):
    """The batches Xs, ys (copies handed over, weak references kept in ``made``)."""

    def __init__(self, Xs, ys):
        self.Xs, self.ys, self.at, self.made = Xs, ys, 0, []
        super().__init__(cache_prefix=None)

    def next(self, input_data):
        if self.at == len(self.Xs):
            return False
        X = self.Xs[self.at].copy()
        if not isinstance(X, pd.DataFrame):
            self.made.append(weakref.ref(X))
        input_data(data=X, label=self.ys[self.at].copy())
        self.at += 1
        return True

    def reset(self):
        self.at = 0


def _data(n=900, f=4, seed=0, sizes=(300, 250, 350)):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, f)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.standard_normal(n)
    ends = np.cumsum(sizes)[:-1]
    return X, y, np.split(X, ends), np.split(y, ends)


@pytest.mark.parametrize("cls", [xgb.DMatrix, xgb.QuantileDMatrix, xgb.ExtMemQuantileDMatrix])
def test_predict_evaluate_and_read_back_an_iterators_matrix(cls):
    X, y, Xs, ys = _data()
    it = Batches(Xs, ys)
    whole = xgb.DMatrix(X, y)
    # a QuantileDMatrix evaluated beside its training set is made with ref= (XGBoost's rule)
    m = cls(it) if cls is xgb.DMatrix else cls(it, ref=whole)
    h1, h2 = {}, {}
    p = {"max_depth": 3}
    b = xgb.train(p, whole, 4, evals=[(m, "it")], evals_result=h1, verbose_eval=False)
    xgb.train(p, whole, 4, evals=[(whole, "it")], evals_result=h2, verbose_eval=False)
    assert h1 == h2                                  # evaluated as another set
    np.testing.assert_array_equal(b.predict(m), b.predict(whole))
    np.testing.assert_array_equal(b.predict(m, pred_contribs=True),
                                  b.predict(whole, pred_contribs=True))
    assert b.eval(m) == b.eval(whole)
    got, want = m.get_data(), whole.get_data()
    for a in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(getattr(got, a), getattr(want, a))
        assert getattr(got, a).dtype == getattr(want, a).dtype
    gc.collect()                                    # nothing of the batches was kept
    assert it.made and all(r() is None for r in it.made)


def test_sparse_batches_and_the_approx_method():
    X, y, Xs, ys = _data(seed=1)
    Xs = [scipy.sparse.csr_matrix(np.nan_to_num(x)) for x in Xs]
    Xs[1] = np.where(Xs[1].toarray() == 0, np.nan, Xs[1].toarray())      # mixed kinds
    Xd = np.concatenate([x.toarray() if scipy.sparse.issparse(x) else x for x in Xs])
    Xd[Xd == 0] = np.nan
    m, whole = xgb.DMatrix(Batches(Xs, ys)), xgb.DMatrix(Xd, y)
    np.testing.assert_array_equal(m.get_data().toarray(), np.nan_to_num(Xd))
    for method in ("hist", "approx"):
        p = {"tree_method": method, "max_depth": 3}
        a, b = xgb.train(p, m, 3), xgb.train(p, whole, 3)
        assert a.save_raw("dgbdt") == b.save_raw("dgbdt")
        np.testing.assert_array_equal(a.predict(m), b.predict(whole))


def test_no_batch_and_empty_batches():
    with pytest.raises(ValueError, match="at least 1 batch"):
        xgb.DMatrix(Batches([], []))
    m = xgb.DMatrix(Batches([np.zeros((0, 3))] * 2, [np.zeros(0)] * 2))
    assert (m.num_row(), m.num_col()) == (0, 3)
    with pytest.warns(UserWarning, match="Empty dataset"):
        b = xgb.train({}, m, 2)
    assert b.predict(m).shape == (0,)
    X, y, Xs, ys = _data()                  # an empty batch among others is left out
    m = xgb.DMatrix(Batches([Xs[0], X[:0], Xs[1], Xs[2]], [ys[0], y[:0], ys[1], ys[2]]))
    assert m.num_row() == 900


def _cats(n, seed, cat_cols, cats=("a", "b", "c", "d")):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"f{i}": rng.standard_normal(n) for i in range(3)})
    for c in cat_cols:
        df[c] = pd.Categorical(rng.choice(list(cats), n), categories=list(cats))
    return df, rng.standard_normal(n)


def test_categorical_batches():
    (a, ya), (b, yb) = _cats(200, 0, ["f1"]), _cats(150, 1, ["f1"])
    m = xgb.QuantileDMatrix(Batches([a, b], [ya, yb]), enable_categorical=True)
    whole = xgb.DMatrix(pd.concat([a, b]), np.concatenate([ya, yb]), enable_categorical=True)
    bst = xgb.train({"max_depth": 3}, m, 3)
    np.testing.assert_array_equal(bst.predict(m), bst.predict(whole))
    with pytest.raises(ValueError, match="categorical features"):
        xgb.train({"tree_method": "exact"}, m)
    with pytest.raises(ValueError, match="categorical features"):
        xgb.train({"booster": "gblinear"}, whole)
    c, yc = _cats(100, 2, ["f1", "f2"])          # f2 categorical here only
    with pytest.raises(ValueError, match="Inconsistent number of categories between") as e:
        xgb.QuantileDMatrix(Batches([a, c], [ya, yc]), enable_categorical=True)
    assert "Inconsistent feature types" in str(e.value) and "'f2'" in str(e.value)
    d, yd = _cats(100, 3, ["f1"], cats=("a", "b", "c"))
    with pytest.raises(ValueError, match="Inconsistent number of categories between "
                                         "batches: feature 'f1' has 4 in batch 0 and 3"):
        xgb.DMatrix(Batches([a, d], [ya, yd]), enable_categorical=True)


def test_quantile_dmatrix_training_rules():
    X, y, Xs, ys = _data()
    q = xgb.QuantileDMatrix(X, y, max_bin=9)
    with pytest.raises(ValueError, match="Only the `hist` tree method"):
        xgb.train({"tree_method": "approx"}, q, 1)
    b = xgb.train({"max_bin": 9}, q, 2)
    with pytest.raises(ValueError, match="consistent.*model's to continue, 9"):
        xgb.train({}, xgb.QuantileDMatrix(X, y, max_bin=11), 2, xgb_model=b)
    with pytest.raises(ValueError, match="Inconsistent `max_bin`"):
        xgb.train({"max_bin": 16}, q, 1)
    more = xgb.train({}, xgb.QuantileDMatrix(Batches(Xs, ys), max_bin=9), 2, xgb_model=b)
    assert more.num_boosted_rounds() == 4
