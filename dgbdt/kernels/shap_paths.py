"""A tree ensemble as its root-to-leaf paths, the form TreeSHAP takes on a GPU.

Mitchell, Frank and Holmes, "GPUTreeShap: Massively Parallel Exact Calculation of SHAP Scores
for Tree Ensembles" (2022): a tree's SHAP values are a sum over its leaves. For the path from
the root to leaf l, with value v_l, list the distinct features split on along it; for feature
i let z_i be the product of cover(child) / cover(parent) over the path's edges on i (the share
of the cover that follows the path when i is unknown) and o_i(x) = 1 if the row x satisfies
every split on i along the path, else 0. With the subset weights pw that TreeSHAP's EXTEND
builds from the (z, o) of all the path's features (a polynomial in the path, so independent of
their order), the leaf adds

    phi_i += v_l * (o_i - z_i) * UNWOUND_SUM_i(pw)

to each feature i on the path (Lundberg et al. 2018, Algorithm 2, whose unique-path unwinding
merges a repeated feature in exactly this way: z and o multiply). The splits on one feature
along a path intersect into one interval [lo, hi) of values (a split sends x < threshold left)
and one flag for missing values (true when every split on it sends them the path's way).

``ensemble_paths`` makes the arrays once per model; each path starts with a root element
(feature -1, z = o = 1), as dgbdt.kernels.cpu_shap's walk does.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _count(left, right, feature, is_cat, words_of, tree_ptrs):
    """(paths, elements, bitset words) upper bounds: leaves, leaves x (depth + 1), and the
    bitset words of every categorical split above every leaf (a repeated feature needs one)."""
    paths = 0
    elements = 0
    words = 0
    for t in range(tree_ptrs.shape[0] - 1):
        b, e = tree_ptrs[t], tree_ptrs[t + 1]
        depth = np.zeros(e - b, dtype=np.int64)
        cw = np.zeros(e - b, dtype=np.int64)
        for i in range(e - b):
            if left[b + i] != -1:
                depth[left[b + i]] = depth[right[b + i]] = depth[i] + 1
                w = words_of[feature[b + i]] if is_cat[b + i] else 0
                cw[left[b + i]] = cw[right[b + i]] = cw[i] + w
        for i in range(e - b):
            if left[b + i] == -1:
                paths += 1
                elements += depth[i] + 1
                words += cw[i]
    return paths, elements, words


@njit(cache=True, nogil=True)
def _restrict(bits, at, n_words, is_left, cats, begin, size):
    """AND into the element's bitset (bits[at:at + n_words], code c at bit c % 32 of word
    c // 32) the codes that take this split's ``is_left`` side (kernels.cpu_categorical.
    goes_left_cat: the set goes right, every other code left); returns whether the codes
    beyond the bitset (and values outside [0, 2^24 - 1)) take it: they go left."""
    for c in range(32 * n_words):
        right = cats[begin + c] != 0 if c < size else False
        if right == is_left:
            bits[at + c // 32] &= ~np.uint32(1 << (c % 32))
    return is_left


@njit(cache=True, nogil=True)
def _fill(left, right, feature, threshold, default_left, cover, tree_ptrs, tree_class,
          is_cat, cat_begin, cat_size, cats, words_of,
          path_ptr, path_class, path_value, el_feat, el_lo, el_hi, el_miss, el_z,
          el_cat, el_words, el_beyond, bits):
    """Every leaf's path, trees in order; returns (paths, elements, bitset words) written."""
    p = 0
    at = 0
    wat = 0
    for t in range(tree_ptrs.shape[0] - 1):
        b, e = tree_ptrs[t], tree_ptrs[t + 1]
        parent = np.full(e - b, -1, dtype=np.int64)
        for i in range(e - b):
            if left[b + i] != -1:
                parent[left[b + i]] = i
                parent[right[b + i]] = i
        for leaf in range(e - b):
            if left[b + leaf] != -1:
                continue
            path_ptr[p] = at
            path_class[p] = tree_class[t]
            path_value[p] = threshold[b + leaf]
            el_feat[at], el_lo[at], el_hi[at], el_miss[at], el_z[at] = -1, -np.inf, np.inf, 1, 1.0
            el_cat[at], el_words[at], el_beyond[at] = -1, 0, 1
            start = at
            at += 1
            c = leaf
            while parent[c] != -1:           # leaf to root: edge (parent[c] -> c)
                q = parent[c]
                n = b + q
                f = feature[n]
                is_left = left[n] == c
                z = cover[b + c] / cover[n]
                cat = is_cat[n]
                lo = -np.inf if is_left or cat else np.float32(threshold[n])
                hi = np.float32(threshold[n]) if is_left and not cat else np.inf
                miss = bool(default_left[n]) == is_left
                k = start + 1
                while k < at and el_feat[k] != f:
                    k += 1
                if k < at:                   # a feature split on again: one element
                    el_z[k] *= z
                    el_lo[k] = max(el_lo[k], lo)
                    el_hi[k] = min(el_hi[k], hi)
                    el_miss[k] = 1 if (el_miss[k] != 0 and miss) else 0
                else:
                    el_feat[at], el_lo[at], el_hi[at], el_z[at] = f, lo, hi, z
                    el_miss[at] = 1 if miss else 0
                    el_cat[at], el_words[at], el_beyond[at] = -1, 0, 1
                    k = at
                    at += 1
                if cat:
                    if el_cat[k] < 0:        # every code allowed, until the splits restrict
                        el_cat[k], el_words[k] = wat, words_of[f]
                        bits[wat:wat + words_of[f]] = np.uint32(0xFFFFFFFF)
                        wat += words_of[f]
                    if not _restrict(bits, el_cat[k], el_words[k], is_left, cats,
                                     cat_begin[n], cat_size[n]):
                        el_beyond[k] = 0
                c = q
            p += 1
    path_ptr[p] = at
    return p, at, wat


