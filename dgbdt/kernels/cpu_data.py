"""Numba kernels for data ingestion (CPU backend).

Four groups of kernels live here; the Python-level API is in ``dgbdt.data``.

Sortable keys
    A float32 ``x`` with bit pattern ``u`` (uint32) maps to the uint32 key
    ``key(x) = ~u`` if the sign bit of ``u`` is set, else ``u | 0x80000000``.
    For finite, non-NaN ``x < y`` this gives ``key(x) < key(y)`` (negative
    floats have reversed magnitude order, hence the complement). ``-0.0`` is
    normalized to ``+0.0`` first, every NaN maps to ``NAN_KEY = 0xFFFFFFFF``
    (larger than the key of +inf, so NaNs sort last and are cut off).
    The inverse is ``u = key & 0x7FFFFFFF`` if the top bit of ``key`` is set,
    else ``u = ~key``.

Per-feature summaries
    For one feature, the summary at resolution ``s`` groups the sorted keys
    by ``key >> s`` and keeps, per group: the bucket key ``key >> s``, the
    weight sum (int64), the smallest and the largest float bits. With
    ``h_j = bit_length(key_j XOR key_{j-1})`` for adjacent sorted keys, the
    number of buckets at shift ``s`` is ``1 + #{j : h_j > s}``, so one pass
    computing a histogram of ``h`` finds the smallest ``s`` whose bucket
    count is ``<= max_keys``.

Quantize
    ``bin(x) = #{cuts <= x}`` (an upper-bound binary search), clipped to
    ``n_bins - 1``; NaN gives ``n_bins`` (the feature's missing symbol).

Pack / unpack
    Symbol ``i = r * n_features + f`` occupies bits ``[i*bits, (i+1)*bits)``
    of a little-endian bit stream stored in uint32 words, LSB first. A
    symbol may straddle two words; the word array ends with one zero
    padding word so ``read_symbol`` may always read the 64-bit window
    ``words[w] | words[w+1] << 32`` with ``w = (i*bits) >> 5``. A chunk of
    32 rows occupies ``32 * n_features * bits`` bits, a whole number of
    words, so chunks of 32 rows are packed in parallel without sharing words.
"""

import numpy as np
from numba import njit, prange

from .twins import serial_twin

NAN_KEY = 0xFFFFFFFF
POS_INF_KEY = 0xFF800000  # key(+inf)
NEG_INF_KEY = 0x007FFFFF  # key(-inf)

_U32 = np.uint64(0xFFFFFFFF)
_RADIX_BITS = 8  # 4 passes; 11-bit digits (3 passes) measured no faster here


# --------------------------------------------------------------------------
# sortable keys


@njit(inline="always", cache=True, nogil=True)
def float_key(u):
    """uint32 sortable key of the float32 whose bits are ``u`` (see module doc)."""
    u = np.int64(u)
    if (u & 0x7FFFFFFF) > 0x7F800000:  # NaN
        return NAN_KEY
    if u == 0x80000000:  # -0.0 -> +0.0
        u = 0
    if u & 0x80000000:
        return u ^ 0xFFFFFFFF
    return u | 0x80000000


@njit(inline="always", cache=True, nogil=True)
def key_to_bits(key):
    """Inverse of ``float_key``: the float32 bit pattern (as int64) of ``key``."""
    key = np.int64(key)
    if key & 0x80000000:
        return key & 0x7FFFFFFF
    return key ^ 0xFFFFFFFF


@njit(parallel=True, cache=True, nogil=True)
def column_keys(xbits, out):
    """``out[f, r] = float_key(xbits[r, f])``: keys, transposed to column-major.

    ``xbits`` is the float32 matrix viewed as uint32 (any strides). Rows are
    processed in blocks of 256 so the strided reads stay in cache.
    """
    n, nf = xbits.shape
    nblk = (n + 255) // 256
    for b in prange(nblk):
        r0 = b * 256
        r1 = min(n, r0 + 256)
        for f in range(nf):
            for r in range(r0, r1):
                out[f, r] = float_key(xbits[r, f])


@njit(inline="always", cache=True, nogil=True)
def _bit_length(x):
    """Number of bits needed for ``0 <= x < 2**32`` (0 for 0)."""
    h = 0
    if x >= 65536:
        x >>= 16
        h += 16
    if x >= 256:
        x >>= 8
        h += 8
    if x >= 16:
        x >>= 4
        h += 4
    if x >= 4:
        x >>= 2
        h += 2
    if x >= 2:
        x >>= 1
        h += 1
    return h + x


