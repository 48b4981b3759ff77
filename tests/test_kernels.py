"""The numba tree kernels against plain numpy / Python references."""
import numpy as np
import pytest

from dgbdt.kernels.pages import pack
from dgbdt.kernels import cpu_split, cpu_tree


def random_page(rng, n, nf, bits):
    """Symbols [n, nf] with feature f's bins 0..nb_f-1 and missing symbol nb_f < 2**bits."""
    top = (1 << bits) - 1
    nb = rng.integers(1, top, size=nf, endpoint=True)
    nb[0] = top  # the widest feature uses every symbol, missing included
    S = np.empty((n, nf), dtype=np.uint32)
    for f in range(nf):
        S[:, f] = rng.integers(0, nb[f], size=n, endpoint=True)  # nb[f] = missing
        S[rng.integers(0, n), f] = nb[f]
    page = pack(S, bits=bits)
    assert page.bits == bits
    hist_ptrs = np.zeros(nf + 1, dtype=np.int64)
    hist_ptrs[1:] = np.cumsum(nb + 1)
    return S, page, nb.astype(np.int64), hist_ptrs


def random_segments(rng, n, m):
    """m disjoint [begin, end) ranges inside [0, n), some possibly empty, in random order."""
    cuts = np.sort(rng.integers(0, n, size=2 * m, endpoint=True))
    begin, end = cuts[0::2].astype(np.int64), cuts[1::2].astype(np.int64)
    end[0] = begin[0]  # one empty segment
    order = rng.permutation(m)
    return begin[order], end[order]


def _fixed_grad(rng, n):
    """Fixed-point (g, h) pairs as the kernels take them: int64 [n, 2], h >= 0."""
    grad = np.empty((n, 2), dtype=np.int64)
    grad[:, 0] = rng.integers(-(1 << 40), 1 << 40, size=n)
    grad[:, 1] = rng.integers(0, 1 << 40, size=n)
    return grad


# -- build_histograms ----------------------------------------------------------------------
@pytest.mark.parametrize("bits", [1, 3, 4, 8, 9, 16])
@pytest.mark.parametrize("n_threads", [1, 3])
def test_build_histograms(bits, n_threads):
    rng = np.random.default_rng(bits * 10 + n_threads)
    n, nf, m = 500, 4, 5
    S, page, nb, hist_ptrs = random_page(rng, n, nf, bits)
    rows = rng.permutation(n).astype(np.int32)
    grad = _fixed_grad(rng, n)
    begin, end = random_segments(rng, n, m)
    n_slots = int(hist_ptrs[-1])
    got = cpu_tree.build_histograms(page.words, page.bits, nf, hist_ptrs, rows, grad, begin, end,
                                    n_slots, n_threads)
    ref = np.zeros((m, n_slots, 2), dtype=np.int64)
    for j in range(m):
        seg = rows[begin[j]:end[j]]
        for f in range(nf):
            np.add.at(ref[j], hist_ptrs[f] + S[seg, f].astype(np.int64), grad[seg])
    assert got.dtype == np.int64 and got.shape == (m, n_slots, 2)
    np.testing.assert_array_equal(got, ref)
    assert np.all(got[end == begin] == 0)
    # every feature's slots of a node sum to the node's totals
    for j in range(m):
        tot = grad[rows[begin[j]:end[j]]].sum(axis=0)
        for f in range(nf):
            np.testing.assert_array_equal(got[j, hist_ptrs[f]:hist_ptrs[f + 1]].sum(axis=0), tot)


