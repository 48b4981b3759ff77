"""Piecewise-linear trees (linear_tree, dgbdt.kernels.linear_math): the fit, the gain, the payload,
prediction, the model file, and the errors of what is not built."""
import json

import numpy as np
import pytest

import dgbdt
from dgbdt.kernels import cpu_linear
from dgbdt.params.normalize import ParameterError
from dgbdt.kernels import linear_math as L
from dgbdt.tree.model import ModelFormatError

LIN = {"linear_tree": True, "max_depth": 2, "eta": 0.4, "lambda": 0.7, "linear_lambda": 0.3,
       "base_score": 0.5, "max_bin": 32}


def _data(n=3000, F=4, seed=0, missing=0.05):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 3, (n, F)).astype(np.float32)
    X[:, 1] = X[:, 1] * 10 + 100          # far from 0: the normalization centers it
    y = np.where(X[:, 0] > 0.5, 2 * X[:, 2] + 1, -X[:, 2]) + 0.1 * X[:, 1] \
        + 0.1 * rng.normal(size=n)
    X[rng.random((n, F)) < missing] = np.nan
    w = rng.uniform(0.5, 2.0, n)
    return X, y, w


def _xt(X, m):
    """Each row's normalized regressors of leaf model m (missing: 0)."""
    Z = (X[:, m["features"]].astype(np.float64) - m["centers"]) / m["scales"]
    return np.where(np.isnan(Z), 0.0, Z)


def test_solver_matches_numpy_and_drops_collinear():
    rng = np.random.default_rng(1)
    M = rng.normal(size=(4, 4))
    A = M @ M.T + 0.1 * np.eye(4)
    b = rng.normal(size=4)
    score, w = L.solve(A, b)
    ref = -np.linalg.solve(A, b)
    np.testing.assert_allclose(w, ref, rtol=1e-10)
    assert score == pytest.approx(b @ np.linalg.solve(A, b), rel=1e-10)
    # a regressor collinear with the constant is dropped: coefficient 0, the rest the fit
    # without it
    A2 = np.array([[2.0, 2.0, 0.5], [2.0, 2.0, 0.5], [0.5, 0.5, 3.0]])
    s2, w2 = L.solve(A2, np.array([1.0, 1.0, -1.0]))
    ref2 = -np.linalg.solve(A2[np.ix_([0, 2], [0, 2])], np.array([1.0, -1.0]))
    assert w2[1] == 0.0
    np.testing.assert_allclose(w2[[0, 2]], ref2, rtol=1e-12)


@pytest.mark.parametrize("growth", [{"max_depth": 3},
                                    {"grow_policy": "lossguide", "max_leaves": 7}])
def test_leaves_are_the_weighted_ridge_fit_of_their_rows(growth):
    """Every leaf's coefficients = eta * -(Z^T H Z + Lambda)^-1 Z^T g over its rows, in
    float64 from the rows (squared error: g = w (m - y), h = w); depth-wise and loss-guided."""
    X, y, w = _data()
    p = {**LIN, "max_depth": 3, **growth}
    b = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 1, verbose_eval=False)
    tree = b.trees[0]
    assert tree.linear and max(len(m["features"]) for m in tree.linear.values()) >= 2
    assert len(tree.linear) == (tree.left == -1).sum() <= growth.get("max_leaves", 8)
    leaf = b.predict(X, pred_leaf=True)[:, 0]
    g, h = w * (0.5 - y), w
    lo, hi = np.nanmin(X, axis=0).astype(np.float64), np.nanmax(X, axis=0).astype(np.float64)
    for node, m in tree.linear.items():
        f = m["features"]
        np.testing.assert_array_equal(m["centers"], (lo[f] + hi[f]) / 2)
        assert np.all(m["scales"] >= (hi[f] - lo[f]) / 2)
        assert np.all(m["scales"] < hi[f] - lo[f])
        assert np.all(np.log2(m["scales"]) == np.round(np.log2(m["scales"])))
        rows = leaf == node
        Z = np.column_stack([np.ones(rows.sum()), _xt(X[rows], m)])
        A = Z.T @ (h[rows, None] * Z) + np.diag([p["lambda"]] + [p["linear_lambda"]] * len(f))
        ref = -p["eta"] * np.linalg.solve(A, Z.T @ g[rows])
        np.testing.assert_allclose(m["coefs"], ref, rtol=1e-6, atol=1e-9)
        assert tree.threshold[node] == np.float32(m["coefs"][0])