@njit(cache=True, nogil=True)
def _radix_sort(keys, kbuf, w, wbuf1, wbuf2, weighted):
    """Stable LSD radix sort of uint32 ``keys`` (``_RADIX_BITS``-bit digits).

    Passes whose digit is constant over all keys are skipped. ``keys`` and
    ``kbuf`` are both overwritten; ``w`` (the per-row weights, read only) is
    permuted alongside into ``wbuf1``/``wbuf2`` when ``weighted``.
    Returns ``(sorted_keys, sorted_weights)`` (views of the buffers).
    """
    n = keys.shape[0]
    nd = 1 << _RADIX_BITS
    dm = nd - 1
    npass = (32 + _RADIX_BITS - 1) // _RADIX_BITS
    cnt = np.zeros((npass, nd), np.int64)
    for i in range(n):
        k = np.int64(keys[i])
        for p in range(npass):
            cnt[p, (k >> (p * _RADIX_BITS)) & dm] += 1
    src = keys
    dst = kbuf
    wsrc = w
    wdst = wbuf1
    done = 0
    off = np.empty(nd, np.int64)
    for p in range(npass):
        sh = _RADIX_BITS * p
        if n == 0 or cnt[p, (np.int64(keys[0]) >> sh) & dm] == n:
            continue
        s = 0
        for d in range(nd):
            off[d] = s
            s += cnt[p, d]
        if weighted:
            for i in range(n):
                k = src[i]
                d = (np.int64(k) >> sh) & dm
                o = off[d]
                dst[o] = k
                wdst[o] = wsrc[i]
                off[d] = o + 1
        else:
            for i in range(n):
                k = src[i]
                d = (np.int64(k) >> sh) & dm
                o = off[d]
                dst[o] = k
                off[d] = o + 1
        src, dst = dst, src
        if done == 0:
            wsrc = wbuf1
            wdst = wbuf2
        else:
            wsrc, wdst = wdst, wsrc
        done += 1
    return src, wsrc


@njit(inline="always", cache=True, nogil=True)
def _smallest_shift(hist, max_keys):
    """Smallest ``d`` in 0..32 with ``1 + sum(hist[h] for h > d) <= max_keys``."""
    total = 1
    for h in range(1, 33):
        total += hist[h]
    d = 0
    while total > max_keys and d < 32:
        d += 1
        total -= hist[d]
    return d


@njit(parallel=True, cache=True, nogil=True)
def summarize_columns(colkeys, weights, weighted, max_keys,
                      out_keys, out_w, out_lo, out_hi, counts, shifts, status):
    """Per-feature bounded summaries of ``colkeys`` ([F, n] uint32 keys).

    For feature f: sort keys (NaN keys last, dropped); choose the smallest
    shift ``s`` with at most ``max_keys`` distinct ``key >> s``; write the
    buckets (key >> s, weight sum, lo bits, hi bits) to row f of the
    ``out_*`` arrays, ``counts[f]`` buckets, ``shifts[f] = s``.
    ``status[f] = 1`` when the feature holds +-inf (caller raises).
    Weights are ``weights[r]`` when ``weighted`` else 1 per row.
    """
    nf, n = colkeys.shape
    for f in prange(nf):
        kbuf = np.empty(n, np.uint32)
        if weighted:
            wb1 = np.empty(n, np.int64)
            wb2 = np.empty(n, np.int64)
        else:
            wb1 = np.empty(0, np.int64)
            wb2 = np.empty(0, np.int64)
        sk, sw = _radix_sort(colkeys[f], kbuf, weights, wb1, wb2, weighted)
        m = n
        while m > 0 and sk[m - 1] == NAN_KEY:
            m -= 1
        counts[f] = 0
        shifts[f] = 0
        status[f] = 0
        if m == 0:
            continue
        if sk[0] == NEG_INF_KEY or sk[m - 1] == POS_INF_KEY:
            status[f] = 1
            continue
        hist = np.zeros(33, np.int64)
        prev = np.int64(sk[0])
        for j in range(1, m):
            k = np.int64(sk[j])
            hist[_bit_length(k ^ prev)] += 1
            prev = k
        s = _smallest_shift(hist, max_keys)
        us = np.uint64(s)
        c = -1
        cur = np.uint64(0)
        for j in range(m):
            k = sk[j]
            b = np.uint64(k) >> us
            wj = sw[j] if weighted else 1
            if c < 0 or b != cur:
                c += 1
                cur = b
                out_keys[f, c] = b
                out_w[f, c] = wj
                out_lo[f, c] = key_to_bits(k)
            else:
                out_w[f, c] += wj
            out_hi[f, c] = key_to_bits(k)
        counts[f] = c + 1
        shifts[f] = s


