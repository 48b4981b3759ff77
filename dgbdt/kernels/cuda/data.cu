// Quantize + bit-pack on the device (dgbdt/data/quantize.py and dgbdt/kernels/pages.py).
#include "common.cuh"

// Symbol of value x of a feature whose cut values are v[0..nb): the number of the first nb-1
// cuts that are <= x (so at most nb-1), or nb (missing) for NaN.
__device__ __forceinline__ u32 bin_of(float x, const float* __restrict__ v, int nb) {
    if (x != x) return (u32)nb;
    int lo = 0, hi = nb - 1;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (v[mid] <= x) lo = mid + 1; else hi = mid;
    }
    return (u32)lo;
}

// One thread per data word w of the page: ORs the bits of every symbol overlapping stream bits
// [32 w, 32 w + 32). Symbol i is X's flat element i (X is C-contiguous float32 [n, F]).
extern "C" __global__ void quantize_pack(
        const float* __restrict__ X, i64 n_sym, int n_features,
        const float* __restrict__ cut_values, const i64* __restrict__ cut_ptrs, int bits,
        i64 n_data_words, u32* __restrict__ words) {
    const i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= n_data_words) return;
    const i64 bit0 = w * 32;
    const i64 i0 = bit0 / bits;
    i64 i1 = (bit0 + 32 + bits - 1) / bits;
    if (i1 > n_sym) i1 = n_sym;
    u64 acc = 0;
    for (i64 i = i0; i < i1; ++i) {
        const int f = (int)(i % n_features);
        const i64 c0 = cut_ptrs[f];
        const u32 s = bin_of(X[i], cut_values + c0, (int)(cut_ptrs[f + 1] - c0));
        const i64 off = i * bits - bit0;
        acc |= off >= 0 ? ((u64)s << off) : ((u64)s >> (-off));
    }
    words[w] = (u32)acc;
}

// Rows[0..n) of a page of `src_bits` symbols into a page of `bits` symbols (dgbdt.engine.sampled_rounds;
// `bits` 16 or 32 gives the rows' symbols as a plain uint16/uint32 array): one thread per
// data word w of the new page, as quantize_pack; its symbol i = r * F + f is the old page's
// rows[r] * F + f.
extern "C" __global__ void take_rows_pack(
        const u32* __restrict__ src, int src_bits, u32 src_mask, int n_features,
        const i64* __restrict__ rows, i64 n_sym, int bits, i64 n_data_words,
        u32* __restrict__ words) {
    const i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= n_data_words) return;
    const i64 bit0 = w * 32;
    const i64 i0 = bit0 / bits;
    i64 i1 = (bit0 + 32 + bits - 1) / bits;
    if (i1 > n_sym) i1 = n_sym;
    u64 acc = 0;
    for (i64 i = i0; i < i1; ++i) {
        const i64 r = i / n_features;
        const u32 s = read_symbol(src, (u64)(rows[r] * n_features + (i - r * n_features)),
                                  src_bits, src_mask);
        const i64 off = i * bits - bit0;
        acc |= off >= 0 ? ((u64)s << off) : ((u64)s >> (-off));
    }
    words[w] = (u32)acc;
}

// out[r] += the number of nonzero bytes of row r of the C-contiguous bool/uint8 [R, C] mask.
// Grid (x, R): the blocks of row blockIdx.y stride over its C columns; one atomic per warp.
// (CuPy reduces an axis with one block per output: a [1, 9M] count took 2.5 ms, this 10 us.)
extern "C" __global__ void count_rows(const unsigned char* __restrict__ mask, i64 C,
                                      u64* __restrict__ out) {
    const unsigned char* m = mask + (i64)blockIdx.y * C;
    u32 c = 0;
    for (i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x; j < C;
         j += (i64)gridDim.x * blockDim.x)
        c += m[j] != 0;
    c = __reduce_add_sync(0xffffffffu, c);
    if ((threadIdx.x & 31) == 0 && c) atomicAdd(out + blockIdx.y, (u64)c);
}

