"""dgbdt.BatchDataset (rows in batches, never held together) and XGBoost's DataIter over it:
the model of the rows held together, byte for byte, with only pages kept; what needs the raw
rows says so."""
import gc
import weakref

import numpy as np
import pytest

import dgbdt
from dgbdt import BatchDataset, Dataset


def _rows(n=3000, seed=0, classes=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    s = Z[:, 0] * Z[:, 1] + np.sin(2 * Z[:, 2]) - Z[:, 3]
    y = (np.digitize(s, np.quantile(s, [0.33, 0.66])) if classes else
         (s + 0.3 * rng.standard_normal(n) > 0)).astype(np.float64)
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


def _batches(X, y, w=None, m=None, size=700, made=None):
    """A batches function: fresh copies each call (``made`` collects weak references)."""
    def batches():
        for a in range(0, len(y), size):
            Xb = X[a:a + size].copy()
            if made is not None:
                made.append(weakref.ref(Xb))
            yield Dataset(Xb, label=y[a:a + size],
                          weight=None if w is None else w[a:a + size],
                          base_margin=None if m is None else m[a:a + size])
    return batches


@pytest.mark.parametrize("case", ["binary", "weighted", "softprob", "base_margin"])
def test_the_model_of_the_rows_held_together(case):
    X, y, w = _rows(classes=case == "softprob")
    p = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["logloss", "auc"]}
    if case == "softprob":
        p = {"objective": "multi:softprob", "num_class": 3, "max_depth": 4}
    m = np.linspace(-0.5, 0.5, len(y)) if case == "base_margin" else None
    ww = w if case == "weighted" else None
    whole = Dataset(X, label=y, weight=ww, base_margin=m)
    bd = BatchDataset(_batches(X, y, ww, m))
    assert (bd.num_row, bd.num_col, bd.row_ranges()[1]) == (3000, 5, (700, 1400))
    h1, h2 = {}, {}
    a = dgbdt.train(p, whole, 8, evals=[(whole, "train")], evals_result=h1, verbose_eval=False)
    b = dgbdt.train(p, bd, 8, evals=[(bd, "train")], evals_result=h2, verbose_eval=False)
    assert a.save_raw() == b.save_raw()
    assert h1 == h2


def test_only_pages_are_kept():
    X, y, _ = _rows()
    made = []
    bd = BatchDataset(_batches(X, y, made=made))
    b = dgbdt.train({"max_depth": 3}, bd, 3, verbose_eval=False)
    assert len(made) == 3 * 5              # five batches, read for labels, sketch and pages
    gc.collect()
    assert all(r() is None for r in made), "a batch's rows were kept"
    assert b.num_boosted_rounds() == 3


def test_what_needs_the_rows_reads_the_batches_again():
    """Predicting, evaluating as another set and continuing training read the batches
    again, and give what the rows held together give."""
    X, y, _ = _rows(800)
    whole = Dataset(X, label=y)
    bd = BatchDataset(_batches(X, y, size=300))
    p = {"max_depth": 3, "eval_metric": ["rmse", "mae"]}
    b = dgbdt.train(p, bd, 2, verbose_eval=False)
    np.testing.assert_array_equal(b.predict(bd), b.predict(whole))
    np.testing.assert_array_equal(b.predict(bd, pred_leaf=True), b.predict(whole,
                                                                           pred_leaf=True))
    h1, h2 = {}, {}
    dgbdt.train(p, whole, 3, evals=[(bd, "b")], evals_result=h1, verbose_eval=False)
    dgbdt.train(p, whole, 3, evals=[(whole, "b")], evals_result=h2, verbose_eval=False)
    assert h1 == h2
    more = dgbdt.train(p, bd, 2, xgb_model=b, verbose_eval=False)
    assert more.save_raw() == dgbdt.train(p, whole, 2, xgb_model=b,
                                          verbose_eval=False).save_raw()
    np.testing.assert_array_equal(bd.rows(250, 650), X[250:650])
    with pytest.raises(ValueError, match="read again a batch at a time"):
        bd.data


def test_bad_batches():
    X, y, w = _rows(900)
    with pytest.raises(TypeError, match="fresh iterable"):
        BatchDataset([Dataset(X, label=y)])
    with pytest.raises(ValueError, match="batch 1 has 4 features; batch 0 has 5"):
        BatchDataset(lambda: iter([Dataset(X[:10], label=y[:10]),
                                   Dataset(X[10:20, :4], label=y[10:20])]))
    with pytest.raises(ValueError, match="batch 1 lacks weight, unlike batch 0"):
        BatchDataset(lambda: iter([Dataset(X[:10], label=y[:10], weight=w[:10]),
                                   Dataset(X[10:20], label=y[10:20])]))
    with pytest.raises(ValueError, match="batch 0 has no label"):
        BatchDataset(lambda: iter([Dataset(X[:10])]))
    with pytest.raises(ValueError, match="gave no rows"):
        BatchDataset(lambda: iter([]))
    calls = []

    def shuffling():            # other rows on the second pass
        calls.append(1)
        order = [0, 1] if len(calls) == 1 else [1, 0]
        return iter([Dataset(X[i * 400:(i + 1) * 400], label=y[i * 400:(i + 1) * 400])
                     for i in order])
    with pytest.raises(ValueError, match="same batches, in the same order"):
        dgbdt.train({"max_depth": 2}, BatchDataset(shuffling), 1, verbose_eval=False)


def test_xgboost_data_iter_script():
    """An XGBoost external-memory script on dgbdt.compat.xgboost: the DataIter's batches give
    the model of the rows held together."""
    import dgbdt.compat.xgboost as xgb
    X, y, w = _rows(2000)

    class Batches(xgb.DataIter):
        def __init__(self, size):
            self.size, self.at = size, 0
            super().__init__(cache_prefix="cache")

        def next(self, input_data):
            if self.at >= len(y):
                return False
            s = slice(self.at, self.at + self.size)
            input_data(data=X[s], label=y[s], weight=w[s])
            self.at += self.size
            return True

        def reset(self):
            self.at = 0

    params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3}
    for cls in (xgb.QuantileDMatrix, xgb.ExtMemQuantileDMatrix, xgb.DMatrix):
        m = cls(Batches(600))
        assert m.num_row() == 2000 and np.array_equal(m.get_label(), y)
        bst = xgb.train(params, m, 5, evals=[(m, "train")], verbose_eval=False)
        ref = dgbdt.train(params, Dataset(X, label=y, weight=w), 5, verbose_eval=False)
        assert bst.save_raw("dgbdt") == ref.save_raw("dgbdt")
    with pytest.raises(ValueError, match="come with each batch"):
        xgb.DMatrix(Batches(600), label=y)
    with pytest.raises(TypeError, match="reads a DataIter"):
        xgb.ExtMemQuantileDMatrix(X)
