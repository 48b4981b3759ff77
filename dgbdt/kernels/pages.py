"""Bit-packed pages of quantized symbols.

A page holds one partition's symbols ``S[r, f]`` (``n_rows x n_features``)
with ``bits`` bits each, in one little-endian bit stream over uint32
words: symbol ``i = r * n_features + f`` occupies stream bits
``[i * bits, (i + 1) * bits)``, least significant bit first within a
word, so

    S_i = (W >> (pos & 31)) & (2**bits - 1),   pos = i * bits,
    W   = words[pos >> 5] | words[(pos >> 5) + 1] << 32      (64-bit)

A symbol may straddle two words. ``words`` has ``ceil(N * bits / 32) + 1``
entries (``N = n_rows * n_features``): the last one is a zero padding
word so the 64-bit window never reads past the array. Numba kernels read
symbols with ``dgbdt.kernels.cpu_data.read_symbol(words, i, bits, mask)``.

Default width: ``bits = max(1, bit_length(max symbol))``, 1..32.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np

from . import cpu_data as K

__all__ = ["Page", "pack", "unpack", "unpack_rows", "join", "bits_for", "symbol_mask", "n_words"]


def bits_for(max_symbol: int) -> int:
    """``max(1, bit_length(max_symbol))``."""
    return max(1, int(max_symbol).bit_length())


def symbol_mask(bits: int) -> int:
    """``2**bits - 1``, the ``mask`` argument of ``read_symbol``."""
    return (1 << int(bits)) - 1


def n_words(n_symbols: int, bits: int) -> int:
    """Words of a page: ``ceil(n_symbols * bits / 32) + 1`` (one padding word)."""
    return (int(n_symbols) * int(bits) + 31) // 32 + 1


@dataclass
class Page:
    """One partition's quantized rows, bit-packed (see module doc)."""

    words: np.ndarray  # uint32, with one trailing zero padding word
    n_rows: int
    n_features: int
    bits: int
    streamed: bool = False  # words live away from the kernels (dgbdt.data.page_stream)
    #: ELLPACK layout (dgbdt.data.sparse): a row's symbols are its present entries'
    #: histogram slots, ascending, then null padding; ``n_features`` is the row stride
    ell: bool = False

    def with_words(self, words, **changes) -> "Page":
        """The same page (layout, shape, width) over other words."""
        return dataclasses.replace(self, words=words, **changes)

    @property
    def nbytes(self) -> int:
        return int(self.words.nbytes)

    @property
    def mask(self) -> int:
        return symbol_mask(self.bits)

    @property
    def dtype(self):
        """dtype of unpacked symbols: uint16 if ``bits <= 16`` else uint32."""
        return np.uint16 if self.bits <= 16 else np.uint32


def pack(symbols: np.ndarray, bits: int | None = None) -> Page:
    """Pack ``symbols`` (uint16/uint32 [n_rows, n_features]) into a ``Page``.

    ``bits=None`` uses ``bits_for(max symbol)``; an explicit ``bits``
    (1..32) must hold every symbol, else ValueError.
    """
    symbols = np.asarray(symbols)
    if symbols.ndim != 2:
        raise ValueError("symbols must be 2-D [n_rows, n_features]")
    if symbols.dtype not in (np.uint16, np.uint32):
        if symbols.dtype.kind not in "ui":
            raise TypeError("symbols must be unsigned integers")
        if symbols.size and symbols.min() < 0:
            raise ValueError("symbols must be non-negative")
        if symbols.size and symbols.max() > 0xFFFFFFFF:
            raise ValueError("symbols must fit in 32 bits")
        symbols = symbols.astype(np.uint32)
    n, nf = symbols.shape
    top = int(symbols.max()) if symbols.size else 0
    if bits is None:
        bits = bits_for(top)
    else:
        bits = int(bits)
        if not 1 <= bits <= 32:
            raise ValueError("bits must be in 1..32")
        if top > symbol_mask(bits):
            raise ValueError(f"symbol {top} does not fit in {bits} bits")
    words = np.zeros(n_words(n * nf, bits), np.uint32)
    if n and nf:
        K.pack_rows(symbols, bits, words)
    return Page(words=words, n_rows=int(n), n_features=int(nf), bits=bits)


def unpack(page: Page) -> np.ndarray:
    """All symbols of ``page``: [n_rows, n_features], ``page.dtype``."""
    out = np.empty((page.n_rows, page.n_features), page.dtype)
    if out.size:
        K.unpack_all(page.words, page.bits, out)
    return out


