"""CPU kernels (numba) for sparse rows: CSR quantization into ELLPACK symbols, and the
histograms and symbol lookups of ELLPACK pages (dgbdt.data.sparse documents the layout).

An ELLPACK page's row holds its present entries as histogram slots ``hist_ptrs[f] + bin``,
ascending, then the null symbol ``hist_ptrs[F]`` up to the page's row stride. A feature's
missing slot ``hist_ptrs[f + 1] - 1`` never appears: the histogram fills it afterwards with the
node's total minus the feature's bins, which is the dense page's sum exactly (integers).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .cpu_data import read_symbol


@njit(cache=True, nogil=True, parallel=True)
def present_counts(indptr, data):
    """int64 [n]: each CSR row's stored entries that are not NaN."""
    n = indptr.shape[0] - 1
    out = np.zeros(n, np.int64)
    for r in prange(n):
        c = 0
        for i in range(indptr[r], indptr[r + 1]):
            v = data[i]
            if v == v:
                c += 1
        out[r] = c
    return out


@njit(cache=True, nogil=True, parallel=True)
def quantize_csr(indptr, indices, data, values, ptrs, stride, null, out):
    """out[r, :] = row r's ELLPACK symbols: for each stored non-NaN entry (column f, value x,
    columns ascending) the slot ``ptrs[f] + f + bin(x)`` with dgbdt.data.quantize's
    ``bin(x) = min(#{cuts_f <= x}, nb_f - 1)``, then ``null`` up to ``stride``. ``values``:
    the cuts' search values (Cuts.search_values), ``ptrs`` the cuts' offsets."""
    n = indptr.shape[0] - 1
    for r in prange(n):
        k = 0
        for i in range(indptr[r], indptr[r + 1]):
            x = data[i]
            if x != x:
                continue
            f = indices[i]
            base = ptrs[f]
            nb = ptrs[f + 1] - base
            lo = base
            hi = base + nb - 1            # the last cut never matters after clipping
            while lo < hi:                # first position in [base, base+nb-1) with cut > x
                mid = (lo + hi) >> 1
                if values[mid] <= x:
                    lo = mid + 1
                else:
                    hi = mid
            out[r, k] = base + f + (lo - base)
            k += 1
        for j in range(k, stride):
            out[r, j] = null


@njit(cache=True, nogil=True, inline="always")
def ell_symbol(words, bits, mask, base, stride, lo, nb):
    """The dense symbol of the feature whose slots start at ``lo`` (``nb`` bins) in the
    ELLPACK row whose entries are symbols ``base .. base + stride - 1``: its bin, or ``nb``
    (missing) when the row has no entry in ``[lo, lo + nb)``. Binary search for the first entry
    ``>= lo`` (entries ascend, null padding last)."""
    base = np.int64(base)
    lo = np.int64(lo)
    nb = np.int64(nb)
    a = np.int64(0)
    b = np.int64(stride)
    while a < b:
        m = (a + b) >> 1
        if read_symbol(words, base + m, bits, mask) < lo:
            a = m + 1
        else:
            b = m
    if a < np.int64(stride):
        s = read_symbol(words, base + a, bits, mask)
        if s < lo + nb:
            return s - lo
    return nb


@njit(cache=True, nogil=True, parallel=True)
def build_histograms_ell(words, bits, stride, hist_ptrs, rows, grad, seg_begin, seg_end,
                         n_slots, n_threads, hist):
    """dgbdt.kernels.cpu_tree.build_histograms over an ELLPACK page: every present entry s of
    a node's row adds the row's (g, h) to slot s; each feature's missing slot is then the
    node's total minus the feature's bins.

    An ELLPACK histogram has every feature's slots (hundreds of thousands for wide sparse
    data), so per-thread private copies of all nodes (the dense kernel's way) would be most of
    the work: with at least as many nodes as threads each task is one whole node summed in
    place; with fewer, each node's segment is cut into ``ceil(threads / nodes)`` chunks with a
    private copy each (at most twice the threads' copies), added up after. Integers: exact.
    Written into ``hist`` (int64 [nodes, n_slots, 2], C-contiguous: a slice of the level's
    buffer) and returned."""
    n_nodes = seg_begin.shape[0]
    chunks = max(1, -(-n_threads // max(n_nodes, 1)))
    tasks = n_nodes * chunks
    width = n_slots * 2
    out = hist.reshape(n_nodes * width)
    for j in prange(n_nodes):
        out[j * width:(j + 1) * width] = 0
    private = np.zeros(tasks * width if chunks > 1 else 0, dtype=np.int64)
    totals = np.zeros((tasks, 2), dtype=np.int64)
    mask = np.uint64((1 << bits) - 1)
    null = hist_ptrs[hist_ptrs.shape[0] - 1]
    us = np.uint64(stride)
    for task in prange(tasks):
        j = task // chunks
        c = task % chunks
        b = seg_begin[j]
        length = seg_end[j] - b
        lo = b + (length * c) // chunks
        hi = b + (length * (c + 1)) // chunks
        acc = private[task * width:(task + 1) * width] if chunks > 1 else \
            out[j * width:(j + 1) * width]
        t0 = np.int64(0)
        t1 = np.int64(0)
        for idx in range(lo, hi):
            r = np.uint64(rows[idx])
            g0 = grad[r, 0]
            g1 = grad[r, 1]
            t0 += g0
            t1 += g1
            base = r * us
            for k in range(stride):
                s = read_symbol(words, base + np.uint64(k), bits, mask)
                if s >= null:
                    break
                acc[2 * s] += g0
                acc[2 * s + 1] += g1
        totals[task, 0] = t0
        totals[task, 1] = t1
    tot = np.zeros((n_nodes, 2), dtype=np.int64)
    for task in range(tasks):
        tot[task // chunks] += totals[task]
    if chunks > 1:
        for j in prange(n_nodes):
            dst = out[j * width:(j + 1) * width]
            for c in range(chunks):
                dst += private[(j * chunks + c) * width:(j * chunks + c + 1) * width]
    fill_missing(hist, hist_ptrs, tot)
    return hist


@njit(cache=True, nogil=True, parallel=True)
def fill_missing(hist, hist_ptrs, totals):
    """hist[j, missing slot of f] = totals[j] - sum of f's bins, for every node j and f."""
    nf = hist_ptrs.shape[0] - 1
    for j in prange(hist.shape[0]):
        for f in range(nf):
            miss = hist_ptrs[f + 1] - 1
            for c in range(2):
                acc = totals[j, c]
                for s in range(hist_ptrs[f], miss):
                    acc -= hist[j, s, c]
                hist[j, miss, c] = acc
