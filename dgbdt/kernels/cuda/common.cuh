// Shared definitions of dgbdt's CUDA kernels (compiled by NVRTC through CuPy, see
// dgbdt/backends/cuda.py). No standard headers: NVRTC has none by default.
#pragma once

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;

// Symbol i (= row * n_features + feature) of a bit-packed page (dgbdt/kernels/pages.py):
// bits [i * bits, (i + 1) * bits) of a little-endian stream of u32 words; the trailing padding
// word makes words[w + 1] valid.
__device__ __forceinline__ u32 read_symbol(const u32* __restrict__ words, u64 i, int bits,
                                           u32 mask) {
    u64 pos = i * (u64)bits;
    u64 w = pos >> 5;
    u64 win = (u64)__ldg(words + w) | ((u64)__ldg(words + w + 1) << 32);
    return (u32)(win >> (pos & 31)) & mask;
}

// Row r's symbol of feature f. A dense page (ell == 0): symbol r * n_features + f. An ELLPACK
// page (dgbdt/data/sparse.py; row stride n_features): the row's entries are histogram slots,
// ascending, null padding last; the first entry >= lo = hist_ptrs[f] (binary search) is the
// feature's bin when it is below lo + nb, else the feature is missing (the symbol nb).
__device__ __forceinline__ u32 row_symbol(const u32* __restrict__ words, u64 r, int n_features,
                                          i64 f, int bits, u32 mask, int ell,
                                          const i64* __restrict__ hist_ptrs, u32 nb) {
    if (!ell) return read_symbol(words, r * (u64)n_features + (u64)f, bits, mask);
    const u64 base = r * (u64)n_features;
    const u32 lo = (u32)__ldg(hist_ptrs + f);
    int a = 0, b = n_features;
    while (a < b) {
        const int m = (a + b) >> 1;
        if (read_symbol(words, base + (u64)m, bits, mask) < lo) a = m + 1; else b = m;
    }
    if (a < n_features) {
        const u32 s = read_symbol(words, base + (u64)a, bits, mask);
        if (s < lo + nb) return s - lo;
    }
    return nb;
}

// Work over row segments is cut into tiles of `tile` rows so that blocks share it by rows, not
// by nodes (node sizes differ by orders of magnitude deeper in a tree). tile_ptr[j] is the
// first tile of node nodes[j] (exclusive prefix sum, tile_ptr[m] = total, built on the device
// by tile_offsets); tile_node finds the node of tile t: the last j with tile_ptr[j] <= t.
__device__ __forceinline__ int tile_node(const i64* __restrict__ tile_ptr, int m, i64 t) {
    int lo = 0, hi = m - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (tile_ptr[mid] <= t) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// Inclusive prefix sum of v over the lanes of a warp (all 32 lanes must call it).
template <typename T>
__device__ __forceinline__ T warp_inclusive_scan(T v) {
    const int lane = threadIdx.x & 31;
    for (int o = 1; o < 32; o <<= 1) {
        const T a = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += a;
    }
    return v;
}