// The per-exponent sums of dgbdt.kernels.fixedpoint.ExactSum.of: x = sign * mant * 2^(e - 53) with
// (m, e) = frexp(x), mant = |m| 2^53 < 2^53; bin e + 1074 gets sign * (mant >> 26) in
// out[bin] and sign * (mant & (2^26 - 1)) in out[N + bin], as int64 (two's complement in the
// u64 atomics: exact in any order, like the host's float64 bincount of integers below 2^53).
// out[2N] is set to 1 if some x is not finite. Each thread keeps two running bins in registers
// and adds a bin to shared memory only when a third exponent displaces it (labels and other
// values of a few exponents cost no atomics per element; a global float64 bincount of 9M
// labels serialized on two addresses for 95 ms). Blocks flush their nonzero bins at the end.
#define EXP_BINS 2100
#define EXP_OFFSET 1074
extern "C" __global__ void exact_sum_bins(const double* __restrict__ x, i64 n,
                                          u64* __restrict__ out) {
    __shared__ u64 sh[2 * EXP_BINS];
    __shared__ int bad;
    for (int s = threadIdx.x; s < 2 * EXP_BINS; s += blockDim.x) sh[s] = 0;
    if (threadIdx.x == 0) bad = 0;
    __syncthreads();
    int b0 = -1, b1 = -1;
    i64 h0 = 0, l0 = 0, h1 = 0, l1 = 0;
    bool nonfinite = false;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double v = x[i];
        if (!isfinite(v)) { nonfinite = true; continue; }
        if (v == 0.0) continue;
        int e;
        const double m = frexp(v, &e);
        const i64 mant = (i64)fabs(ldexp(m, 53));
        const i64 hi = m < 0 ? -(mant >> 26) : (mant >> 26);
        const i64 lo = m < 0 ? -(mant & ((1LL << 26) - 1)) : (mant & ((1LL << 26) - 1));
        const int bin = e + EXP_OFFSET;
        if (bin == b0) { h0 += hi; l0 += lo; }
        else if (bin == b1) { h1 += hi; l1 += lo; }
        else {
            if (b1 >= 0) {
                atomicAdd((unsigned long long*)&sh[b1], (unsigned long long)h1);
                atomicAdd((unsigned long long*)&sh[EXP_BINS + b1], (unsigned long long)l1);
            }
            b1 = b0; h1 = h0; l1 = l0;
            b0 = bin; h0 = hi; l0 = lo;
        }
    }
    if (b0 >= 0) {
        atomicAdd((unsigned long long*)&sh[b0], (unsigned long long)h0);
        atomicAdd((unsigned long long*)&sh[EXP_BINS + b0], (unsigned long long)l0);
    }
    if (b1 >= 0) {
        atomicAdd((unsigned long long*)&sh[b1], (unsigned long long)h1);
        atomicAdd((unsigned long long*)&sh[EXP_BINS + b1], (unsigned long long)l1);
    }
    if (nonfinite) bad = 1;
    __syncthreads();
    for (int s = threadIdx.x; s < 2 * EXP_BINS; s += blockDim.x)
        if (sh[s]) atomicAdd((unsigned long long*)&out[s], (unsigned long long)sh[s]);
    if (threadIdx.x == 0 && bad) out[2 * EXP_BINS] = 1;
}

// Pages joined (dgbdt/kernels/pages.py's join, the same words): page i's bit stream (its words
// at srcs[i], ending with a padding word) goes to joined stream bits [starts[i], starts[i + 1]).
// One thread per data word w of the joined page: the bits [32 w, 32 w + 32) come from the page
// holding bit 32 w (a binary search of starts) and, across a page's end, from the next ones.
extern "C" __global__ void join_streams(
        const u64* __restrict__ srcs, const i64* __restrict__ starts, int m,
        i64 n_data_words, u32* __restrict__ out) {
    const i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= n_data_words) return;
    const i64 lo = w * 32;
    const i64 hi = lo + 32 < starts[m] ? lo + 32 : starts[m];
    int i = 0, top = m - 1;        // the last page i with starts[i] <= lo
    while (i < top) {
        const int mid = (i + top + 1) >> 1;
        if (starts[mid] <= lo) i = mid; else top = mid - 1;
    }
    u64 acc = 0;
    for (i64 pos = lo; pos < hi;) {
        while (starts[i + 1] <= pos) ++i;          // past empty pages
        const i64 end = starts[i + 1] < hi ? starts[i + 1] : hi;
        const i64 local = pos - starts[i];
        const u32* src = (const u32*)srcs[i];
        const u64 win = (u64)src[local >> 5] | ((u64)src[(local >> 5) + 1] << 32);
        const int n = (int)(end - pos);                 // 1..32 bits
        acc |= ((win >> (local & 31)) & ((1ull << n) - 1ull)) << (pos - lo);
        pos = end;
    }
    out[w] = (u32)acc;
}

// The largest symbol of X's values (bin_of, as quantize_pack packs them) into *out, zeroed by
// the caller (an atomicMax a warp): a page needs bits_for of it, one bit fewer than the widest
// feature's missing symbol asks for when no value is missing (256 bins: 8 bits, not 9).
extern "C" __global__ void max_symbol(
        const float* __restrict__ X, i64 n_sym, int n_features,
        const float* __restrict__ cut_values, const i64* __restrict__ cut_ptrs,
        u32* __restrict__ out) {
    u32 m = 0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n_sym;
         i += (i64)gridDim.x * blockDim.x) {
        const int f = (int)(i % n_features);
        const i64 c0 = cut_ptrs[f];
        const u32 s = bin_of(X[i], cut_values + c0, (int)(cut_ptrs[f + 1] - c0));
        m = s > m ? s : m;
    }
    for (int o = 16; o > 0; o >>= 1) {
        const u32 v = __shfl_down_sync(0xffffffffu, m, o);
        m = v > m ? v : m;
    }
    if ((threadIdx.x & 31) == 0 && m) atomicMax(out, m);
}
