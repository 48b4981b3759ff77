"""Prediction keeps the concatenated node arrays of the last few tree lists (dgbdt.model.booster.
_concatenated): a model predicted again reuses them; another list of trees (a slice, an
iteration_range, another model) gets its own, so every prediction is what a fresh
concatenation gives."""
import numpy as np

import dgbdt
from dgbdt.model import margins as bmod


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


def test_threads_predicting_at_once_share_the_kept_arrays(monkeypatch):
    """A Dask worker's threads predict blocks with one model at once: what the CPU backend
    derives from the kept arrays on first use is there whole or not at all for the others
    (the derived arrays once went in as two entries, and a thread between them raised
    KeyError; the kept dict here sleeps after every entry to open that window)."""
    import threading
    import time

    a, X = _model(0)
    want = a.predict(X, output_margin=True)
    real = bmod._concatenated

    class Slow(dict):
        def __setitem__(self, key, value):
            super().__setitem__(key, value)
            time.sleep(0.05)

    def slow(trees, classes):
        cat, ptrs, cls = real(trees, classes)
        if not isinstance(cat, Slow):
            cat = Slow(cat)
            with bmod._concat_lock:
                bmod._concat_cache[0] = (bmod._concat_cache[0][0], bmod._concat_cache[0][1],
                                         (cat, ptrs, cls))
        return cat, ptrs, cls
    monkeypatch.setattr(bmod, "_concatenated", slow)
    bmod._concat_cache.clear()
    out, errors = [None] * 6, []

    def run(i):
        time.sleep(0.01 * i)
        try:
            out[i] = a.predict(X, output_margin=True)
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for o in out:
        np.testing.assert_array_equal(o, want)
