"""Sparse rows (scipy.sparse, cupyx.scipy.sparse) and their compact ELLPACK pages.

A sparse matrix's absent entries are missing values, as XGBoost reads sparse input; stored
entries keep their value (explicit zeros included) and a stored NaN is missing too. A Dataset
of sparse rows keeps them as CSR (memory proportional to the stored entries) and quantizes each
page to the smaller of two layouts:

* dense (dgbdt.kernels.pages): ``F`` symbols a row, ``bits_for(max bins)`` bits each, the missing
  symbol for an absent entry;
* ELLPACK: a row's present entries as their histogram slots ``s = hist_ptrs[f] + bin(x)``
  ascending (features in order), then the null symbol ``hist_ptrs[F]`` (the slot count) up to
  the page's row stride ``R`` (its largest present count, at least 1); ``bits_for(hist_ptrs[F])``
  bits each. ``Page.ell`` says which, and ``Page.n_features`` is the row width (F or R).

ELLPACK is chosen when ``R * bits_ell < F * bits_dense`` (at 1 % density of 2,000 features
of 256 bins: about 44 x 19 bits a row against 2,000 x 9).

The kernels see the same histograms and the same row symbols for either layout, so the model
is the same bytes (dgbdt.kernels.cpu_sparse; cuda/sparse.cu):

* histograms add a present entry's gradient to its slot, then fill each feature's missing slot
  with the node's total minus the feature's bins: integers, so exactly the dense page's sums;
* partitioning and tree walks find a row's bin of feature f by binary search among its entries
  for the first slot ``>= hist_ptrs[f]``; none below ``hist_ptrs[f+1] - 1`` means missing.

The sketch reads each feature's stored values only: a summary depends on the multiset of a
feature's (value, weight) pairs and NaN is left out (dgbdt.data.sketch), so ``summarize_csr``
gives the dense matrix's summaries bit for bit, and therefore the same cuts.
"""
from __future__ import annotations

import numpy as np

from ..kernels.pages import Page, bits_for, pack
from .quantize import Cuts
from .sketch import Summaries, summarize, to_fixed

#: values of one padded block of features sketched at once (CPU and GPU)
SKETCH_BLOCK_VALUES = 1 << 24
#: rows densified at a time for prediction (float32 bytes of a chunk, about)
DENSE_CHUNK_BYTES = 256 << 20


def is_sparse(data) -> bool:
    """scipy.sparse and cupyx.scipy.sparse matrices and arrays."""
    return hasattr(data, "tocoo") and hasattr(data, "nnz") and hasattr(data, "shape")


def on_gpu(data) -> bool:
    """A cupyx.scipy.sparse matrix."""
    return type(data).__module__.startswith("cupyx")


def as_csr(data, allow_empty: bool = False):
    """A canonical float32 CSR matrix (sorted column indices, duplicates summed) of a sparse
    input; cupyx input stays on the GPU. Infinite values are refused as in dense input.
    ``allow_empty``: accept zero rows (a Dask partition may be empty)."""
    if on_gpu(data):
        import cupy as xp
        import cupyx.scipy.sparse as sp
    else:
        import scipy.sparse as sp
        xp = np
    X = sp.csr_matrix(data, dtype=np.float32)
    if X is data:
        X = X.copy()
    X.sum_duplicates()            # sorts the indices too
    if X.ndim != 2 or (X.shape[0] == 0 and not allow_empty) or X.shape[1] == 0:
        raise ValueError(f"data is empty (shape {X.shape}); need at least one row and one "
                         "feature")
    inf = xp.isinf(X.data)
    if bool(inf.any()):
        i = int(xp.flatnonzero(inf)[0])
        r = int(xp.searchsorted(X.indptr, i, side="right")) - 1
        raise ValueError(f"data contains infinite values (first at row {r}, feature "
                         f"{int(X.indices[i])}); replace them with NaN (missing) or a finite "
                         "value")
    return X


def sparse_features(data, feature_names=None, feature_types=None):
    """dgbdt.data.input.as_features for sparse input: (CSR rows, names, types, None)."""
    from .categorical import resolve_types
    from .checks import checked_names
    X = as_csr(data)
    return (X, checked_names(feature_names, X.shape[1]),
            resolve_types(feature_types, X.shape[1], None), None)


