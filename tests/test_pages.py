"""Bit-packed pages: layout, round trips, read_symbol, padding, errors."""

import numpy as np
import pytest
from numba import njit

from dgbdt.kernels.pages import Page, bits_for, n_words, pack, symbol_mask, unpack, unpack_rows
from dgbdt.kernels.cpu_data import read_symbol

WIDTHS = list(range(1, 17)) + [17, 24, 32]
ROWS = [1, 3, 31, 33, 1001]


@njit
def _read_all(words, n, bits, mask):
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = read_symbol(words, i, bits, mask)
    return out


def _symbols(rng, n, nf, bits):
    top = (1 << bits) - 1
    dt = np.uint16 if bits <= 16 else np.uint32
    s = rng.integers(0, top, size=(n, nf), endpoint=True, dtype=np.uint64).astype(dt)
    s.flat[rng.integers(0, s.size)] = top  # the maximum value is present
    return s


def _reference_stream(symbols, bits):
    """Pure-Python packing: one big integer, symbol i at bit i*bits."""
    acc = 0
    for i, v in enumerate(symbols.ravel().tolist()):
        acc |= int(v) << (i * bits)
    nw = n_words(symbols.size, bits)
    return np.array([(acc >> (32 * w)) & 0xFFFFFFFF for w in range(nw)], np.uint32)


@pytest.mark.parametrize("bits", WIDTHS)
@pytest.mark.parametrize("n", ROWS)
def test_round_trip_every_width(bits, n):
    rng = np.random.default_rng(bits * 1000 + n)
    nf = 5
    s = _symbols(rng, n, nf, bits)
    page = pack(s)
    assert page.bits == bits  # derived width: bit_length of the max symbol
    assert page.n_rows == n and page.n_features == nf
    assert page.words.dtype == np.uint32
    assert page.words.shape[0] == (n * nf * bits + 31) // 32 + 1
    assert page.words[-1] == 0  # padding word
    assert page.nbytes == page.words.nbytes
    out = unpack(page)
    assert out.dtype == (np.uint16 if bits <= 16 else np.uint32)
    np.testing.assert_array_equal(out, s)
    # read_symbol for every flat index
    got = _read_all(page.words, n * nf, bits, symbol_mask(bits))
    np.testing.assert_array_equal(got, s.ravel().astype(np.int64))
    # selected rows, any order, repeats
    rows = rng.integers(0, n, size=min(n, 50) + 3)
    np.testing.assert_array_equal(unpack_rows(page, rows), s[rows])


@pytest.mark.parametrize("bits", [1, 3, 7, 13, 16, 17, 31, 32])
def test_layout_matches_reference_stream(bits):
    rng = np.random.default_rng(bits)
    s = _symbols(rng, 67, 3, bits)
    page = pack(s, bits=bits)
    np.testing.assert_array_equal(page.words, _reference_stream(s, bits))


def test_explicit_wider_bits_and_derived_minimum():
    s = np.array([[0, 1], [1, 0]], np.uint16)
    assert pack(s).bits == 1
    assert pack(np.zeros((4, 3), np.uint16)).bits == 1  # all zero -> 1 bit
    p = pack(s, bits=9)
    assert p.bits == 9
    np.testing.assert_array_equal(unpack(p), s)
    assert bits_for(0) == 1 and bits_for(1) == 1 and bits_for(255) == 8 and bits_for(256) == 9


def test_symbol_too_large_for_bits():
    s = np.array([[3, 4]], np.uint16)
    with pytest.raises(ValueError):
        pack(s, bits=2)
    with pytest.raises(ValueError):
        pack(s, bits=0)
    with pytest.raises(ValueError):
        pack(s, bits=33)


def test_uint32_symbols_full_width():
    s = np.array([[0xFFFFFFFF, 0, 0x80000001]], np.uint32)
    p = pack(s)
    assert p.bits == 32
    np.testing.assert_array_equal(unpack(p), s)


def test_empty_pages():
    for shape in [(0, 5), (7, 0), (0, 0)]:
        s = np.zeros(shape, np.uint16)
        p = pack(s)
        assert p.words.shape == (1,) and p.words[0] == 0
        assert unpack(p).shape == shape
        assert unpack_rows(p, np.zeros(0, np.int64)).shape == (0, shape[1])
    p = pack(np.zeros((7, 0), np.uint16))
    assert unpack_rows(p, [0, 6]).shape == (2, 0)


def test_unpack_rows_bounds():
    p = pack(np.ones((4, 2), np.uint16))
    with pytest.raises(IndexError):
        unpack_rows(p, [4])
    with pytest.raises(IndexError):
        unpack_rows(p, [-1])


def test_chunks_of_32_rows_start_on_word_boundaries():
    # odd widths and feature counts: chunk c starts at bit 32*c*F*bits
    rng = np.random.default_rng(7)
    for bits, nf in [(3, 1), (5, 3), (11, 7), (17, 1)]:
        s = _symbols(rng, 97, nf, bits)
        p = pack(s)
        np.testing.assert_array_equal(p.words, _reference_stream(s, bits))
        assert isinstance(p, Page)


@pytest.mark.parametrize("seed", range(6))
def test_joined_pages_are_the_pages_of_the_joined_rows(seed):
    """join's shifted, OR-ed words equal packing all the rows at once, for every width and
    page sizes whose streams end anywhere in a word (empty pages too)."""
    from dgbdt.kernels.pages import join
    rng = np.random.default_rng(seed)
    for _ in range(60):
        bits, nf = int(rng.integers(1, 33)), int(rng.integers(1, 7))
        parts = [rng.integers(0, 1 << bits, size=(int(rng.integers(0, 9)), nf),
                              dtype=np.uint64).astype(np.uint32)
                 for _ in range(int(rng.integers(1, 6)))]
        joined = join([pack(p, bits) for p in parts])
        whole = pack(np.concatenate(parts), bits)
        assert joined.n_rows == whole.n_rows and joined.bits == bits
        np.testing.assert_array_equal(joined.words, whole.words)


def test_join_widens_narrower_pages_and_refuses_other_feature_counts():
    """Pages pack at the width their largest symbol needs (a partition without missing values
    can be a bit narrower): the join is the pages' rows packed at the widest width."""
    from dgbdt.kernels.pages import join
    rng = np.random.default_rng(9)
    parts = [rng.integers(0, 1 << b, size=(n, 3), dtype=np.uint64).astype(np.uint32)
             for b, n in ((8, 7), (9, 5), (3, 11), (9, 0))]
    joined = join([pack(p) for p in parts])
    assert joined.bits == 9
    np.testing.assert_array_equal(joined.words, pack(np.concatenate(parts), 9).words)
    a, b = pack(np.ones((3, 2), np.uint32), 4), pack(np.ones((3, 3), np.uint32), 4)
    with pytest.raises(ValueError, match="one layout"):
        join([a, b])
    with pytest.raises(ValueError, match="at least one"):
        join([])