def _scores(g, h, Z, lam0, lam1):
    A = Z.T @ (h[:, None] * Z) + np.diag([lam0] + [lam1] * (Z.shape[1] - 1))
    return L.solve(A, Z.T @ g)[0]


def _brute_best(X, g, h, rows, cuts, basis, lam0, lam1, mcw=1.0):
    """The best (gain, feature, threshold, default_left) over every candidate split of the
    rows, each side scored in ``basis(rows, f)`` from the rows in float64."""
    best = (0.0, -1, None, None)
    parent = _scores(g[rows], h[rows], basis(rows, None), lam0, lam1)
    for f in range(X.shape[1]):
        x = X[rows, f]
        Z = basis(rows, f)
        miss = np.isnan(x)
        for thr in [cuts.min_values[f], *cuts.feature(f)]:
            for dleft in ((False, True) if miss.any() else (False,)):
                go = (x < thr) | (miss & dleft)
                if h[rows][go].sum() < mcw or h[rows][~go].sum() < mcw:
                    continue
                gain = _scores(g[rows][go], h[rows][go], Z[go], lam0, lam1) + \
                    _scores(g[rows][~go], h[rows][~go], Z[~go], lam0, lam1) - parent
                if gain > best[0] * (1 + 1e-9):
                    best = (gain, f, thr, dleft)
    return best


def test_split_gains_match_brute_force():
    """The root's split and its children's splits (basis (1, p~, x~_f), p~ the parent's
    half-additive slope part) are the best candidates of a brute force over the rows."""
    X, y, w = _data(n=1500, F=3, seed=2)
    p = {**LIN, "max_depth": 2}
    d = dgbdt.Dataset(X, label=y, weight=w)
    b = dgbdt.train(p, d, 1, verbose_eval=False)
    t, cuts = b.trees[0], d.cuts(p["max_bin"])
    lo, hi = np.nanmin(X, axis=0).astype(np.float64), np.nanmax(X, axis=0).astype(np.float64)
    center = (lo + hi) / 2
    scale = np.array([L.power_of_two_at_least((b_ - a) / 2) for a, b_ in zip(lo, hi)])
    xt = np.where(np.isnan(X), 0.0, (X.astype(np.float64) - center) / scale)
    g, h = w * (0.5 - y), w
    lam0, lam1 = p["lambda"], p["linear_lambda"]
    every = np.ones(len(y), bool)

    root = _brute_best(X, g, h, every, cuts, lambda r, f: np.column_stack(
        [np.ones(r.sum())] + ([] if f is None else [xt[r, f]])), lam0, lam1)
    assert (t.feature[0], t.threshold[0], bool(t.default_left[0])) == root[1:]
    assert t.loss_change[0] == pytest.approx(root[0], rel=1e-5)

    f0 = int(t.feature[0])
    x0 = X[:, f0]
    left = (x0 < t.threshold[0]) | (np.isnan(x0) & t.default_left[0])
    for child, rows in ((t.left[0], left), (t.right[0], ~left)):
        Z1 = np.column_stack([np.ones(rows.sum()), xt[rows, f0]])
        k2 = L.solve(Z1.T @ (h[rows, None] * Z1) + np.diag([lam0, lam1]), Z1.T @ g[rows])[1][1]
        pt = k2 * xt[:, f0] / L.slope_bound(np.array([k2]))

        def basis(r, f, pt=pt):
            return np.column_stack([np.ones(r.sum()), pt[r]] + ([] if f is None else [xt[r, f]]))
        gain, f, thr, dleft = _brute_best(X, g, h, rows, cuts, basis, lam0, lam1)
        if f < 0:
            assert t.left[child] == -1
            continue
        assert (t.feature[child], t.threshold[child], bool(t.default_left[child])) == \
            (f, thr, dleft)
        assert t.loss_change[child] == pytest.approx(gain, rel=1e-5)


