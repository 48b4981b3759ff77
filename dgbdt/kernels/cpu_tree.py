"""CPU kernels (numba) for growing trees over bit-packed pages.

Every kernel here has a CUDA twin behind the same seam (dgbdt.backends.device); the Python modules in
dgbdt.tree never loop over rows themselves.

Conventions shared by all kernels
---------------------------------
* A page is a bit stream of symbols, symbol ``r * n_features + f`` is row r's bin of feature f,
  ``bits`` wide (see dgbdt.kernels.pages). Feature f has ``nb_f`` bins; symbol ``nb_f`` is missing.
* Histograms are int64 arrays ``[n_nodes, n_slots, 2]`` holding fixed-point sums of (g, h); feature
  f owns slots ``hist_ptrs[f] .. hist_ptrs[f+1]-1`` = its nb_f bins then its missing slot. Integer
  sums are exact, so a histogram does not depend on row order, threads or partitioning.
* Rows of a node are a contiguous segment ``rows[begin:end]`` of the shard's row order; splitting a
  node partitions its segment stably (left rows first, each side in its previous order).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .cpu_data import read_symbol
from .cpu_prefetch import prefetch
from .cpu_sparse import ell_symbol
from .twins import serial_twin

#: rows ahead whose page bytes the row kernels prefetch
PREFETCH_ROWS = 32
#: the partition's (a row is a few instructions there, so further ahead)
PARTITION_AHEAD = 64


def build_histograms(words, bits, n_features, hist_ptrs, rows, grad, seg_begin, seg_end, n_slots,
                     n_threads):
    """Histograms of the nodes whose rows are ``rows[seg_begin[j]:seg_end[j]]``: int64
    [len(seg_begin), n_slots, 2] (level_histograms without siblings)."""
    out = np.empty((seg_begin.shape[0], n_slots, 2), dtype=np.int64)
    level_histograms(words, bits, n_features, hist_ptrs, rows, grad, seg_begin, seg_end,
                     n_threads, np.zeros((0, n_slots, 2), np.int64), np.zeros(0, np.int64), out)
    return out


@njit(cache=True, nogil=True)
def _add_rows(acc, off, words, view, bits, mask, n_features, ptrs, rows, grad, lo, hi):
    """acc[off + 2 (ptrs[f] + bin(r, f)) + c] += grad[r, c] for the rows rows[lo:hi]."""
    nf = np.uint64(n_features)
    one = np.uint64(1)
    last = np.uint64((n_features * bits + 7) // 8 - 1)     # a row's last byte, from its first
    ahead = hi - PREFETCH_ROWS
    for idx in range(lo, hi):
        if idx < ahead:         # a later row's page bytes and gradients (cpu_prefetch)
            q = np.uint64(rows[idx + PREFETCH_ROWS])
            at = (q * nf * np.uint64(bits)) >> np.uint64(3)
            prefetch(view, at)
            prefetch(view, at + last)
            prefetch(grad, q * np.uint64(2))
        r = np.uint64(rows[idx])
        g0 = grad[r, 0]
        g1 = grad[r, 1]
        base = r * nf
        for f in range(n_features):
            uf = np.uint64(f)
            if bits == 8:
                sym = np.uint64(view[base + uf])
            else:
                sym = np.uint64(read_symbol(words, base + uf, bits, mask))
            s = off + np.uint64(2) * (ptrs[uf] + sym)
            acc[s] += g0
            acc[s + one] += g1


@njit(cache=True, nogil=True, parallel=True)
def level_histograms(words, bits, n_features, hist_ptrs, rows, grad, seg_begin, seg_end,
                     n_threads, parent, parent_slot, out):
    """One level's histograms into ``out`` (int64 [>= m + n, S, 2], m = len(seg_begin),
    n = len(parent_slot)):

    out[j, hist_ptrs[f] + bin(r, f)] = sum of grad[r] over node j's rows r (rows[seg_begin[j]:
    seg_end[j]]), every feature f, for j < m; then out[m + i] = parent[parent_slot[i]] - out[i]
    for i < n (the larger siblings, exact in integers).

    Pass 1: the level's rows, node after node, are cut into ``n_threads`` equal ranges, one
    a thread. A node's first thread zeroes it and sums its rows of the range straight into
    out; a node that began in an earlier range (at most one a thread: its first) goes into
    the thread's private histogram. Pass 2, in chunks of slots: the private histograms added
    to their nodes, then the siblings. Few copies to zero and add, whatever the level's
    nodes (a deep level of small data was mostly that). Integer sums: the same histograms
    for any thread count. Indices are unsigned so numba emits no negative-index wraparound
    checks (faster: docs/benchmarks-archive.md#figures-behind-code-choices).
    """
    m = seg_begin.shape[0]
    n = parent_slot.shape[0]
    S2 = out.shape[1] * 2
    size = m * S2
    flat = out.reshape(out.size)
    cum = np.empty(m + 1, dtype=np.int64)      # the nodes' first positions in the level
    cum[0] = 0
    for j in range(m):
        cum[j + 1] = cum[j] + seg_end[j] - seg_begin[j]
    total = cum[m]
    private = np.empty(n_threads * S2, dtype=np.int64)
    shared = np.empty(n_threads, dtype=np.int64)    # thread t's private node, or -1
    for t in range(n_threads):      # loops, not np.full / .max(): less to compile
        shared[t] = -1
    mask = np.uint64((1 << bits) - 1)
    ptrs = hist_ptrs.astype(np.uint64)
    view = words.view(np.uint8)
    for t in prange(n_threads):
        start = (total * t) // n_threads
        stop = (total * (t + 1)) // n_threads
        for j in range(m):
            first = start <= cum[j] < stop or (t == n_threads - 1 and cum[j] == total)
            if first:
                off = j * S2
                acc = flat
                lo = cum[j]
            elif cum[j] < start < cum[j + 1]:
                off = t * S2
                acc = private
                lo = start
                shared[t] = j
            else:
                continue
            for i in range(off, off + S2):
                acc[i] = 0
            b = seg_begin[j] - cum[j]
            _add_rows(acc, np.uint64(off), words, view, bits, mask, n_features, ptrs, rows,
                      grad, b + lo, b + min(cum[j + 1], stop))
    if n == 0:
        any_shared = False
        for t in range(n_threads):
            any_shared = any_shared or shared[t] >= 0
        if not any_shared:
            return
    pflat = parent.reshape(parent.size)
    step = 8192         # entries a task: a few pages, many tasks for few wide nodes
    per = (S2 + step - 1) // step
    for task in prange(m * per):
        j = task // per
        a = j * S2 + (task % per) * step
        e = min(j * S2 + S2, a + step)
        for t in range(n_threads):
            if shared[t] == j:
                po = t * S2 - j * S2
                for i in range(a, e):
                    flat[i] += private[po + i]
        if j < n:
            pa = parent_slot[j] * S2 - j * S2
            for i in range(a, e):
                flat[size + i] = pflat[pa + i] - flat[i]


@njit(cache=True, nogil=True, parallel=True)
def subtract_siblings(parent, parent_slot, out, m):
    """out[m + i] = parent[parent_slot[i]] - out[i] (int64 [*, S, 2], exact): the larger
    siblings in place, without the temporaries of the array expression (a histogram of wide
    data is megabytes a node); ELLPACK pages' levels (dense ones: level_histograms)."""
    S = out.shape[1]
    n = parent_slot.shape[0]
    step = 4096
    per = (S + step - 1) // step
    for task in prange(n * per):
        i = task // per
        a = (task % per) * step
        b = min(S, a + step)
        p = parent_slot[i]
        for s in range(a, b):
            out[m + i, s, 0] = parent[p, s, 0] - out[i, s, 0]
            out[m + i, s, 1] = parent[p, s, 1] - out[i, s, 1]


@njit(cache=True, nogil=True, inline="always")
def row_symbol(words, view, bits, mask, r, nf, f, ell, lo, nb):
    """Row r's symbol of feature f: a dense page's ``r * nf + f``, or (``ell``: an ELLPACK
    page of row stride nf, dgbdt.kernels.cpu_sparse) looked up among the row's entries; lo is
    the feature's first histogram slot, nb its bins (= the missing symbol)."""
    if ell:
        return ell_symbol(words, bits, mask, np.int64(r) * np.int64(nf), np.int64(nf), lo, nb)
    i = np.uint64(r) * nf + f
    if bits == 8:
        return np.int64(view[i])
    return read_symbol(words, i, bits, mask)


@njit(cache=True, nogil=True, inline="always")
def _goes_left(s, missing, cut, dleft, categorical, cats, j):
    """Whether the row whose symbol is s goes left (see partition_rows)."""
    if s == missing:
        return dleft
    if categorical:     # the set as bits, little-endian within each byte
        return (cats[j, s >> 3] >> (s & 7)) & 1 == 0
    return s <= cut


@njit(cache=True, nogil=True, inline="always")
def _dense_symbol(words, view, bits, mask, i):
    """Symbol i of a dense page (a byte where ``bits`` is 8)."""
    if bits == 8:
        return np.int64(view[i])
    return np.int64(read_symbol(words, i, bits, mask))


@njit(cache=True, nogil=True, inline="always")
def _prefetch_symbol(view, q, bits):
    """Prefetch the byte that holds symbol q of a dense page (or of its columns)."""
    prefetch(view, q if bits == 8 else (q * np.uint64(bits)) >> np.uint64(3))


@njit(cache=True, nogil=True)
def _partition_dense(words, view, bits, mask, rows, scratch_l, scratch_r, lo, hi, rs, fs, f,
                     missing, cut, dleft):
    """_partition_rows' pass 1 over rows[lo:hi] for a numerical split of a dense page:
    (lefts, rights); row r's symbol of feature f is symbol r * rs + f * fs of ``words`` (the
    page: rs = features, fs = 1; its columns: rs = 1, fs = rows). Its own loop: the general
    one, with ELLPACK, categorical and leaf branches in it, keeps fewer values in registers,
    and its serial build (one-thread Dask workers, dgbdt.kernels.twins) ran several times
    slower."""
    nl = 0
    nr = 0
    ahead = hi - PARTITION_AHEAD
    base = f * fs
    for idx in range(lo, hi):
        if idx < ahead:
            _prefetch_symbol(view, np.uint64(rows[idx + PARTITION_AHEAD]) * rs + base, bits)
        r = rows[idx]
        s = _dense_symbol(words, view, bits, mask, np.uint64(r) * rs + base)
        go = np.int64(dleft) if s == missing else np.int64(s <= cut)
        # both sides written, the counts advanced by the outcome: no branch on a coin
        # flip (a mispredicted one a row cost more than the extra store)
        scratch_l[lo + nl] = r
        scratch_r[lo + nr] = r
        nl += go
        nr += 1 - go
    return nl, nr


@njit(cache=True, nogil=True)
def _leaf_dense(words, view, bits, mask, rows, margin, k, lo, hi, rs, fs, f, missing, cut,
                dleft, vl, vr):
    """_partition_rows' leaf update over rows[lo:hi] for a numerical split of a dense page:
    margin[r, k] += vl if row r goes left else vr (symbols as _partition_dense reads them).
    Its own loop, as _partition_dense: inside the general one, a serial build
    (dgbdt.kernels.twins) ran it 4x slower."""
    ahead = hi - PARTITION_AHEAD
    base = f * fs
    for idx in range(lo, hi):
        if idx < ahead:
            _prefetch_symbol(view, np.uint64(rows[idx + PARTITION_AHEAD]) * rs + base, bits)
        r = np.uint64(rows[idx])
        s = _dense_symbol(words, view, bits, mask, r * rs + base)
        go = dleft if s == missing else s <= cut
        margin[r, k] += vl if go else vr


#: partition_rows' defaults, made once (the kernel only reads them): a tree's levels call it
#: a few times each, between kernels whose threads should find the next one soon (issue 47)
_NO_PTRS = np.zeros(1, np.int64)
_NO_LEAVES = (np.zeros((0, 1)), 0, np.zeros(0), np.zeros(0))
_NUMERICAL = [np.zeros(0, np.bool_), np.zeros((0, 1), np.uint8)]


def _numerical_splits(m: int):
    """(is_cat, cats) of m numerical splits: all-false flags, a 1-byte empty set each
    (views of shared zero arrays the kernel only reads)."""
    is_cat, cats = _NUMERICAL
    if is_cat.shape[0] < m:        # this call's own arrays (another thread may swap them)
        is_cat, cats = np.zeros(2 * m, np.bool_), np.zeros((2 * m, 1), np.uint8)
        _NUMERICAL[:] = [is_cat, cats]
    return is_cat[:m], cats[:m]


def partition_rows(words, bits, n_features, n_bins, rows, scratch_l, scratch_r, seg_begin,
                   seg_end, feature, split_bin, default_left, n_chunks, is_cat=None, cats=None,
                   ell=False, hist_ptrs=None, leaves=None, columns=None):
    """_partition_rows; ``is_cat``/``cats`` default to numerical splits only; ``ell``: the
    page is ELLPACK (row stride ``n_features``, slots from ``hist_ptrs``). ``leaves``:
    (margin, k, value_left, value_right) for the leaf update instead of the partition.
    ``columns``: a dense page's symbols feature-major (``pages.columns``), which numerical
    splits read instead of the page."""
    if is_cat is None:
        is_cat, cats = _numerical_splits(len(feature))
    if hist_ptrs is None:
        hist_ptrs = _NO_PTRS
    if leaves is None:
        leaves = _NO_LEAVES
    if columns is None:
        cwords, rs, fs = words, np.uint64(n_features), np.uint64(1)
    else:
        cwords, rs, fs = columns, np.uint64(1), np.uint64(rows.shape[0])
    return _partition_rows(words, bits, n_features, n_bins, rows, scratch_l, scratch_r,
                           seg_begin, seg_end, feature, split_bin, default_left, n_chunks,
                           is_cat, cats, ell, hist_ptrs, *leaves, cwords, rs, fs)


@njit(cache=True, nogil=True, parallel=True)
def _partition_rows(words, bits, n_features, n_bins, rows, scratch_l, scratch_r, seg_begin,
                    seg_end, feature, split_bin, default_left, n_chunks, is_cat, cats, ell,
                    hist_ptrs, margin, k, value_left, value_right, cwords, rs, fs):
    """Stable partition of each split node's segment; returns the left child's row count per node.

    Row r goes left iff its symbol s of ``feature[j]`` satisfies s <= split_bin[j] (a
    categorical split, ``is_cat[j]``: bit s of ``cats[j]`` clear, s not in the set going
    right), or s
    is the missing symbol (== n_bins[feature]) and default_left[j]. Each segment is cut into
    ``n_chunks`` chunks partitioned in parallel into the scratch arrays (pass 1); pass 2 copies
    every chunk's lefts, then every chunk's rights, back in chunk order, which keeps both sides
    in their previous order.

    With ``value_left`` non-empty, a tree's last splits: margin[r, k] += value_left[j] if
    row r goes left, else value_right[j], and no row moves (nothing after reads the leaves'
    segments; returns zeros): one pass for the last partition and the leaf update, with no
    kernel of its own to compile. A leaf of an earlier level is a segment of equal values.
    """
    n_split = seg_begin.shape[0]
    mask = np.uint64((1 << bits) - 1)
    view = words.view(np.uint8)
    cview = cwords.view(np.uint8)
    nf = np.uint64(n_features)
    fused = value_left.shape[0] > 0
    K = np.uint64(margin.shape[1])
    uk = np.uint64(k)
    n_left = np.zeros((n_split, n_chunks), dtype=np.int64)
    n_right = np.zeros((n_split, n_chunks), dtype=np.int64)
    for task in prange(n_split * n_chunks):
        j = task // n_chunks
        c = task % n_chunks
        length = seg_end[j] - seg_begin[j]
        lo = seg_begin[j] + (length * c) // n_chunks
        hi = seg_begin[j] + (length * (c + 1)) // n_chunks
        f = np.uint64(feature[j])
        missing = n_bins[f]
        slot0 = hist_ptrs[f] if ell else 0
        cut = split_bin[j]
        dleft = default_left[j]
        categorical = is_cat[j]
        nl = 0
        nr = 0
        vl = value_left[j] if fused else 0.0
        vr = value_right[j] if fused else 0.0
        if fused and not (ell or categorical):
            _leaf_dense(cwords, cview, bits, mask, rows, margin, uk, lo, hi, rs, fs, f, missing,
                        cut, dleft, vl, vr)
            continue
        if not (ell or fused or categorical):    # the common case, alone
            nl, nr = _partition_dense(cwords, cview, bits, mask, rows, scratch_l, scratch_r, lo,
                                      hi, rs, fs, f, missing, cut, dleft)
            n_left[j, c] = nl
            n_right[j, c] = nr
            continue
        ahead = hi - PARTITION_AHEAD
        for idx in range(lo, hi):
            if idx < ahead:     # a later row's byte of the feature, margin (cpu_prefetch)
                q = np.uint64(rows[idx + PARTITION_AHEAD])
                if not ell:
                    prefetch(view, ((q * nf + f) * np.uint64(bits)) >> np.uint64(3))
                if fused:
                    prefetch(margin, q * K + uk)
            r = rows[idx]
            s = row_symbol(words, view, bits, mask, r, nf, f, ell, slot0, missing)
            go = _goes_left(s, missing, cut, dleft, categorical, cats, j)
            if fused:
                margin[r, k] += vl if go else vr
                continue
            # both sides written, the counts advanced by the outcome: no branch on a
            # coin flip (a mispredicted one a row cost more than the extra store)
            scratch_l[lo + nl] = r
            scratch_r[lo + nr] = r
            nl += np.int64(go)
            nr += 1 - np.int64(go)
        n_left[j, c] = nl
        n_right[j, c] = nr
    if fused:
        return np.zeros(n_split, dtype=np.int64)
    # a loop, not n_left.sum(axis=1): numba's axis sum compiles its bounds check's message
    # formatting too, ~2 s of every first fit (docs/benchmarks.md, first fit on the CPU)
    total_left = np.zeros(n_split, dtype=np.int64)
    for j in range(n_split):
        for c in range(n_chunks):
            total_left[j] += n_left[j, c]
    for task in prange(n_split * n_chunks):
        j = task // n_chunks
        c = task % n_chunks
        length = seg_end[j] - seg_begin[j]
        lo = seg_begin[j] + (length * c) // n_chunks
        out_l = seg_begin[j]
        out_r = seg_begin[j] + total_left[j]
        for cc in range(c):
            out_l += n_left[j, cc]
            out_r += n_right[j, cc]
        for i in range(n_left[j, c]):
            rows[out_l + i] = scratch_l[lo + i]
        for i in range(n_right[j, c]):
            rows[out_r + i] = scratch_r[lo + i]
    return total_left


@njit(cache=True, nogil=True, parallel=True)
def add_leaf_values(margin, k, rows, seg_begin, seg_end, values):
    """margin[r, k] += values[j] for every row r in leaf j's segment (no tree traversal)."""
    for j in prange(seg_begin.shape[0]):
        v = values[j]
        for idx in range(seg_begin[j], seg_end[j]):
            margin[rows[idx], k] += v


@njit(cache=True, nogil=True, parallel=True)
def quantize_gradients(g, h, k, scale_g, scale_h, out, rows):
    """out[r] = (rint(g[r, k] * scale_g), rint(h[r, k] * scale_h)) as int64, and rows[r] = r
    (a tree's start: every row in the root's segment; one pass instead of two)."""
    for r in prange(g.shape[0]):
        out[r, 0] = np.int64(np.rint(g[r, k] * scale_g))
        out[r, 1] = np.int64(np.rint(h[r, k] * scale_h))
        rows[r] = r


#: rows a traversal step advances together: their node chains are independent, so the
#: loads of one row overlap the others' (a row alone waits on each level's loads and
#: mispredicts its branch: docs/benchmarks-archive.md#figures-behind-code-choices)
ROW_BLOCK = 16


@njit(cache=True, nogil=True, parallel=True)
def predict_raw(X, left, right, feature, threshold, default_left, leaf_value, tree_ptrs,
                tree_class, depth, out, leaf_out, want_leaf):
    """Traverse trees on raw float32 features: x < threshold goes left, NaN goes the default way.

    Node arrays of all trees are concatenated; tree t owns nodes tree_ptrs[t]..tree_ptrs[t+1]-1
    with child indices local to the tree (-1 for a leaf) and is ``depth[t]`` levels deep
    (``tree_depths``). Adds each tree's leaf value to ``out[row, tree_class[t]]`` (trees in
    order, so the sums are those of a row-at-a-time walk); with ``want_leaf`` also records the
    local leaf id. Rows go ROW_BLOCK at a time through ``depth[t]`` branch-free steps (a row at
    a leaf stays there).
    """
    n_rows = X.shape[0]
    n_trees = tree_ptrs.shape[0] - 1
    n_blocks = (n_rows + ROW_BLOCK - 1) // ROW_BLOCK
    for b in prange(n_blocks):
        r0 = b * ROW_BLOCK
        m = min(ROW_BLOCK, n_rows - r0)
        nodes = np.empty(ROW_BLOCK, dtype=np.int64)
        for t in range(n_trees):
            base = tree_ptrs[t]
            for j in range(m):
                nodes[j] = 0
            for _ in range(depth[t]):
                for j in range(m):
                    i = base + nodes[j]
                    lo = left[i]
                    x = X[r0 + j, feature[i] if lo != -1 else 0]
                    go = (x < threshold[i]) | (np.isnan(x) & default_left[i])
                    hi = right[i]
                    nxt = hi + np.int64(go) * (lo - hi)
                    nodes[j] = nodes[j] if lo == -1 else nxt
            c = tree_class[t]
            for j in range(m):
                out[r0 + j, c] += leaf_value[base + nodes[j]]
                if want_leaf:
                    leaf_out[r0 + j, t] = nodes[j]


@njit(cache=True, nogil=True)
def tree_depths(left, right, tree_ptrs):
    """Each tree's depth (edges on its longest root-to-leaf path), by a walk from the root."""
    n_trees = tree_ptrs.shape[0] - 1
    out = np.zeros(n_trees, dtype=np.int64)
    for t in range(n_trees):
        base = tree_ptrs[t]
        size = tree_ptrs[t + 1] - base
        stack = np.empty(2 * size + 1, dtype=np.int64)
        level = np.empty(2 * size + 1, dtype=np.int64)
        stack[0], level[0], top = 0, 0, 1
        while top > 0:
            top -= 1
            node, d = stack[top], level[top]
            if d > out[t]:
                out[t] = d
            if left[base + node] != -1 and d < size:     # d < size: a cycle cannot loop
                stack[top], level[top] = left[base + node], d + 1
                stack[top + 1], level[top + 1] = right[base + node], d + 1
                top += 2
    return out


@njit(cache=True, nogil=True, parallel=True)
def fold_tree(words, bits, mask, n_features, n_bins, table, values, steps, n, margin, k, ell,
              hist_ptrs):
    """margin[r, k] += the leaf value of row r, found by walking the tree over the row's
    symbols (dgbdt.engine.sampled_rounds; the rule of partition_rows: the missing symbol n_bins[f] goes the
    default way, else left iff symbol <= bin). table [nodes, 5]: feature, split bin, default
    left, left, right; left < 0: a leaf. At most ``steps`` nodes a row. ``ell``: an ELLPACK
    page (row_symbol)."""
    view = words.view(np.uint8)
    nf = np.uint64(n_features)
    for r in prange(n):
        node = 0
        d = 0
        while d < steps and table[node, 3] >= 0:
            f = table[node, 0]
            s = row_symbol(words, view, bits, mask, r, nf, np.uint64(f), ell,
                           hist_ptrs[f] if ell else 0, n_bins[f])
            if s == n_bins[f]:
                left = table[node, 2] != 0
            else:
                left = s <= table[node, 1]
            node = table[node, 3] if left else table[node, 4]
            d += 1
        margin[r, k] += values[node]


# callers on one numba thread (a one-thread Dask worker, a small shard: threads.serial_below)
# run the serial builds (dgbdt.kernels.twins), so a first fit compiles only the build that
# runs; the same values on any thread count
level_histograms, _partition_rows, add_leaf_values, quantize_gradients, predict_raw = map(
    serial_twin, (level_histograms, _partition_rows, add_leaf_values, quantize_gradients,
                  predict_raw))