def ensemble_paths(left, right, feature, threshold, default_left, cover, tree_ptrs,
                   tree_class, sets=None) -> dict:
    """The paths of every tree (node arrays concatenated, tree t owns nodes
    tree_ptrs[t]..tree_ptrs[t+1]-1), grouped by output class (stable), as host arrays:
    path_ptr int64 [P + 1], path_class int32 [P], path_value float64 [P], and per element
    feature int32, lo / hi float32, miss uint8, z and 1 / z (invz) float64, and for the
    categorical splits (``sets`` = (is_cat, cat_begin, cat_size, cats) of
    tree.model.category_arrays, or None) ``cat`` int64 (the element's first word in ``bits``,
    -1 for a numerical feature), ``cat_words`` int32 and ``beyond`` uint8 (whether codes past
    the bitset and values outside [0, 2^24 - 1) satisfy it), ``bits`` uint32; ``max_len`` the
    longest path."""
    n_nodes = left.shape[0]
    if sets is None:
        sets = (np.zeros(n_nodes, np.bool_), np.zeros(n_nodes, np.int64),
                np.zeros(n_nodes, np.int64), np.zeros(0, np.uint8))
    is_cat, cat_begin, cat_size, cats = sets
    n_feat = int(feature.max()) + 1 if n_nodes else 1
    words_of = np.zeros(max(n_feat, 1), np.int64)
    if is_cat.any():                        # a feature's bitset covers its widest set
        np.maximum.at(words_of, feature[is_cat], (cat_size[is_cat] + 31) // 32)
        words_of = np.maximum(words_of, 1)
    n_paths, n_el, n_words = _count(left, right, feature, is_cat, words_of, tree_ptrs)
    path_ptr = np.zeros(n_paths + 1, np.int64)
    path_class = np.zeros(n_paths, np.int32)
    path_value = np.zeros(n_paths, np.float64)
    el_feat = np.zeros(n_el, np.int32)
    el_lo = np.zeros(n_el, np.float32)
    el_hi = np.zeros(n_el, np.float32)
    el_miss = np.zeros(n_el, np.uint8)
    el_z = np.zeros(n_el, np.float64)
    el_cat = np.zeros(n_el, np.int64)
    el_words = np.zeros(n_el, np.int32)
    el_beyond = np.zeros(n_el, np.uint8)
    bits = np.zeros(max(n_words, 1), np.uint32)
    p, at, wat = _fill(left, right, feature, threshold, default_left, cover, tree_ptrs,
                       tree_class, is_cat, cat_begin, cat_size, cats, words_of,
                       path_ptr, path_class, path_value, el_feat, el_lo, el_hi, el_miss, el_z,
                       el_cat, el_words, el_beyond, bits)
    lengths = np.diff(path_ptr[:p + 1])
    order = np.argsort(path_class[:p], kind="stable")
    starts = path_ptr[:p][order]
    lengths = lengths[order]
    new_ptr = np.zeros(p + 1, np.int64)
    np.cumsum(lengths, out=new_ptr[1:])
    gather = (np.repeat(starts - new_ptr[:-1], lengths) + np.arange(new_ptr[-1])).astype(np.int64)
    return {"path_ptr": new_ptr, "path_class": path_class[:p][order],
            "path_value": path_value[:p][order], "feature": el_feat[:at][gather],
            "lo": el_lo[:at][gather], "hi": el_hi[:at][gather], "miss": el_miss[:at][gather],
            "z": el_z[:at][gather], "invz": _reciprocal(el_z[:at][gather]),
            "cat": el_cat[:at][gather], "cat_words": el_words[:at][gather],
            "beyond": el_beyond[:at][gather], "bits": bits[:max(wat, 1)],
            "max_len": int(lengths.max()) if p else 1}


# the arrays the kernels read, in their argument order
PATH_ARRAYS = ("path_ptr", "path_class", "path_value", "feature", "lo", "hi", "miss", "z",
               "invz", "cat", "cat_words", "beyond", "bits")


def _reciprocal(z: np.ndarray) -> np.ndarray:
    """1 / z, and 0 where z = 0 (an element no cover reaches adds nothing when unknown)."""
    out = np.zeros_like(z)
    np.divide(1.0, z, out=out, where=z != 0)
    return out


@njit(cache=True, nogil=True, inline="always")
def _satisfies(x, lo, hi, miss, cat, words, beyond, bits):
    """1.0 when the value x satisfies a path element (every split on its feature along the
    path sends x the path's way), else 0.0: NaN by ``miss``; else x in [lo, hi) and, for a
    categorical feature (cat >= 0), its code in the bitset (kernels.cpu_categorical.
    goes_left_cat's reading of x: outside [0, 2^24 - 1), or past the bitset, is ``beyond``)."""
    if np.isnan(x):
        return 1.0 if miss else 0.0
    if not (lo <= x and x < hi):
        return 0.0
    if cat < 0:
        return 1.0
    if x < 0 or x >= 16777216.0 - 1.0:
        return 1.0 if beyond else 0.0
    c = np.int64(x)
    if c >= 32 * words:
        return 1.0 if beyond else 0.0
    return 1.0 if (bits[cat + c // 32] >> np.uint32(c % 32)) & np.uint32(1) else 0.0


@njit(cache=True, nogil=True, inline="always")
def _row_fractions(X, r, b, L, feature, lo, hi, miss, cat, cat_words, beyond, bits, o):
    """o[e] = whether row r satisfies element e of the path starting at b (root: 1)."""
    o[0] = 1.0
    for e in range(1, L):
        o[e] = _satisfies(X[r, feature[b + e]], lo[b + e], hi[b + e], miss[b + e], cat[b + e],
                          cat_words[b + e], beyond[b + e], bits)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _extend_all(zz, o, L, pw):
    """pw[0..L-1]: TreeSHAP's subset weights of the elements 0..L-1 (fractions zz, o)."""
    pw[0] = 1.0
    for d in range(1, L):             # EXTEND by element d
        pw[d] = 0.0
        for i in range(d - 1, -1, -1):
            pw[i + 1] += o[d] * pw[i] * (i + 1) / (d + 1)
            pw[i] = zz[d] * pw[i] * (d - i) / (d + 1)


@njit(cache=True, nogil=True, inline="always", error_model="numpy")
def _unwound_sum(pw, D, ok, zk):
    """UNWOUND_SUM of an element with fractions (zk, ok) from the weights pw[0..D]: the sum
    of the weights of the path without it."""
    nxt = pw[D]
    total = 0.0
    for i in range(D - 1, -1, -1):
        if ok != 0.0:
            tmp = nxt * (D + 1) / (i + 1)
            total += tmp
            nxt = pw[i] - tmp * zk * (D - i) / (D + 1)
        elif zk != 0.0:
            total += pw[i] / zk * (D + 1) / (D - i)
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def contributions_from_paths(X, path_ptr, path_class, path_value, feature, lo, hi, miss, z,
                             invz, cat, cat_words, beyond, bits, out):
    """out[r, path_class[p], f] += every path's SHAP values for row r (the module docstring's
    sum): the specification the CUDA kernel (cuda/shap.cu, shap_paths) follows, step for
    step. Arguments: ensemble_paths' arrays in PATH_ARRAYS order."""
    max_len = 1
    for p in range(path_ptr.shape[0] - 1):
        max_len = max(max_len, path_ptr[p + 1] - path_ptr[p])
    pw = np.zeros(max_len)
    o = np.zeros(max_len)
    zz = np.zeros(max_len)
    for r in range(X.shape[0]):
        for p in range(path_ptr.shape[0] - 1):
            b = path_ptr[p]
            L = path_ptr[p + 1] - b
            _row_fractions(X, r, b, L, feature, lo, hi, miss, cat, cat_words, beyond, bits, o)
            for e in range(L):
                zz[e] = z[b + e]
            _extend_all(zz, o, L, pw)
            for k in range(1, L):             # UNWOUND_SUM of element k
                total = _unwound_sum(pw, L - 1, o[k], zz[k])
                out[r, path_class[p], feature[b + k]] += total * (o[k] - zz[k]) * path_value[p]


@njit(cache=True, nogil=True, error_model="numpy")
def interactions_from_paths(X, path_ptr, path_class, path_value, feature, lo, hi, miss, z,
                            invz, cat, cat_words, beyond, bits, out):
    """out[r, path_class[p], i, j] += every path's SHAP interaction values for row r
    (out: [n, K, F + 1, F + 1]); the specification of cuda/shap.cu's shap_interactions.

    XGBoost's definition (CalculateContributionsInteractions; GPUTreeShap's
    GPUTreeShapInteractions): phi_ij (i != j) = (phi_j | i always known - phi_j | i never
    known) / 2, phi_ii = phi_i - sum_{j != i} phi_ij. On one path where i is element c (a
    feature not on a path changes nothing there), "i known" reaches the leaf with weight o_c
    and "i unknown" with z_c, and c leaves the Shapley game: with pw' the subset weights of
    the path without c (D' = L - 2 other features),

        phi_ij += v (o_c - z_c) (o_j - z_j) UNWOUND_SUM_j(pw') / 2,
        phi_i  += v (o_c - z_c) sum(pw')           (= UNWOUND_SUM_c(pw), unwinding being exact)

    pw' is built by EXTEND over the path's elements in order, skipping c (element d at depth
    d - (d > c)), as the kernel does in registers."""
    max_len = 1
    for p in range(path_ptr.shape[0] - 1):
        max_len = max(max_len, path_ptr[p + 1] - path_ptr[p])
    pw = np.zeros(max_len)
    o = np.zeros(max_len)
    for r in range(X.shape[0]):
        for p in range(path_ptr.shape[0] - 1):
            b = path_ptr[p]
            L = path_ptr[p + 1] - b
            k = path_class[p]
            _row_fractions(X, r, b, L, feature, lo, hi, miss, cat, cat_words, beyond, bits, o)
            for c in range(1, L):             # element c (feature i) conditioned on
                pw[0] = 1.0
                for d in range(1, L):         # EXTEND by every element but c
                    if d == c:
                        continue
                    dd = d - 1 if d > c else d
                    pw[dd] = 0.0
                    for i in range(dd - 1, -1, -1):
                        pw[i + 1] += o[d] * pw[i] * (i + 1) / (dd + 1)
                        pw[i] = z[b + d] * pw[i] * (dd - i) / (dd + 1)
                scale = path_value[p] * (o[c] - z[b + c])
                fi = feature[b + c]
                total = 0.0
                for e in range(L - 1):
                    total += pw[e]
                off = 0.0
                for j in range(1, L):
                    if j == c:
                        continue
                    v = 0.5 * scale * (o[j] - z[b + j]) * _unwound_sum(pw, L - 2, o[j],
                                                                        z[b + j])
                    out[r, k, fi, feature[b + j]] += v
                    off += v
                out[r, k, fi, fi] += scale * total - off
