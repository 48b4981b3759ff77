"""Prediction keeps the concatenated node arrays of the last few tree lists (dgbdt.booster.
_concatenated): a model predicted again reuses them; another list of trees (a slice, an
iteration_range, another model) gets its own, so every prediction is what a fresh
concatenation gives."""
import numpy as np

import dgbdt
from dgbdt import booster as bmod


def _model(seed, rounds=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((600, 5))
    y = X[:, 0] * 2 + np.sin(X[:, 1]) + 0.1 * rng.standard_normal(600)
    return dgbdt.train({"max_depth": 4}, dgbdt.Dataset(X, label=y), rounds,
                       verbose_eval=False), X


def _fresh(b, X, trees):
    """The margins of these trees without the cache (on the rows as predict reads them)."""
    X = b._matrix(X)[0]
    out = b.initial_margin(X.shape[0], None, like=X)
    bmod._concat_cache.clear()
    b.predict_margin_trees(X, trees, out)
    bmod._concat_cache.clear()
    return out


def test_cached_predictions_equal_fresh_ones():
    a, X = _model(0)
    b, _ = _model(1)
    first = a.predict(X, output_margin=True)
    assert any(e[0][0] is a.trees[0] for e in bmod._concat_cache)
    again = a.predict(X, output_margin=True)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, _fresh(a, X, list(range(len(a.trees))))[:, 0])
    # another model, a slice and an iteration range: their own arrays, not a's
    np.testing.assert_array_equal(b.predict(X, output_margin=True),
                                  _fresh(b, X, list(range(len(b.trees))))[:, 0])
    np.testing.assert_array_equal(a[:5].predict(X, output_margin=True),
                                  _fresh(a, X, list(range(5)))[:, 0])
    np.testing.assert_array_equal(a.predict(X, output_margin=True, iteration_range=(3, 9)),
                                  _fresh(a, X, list(range(3, 9)))[:, 0])
    assert len(bmod._concat_cache) <= bmod._CONCAT_KEEP
    np.testing.assert_array_equal(a.predict(X, output_margin=True), first)
