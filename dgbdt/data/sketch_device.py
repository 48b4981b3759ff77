"""Array-module-generic (``xp`` = numpy or cupy) ``summarize``, bit for bit the CPU summaries.

The data stay in ``xp`` arrays (on the GPU under cupy); only the final summary (at most
``F * max_keys`` buckets) is copied to the host. For X float32 [n, F], all features at once
(the rows of several arrays, ``summarize_blocks_device``, are one X: each block's keys fill
its rows' part of every feature's run, and the steps below see n = all their rows):

1. Keys (see ``dgbdt.data.sketch``): with ``u`` the bits of x and ``m = u & 0x7FFFFFFF``,
   NaN (``m > 0x7F800000``) -> ``NAN_KEY`` (larger than every other key, so sorted last and
   cut off), sign set and ``m != 0`` -> ``~u``, else ``m | 0x80000000`` (-0.0 keys as +0.0).
   ``c_f`` = number of non-NaN values of feature f. Any ``m == 0x7F800000`` (+-inf) raises.
2. Sort: each feature's uint32 keys (row f of a [F, n] matrix) sorted on their own, NaN
   last (F sorts of 4-byte keys move a quarter of the bytes of one sort of the uint64
   ``f << 32 | key``; docs/benchmarks.md has the times). Weighted: each row's
   argsort, its weights gathered with it (ties are equal keys of one bucket, so their order
   does not matter).
3. ``h_j = bit_length(k_j ^ k_{j-1})`` for ``1 <= j < c_f`` (0 for the NaN tail). Since
   ``k >> s`` changes between j-1 and j iff ``h_j > s``, the bucket count at shift s is
   ``N_s = 1 + sum_{h > s} H_f[h]`` with ``H_f`` the histogram of ``h`` (one ``bincount``
   of ``33 f + h``). ``N_s`` is non-increasing and ``N_32 = 1 <= max_keys``, so
   ``s_f = #{s in 0..32 : N_s > max_keys}`` is the smallest fitting shift
   (``_smallest_shift``).
4. Buckets start at j = 0 (if ``c_f > 0``) and at every j with ``h_j > s_f``. Bucket
   ``[a, e]`` has key ``k_a >> s_f``, weight ``e - a + 1`` (unweighted) or
   ``C[e] - C[a] + w_a`` with C the running sum of the sorted weights over all features (exact:
   int64 arithmetic mod 2**64), ``lo = key_to_bits(k_a)``, ``hi = key_to_bits(k_e)``.
"""

from __future__ import annotations

import numpy as np

from ..backends.array_ops import concatenate
from ..kernels.cpu_data import NAN_KEY
from .sketch import Summaries, check_summarize_args, check_weights_fixed, merge_many

__all__ = ["summarize_blocks_device", "summarize_device", "summarize_weighted_device",
           "to_fixed_device"]

_U32 = np.uint32


def _get_xp(X, xp):
    """``xp`` if given, else cupy for device arrays (``__cuda_array_interface__``), else numpy."""
    if xp is not None:
        return xp
    if hasattr(X, "__cuda_array_interface__"):
        import cupy

        return cupy
    return np


def _to_host(a) -> np.ndarray:
    """A numpy array from a numpy or cupy array."""
    if hasattr(a, "__cuda_array_interface__"):
        return a.get()
    return np.asarray(a)


def _bit_length(d, xp):
    """uint8 ``bit_length`` of uint32 ``d`` (0 for 0): binary search for the top bit."""
    h = xp.zeros(d.shape, xp.uint8)
    for sh in (16, 8, 4, 2, 1):
        big = d >= _U32(1 << sh)
        d = xp.where(big, d >> _U32(sh), d)
        h += big.astype(xp.uint8) * np.uint8(sh)
    h += d.astype(xp.uint8)  # d is now 0 or 1
    return h


