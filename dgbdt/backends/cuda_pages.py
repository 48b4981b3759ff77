"""The CUDA backend's page operations (a mixin of dgbdt.backends.cuda.CudaBackend): quantizing
and packing rows, taking rows of a page, and ELLPACK pages of sparse rows (dgbdt.data.sparse;
cuda/sparse.cu): their quantization from CSR and their histograms.

It uses the backend's ``xp``, ``n_sm`` and ``_kernel`` and imports nothing of dgbdt.backends.cuda.
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels import gpu_arrays
from ..kernels.launch import BLOCK, _grid, _i32, _i64
from .pool import kept_allocations

ELL_HIST_BLOCK = 512


class CudaPages:
    """Page operations on one GPU (see module doc)."""

    def take_rows(self, page, rows, bits: int | None = None):
        """A device page of ``page``'s ``rows`` (in that order) with ``bits``-bit symbols
        (default: the page's width)."""
        from ..kernels.pages import Page, n_words
        cp = self.xp
        n, nf = int(rows.shape[0]), page.n_features
        bits = page.bits if bits is None else int(bits)
        words = cp.zeros(n_words(n * nf, bits), dtype=cp.uint32)
        n_data = (n * nf * bits + 31) // 32
        if n_data:
            self._kernel("data", "take_rows_pack")(
                (_grid(n_data, cap=2 ** 31 - 1),), (BLOCK,),
                (page.words, _i32(page.bits), np.uint32(page.mask), _i32(nf),
                 cp.ascontiguousarray(rows, dtype=cp.int64), _i64(n * nf), _i32(bits),
                 _i64(n_data), words))
        return Page(words=words, n_rows=n, n_features=nf, bits=bits, ell=page.ell)

    def row_symbols(self, page, rows):
        """uint16 (uint32 beyond 16 bits) [len(rows), F]: the rows' symbols, unpacked."""
        wide = 16 if page.bits <= 16 else 32
        out = self.take_rows(page, rows, wide)
        n = out.n_rows * out.n_features
        return out.words.view(page.dtype)[:n].reshape(out.n_rows, out.n_features)

    def join_pages(self, pages):
        """One device page of ``pages``' rows in their order (kernels.pages.join's words), by
        one kernel (``join_streams``, prebuilt: array code would compile with NVRTC at a fresh
        install's first fit); pages narrower than the widest are widened to it first."""
        from ..kernels.pages import Page, check_joinable, n_words
        cp = self.xp
        bits, nf = check_joinable(pages)
        pages = [pg if pg.bits == bits else    # a narrower page widened first
                 self.take_rows(pg, gpu_arrays.arange(pg.n_rows, np.int64), bits) for pg in pages]
        n = sum(pg.n_rows for pg in pages)
        words = cp.zeros(n_words(n * nf, bits), dtype=cp.uint32)
        starts = np.concatenate([[0], np.cumsum([pg.n_rows * nf * bits for pg in pages])])
        n_data = (int(starts[-1]) + 31) // 32
        if n_data:
            ptrs = np.array([pg.words.data.ptr for pg in pages], dtype=np.uint64)
            self._kernel("data", "join_streams")(
                (_grid(n_data, cap=2 ** 31 - 1),), (BLOCK,),
                (self.upload(ptrs), self.upload(starts.astype(np.int64)), _i32(len(pages)),
                 _i64(n_data), words))
        return Page(words=words, n_rows=int(n), n_features=int(nf), bits=int(bits))

    def pack_symbols(self, symbols, bits: int):
        """A device page of ``bits``-bit symbols from a uint16/uint32 [n, F] device array."""
        from ..kernels.pages import Page
        cp = self.xp
        n, nf = symbols.shape
        wide = 16 if symbols.dtype == cp.uint16 else 32
        words = cp.zeros(((n * nf * wide + 31) // 32) + 1, dtype=cp.uint32)
        words.view(symbols.dtype)[:n * nf] = symbols.ravel()
        src = Page(words=words, n_rows=int(n), n_features=int(nf), bits=wide)
        return self.take_rows(src, gpu_arrays.arange(n, np.int64), bits)

    def quantize_pack(self, X, cuts, bits: int | None = None):
        """Bins of the float32 [n, F] device matrix X packed into a device Page of ``bits``-bit
        symbols; by default ``bits_for`` of the largest symbol present, as the host's ``pack``
        (one pass and a host wait more: rows without missing values in 256 bins pack in 8
        bits, not 9, and the histogram kernel reads them faster)."""
        from ..kernels.pages import Page, bits_for, n_words
        cp = self.xp
        n, nf = X.shape
        X = cp.ascontiguousarray(X, dtype=cp.float32)
        values = cp.asarray(cuts.search_values(), dtype=cp.float32)
        ptrs = cp.asarray(cuts.ptrs)
        if bits is None:
            top = cp.zeros(1, dtype=cp.uint32)
            if n * nf:
                self._kernel("data", "max_symbol")(
                    (_grid(n * nf, cap=self.n_sm * 8),), (BLOCK,),
                    (X, _i64(n * nf), _i32(nf), values, ptrs, top))
            bits = bits_for(int(self.to_host(top)[0]))
        with kept_allocations():       # the Dataset keeps its page beyond the training
            words = cp.zeros(n_words(n * nf, bits), dtype=cp.uint32)
        n_data = (n * nf * bits + 31) // 32
        if n_data:
            self._kernel("data", "quantize_pack")(
                (_grid(n_data, cap=2 ** 31 - 1),), (BLOCK,),
                (X, _i64(n * nf), _i32(nf), values, ptrs, _i32(bits), _i64(n_data), words))
        return Page(words=words, n_rows=int(n), n_features=int(nf), bits=bits)

    # -- ELLPACK pages (dgbdt.data.sparse) -----------------------------------------------------
    def ell_histograms(self, shard, nodes_d, m: int, hist_ptrs_d, n_slots: int, out):
        """int64 [m, S, 2] histograms of an ELLPACK page's nodes into ``out`` (zeroed): every
        present entry's gradient in its slot (global atomics), then each feature's missing
        slot as the node's total minus its bins (cuda/sparse.cu)."""
        cp = self.xp
        p = shard.page
        totals = cp.zeros((m, 2), dtype=cp.int64)
        bpn = max(1, math.ceil(self.n_sm * 8 / m))
        self._kernel("sparse", "build_histograms_ell")(
            (bpn, m), (ELL_HIST_BLOCK,),
            (p.words, _i32(p.bits), np.uint32(p.mask), _i32(p.n_features),
             np.uint32(n_slots), shard.rows, shard.grad, shard.begin, shard.end, nodes_d,
             _i32(n_slots), out, totals))
        nf = int(hist_ptrs_d.shape[0]) - 1
        self._kernel("sparse", "fill_missing")(
            (_grid(m * nf * 2, cap=self.n_sm * 32),), (BLOCK,),
            (out, hist_ptrs_d, _i32(nf), _i32(n_slots), totals, _i32(m)))
        return out

    def csr_present_counts(self, X):
        """int64 [n] device array: each row's stored non-NaN entries of a cupyx CSR matrix."""
        cp = self.xp
        n = X.shape[0]
        counts = cp.zeros(max(n, 1), dtype=cp.int64)
        if n:
            self._kernel("sparse", "present_counts")(
                (_grid(n, cap=self.n_sm * 16),), (BLOCK,),
                (cp.asarray(X.indptr, dtype=cp.int64),
                 cp.ascontiguousarray(X.data, dtype=cp.float32), _i64(n), counts))
        return counts

    def quantize_csr(self, X, cuts, stride: int, bits: int):
        """The ELLPACK page (dgbdt.data.sparse) of a cupyx CSR matrix (sorted indices) whose
        rows hold at most ``stride`` non-NaN entries, in ``bits``-bit symbols."""
        cp = self.xp
        n = X.shape[0]
        null = int(cuts.hist_ptrs()[-1])
        sym = cp.empty((n, stride), dtype=cp.uint32)
        if n:
            self._kernel("sparse", "quantize_csr")(
                (_grid(n, cap=self.n_sm * 16),), (BLOCK,),
                (cp.asarray(X.indptr, dtype=cp.int64), cp.asarray(X.indices, dtype=cp.int32),
                 cp.ascontiguousarray(X.data, dtype=cp.float32),
                 cp.asarray(cuts.search_values(), dtype=cp.float32),
                 cp.asarray(cuts.ptrs, dtype=cp.int64), _i64(n), _i32(stride), np.uint32(null),
                 sym))
        page = self.pack_symbols(sym, bits)
        page.ell = True
        return page