def test_histogram_payload_is_the_rows_fixed_point_sums():
    """kernels.cpu_linear.linear_histograms: per slot the sums of the rows' rounded
    summands (g, h, g p~, h p~, h p~^2, g x~, h x~, h p~ x~, h x~^2), exactly."""
    from dgbdt.kernels.pages import pack
    rng = np.random.default_rng(3)
    n, F, nb = 500, 3, 5
    bins = rng.integers(0, nb + 1, (n, F)).astype(np.uint16)     # nb: missing
    raw = rng.uniform(-1, 1, (n, F)).astype(np.float32)
    raw[bins == nb] = np.nan
    page = pack(bins)
    g, h = rng.normal(size=n), rng.uniform(0.1, 1, n)
    sg, sh = 2.0 ** 40, 2.0 ** 41
    grad = np.stack([np.rint(g * sg), np.rint(h * sh)], axis=1).astype(np.int64)
    ptrs = np.arange(F + 1, dtype=np.int64) * (nb + 1)
    rows = rng.permutation(n).astype(np.int32)
    center, inv = np.full(F, 0.1), np.full(F, 0.5)
    xmask = np.array([True, True, False])
    feat = np.array([[1, -1], [0, 1]], np.int64)
    coef = np.array([[0.7, 0.0], [-0.3, 1.2]])
    inv_sp = np.array([1.0, 0.5])
    seg_b, seg_e = np.array([0, 200]), np.array([200, 500])
    out = cpu_linear.linear_histograms(page.words, page.bits, F, ptrs, rows, g, h, grad, raw,
                                       center, inv, xmask, seg_b, seg_e, feat, coef, inv_sp,
                                       sg, sh, int(ptrs[-1]), 3)
    xt = np.where(np.isnan(raw) | ~xmask, 0.0, (raw.astype(np.float64) - center) * inv)
    q = lambda v, s: np.rint(v * s).astype(np.int64)   # noqa: E731
    for j in range(2):
        r = rows[seg_b[j]:seg_e[j]]
        pt = sum(coef[j, t] * xt[r, feat[j, t]] for t in range(2) if feat[j, t] >= 0) \
            * inv_sp[j]
        for f in range(F):
            x = xt[r, f]
            summands = np.stack([grad[r, 0], grad[r, 1], q(g[r] * pt, sg), q(h[r] * pt, sh),
                                 q(h[r] * pt * pt, sh), q(g[r] * x, sg), q(h[r] * x, sh),
                                 q(h[r] * pt * x, sh), q(h[r] * x * x, sh)], axis=1)
            ref = np.zeros((nb + 1, 9), np.int64)
            np.add.at(ref, bins[r, f].astype(np.int64), summands)
            np.testing.assert_array_equal(out[j, ptrs[f]:ptrs[f + 1]], ref)
    # p_only (a larger child's own entries): the p~ entries, zeros elsewhere
    p_only = cpu_linear.linear_histograms(page.words, page.bits, F, ptrs, rows, g, h, grad, raw,
                                          center, inv, xmask, seg_b, seg_e, feat, coef, inv_sp,
                                          sg, sh, int(ptrs[-1]), 2, p_only=True)
    own = [L.GP, L.HP, L.HPP, L.HPX]
    np.testing.assert_array_equal(p_only[:, :, own], out[:, :, own])
    assert not p_only[:, :, [L.G, L.H, L.GX, L.HX, L.HXX]].any()


def _pl_target(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 5)).astype(np.float32)
    y = np.where(X[:, 0] > 0, 3 * X[:, 1] + 2 * X[:, 2] + 1, -2 * X[:, 1] + X[:, 2]) \
        + 0.05 * rng.normal(size=n)
    return X, y


def test_piecewise_linear_target_needs_five_times_fewer_trees():
    X, y = _pl_target(8000, 4)
    Xt, yt = _pl_target(4000, 5)
    d = dgbdt.Dataset(X, label=y)
    rmse = {}
    for linear, rounds in ((True, 10), (False, 50)):
        b = dgbdt.train({"linear_tree": linear, "max_depth": 3, "eta": 0.5}, d, rounds,
                        verbose_eval=False)
        rmse[linear] = float(np.sqrt(np.mean((b.predict(Xt) - yt) ** 2)))
    assert rmse[True] < 0.7 * rmse[False], rmse


def _params_all(seed=0):
    return {**LIN, "max_depth": 3, "subsample": 0.8, "colsample_bynode": 0.8, "seed": seed,
            "objective": "binary:logistic", "base_score": None, "max_linear_features": 2}