# --------------------------------------------------------------------------
# quantize


@njit(parallel=True, cache=True, nogil=True)
def quantize_rows(x, values, ptrs, out):
    """``out[r, f] = min(#{c in cuts_f : c <= x[r, f]}, n_bins_f - 1)``; NaN -> n_bins_f.

    Branchless upper-bound search over the first ``n_bins_f - 1`` cuts (the
    last one never matters after clipping). Rows go in blocks of 512 and
    each search step runs over the whole block, so the searches of a block
    are independent and overlap in the CPU instead of waiting on each
    load-compare chain.
    """
    n, nf = x.shape
    blk = 512
    nblk = (n + blk - 1) // blk
    for b in prange(nblk):
        r0 = b * blk
        cnt = min(n, r0 + blk) - r0
        xs = np.empty(blk, np.float32)
        pos = np.empty(blk, np.int64)
        for f in range(nf):
            base = ptrs[f]
            nb = ptrs[f + 1] - base
            for i in range(cnt):
                xs[i] = x[r0 + i, f]
                pos[i] = base
            m = nb - 1
            while m > 1:
                half = m >> 1
                for i in range(cnt):
                    p = pos[i]
                    pos[i] = p + half if values[p + half] <= xs[i] else p
                m -= half
            for i in range(cnt):
                v = xs[i]
                if v != v:
                    out[r0 + i, f] = nb
                elif nb == 1:
                    out[r0 + i, f] = 0
                else:
                    p = pos[i]
                    out[r0 + i, f] = p - base + (1 if values[p] <= v else 0)


# --------------------------------------------------------------------------
# bit-packed pages


@njit(inline="always", cache=True, nogil=True)
def read_symbol(words, i, bits, mask):
    """Symbol ``i`` (flat index ``r * n_features + f``) of a packed page.

    ``pos = i * bits``; the symbol is ``(W >> (pos & 31)) & mask`` with the
    64-bit window ``W = words[pos >> 5] | words[(pos >> 5) + 1] << 32`` and
    ``mask = 2**bits - 1``. The padding word makes ``words[w + 1]`` valid.
    """
    pos = np.int64(i) * np.int64(bits)
    w = pos >> 5
    win = np.uint64(words[w]) | (np.uint64(words[w + 1]) << np.uint64(32))
    return np.int64((win >> np.uint64(pos & 31)) & np.uint64(mask))


@njit(parallel=True, cache=True, nogil=True)
def pack_rows(sym, bits, words):
    """Pack ``sym`` ([n, F]) into the zeroed stream ``words``, 32-row chunks in parallel."""
    n, nf = sym.shape
    nchunks = (n + 31) // 32
    ub = np.uint64(bits)
    for c in prange(nchunks):
        r0 = c * 32
        r1 = min(n, r0 + 32)
        w = c * nf * bits  # (32 * c * nf * bits) / 32
        acc = np.uint64(0)
        nacc = np.uint64(0)
        for r in range(r0, r1):
            for f in range(nf):
                acc |= np.uint64(sym[r, f]) << nacc
                nacc += ub
                if nacc >= np.uint64(32):
                    words[w] = np.uint32(acc & _U32)
                    acc >>= np.uint64(32)
                    nacc -= np.uint64(32)
                    w += 1
        if nacc > np.uint64(0):
            words[w] = np.uint32(acc & _U32)


@njit(parallel=True, cache=True, nogil=True)
def unpack_rows_kernel(words, bits, rows, nf, out):
    """``out[k, f] = symbol(rows[k] * nf + f)`` for every selected row."""
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    for k in prange(rows.shape[0]):
        base = np.int64(rows[k]) * nf
        for f in range(nf):
            out[k, f] = read_symbol(words, base + f, bits, mask)


@njit(parallel=True, cache=True, nogil=True)
def unpack_all(words, bits, out):
    """Unpack every row of a page into ``out`` ([n, F])."""
    n, nf = out.shape
    mask = (np.uint64(1) << np.uint64(bits)) - np.uint64(1)
    for r in prange(n):
        base = np.int64(r) * nf
        for f in range(nf):
            out[r, f] = read_symbol(words, base + f, bits, mask)


# callers on one numba thread run the serial builds (dgbdt.kernels.twins): a first fit on
# one-thread workers compiles those alone
column_keys = serial_twin(column_keys)
summarize_columns = serial_twin(summarize_columns)
quantize_rows = serial_twin(quantize_rows)
pack_rows = serial_twin(pack_rows)
unpack_rows_kernel = serial_twin(unpack_rows_kernel)
unpack_all = serial_twin(unpack_all)