#: the most of the free memory (GPU, or host) a shard's page columns may take
COLUMNS_SHARE = 0.25


def use_columns() -> bool:
    """Whether a backend may route rows from a page's columns (``DGBDT_ROUTE_COLUMNS``,
    default 1; 0 reads the page, with the same model)."""
    return os.environ.get("DGBDT_ROUTE_COLUMNS", "1") != "0"


def columns(page: Page) -> Page:
    """A dense page's symbols feature-major: a page of ``n_features`` rows of ``n_rows``
    symbols (symbol ``f * n_rows + r`` is row r's symbol of feature f), at the page's width.
    A level's partition reads one feature of each row of a node, in row order: from the
    columns that is a run of nearby bytes, from the page a cache line a row."""
    n, nf = page.n_rows, page.n_features
    if page.bits != 8:
        return pack(np.ascontiguousarray(unpack(page).T), page.bits)
    out = Page(np.zeros(n_words(n * nf, 8), np.uint32), n_rows=nf, n_features=n, bits=8)
    if n and nf:    # bytes are symbols: one strided copy, no unpacked array in between
        out.words.view(np.uint8)[:n * nf].reshape(nf, n)[...] = \
            page.words.view(np.uint8)[:n * nf].reshape(n, nf).T
    return out


def unpack_rows(page: Page, rows: np.ndarray) -> np.ndarray:
    """Symbols of the selected ``rows`` (any order, repeats allowed)."""
    rows = np.ascontiguousarray(rows, dtype=np.int64).ravel()
    if rows.size and (rows.min() < 0 or rows.max() >= page.n_rows):
        raise IndexError("row index out of range")
    out = np.empty((rows.shape[0], page.n_features), page.dtype)
    if out.size:
        K.unpack_rows_kernel(page.words, page.bits, rows, page.n_features, out)
    return out


def check_joinable(pages: list) -> tuple[int, int]:
    """(bits, features) of the page ``join`` makes of ``pages``: at least one, dense, in
    memory, of one feature count (the widest page's width: a page packs at the width its
    largest symbol needs, so pages with and without missing values differ); else ValueError."""
    if not pages:
        raise ValueError("join needs at least one page")
    first = pages[0]
    for pg in pages:
        if pg.ell or pg.streamed:
            raise ValueError("join takes dense pages whose words are in memory (not ELLPACK "
                             "or streamed pages)")
        if pg.n_features != first.n_features:
            raise ValueError(f"join takes pages of one layout; got pages of {pg.n_features} "
                             f"features beside pages of {first.n_features}")
    return max(pg.bits for pg in pages), first.n_features


def join(pages: list) -> Page:
    """One host page of ``pages``' rows in their order (dense pages of one feature count, at
    the widest one's width: narrower pages are unpacked and packed at it first; the words are
    copied).

    Page ``i``'s stream of ``L_i = n_rows * F * bits`` bits goes to bits ``[S_i, S_i + L_i)``
    of the joined stream, ``S_i = L_0 + ... + L_(i-1)``: with ``b = S_i >> 5`` and
    ``t = S_i & 31``, each data word ``u`` of the page lands as ``u << t`` across joined words
    ``b + k`` and ``b + k + 1``. The pages' ranges are disjoint and a page's bits past ``L_i``
    are masked to zero, so OR-ing the pieces in builds the joined stream; the joined words
    are ``n_words(sum n_rows * F, bits)``, the last two-word write of any page staying inside
    them (``floor(S / 32) + ceil(L / 32) <= ceil((S + L) / 32)``). A few numpy operations a
    page; the CUDA backend's ``join_pages`` computes the same words in one prebuilt kernel."""
    bits, nf = check_joinable(pages)
    pages = [pg if pg.bits == bits else pack(unpack(pg), bits) for pg in pages]   # widened
    n = sum(pg.n_rows for pg in pages)
    out = np.zeros(n_words(n * nf, bits), dtype=np.uint32)
    start = 0
    for pg in pages:
        length = pg.n_rows * nf * bits
        nd = (length + 31) // 32
        if nd:
            u = pg.words[:nd].astype(np.uint64)
            if length & 31:      # bits past the page's stream: zero
                u[nd - 1] &= (1 << (length & 31)) - 1
            b, t = start >> 5, start & 31
            u <<= t
            out[b:b + nd] |= (u & 0xFFFFFFFF).astype(np.uint32)
            if t:
                out[b + 1:b + 1 + nd] |= (u >> 32).astype(np.uint32)
            del u
        start += length
    return Page(words=out, n_rows=int(n), n_features=int(nf), bits=int(bits))