@pytest.mark.parametrize("growth", [{}, {"grow_policy": "lossguide", "max_leaves": 6,
                                         "max_depth": 0}])
def test_same_bytes_for_any_page_split(growth):
    """Three page splits and spilled pages (device_memory_budget), with row and column
    sampling and weights: the same model file."""
    X, y, w = _data(n=2000, seed=6)
    y = (y > np.median(y)).astype(np.float64)
    models = [dgbdt.train({**_params_all(), **growth}, dgbdt.Dataset(
        X, label=y, weight=w, page_rows=rows), 3, verbose_eval=False).save_raw()
        for rows in (None, 500, 333)]
    spilled = dgbdt.train({**_params_all(), **growth, "device_memory_budget": 4000},
                          dgbdt.Dataset(X, label=y, weight=w), 3, verbose_eval=False)
    assert spilled.memory["pages_spilled"] >= 1          # pages in files, raw rows in memory
    assert models[0] == models[1] == models[2] == spilled.save_raw()
    assert max(len(m["features"]) for t in json.loads(models[0])["trees"]
               for m in t["linear_leaves"]) == 2        # the cap holds


def test_predictions_margins_and_file_round_trip():
    X, y, w = _data(n=3000, seed=7)
    Xv, yv, _ = _data(n=1000, seed=17)
    d = dgbdt.Dataset(X, label=y, weight=w)
    hist = {}
    b = dgbdt.train({**LIN, "max_depth": 3}, d, 5, evals=[(d, "train"), (dgbdt.Dataset(
        Xv, label=yv), "valid")], evals_result=hist, verbose_eval=False)
    pred = b.predict(X)
    # the training's margins (added through the row segments) equal the model's predictions,
    # and so do an eval set's (advanced tree by tree)
    # (to 1e-14: the metric's sums are exact, numpy's are not)
    assert hist["train"]["rmse"][-1] == pytest.approx(
        np.sqrt(np.average((pred - y) ** 2, weights=w)), rel=1e-14)
    assert hist["valid"]["rmse"][-1] == pytest.approx(
        np.sqrt(np.mean((b.predict(Xv) - yv) ** 2)), rel=1e-14)
    doc = json.loads(b.save_raw())
    assert doc["version"] == 3
    b2 = dgbdt.load_model(b.save_raw())
    assert b2.save_raw() == b.save_raw()
    np.testing.assert_array_equal(b2.predict(X), pred)
    np.testing.assert_array_equal(b2.inplace_predict(X), pred)
    # pred_leaf: the same walk as constant trees; a leaf's value from its stored model
    leaves = b.predict(X, pred_leaf=True)
    const = dgbdt.load_model(_without_linear(doc))
    np.testing.assert_array_equal(const.predict(X, pred_leaf=True), leaves)
    margin = np.full(len(X), 0.5)
    for k, t in enumerate(b.trees):
        for node, m in t.linear.items():
            rows = leaves[:, k] == node
            margin[rows] += m["coefs"][0] + _xt(X[rows], m) @ m["coefs"][1:]
    np.testing.assert_allclose(b.predict(X, output_margin=True), margin, rtol=1e-12)
    # a constant-leaf model is still written as version 2
    c = dgbdt.train({"max_depth": 2}, d, 2, verbose_eval=False)
    assert json.loads(c.save_raw())["version"] == 2


def _without_linear(doc):
    d = json.loads(json.dumps(doc))
    d["version"] = 2
    for t in d["trees"]:
        t.pop("linear_leaves")
    return d


def test_model_file_validation():
    X, y, _ = _data(n=800, seed=8)
    doc = json.loads(dgbdt.train(LIN, dgbdt.Dataset(X, label=y), 2,
                                 verbose_eval=False).save_raw())
    assert dgbdt.load_model(_without_linear(doc)).trees[0].linear is None   # version 2 loads

    def broken(edit):
        d = json.loads(json.dumps(doc))
        edit(d)
        return d
    bad = {
        "need model format version 3": lambda d: d.update(version=2),
        "is not a leaf": lambda d: d["trees"][0]["linear_leaves"][0].update(node=0),
        "coefs": lambda d: d["trees"][0]["linear_leaves"][0]["coefs"].append(1.0),
        "scales must be > 0": lambda d: d["trees"][0]["linear_leaves"][0].update(
            scales=[-1.0] * len(d["trees"][0]["linear_leaves"][0]["scales"])),
        "features must be distinct": lambda d: d["trees"][0]["linear_leaves"][0].update(
            features=[99] * len(d["trees"][0]["linear_leaves"][0]["features"])),
    }
    assert all(len(m["features"]) for m in doc["trees"][0]["linear_leaves"])
    for message, edit in bad.items():
        with pytest.raises(ModelFormatError, match=message):
            dgbdt.load_model(broken(edit))


