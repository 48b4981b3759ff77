// Quantize + bit-pack on the device (dgbdt/data/quantize.py and dgbdt/data/pages.py).
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
