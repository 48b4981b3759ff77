"""Numba kernel of dgbdt.kernels.fixedpoint.ExactSum for host arrays: the per-exponent integer sums.

A finite double is x = s * M * 2**(e - 53) with (m, e) = frexp(x), s its sign and the integer
M = |m| * 2**53 < 2**53. ExactSum groups the summands by e and adds the high and low 26 bits of
M separately, so every group's sum is an integer (exact in int64 for fewer than 2**37
summands). One pass over the values, instead of numpy's dozen passes and two float64
bincounts (slow on large label sets, and the metrics of every evaluation round pay it too:
docs/benchmarks-archive.md#figures-behind-code-choices).
"""
import numpy as np
from numba import njit

EXP_OFFSET = 1074   # frexp exponents of finite doubles lie in [-1073, 1024]
N_EXP = 2100
_LOW = (1 << 26) - 1


@njit(cache=True, nogil=True)
def _exact_sum_bins(bits, hi, lo) -> bool:
    """frexp from the IEEE fields of ``bits`` (the values' int64 view): exponent field E and
    fraction F. Normal (0 < E < 2047): |m| 2**53 = 2**52 + F, e = E - 1022, bin E + 52.
    Subnormal (E = 0): x = F 2**-1074, so with L = bit_length(F): |m| 2**53 = F << (53 - L),
    bin L. E = 2047: inf or NaN. No libm call: faster than a numba frexp loop
    (docs/benchmarks-archive.md#figures-behind-code-choices)."""
    bad = False
    for i in range(bits.shape[0]):
        u = bits[i]
        E = (u >> 52) & 0x7FF
        F = u & 0xFFFFFFFFFFFFF
        if E == 0x7FF:
            bad = True
            continue
        if E == 0:
            if F == 0:
                continue
            L = 0
            t = F
            while t:
                L += 1
                t >>= 1
            mant = F << (53 - L)
            b = L
        else:
            mant = F | 0x10000000000000
            b = E + 52
        if u < 0:
            hi[b] -= mant >> 26
            lo[b] -= mant & _LOW
        else:
            hi[b] += mant >> 26
            lo[b] += mant & _LOW
    return bad


def exact_sum_bins(x: np.ndarray):
    """(hi, lo, bad) for the float64 vector x: int64 [N_EXP] sums of the high and low 26
    mantissa bits by exponent bin (e + EXP_OFFSET), and whether some value is not finite."""
    hi = np.zeros(N_EXP, dtype=np.int64)
    lo = np.zeros(N_EXP, dtype=np.int64)
    bits = np.ascontiguousarray(x, dtype=np.float64).view(np.int64)
    bad = _exact_sum_bins(bits, hi, lo)
    return hi, lo, bool(bad)


@njit(cache=True, nogil=True)
def _merge_two_runs(s1, p1, n1, s2, p2, n2, so, po, no) -> int:
    """Merge two runs of increasing distinct scores into (so, po, no); equal scores of the two
    runs become one entry with their weights added. Returns the entries written."""
    i = j = m = 0
    while i < s1.shape[0] and j < s2.shape[0]:
        if s1[i] < s2[j]:
            so[m], po[m], no[m] = s1[i], p1[i], n1[i]
            i += 1
        elif s2[j] < s1[i]:
            so[m], po[m], no[m] = s2[j], p2[j], n2[j]
            j += 1
        else:
            so[m], po[m], no[m] = s1[i], p1[i] + p2[j], n1[i] + n2[j]
            i += 1
            j += 1
        m += 1
    while i < s1.shape[0]:
        so[m], po[m], no[m] = s1[i], p1[i], n1[i]
        i += 1
        m += 1
    while j < s2.shape[0]:
        so[m], po[m], no[m] = s2[j], p2[j], n2[j]
        j += 1
        m += 1
    return m


def merge_sorted_runs(score, pos, neg):
    """Runs of increasing distinct scores back to back (a run ends where the score does not
    increase) merged into one such run, weights added at equal scores: what sorting them and
    summing ties gives, in linear time. None where a score is NaN (the caller sorts)."""
    if np.isnan(score).any():
        return None
    pos = pos.astype(np.int64, copy=False)
    neg = neg.astype(np.int64, copy=False)
    cuts = np.concatenate([[0], np.flatnonzero(score[1:] <= score[:-1]) + 1, [score.shape[0]]])
    runs = [(score[a:b], pos[a:b], neg[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    while len(runs) > 1:          # pairwise, so every row moves log2(runs) times
        nxt = []
        for r in range(0, len(runs) - 1, 2):
            (s1, p1, n1), (s2, p2, n2) = runs[r], runs[r + 1]
            size = s1.shape[0] + s2.shape[0]
            so, po, no = np.empty(size, s1.dtype), np.empty(size, np.int64), \
                np.empty(size, np.int64)
            m = _merge_two_runs(s1, p1, n1, s2, p2, n2, so, po, no)
            nxt.append((so[:m], po[:m], no[:m]))
        if len(runs) % 2:
            nxt.append(runs[-1])
        runs = nxt
    return runs[0]