@pytest.mark.parametrize("extra, message", [
    ({"alpha": 1.0}, "alpha=0"),
    ({"max_delta_step": 1.0}, "max_delta_step=0"),
    ({"objective": "reg:quantileerror"}, "quantiles"),
    ({"monotone_constraints": "(1,0,0,0)"}, "monotone_constraints"),
    ({"max_linear_features": 0}, "max_linear_features"),
    ({"linear_lambda": -1.0}, "linear_lambda"),
])
def test_parameters_it_does_not_combine_with(extra, message):
    X, y, _ = _data(n=200)
    with pytest.raises(ParameterError, match=message):
        dgbdt.train({"linear_tree": True, **extra}, dgbdt.Dataset(X, label=y), 1)


def test_what_is_not_built_says_so():
    X, y, _ = _data(n=500)
    b = dgbdt.train(LIN, dgbdt.Dataset(X, label=y), 2, verbose_eval=False)
    with pytest.raises(NotImplementedError, match="SHAP"):
        b.predict(X, pred_contribs=True)
    with pytest.raises(ValueError, match="XGBoost's format"):
        b.save_raw(format="xgboost")
    codes = np.floor(np.abs(np.nan_to_num(X))).astype(np.float32)
    with pytest.raises(ValueError, match="categorical"):
        dgbdt.train(LIN, dgbdt.Dataset(codes, label=y, feature_types=["c", "q", "q", "q"]), 1)


def _objective_data(objective, X, y):
    n = len(y)
    if objective == "multi:softprob":
        return {"label": np.digitize(y, np.quantile(y, [0.33, 0.66]))}, {"num_class": 3}
    if objective == "count:poisson":
        return {"label": np.round(np.exp(y / 4))}, {}
    return {"label": np.where(np.arange(n) % 3 == 0, -1, 1) * np.exp(y / 4)}, {}


# rank:ndcg trains linear leaves too (checked by hand); left out here because its kernels'
# cold compile (~12 s on 2 cores) would land in this file, which CI runs before test_rank.py
@pytest.mark.parametrize("objective", ["multi:softprob", "count:poisson", "survival:cox"])
def test_newton_objectives_train_linear_leaves(objective):
    X, y, _ = _data(n=1500, seed=3)
    data, extra = _objective_data(objective, X, y)
    d = dgbdt.Dataset(X, **data)
    hist = {}
    b = dgbdt.train({**LIN, "base_score": None, "objective": objective, **extra}, d, 3,
                    evals=[(d, "train")], evals_result=hist, verbose_eval=False)
    assert all(t.linear for t in b.trees)
    (metric, values), = hist["train"].items()
    assert values[-1] < values[0], (metric, values)
    np.testing.assert_array_equal(dgbdt.load_model(b.save_raw()).predict(d), b.predict(d))


def test_continued_training_gives_the_longer_training():
    X, y, _ = _data(n=1500, seed=9)
    d = dgbdt.Dataset(X, label=y)
    first = dgbdt.train(LIN, d, 2, verbose_eval=False)
    both = dgbdt.train(LIN, d, 2, xgb_model=first, verbose_eval=False)
    assert both.save_raw() == dgbdt.train(LIN, d, 4, verbose_eval=False).save_raw()


def test_dask_predicts_linear_trees(client1):
    """dgbdt.dask.predict of an in-process linear model (its blocks call Booster.predict);
    Dask training of linear trees: tests/test_linear_dask.py."""
    pytest.importorskip("distributed")
    import dask.array as da
    import dgbdt.dask as dgd
    X, y, _ = _data(n=1200, seed=10)
    b = dgbdt.train(LIN, dgbdt.Dataset(X, label=y), 2, verbose_eval=False)
    pred = client1.compute(dgd.predict(client1, b, da.from_array(X, chunks=(400, X.shape[1])))).result()
    np.testing.assert_array_equal(np.asarray(pred), b.predict(X))