# -- partition_rows ------------------------------------------------------------------------
def _random_splits(rng, n, nf, m, bits):
    """A random page, a row order, m node segments and a numerical split of each."""
    S, page, nb, _ = random_page(rng, n, nf, bits)
    rows = rng.permutation(n).astype(np.int32)
    begin, end = random_segments(rng, n, m)
    feature = rng.integers(0, nf, size=m).astype(np.int64)
    split_bin = np.array([rng.integers(-1, nb[f]) for f in feature], dtype=np.int64)
    default_left = np.array([True, False] * (m // 2), dtype=np.bool_)
    return S, page, nb, rows, begin, end, feature, split_bin, default_left


@pytest.mark.parametrize("n_chunks", [1, 7])
@pytest.mark.parametrize("bits", [3, 8, 9])
def test_partition_rows_is_stable(n_chunks, bits):
    rng = np.random.default_rng(100 + n_chunks + bits)
    n, nf, m = 400, 3, 4
    S, page, nb, rows, begin, end, feature, split_bin, default_left = _random_splits(
        rng, n, nf, m, bits)
    before = rows.copy()
    scratch_l = np.full(n, -1, dtype=np.int32)
    scratch_r = np.full(n, -1, dtype=np.int32)
    n_left = cpu_tree.partition_rows(page.words, page.bits, nf, nb, rows, scratch_l, scratch_r,
                                     begin, end, feature, split_bin, default_left, n_chunks)
    expect = before.copy()
    for j in range(m):
        seg = before[begin[j]:end[j]]
        s = S[seg, feature[j]].astype(np.int64)
        missing = s == nb[feature[j]]
        left = np.where(missing, default_left[j], s <= split_bin[j])
        expect[begin[j]:end[j]] = np.concatenate([seg[left], seg[~left]])
        assert n_left[j] == left.sum()
    np.testing.assert_array_equal(rows, expect)  # rows outside the segments are untouched too
    assert sorted(rows) == list(range(n))


def test_partition_rows_missing_default_both_ways():
    """The same segment split twice, differing only in default_left: missing rows move sides."""
    rng = np.random.default_rng(7)
    n, nf = 64, 2
    S, page, nb, _ = random_page(rng, n, nf, 4)
    col = S[:, 1].astype(np.int64)
    missing = col == nb[1]
    assert missing.any() and (~missing).any()
    out = {}
    for dl in (False, True):
        rows = np.arange(n, dtype=np.int32)
        k = cpu_tree.partition_rows(
            page.words, page.bits, nf, nb, rows, np.empty(n, np.int32), np.empty(n, np.int32),
            np.array([0]), np.array([n]), np.array([1]), np.array([nb[1] // 2]),
            np.array([dl]), 3)
        out[dl] = (rows.copy(), int(k[0]))
    left_present = ((col <= nb[1] // 2) & ~missing).sum()
    assert out[False][1] == left_present
    assert out[True][1] == left_present + missing.sum()
    assert set(out[True][0][:out[True][1]]) - set(out[False][0][:out[False][1]]) == \
        set(np.flatnonzero(missing))


# -- add_leaf_values -----------------------------------------------------------------------
def test_add_leaf_values():
    rng = np.random.default_rng(3)
    n, K, m = 300, 3, 6
    rows = rng.permutation(n).astype(np.int32)
    begin, end = random_segments(rng, n, m)
    values = rng.normal(size=m)
    margin = rng.normal(size=(n, K))
    expect = margin.copy()
    for j in range(m):
        expect[rows[begin[j]:end[j]], 1] += values[j]
    cpu_tree.add_leaf_values(margin, 1, rows, begin, end, values)
    np.testing.assert_array_equal(margin, expect)


@pytest.mark.parametrize("n_chunks", [1, 7])
@pytest.mark.parametrize("bits", [3, 8, 9])
def test_partition_rows_leaf_update_is_partition_then_add(n_chunks, bits):
    """partition_rows with ``leaves``: each row's margin gets its side's value, exactly as a
    partition followed by add_leaf_values; no row moves."""
    rng = np.random.default_rng(200 + n_chunks + bits)
    n, nf, m, K = 500, 3, 4, 2
    S, page, nb, rows, begin, end, feature, split_bin, default_left = _random_splits(
        rng, n, nf, m, bits)
    vl, vr = rng.normal(size=m), rng.normal(size=m)
    margin = rng.normal(size=(n, K))
    expect = margin.copy()
    moved = rows.copy()
    n_left = cpu_tree.partition_rows(page.words, page.bits, nf, nb, moved, np.empty_like(rows),
                                     np.empty_like(rows), begin, end, feature, split_bin,
                                     default_left, n_chunks)
    for j in range(m):
        seg = moved[begin[j]:end[j]]
        expect[seg[:n_left[j]], 1] += vl[j]
        expect[seg[n_left[j]:], 1] += vr[j]
    before = rows.copy()
    cpu_tree.partition_rows(page.words, page.bits, nf, nb, rows, rows, rows, begin, end, feature,
                            split_bin, default_left, n_chunks, leaves=(margin, 1, vl, vr))
    np.testing.assert_array_equal(margin, expect)
    np.testing.assert_array_equal(rows, before)


def test_quantize_gradients():
    rng = np.random.default_rng(4)
    g, h = rng.normal(size=(50, 2)), rng.uniform(0, 1, size=(50, 2))
    out = np.zeros((50, 2), dtype=np.int64)
    rows = np.full(50, -1, dtype=np.int32)
    cpu_tree.quantize_gradients(g, h, 1, 2.0 ** 30, 2.0 ** 31, out, rows)
    np.testing.assert_array_equal(out[:, 0], np.rint(g[:, 1] * 2.0 ** 30).astype(np.int64))
    np.testing.assert_array_equal(out[:, 1], np.rint(h[:, 1] * 2.0 ** 31).astype(np.int64))
    np.testing.assert_array_equal(rows, np.arange(50))


@pytest.mark.parametrize("n", [0, 1, 7, 40000, 100003])
def test_column_abs_maxima_equal_numpys(n):
    """The fused maxima give numpy's max |g|, max |h| per column, NaN and inf included."""
    from dgbdt.kernels.cpu_objective import column_abs_maxima
    rng = np.random.default_rng(n)
    g, h = rng.normal(size=(n, 3)) * 5, -rng.uniform(0, 1, size=(n, 3))
    if n:
        g[n // 2, 0] = -1e300
        g[n - 1, 2] = -0.0
    for gg, hh in ((g, h), (g.copy(), h.copy())):
        mg, mh = column_abs_maxima(gg, hh)
        want_g = np.abs(gg).max(axis=0) if n else np.zeros(3)
        want_h = np.abs(hh).max(axis=0) if n else np.zeros(3)
        np.testing.assert_array_equal(mg, want_g)
        np.testing.assert_array_equal(mh, want_h)
    if n:
        g[n // 3, 1], h[0, 2] = np.nan, np.inf
        mg, mh = column_abs_maxima(g, h)
        assert np.isnan(mg[1]) and not np.isnan(mg[0]) and mh[2] == np.inf


# -- predict_raw ---------------------------------------------------------------------------
def random_tree(rng, nf, max_depth):
    left, right, feature, threshold, dleft = [-1], [-1], [0], [0.0], [False]
    frontier = [(0, 0)]
    while frontier:
        node, depth = frontier.pop(0)
        if depth < max_depth and (node == 0 or rng.random() < 0.7):
            feature[node] = int(rng.integers(0, nf))
            threshold[node] = float(np.float32(rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0])
                                               + rng.normal(scale=0.1) * rng.integers(0, 2)))
            dleft[node] = bool(rng.integers(0, 2))
            # children in either order: the kernels must not assume right == left + 1
            for side in ((left, right) if rng.random() < 0.5 else (right, left)):
                side[node] = len(left)
                left.append(-1)
                right.append(-1)
                feature.append(0)
                threshold.append(float(np.float32(rng.normal())))  # leaf value
                dleft.append(False)
                frontier.append((side[node], depth + 1))
    return (np.array(left, np.int32), np.array(right, np.int32), np.array(feature, np.int32),
            np.array(threshold, np.float32), np.array(dleft, np.bool_))


def python_depth(tree, node=0):
    left, right = tree[0], tree[1]
    if left[node] == -1:
        return 0
    return 1 + max(python_depth(tree, left[node]), python_depth(tree, right[node]))


def python_walk(tree, x):
    left, right, feature, threshold, dleft = tree
    node = 0
    while left[node] != -1:
        v = x[feature[node]]
        go = dleft[node] if np.isnan(v) else bool(v < threshold[node])
        node = left[node] if go else right[node]
    return node


def test_predict_raw_matches_tree_walk():
    rng = np.random.default_rng(5)
    n, nf, K = 200, 4, 2
    trees = [random_tree(rng, nf, 4) for _ in range(6)]
    tree_class = np.array([t % K for t in range(6)], dtype=np.int64)
    X = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(n, nf)).astype(np.float32)
    X += rng.normal(scale=0.5, size=X.shape).astype(np.float32) * (rng.random(X.shape) < 0.5)
    X[rng.random(X.shape) < 0.15] = np.nan
    cat = [np.concatenate([t[i] for t in trees]) for i in range(5)]
    ptrs = np.zeros(len(trees) + 1, dtype=np.int64)
    ptrs[1:] = np.cumsum([len(t[0]) for t in trees])
    leaf_value = cat[3].astype(np.float64)
    depth = cpu_tree.tree_depths(cat[0], cat[1], ptrs)
    np.testing.assert_array_equal(depth, [python_depth(t) for t in trees])
    out = rng.normal(size=(n, K))
    start = out.copy()
    leaves = np.full((n, len(trees)), -7, dtype=np.int32)
    cpu_tree.predict_raw(X, cat[0], cat[1], cat[2], cat[3], cat[4], leaf_value, ptrs, tree_class,
                         depth, out, leaves, True)
    expect = start.copy()
    for t, tree in enumerate(trees):
        for r in range(n):
            leaf = python_walk(tree, X[r])
            assert leaves[r, t] == leaf
            expect[r, tree_class[t]] += np.float64(tree[3][leaf])
    np.testing.assert_allclose(out, expect, rtol=1e-14, atol=1e-14)
    # without want_leaf the leaf array is not touched
    dummy = np.full((1, 1), 9, dtype=np.int32)
    out2 = start.copy()
    cpu_tree.predict_raw(X, cat[0], cat[1], cat[2], cat[3], cat[4], leaf_value, ptrs, tree_class,
                         depth, out2, dummy, False)
    np.testing.assert_array_equal(out2, out)
    assert dummy[0, 0] == 9


def test_predict_raw_threshold_is_strict():
    # one split: x < 0.5 left (leaf 1 = -1), else right (leaf 2 = +1); NaN right
    left = np.array([1, -1, -1], np.int32)
    right = np.array([2, -1, -1], np.int32)
    feature = np.zeros(3, np.int32)
    threshold = np.array([0.5, -1.0, 1.0], np.float32)
    dl = np.zeros(3, np.bool_)
    X = np.array([[0.4999999], [0.5], [np.nan], [-3.0]], np.float32)
    out = np.zeros((4, 1))
    cpu_tree.predict_raw(X, left, right, feature, threshold, dl, threshold.astype(np.float64),
                         np.array([0, 3]), np.array([0]), np.array([1]), out,
                         np.zeros((1, 1), np.int32), False)
    np.testing.assert_array_equal(out[:, 0], [-1.0, 1.0, 1.0, -1.0])


# -- evaluate_splits -----------------------------------------------------------------------
def soft(g, alpha):
    return g - alpha if g > alpha else (g + alpha if g < -alpha else 0.0)


def ref_weight(G, H, lam, alpha, mds, mcw):
    if H < mcw or H <= 0:
        return 0.0
    w = -soft(G, alpha) / (H + lam)
    if mds != 0 and abs(w) > mds:
        w = mds if w > 0 else -mds
    return w


def ref_score(G, H, lam, alpha, mds, mcw):
    if H <= 0:
        return 0.0
    if mds == 0:
        return soft(G, alpha) ** 2 / (H + lam)
    w = ref_weight(G, H, lam, alpha, mds, mcw)
    return -(2 * G * w + (H + lam) * w * w)


def brute_force_split(hist, hist_ptrs, total, sg, sh, lam, alpha, mds, mcw):
    """Every candidate in (feature, forward b ascending, backward b descending) order; the
    first strictly best float32 gain wins. Returns (gain, feature, bin, default_left, left)."""
    sc = lambda G, H: ref_score(G, H, lam, alpha, mds, mcw)  # noqa: E731
    tg, th = int(total[0]), int(total[1])
    parent = sc(tg / sg, th / sh)
    best = (np.float32(0.0), -1, 0, False, (0, 0))
    for f in range(len(hist_ptrs) - 1):
        p0 = int(hist_ptrs[f])
        nb = int(hist_ptrs[f + 1]) - p0 - 1
        bins = hist[p0:p0 + nb].astype(object)  # exact Python ints
        miss = hist[p0 + nb]
        cands = []
        for b in range(nb):
            lg, lh = int(sum(bins[:b + 1, 0])), int(sum(bins[:b + 1, 1]))
            cands.append((b, False, lg, lh))
        if miss[0] != 0 or miss[1] != 0:
            for b in range(nb - 2, -2, -1):
                rg, rh = int(sum(bins[b + 1:, 0])), int(sum(bins[b + 1:, 1]))
                cands.append((b, True, tg - rg, th - rh))
        for b, dleft, lg, lh in cands:
            HL, HR = lh / sh, (th - lh) / sh
            if HL < mcw or HR < mcw:
                continue
            gain = np.float32(sc(lg / sg, HL) + sc((tg - lg) / sg, HR) - parent)
            if gain > best[0]:
                best = (gain, f, b, dleft, (lg, lh))
    return best


def histogram_from_rows(rng, n, nb, missing_frac, g, h, sg, sh):
    nf = len(nb)
    hist_ptrs = np.zeros(nf + 1, dtype=np.int64)
    hist_ptrs[1:] = np.cumsum(np.asarray(nb) + 1)
    q = np.stack([np.rint(g * sg), np.rint(h * sh)], axis=1).astype(np.int64)
    hist = np.zeros((int(hist_ptrs[-1]), 2), dtype=np.int64)
    for f in range(nf):
        s = rng.integers(0, nb[f], size=n)
        s[rng.random(n) < missing_frac[f]] = nb[f]
        np.add.at(hist, hist_ptrs[f] + s, q)
    return hist, q.sum(axis=0), hist_ptrs


SG, SH = 2.0 ** 30, 2.0 ** 31


def check_nodes(hists, totals, hist_ptrs, lam, alpha, mds, mcw):
    H = np.stack(hists)
    T = np.stack(totals)
    gain, feat, sbin, dleft, left = cpu_split.evaluate_splits(
        H, hist_ptrs, T, 1.0 / SG, 1.0 / SH, lam, alpha, mds, mcw)
    for j in range(len(hists)):
        ref = brute_force_split(H[j], hist_ptrs, T[j], SG, SH, lam, alpha, mds, mcw)
        where = f"node {j}"
        assert gain[j] == pytest.approx(float(ref[0]), rel=1e-6, abs=1e-12), where
        assert (feat[j], sbin[j], bool(dleft[j])) == (ref[1], ref[2], ref[3]), where
        if ref[1] >= 0:
            assert tuple(left[j]) == ref[4], where
    return gain, feat, sbin, dleft, left


@pytest.mark.parametrize("lam,alpha,mds", [(1.0, 0.0, 0.0), (0.0, 0.0, 0.0), (2.0, 0.3, 0.0),
                                           (1.0, 0.0, 0.4), (1.0, 0.2, 0.5)])
def test_evaluate_splits_brute_force(lam, alpha, mds):
    rng = np.random.default_rng(11)
    nb = [3, 5, 1, 4]
    hists, totals = [], []
    for node in range(6):
        n = int(rng.integers(8, 40))
        g = rng.normal(size=n) + (node - 3) * 0.2
        h = rng.uniform(0.05, 1.0, size=n)
        hist, tot, hist_ptrs = histogram_from_rows(
            rng, n, nb, [0.0, 0.3, 0.5, 0.1 * node], g, h, SG, SH)
        hists.append(hist)
        totals.append(tot)
    _, feat, _, dleft, _ = check_nodes(hists, totals, hist_ptrs, lam, alpha, mds, 0.5)
    assert np.any(feat >= 0)


def fixed(g, h):
    return np.stack([np.rint(np.asarray(g) * SG), np.rint(np.asarray(h) * SH)],
                    axis=1).astype(np.int64)


def test_evaluate_splits_missing_goes_left():
    """Missing rows and bin 0 carry the same signal: only the backward scan can put them
    together (bin 0 and missing left, bins 1.. right)."""
    hist_ptrs = np.array([0, 5], dtype=np.int64)
    hist = fixed([-2.0, 0.5, 0.4, 0.6, -6.0], [2.0, 2.0, 2.0, 2.0, 3.0])
    gain, feat, sbin, dleft, left = check_nodes([hist], [hist.sum(axis=0)], hist_ptrs,
                                                1.0, 0.0, 0.0, 1.0)
    assert (feat[0], sbin[0], bool(dleft[0])) == (0, 0, True)
    np.testing.assert_array_equal(left[0], hist[0] + hist[4])


def test_evaluate_splits_tie_keeps_forward_candidate():
    """Only missing carries signal: 'all present left, missing right' (forward, last bin) and
    'all present right, missing left' (backward, bin -1) are the same partition; the forward
    one comes first and wins the tie."""
    hist_ptrs = np.array([0, 5], dtype=np.int64)
    hist = fixed([0.5, 0.4, 0.6, 0.5, -6.0], [2.0, 2.0, 2.0, 2.0, 3.0])
    gain, feat, sbin, dleft, left = check_nodes([hist], [hist.sum(axis=0)], hist_ptrs,
                                                1.0, 0.0, 0.0, 1.0)
    assert (feat[0], sbin[0], bool(dleft[0])) == (0, 3, False)
    np.testing.assert_array_equal(left[0], hist[:4].sum(axis=0))


def test_evaluate_splits_min_child_weight_blocks():
    hist_ptrs = np.array([0, 4, 8], dtype=np.int64)
    # feature 0: bin 0 has a tiny hessian and a strong gradient: the best split unless blocked
    f0 = fixed([-3.0, 0.2, 0.4, 0.0], [0.3, 2.0, 4.0, 0.0])
    f1 = fixed([-1.5, 0.8, -1.7, 0.0], [3.3, 1.5, 1.5, 0.0])
    f1[2] += f0.sum(axis=0) - f1.sum(axis=0)  # both features see the same rows: same totals
    hist = np.concatenate([f0, f1])
    total = f0.sum(axis=0)
    free = check_nodes([hist], [total], hist_ptrs, 1.0, 0.0, 0.0, 0.0)
    assert (free[1][0], free[2][0]) == (0, 0)  # isolate bin 0 of feature 0
    blocked = check_nodes([hist], [total], hist_ptrs, 1.0, 0.0, 0.0, 1.0)
    assert blocked[1][0] >= 0 and (blocked[1][0], blocked[2][0]) != (0, 0)
    assert blocked[0][0] < free[0][0]
    # a weight no pair of children can reach: no split at all
    none = check_nodes([hist], [total], hist_ptrs, 1.0, 0.0, 0.0, 3.5)
    assert none[1][0] == -1 and none[0][0] == 0.0


def test_evaluate_splits_no_gain_no_split():
    # all bins have the same gradient/hessian ratio: no split gains
    hist_ptrs = np.array([0, 4], dtype=np.int64)
    hist = np.array([[2, 4], [4, 8], [1, 2], [0, 0]], dtype=np.int64) * (1 << 30)
    gain, feat, _, _, _ = check_nodes([hist], [hist.sum(axis=0)], hist_ptrs, 0.0, 0.0, 0.0, 0.0)
    assert feat[0] == -1 and gain[0] == 0.0


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_level_histograms_derive_the_siblings(n_threads):
    """level_histograms: the built nodes' histograms (as build_histograms) and, in the same
    call, each larger sibling's as its parent's minus the built one, exact in integers, for
    any thread count."""
    rng = np.random.default_rng(7 + n_threads)
    n, nf, m = 600, 5, 4
    S, page, nb, hist_ptrs = random_page(rng, n, nf, 8)
    rows = rng.permutation(n).astype(np.int32)
    grad = _fixed_grad(rng, n)
    begin, end = random_segments(rng, n, m)
    n_slots = int(hist_ptrs[-1])
    built = cpu_tree.build_histograms(page.words, page.bits, nf, hist_ptrs, rows, grad, begin,
                                      end, n_slots, 1)
    parent = rng.integers(-(1 << 50), 1 << 50, size=(3, n_slots, 2)).astype(np.int64)
    parent_slot = np.array([2, 0, 1], dtype=np.int64)[: m - 1]
    out = np.full((m + len(parent_slot), n_slots, 2), 12345, dtype=np.int64)   # stale values
    cpu_tree.level_histograms(page.words, page.bits, nf, hist_ptrs, rows, grad, begin, end,
                              n_threads, parent, parent_slot, out)
    np.testing.assert_array_equal(out[:m], built)
    for i, p in enumerate(parent_slot):
        np.testing.assert_array_equal(out[m + i], parent[p] - built[i])