def _row_counts(mask, xp):
    """int64 [R]: nonzero count of each row of the bool [R, C] ``mask`` (a kernel on a GPU:
    CuPy reduces an axis with one block per output, slow for a few long rows:
    docs/benchmarks-archive.md#figures-behind-code-choices)."""
    if xp is np:
        return mask.sum(axis=1, dtype=np.int64)
    from ..kernels.gpu_sum import count_rows
    return count_rows(mask)


def _any(mask, xp) -> bool:
    """Whether some element of ``mask`` is set (one small copy back from a GPU)."""
    if xp is np:
        return bool(mask.any())
    return bool(int(_row_counts(mask.reshape(1, -1), xp)[0]))


def _key_to_bits(k, xp):
    """Inverse of the key map on uint32 ``k`` (float32 bits as uint32)."""
    return xp.where(k >= _U32(0x80000000), k & _U32(0x7FFFFFFF), ~k)


def to_fixed_device(w, scale: float, xp):
    """``sketch.to_fixed`` in ``xp``: ``rint(w * scale)`` as int64 (w finite, >= 0)."""
    w = xp.asarray(w, dtype=xp.float64)
    if w.size and not (bool(xp.all(xp.isfinite(w))) and float(w.min()) >= 0):
        raise ValueError("weights must be finite and non-negative")
    return xp.rint(w * float(scale)).astype(xp.int64)


CHUNK_VALUES = 1 << 24
"""Features are summarized in groups of at most this many values (n_rows x features): the
sort's temporaries (about 24 bytes a value) stay near 400 MB whatever the data size. Larger
groups raise the peak device memory, smaller ones do not lower it (the training's own arrays
then set the peak), and quantization is no slower
(docs/benchmarks-archive.md#figures-behind-code-choices)."""


def _concat_features(parts: list[Summaries]) -> Summaries:
    """The summaries of disjoint, consecutive feature groups of the same rows, as one."""
    if len(parts) == 1:
        return parts[0]
    ptrs = [np.zeros(1, np.int64)]
    off = 0
    for p in parts:
        ptrs.append(p.ptrs[1:] + off)
        off += int(p.ptrs[-1])
    cat = (lambda name: np.concatenate([getattr(p, name) for p in parts]))
    return Summaries(keys=cat("keys"), weights=cat("weights"), lo=cat("lo"), hi=cat("hi"),
                     ptrs=np.concatenate(ptrs), shifts=cat("shifts"), n_rows=parts[0].n_rows,
                     max_keys=parts[0].max_keys)


def summarize_device(X, weights_fixed=None, max_keys: int = 4096, xp=None) -> Summaries:
    """``sketch.summarize(X, weights_fixed, max_keys)`` computed with ``xp`` (see module doc).

    Same validation and errors as ``summarize``; returns host (numpy) ``Summaries``. Features
    are summarized in groups of at most CHUNK_VALUES values (exact: features are independent).
    """
    return _summarize_rows([X], weights_fixed, max_keys, _get_xp(X, xp))