def test_gain_under_column_sampling_is_the_gain_of_the_allowed_features():
    """With one feature a tree (colsample_bytree), the root's gain is the brute-force best
    over that feature alone: the node's own score comes from its sums before the other
    features' slots are zeroed (feature 0 among them)."""
    X, y, w = _data(n=1000, F=3, seed=11, missing=0.0)
    d = dgbdt.Dataset(X, label=y, weight=w)
    cuts = d.cuts(LIN["max_bin"])
    g, h = w * (0.5 - y), w
    lo, hi = X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64)
    scale = np.array([L.power_of_two_at_least((b_ - a) / 2) for a, b_ in zip(lo, hi)])
    xt = (X.astype(np.float64) - (lo + hi) / 2) / scale
    checked = 0
    for seed in range(6):
        t = dgbdt.train({**LIN, "max_depth": 1, "colsample_bytree": 0.34, "seed": seed}, d, 1,
                        verbose_eval=False).trees[0]
        f = int(t.feature[0])
        if f == 0 or t.left[0] == -1:
            continue
        only = X.copy()
        only[:, [c for c in range(3) if c != f]] = 0.0       # one bin: never a split
        gain = _brute_best(only, g, h, np.ones(len(y), bool), cuts, lambda r, c: np.column_stack(
            [np.ones(r.sum())] + ([] if c is None else [xt[r, c]])), LIN["lambda"],
            LIN["linear_lambda"])
        assert gain[1] == f
        assert t.loss_change[0] == pytest.approx(gain[0], rel=1e-5)
        checked += 1
    assert checked


def test_scalar_side_score_is_the_array_solver_bit_for_bit():
    """The split scan's scalar 3x3 score (side_score3) against basis_system + ridge_solve,
    on random sums and on degenerate ones (zero hessian, collinear, zero entries)."""
    rng = np.random.default_rng(12)
    A, b, w, Ls, keep, y = L._scratch(3)
    cases = []
    for _ in range(300):
        z = rng.normal(size=(50, 3)) * rng.choice([0.0, 1.0, 1e-6], 3)
        z[:, 0] = 1.0
        if rng.random() < 0.2:
            z[:, 2] = z[:, 1] * rng.choice([1.0, -2.0])          # collinear p~ and x~
        hh, gg = rng.uniform(0, 1, 50) * rng.choice([0.0, 1.0], p=[0.05, 0.95]), rng.normal(size=50)
        s = np.array([gg.sum(), hh.sum(), (gg * z[:, 1]).sum(), (hh * z[:, 1]).sum(),
                      (hh * z[:, 1] ** 2).sum(), (gg * z[:, 2]).sum(), (hh * z[:, 2]).sum(),
                      (hh * z[:, 1] * z[:, 2]).sum(), (hh * z[:, 2] ** 2).sum()])
        cases.append(np.rint(s * 2 ** 30).astype(np.int64))
    for s in cases:
        for lam0, lam1 in ((1.0, 1.0), (0.0, 0.0), (0.5, 0.0)):
            for use_p in (False, True):
                for use_x in (False, True):
                    ref = L.side_score(s, 2.0 ** -30, 2.0 ** -30, lam0, lam1, use_p, use_x, A, b,
                                       w, Ls, keep, y)
                    got = L.side_score3(s, 2.0 ** -30, 2.0 ** -30, lam0, lam1, use_p, use_x)
                    assert got == ref or (np.isnan(got) and np.isnan(ref))


def test_column_range_is_the_exact_nan_skipping_min_and_max():
    """linear_setup.column_range (the GPU's normalization input, run here with numpy as its
    array module): each column's min and max with NaN skipped, NaN for a column without
    values, so the same numbers as LinearSpec.from_data's host reduction."""
    from dgbdt.engine.linear_setup import column_range
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    X[:, 2] = np.nan
    lo, hi = column_range(X, np)
    with np.errstate(all="ignore"), __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore", RuntimeWarning)
        want_lo, want_hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
    np.testing.assert_array_equal(lo, want_lo.astype(np.float64))
    np.testing.assert_array_equal(hi, want_hi.astype(np.float64))
    assert np.isnan(lo[2]) and np.isnan(hi[2]) and np.isfinite(lo[[0, 1, 3]]).all()
