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
def _count(left, right, tree_ptrs):
    """(paths, elements) upper bound: leaves, and leaves x (depth + 1)."""
    paths = 0
    elements = 0
    for t in range(tree_ptrs.shape[0] - 1):
        b, e = tree_ptrs[t], tree_ptrs[t + 1]
        depth = np.zeros(e - b, dtype=np.int64)
        for i in range(e - b):
            if left[b + i] != -1:
                depth[left[b + i]] = depth[right[b + i]] = depth[i] + 1
        for i in range(e - b):
            if left[b + i] == -1:
                paths += 1
                elements += depth[i] + 1
    return paths, elements


@njit(cache=True, nogil=True)
def _fill(left, right, feature, threshold, default_left, cover, tree_ptrs, tree_class,
          path_ptr, path_class, path_value, el_feat, el_lo, el_hi, el_miss, el_z):
    """Every leaf's path, trees in order; returns (paths, elements) written."""
    p = 0
    at = 0
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
            start = at
            at += 1
            c = leaf
            while parent[c] != -1:           # leaf to root: edge (parent[c] -> c)
                q = parent[c]
                n = b + q
                f = feature[n]
                is_left = left[n] == c
                z = cover[b + c] / cover[n]
                lo = -np.inf if is_left else np.float32(threshold[n])
                hi = np.float32(threshold[n]) if is_left else np.inf
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
                    at += 1
                c = q
            p += 1
    path_ptr[p] = at
    return p, at


def ensemble_paths(left, right, feature, threshold, default_left, cover, tree_ptrs,
                   tree_class) -> dict:
    """The paths of every tree (node arrays concatenated, tree t owns nodes
    tree_ptrs[t]..tree_ptrs[t+1]-1), grouped by output class (stable), as host arrays:
    path_ptr int64 [P + 1], path_class int32 [P], path_value float64 [P], and per element
    feature int32, lo / hi float32, miss uint8, z and 1 / z (invz) float64; ``max_len`` the
    longest path."""
    n_paths, n_el = _count(left, right, tree_ptrs)
    path_ptr = np.zeros(n_paths + 1, np.int64)
    path_class = np.zeros(n_paths, np.int32)
    path_value = np.zeros(n_paths, np.float64)
    el_feat = np.zeros(n_el, np.int32)
    el_lo = np.zeros(n_el, np.float32)
    el_hi = np.zeros(n_el, np.float32)
    el_miss = np.zeros(n_el, np.uint8)
    el_z = np.zeros(n_el, np.float64)
    p, at = _fill(left, right, feature, threshold, default_left, cover, tree_ptrs, tree_class,
                  path_ptr, path_class, path_value, el_feat, el_lo, el_hi, el_miss, el_z)
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
            "max_len": int(lengths.max()) if p else 1}


def _reciprocal(z: np.ndarray) -> np.ndarray:
    """1 / z, and 0 where z = 0 (an element no cover reaches adds nothing when unknown)."""
    out = np.zeros_like(z)
    np.divide(1.0, z, out=out, where=z != 0)
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def contributions_from_paths(X, path_ptr, path_class, path_value, feature, lo, hi, miss, z,
                             out):
    """out[r, path_class[p], f] += every path's SHAP values for row r (the module docstring's
    sum): the specification the CUDA kernel (cuda/shap.cu) follows, step for step."""
    max_len = 1
    for p in range(path_ptr.shape[0] - 1):
        max_len = max(max_len, path_ptr[p + 1] - path_ptr[p])
    pw = np.zeros(max_len)
    o = np.zeros(max_len)
    for r in range(X.shape[0]):
        for p in range(path_ptr.shape[0] - 1):
            b = path_ptr[p]
            L = path_ptr[p + 1] - b
            for e in range(L):
                if e == 0:
                    o[e] = 1.0
                else:
                    x = X[r, feature[b + e]]
                    if np.isnan(x):
                        o[e] = 1.0 if miss[b + e] else 0.0
                    else:
                        o[e] = 1.0 if lo[b + e] <= x and x < hi[b + e] else 0.0
            pw[0] = 1.0
            for d in range(1, L):             # EXTEND by element d
                pw[d] = 0.0
                for i in range(d - 1, -1, -1):
                    pw[i + 1] += o[d] * pw[i] * (i + 1) / (d + 1)
                    pw[i] = z[b + d] * pw[i] * (d - i) / (d + 1)
            D = L - 1
            for k in range(1, L):             # UNWOUND_SUM of element k
                ok, zk = o[k], z[b + k]
                nxt = pw[D]
                total = 0.0
                for i in range(D - 1, -1, -1):
                    if ok != 0.0:
                        tmp = nxt * (D + 1) / (i + 1)
                        total += tmp
                        nxt = pw[i] - tmp * zk * (D - i) / (D + 1)
                    elif zk != 0.0:
                        total += pw[i] / zk * (D + 1) / (D - i)
                out[r, path_class[p], feature[b + k]] += total * (ok - zk) * path_value[p]