def _summarize_rows(blocks: list, weights_fixed, max_keys: int, xp) -> Summaries:
    """The summary of the rows of ``blocks`` (2-D arrays of one feature count), one after
    another, as if one array (``weights_fixed``: int64 over all their rows, or None)."""
    blocks = [check_summarize_args(X, None, max_keys, xp)[0] for X in blocks]
    max_keys = int(max_keys)
    nf = blocks[0].shape[1]
    if any(X.shape[1] != nf for X in blocks):
        raise ValueError("blocks of rows to summarize together have different feature counts")
    n = sum(X.shape[0] for X in blocks)
    w = check_weights_fixed(weights_fixed, n, xp)
    if n == 0 or nf == 0:
        s = Summaries.empty(nf, max_keys)
        s.n_rows = n
        return s
    step = max(1, CHUNK_VALUES // n)
    if nf <= step:
        return _summarize_group(blocks, w, max_keys, xp)
    if xp is np and any(_any(xp.isinf(X), xp) for X in blocks):
        raise _Infinite(_infinite_features(blocks, xp))
    try:
        return _concat_features([_summarize_group([X[:, a:a + step] for X in blocks], w,
                                                  max_keys, xp)
                                 for a in range(0, nf, step)])
    except _Infinite:       # a GPU finds them group by group: report over all features
        raise _Infinite(_infinite_features(blocks, xp)) from None


def _infinite_features(blocks: list, xp) -> list:
    """The features holding +-inf in any of ``blocks``, ascending."""
    bad = set()
    for X in blocks:
        bad.update(_to_host(xp.flatnonzero(xp.isinf(xp.asarray(X)).any(axis=0))).tolist())
    return sorted(bad)


JOIN_ROWS = 2 * CHUNK_VALUES
"""summarize_blocks_device sorts at most this many rows together (more: several sorts whose
summaries are merged), so its sort's temporaries (about 24 bytes a value, one feature at a
time at this size) stay under 800 MB however many rows a worker holds."""


def summarize_blocks_device(blocks: list, weights: list | None, scale: float | None,
                            max_keys: int, xp=None) -> Summaries:
    """``summarize_weighted_device`` of the rows of several arrays (e.g. the partitions one
    worker holds), one after another: ``weights`` one float array a block, or None.

    The result is merging each block's summary (``merge_many``: exact, so any grouping of the
    rows gives the same Summaries), computed as one sort a feature over the blocks' keys,
    runs of at most JOIN_ROWS rows, instead of a sort a block and a k-way merge on the host.
    """
    if not blocks:
        raise ValueError("no blocks of rows to summarize")
    xp = _get_xp(blocks[0], xp)
    fixed = None
    if weights is not None:
        kept = []
        for X, wt in zip(blocks, weights, strict=True):
            wt = xp.asarray(wt)
            keep = wt > 0
            kept.append((xp.asarray(X)[keep], to_fixed_device(wt[keep], scale, xp)))
        blocks, fixed = [X for X, _ in kept], [f for _, f in kept]
    runs, rows = [[]], 0
    for i, X in enumerate(blocks):
        if runs[-1] and rows + X.shape[0] > JOIN_ROWS:
            runs.append([])
            rows = 0
        runs[-1].append(i)
        rows += X.shape[0]
    out = [_summarize_rows([blocks[i] for i in run],
                           None if fixed is None else concatenate([fixed[i] for i in run]),
                           max_keys, xp) for run in runs]
    return out[0] if len(out) == 1 else merge_many(out, max_keys)


class _Infinite(ValueError):
    """+-inf in the sketched values (the features' indices, at most ten shown)."""

    def __init__(self, features: list):
        super().__init__(f"infinite values in feature(s) {features[:10]}")


def _sort_keys(blocks: list, xp):
    """(comp, cnt, infs): uint32 comp [F * n] with comp[f * n + r] = key(X[r, f]) for the n
    rows X of ``blocks`` one after another (step 1 of the module docstring; not yet sorted), int64 cnt [F] each feature's non-NaN count and infs [F] its count of
    infinities (the caller raises, after enqueueing the rest: a check here would make the
    host wait). On a GPU one kernel a block (dgbdt.kernels.gpu_sketch) does what the array
    code below specifies."""
    nf = blocks[0].shape[1]
    if xp is not np:
        from ..kernels.gpu_sketch import sketch_keys
        return sketch_keys(blocks, 0, nf)
    X = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    n = X.shape[0]
    u = xp.ascontiguousarray(X.T).view(xp.uint32)
    mag = u & _U32(0x7FFFFFFF)
    infs = _row_counts(mag == _U32(0x7F800000), xp)
    nan = mag > _U32(0x7F800000)
    cnt = (n - _row_counts(nan, xp)).astype(xp.int64)
    key = xp.where((u != mag) & (mag != 0), ~u, mag | _U32(0x80000000))
    del u, mag
    key = xp.where(nan, _U32(NAN_KEY), key)
    return xp.ascontiguousarray(key).ravel(), cnt, infs


def _bit_lengths_spec(comp, n: int, nf: int, cnt):
    """uint8 [F, n - 1]: h_j at column j - 1 for the sorted comp (numpy; step 3)."""
    k = comp.reshape(nf, n)
    bl = _bit_length(k[:, 1:] ^ k[:, :-1], np)
    rows = np.flatnonzero((cnt > 0) & (cnt < n))
    if rows.size:  # last valid key vs first NaN key
        bl[rows, cnt[rows] - 1] = 0
    return bl


def _shifts(comp, n: int, nf: int, cnt, max_keys: int, xp):
    """int64 [F]: each feature's smallest shift with at most max_keys buckets (step 3), from
    the histogram of its bit lengths h_j. Two small kernels on a GPU (dgbdt.kernels.
    gpu_sketch): the shifts stay there, and no kernel sees a shape that depends on the group."""
    if xp is not np:
        from ..kernels.gpu_sketch import sketch_shifts
        return sketch_shifts(comp, n, nf, cnt, max_keys)
    if n < 2:
        return np.zeros(nf, np.int64)
    bl = _bit_lengths_spec(comp, n, nf, cnt)
    code = bl.astype(np.int64) + (np.arange(nf, dtype=np.int64) * 33)[:, None]
    cum = np.cumsum(np.bincount(code.ravel(), minlength=33 * nf).reshape(nf, 33), axis=1)
    return ((cum[:, -1:] - cum + 1) > max_keys).sum(axis=1).astype(np.int64)


def _starts(comp, n: int, nf: int, cnt, s):
    """bool [F, n]: bucket starts (step 4): position 0 of a feature with a non-NaN value,
    and every j with h_j > s_f (numpy; a GPU finds the buckets in _device_buckets)."""
    first = (cnt > 0)[:, None]
    if n == 1:
        return first
    bl = _bit_lengths_spec(comp, n, nf, cnt)
    return np.concatenate([first, bl > s.astype(np.uint8)[:, None]], axis=1)


def _sort_features(comp, n: int, nf: int, w, xp):
    """Step 2, in place: each feature's keys (row f of comp [F * n] as [F, n]) sorted; returns
    the int64 weights ``w`` [n] gathered in each row's order (flat [F * n]), or None."""
    keys = comp.reshape(nf, n)
    if w is None:
        for f in range(nf):     # (a 1-D sort of a contiguous row, in place)
            keys[f].sort()
        return None
    ws = xp.empty((nf, n), dtype=xp.int64)
    for f in range(nf):
        order = xp.argsort(keys[f])
        keys[f] = keys[f][order]
        ws[f] = w[order]
    return ws.ravel()


def _summarize_group(blocks: list, w, max_keys: int, xp) -> Summaries:
    """Steps 1-4 for the rows of ``blocks`` (checked, n > 0 rows in all, F > 0 features;
    ``w`` checked int64 weights of all the rows, or None)."""
    n, nf = sum(X.shape[0] for X in blocks), blocks[0].shape[1]
    weighted = w is not None

    # 1. keys, 2. every feature's keys sorted on their own (comp [F * n], row f of [F, n])
    comp, cnt, infs = _sort_keys(blocks, xp)
    ws = _sort_features(comp, n, nf, w if weighted else None, xp)

    # 3. shifts from the per-feature histogram of bit lengths; 4. the buckets
    s = _shifts(comp, n, nf, cnt, max_keys, xp)
    buckets = _host_buckets if xp is np else _device_buckets
    return buckets(comp, n, nf, cnt, s, infs, ws, max_keys)


def _host_buckets(comp, n: int, nf: int, cnt, s, infs, ws, max_keys: int) -> Summaries:
    """Step 4 in numpy (the specification of the device's _device_buckets): bucket starts,
    each bucket's end (the next start - 1, or the feature's last non-NaN position), its key
    ``k_a >> s_f``, weight and the float32 bits of its first and last key."""
    def keys_at(flat):      # the sorted keys at flat [F * n] positions, uint32
        return comp[flat]

    starts = _starts(comp, n, nf, cnt, s)
    counts = _row_counts(starts, np)
    idx = np.flatnonzero(starts)  # flat [F * n] positions of bucket starts, by feature
    del starts
    ptrs = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts)])
    m = int(idx.size)
    ends = np.empty(m + 1, dtype=np.int64)      # slot m: for features without a bucket
    ends[:m - 1] = idx[1:] - 1
    ends[np.where(counts > 0, ptrs[1:] - 1, m)] = np.arange(nf, dtype=np.int64) * n + cnt - 1
    ends = ends[:m]                                 # ^ each feature's last bucket
    kb = keys_at(idx)
    keys = kb.astype(np.uint64) >> s.astype(np.uint64)[idx // n]
    if ws is not None:
        cw = np.cumsum(ws)      # flat: a bucket's two ends are in one feature's run
        bw = cw[ends] - cw[idx] + ws[idx]
    else:
        bw = ends - idx + 1
    return _buckets_summaries(keys, bw, _key_to_bits(kb, np), _key_to_bits(keys_at(ends), np),
                              ptrs, s, infs, n, max_keys)


def _buckets_summaries(keys, bw, lo_bits, hi_bits, ptrs, s, infs, n: int,
                       max_keys: int) -> Summaries:
    """The host Summaries of m buckets (key, weight, the float32 bits of the first and last
    key) with ``ptrs`` [F + 1] and shifts ``s``; raises for infinities first (``infs`` [F],
    each feature's count)."""
    if infs.any():
        raise _Infinite(np.flatnonzero(infs).tolist())
    nf = int(s.shape[0])
    if keys.shape[0] == 0:
        out = Summaries.empty(nf, max_keys)
        out.n_rows = n
        out.shifts = s.astype(np.int64)
        return out
    return Summaries(keys=keys.view(np.uint64), weights=bw.astype(np.int64),
                     lo=lo_bits.astype(np.uint32).view(np.float32),
                     hi=hi_bits.astype(np.uint32).view(np.float32),
                     ptrs=ptrs.astype(np.int64), shifts=s.astype(np.int64), n_rows=n,
                     max_keys=max_keys)


def _device_buckets(comp, n: int, nf: int, cnt, s, infs, ws, max_keys: int) -> Summaries:
    """Step 4 on a GPU: the buckets by kernels (dgbdt.kernels.gpu_sketch.sketch_buckets: the
    array code of _host_buckets, which CuPy would compile with NVRTC at a fresh install's first fit),
    then on the host each feature's bucket count from the buckets' positions. Weighted, a
    bucket's weight is ``C[last] - C[first] + w[first]`` with C the running sum of the sorted
    weights (CuPy; unweighted it is ``last - first + 1``, computed here)."""
    from ..kernels.gpu_sketch import sketch_buckets
    m, out = sketch_buckets(comp, n, nf, cnt, s)
    bw = None
    if ws is not None and m:
        cw = ws.cumsum()
        bw = (cw[out[4]] - cw[out[3]] + ws[out[3]]).get()
    keys, lo, hi, first, last = out.get()
    if bw is None:
        bw = last - first + 1
    ptrs = np.zeros(nf + 1, np.int64)
    np.cumsum(np.bincount(first // n, minlength=nf), out=ptrs[1:])
    return _buckets_summaries(keys, bw, lo, hi, ptrs, s.get(), infs.get(), n, max_keys)


def summarize_weighted_device(X, weight, scale: float | None, max_keys: int,
                              xp=None) -> Summaries:
    """``sketch.summarize_weighted`` with ``xp``: rows of weight <= 0 (or NaN) left out,
    the rest weighted ``to_fixed(weight, scale)``; ``weight=None``: unweighted."""
    xp = _get_xp(X, xp)
    if weight is None:
        return summarize_device(X, None, max_keys, xp)
    X = xp.asarray(X)
    weight = xp.asarray(weight)
    keep = weight > 0
    return summarize_device(X[keep], to_fixed_device(weight[keep], scale, xp), max_keys, xp)