def to_device(X):
    """A host CSR matrix as a cupyx one on the current GPU (its three arrays copied)."""
    import cupyx.scipy.sparse as csp
    return csp.csr_matrix(X)


def densify(X, a: int = 0, b: int | None = None):
    """Rows [a, b) of a sparse matrix as a dense float32 matrix, absent entries NaN."""
    part = X[a:b] if (a, b) != (0, None) else X
    coo = part.tocoo()
    xp = _xp(X)
    out = xp.full(coo.shape, np.nan, dtype=np.float32)
    out[coo.row, coo.col] = coo.data.astype(np.float32)
    return out


def dense_chunks(n_rows: int, n_features: int):
    """(a, b) row ranges of about DENSE_CHUNK_BYTES of dense float32 each."""
    step = max(1, DENSE_CHUNK_BYTES // max(1, 4 * n_features))
    return [(a, min(a + step, n_rows)) for a in range(0, n_rows, step)] or [(0, 0)]


def _xp(X):
    if on_gpu(X):
        import cupy
        return cupy
    return np


# -- the sketch ------------------------------------------------------------------------------
def summarize_csr(X, weight, scale, max_keys: int, device=None) -> Summaries:
    """sketch.summarize_weighted of ``densify(X)`` from the stored entries alone (module doc).

    Rows of weight <= 0 are left out (as there). Unweighted features are summarized a block at
    a time, each feature's stored values in its own column of a NaN-padded block; weighted ones
    one feature at a time (its values and their rows' weights). ``device``: a CUDA backend
    whose GPU sketches (sketch_device; the same summaries), else the CPU."""
    if device is not None and device.caps.device_memory and not on_gpu(X):
        with device.device:         # the CSR arrays up once; the sketch runs there
            return summarize_csr(to_device(X), None if weight is None else
                                 device.xp.asarray(weight), scale, max_keys)
    xp = _xp(X)
    n = X.shape[0]
    w = None
    if weight is not None:
        weight = xp.asarray(weight)
        keep = weight > 0
        X = X[xp.flatnonzero(keep)]
        n = X.shape[0]
        w = weight[keep]
    csc = X.tocsc()
    csc.sort_indices()
    indptr = _host(csc.indptr).astype(np.int64)
    nf = X.shape[1]
    summ = _summarizer(device, xp)
    parts: list[Summaries] = []
    if w is not None:
        wf = _fixed(w, scale, xp)
        for f in range(nf):
            a, b = int(indptr[f]), int(indptr[f + 1])
            parts.append(summ(csc.data[a:b].reshape(-1, 1), wf[csc.indices[a:b]], max_keys))
    else:
        f = 0
        counts = np.diff(indptr)
        while f < nf:
            g, m = 1, max(1, int(counts[f]))
            while f + g < nf and max(m, int(counts[f + g])) * (g + 1) <= SKETCH_BLOCK_VALUES:
                m = max(m, int(counts[f + g]))
                g += 1
            block = xp.full((m, g), np.nan, dtype=np.float32)
            for j in range(g):
                a, b = int(indptr[f + j]), int(indptr[f + j + 1])
                block[:b - a, j] = csc.data[a:b]
            parts.append(summ(block, None, max_keys))
            f += g
    out = _concat(parts)
    out.n_rows = n
    return out


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _fixed(w, scale, xp):
    if xp is np:
        return to_fixed(w, scale)
    from .sketch_device import to_fixed_device
    return to_fixed_device(w, scale, xp)


def _summarizer(device, xp):
    """summarize(X, weights_fixed, max_keys) where the sketch runs."""
    if xp is np and (device is None or not device.caps.device_memory):
        return summarize
    from .sketch_device import summarize_device

    def run(X, w, max_keys):
        if xp is np:                    # host rows, a GPU's sketch
            with device.device:
                cp = device.xp
                return summarize_device(cp.asarray(X), None if w is None else cp.asarray(w),
                                        max_keys, cp)
        return summarize_device(X, w, max_keys, xp)
    return run


def _concat(parts: list[Summaries]) -> Summaries:
    from .sketch_device import _concat_features
    return _concat_features(parts)


# -- pages ------------------------------------------------------------------------------------
def ell_bits(cuts: Cuts) -> int:
    """Bits of an ELLPACK symbol: the null symbol ``hist_ptrs[F]`` must fit."""
    return bits_for(int(cuts.hist_ptrs()[-1]))


def layout(stride: int, n_features: int, cuts: Cuts, dense: bool = False) -> tuple:
    """(ell, row width, bits) of a page whose fullest row has ``stride`` present entries: the
    smaller layout (module doc), dense with ``dense``."""
    bits = ell_bits(cuts)
    if dense or stride * bits >= n_features * bits_for(cuts.max_bins):
        return False, n_features, bits_for(cuts.max_bins)
    return True, stride, bits


def planned_layout(X, cuts: Cuts, dense: bool = False) -> tuple:
    """``layout`` of the pages of CSR rows X, from their stored counts (a bound: stored NaNs
    count too), for planning pages within a memory budget before they are built."""
    counts = X.indptr[1:] - X.indptr[:-1]
    stride = max(1, int(counts.max()) if X.shape[0] else 1)
    return layout(stride, X.shape[1], cuts, dense)


def page_of(X, cuts: Cuts, backend=None, dense: bool = False) -> Page:
    """The page of the CSR rows X (module doc: ELLPACK or dense, whichever is smaller; dense
    with ``dense``), where the kernels of ``backend`` read it (for a GPU, host rows are copied
    up and quantized there)."""
    from ..kernels import cpu_sparse as K
    n, nf = X.shape
    if on_gpu(X) or (backend is not None and backend.caps.device_memory):
        return _device_page(X, cuts, backend, dense)
    counts = K.present_counts(X.indptr.astype(np.int64), X.data)
    ell, stride, bits = layout(max(1, int(counts.max()) if n else 1), nf, cuts, dense)
    if not ell:
        from .quantize import quantize
        page = pack(quantize(densify(X), cuts))
    else:
        sym = np.empty((n, stride), np.uint32)
        K.quantize_csr(X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data,
                       np.ascontiguousarray(cuts.search_values(), np.float32),
                       np.ascontiguousarray(cuts.ptrs, np.int64), stride,
                       int(cuts.hist_ptrs()[-1]), sym)
        page = pack(sym, bits)
        page.ell = True
    return page


def _device_page(X, cuts: Cuts, backend, dense: bool) -> Page:
    """page_of on a GPU (dgbdt.backends.cuda_pages): host rows copied up once; the layout
    chosen by the same rule."""
    if not on_gpu(X):
        with backend.device:
            return _device_page(to_device(X), cuts, backend, dense)
    from ..backends.device import backend_of
    be = backend_of(X)
    ell, stride, bits = layout(max(1, int(be.csr_present_counts(X).max())), X.shape[1], cuts,
                               dense)
    if not ell:
        return be.quantize_pack(densify(X), cuts)
    return be.quantize_csr(X, cuts, stride, bits)


def as_ellpack_symbols(symbols, ell: bool, hist_ptrs, xp):
    """Unpacked rows [n, W] as ELLPACK symbols (uint32): an ELLPACK page's as they are; a
    dense page's (bins, the missing symbol nb_f) as their present entries' slots
    ``hist_ptrs[f] + bin`` ascending, null after, at the width of the fullest row (array code
    for numpy or cupy: dgbdt.engine.sampled_rounds joins the sampled rows of pages of both layouts)."""
    if ell:
        return symbols.astype(xp.uint32, copy=False)
    hp = xp.asarray(hist_ptrs, dtype=xp.int64)
    nb = hp[1:] - hp[:-1] - 1
    s = symbols.astype(xp.int64)
    slot = xp.where(s == nb[None, :], hp[-1], s + hp[None, :-1])
    slot.sort(axis=1)           # slots ascend with the feature; null (the largest) last
    width = max(1, int((slot < hp[-1]).sum(axis=1).max()) if slot.shape[0] else 1)
    return xp.ascontiguousarray(slot[:, :width]).astype(xp.uint32)

