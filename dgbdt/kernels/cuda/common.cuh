// Shared definitions of dgbdt's CUDA kernels (compiled by NVRTC through CuPy, see
// dgbdt/kernels/gpu.py). No standard headers: NVRTC has none by default.
#pragma once

typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;

// Symbol i (= row * n_features + feature) of a bit-packed page (dgbdt/data/pages.py):
// bits [i * bits, (i + 1) * bits) of a little-endian stream of u32 words; the trailing padding
// word makes words[w + 1] valid.
__device__ __forceinline__ u32 read_symbol(const u32* __restrict__ words, u64 i, int bits,
                                           u32 mask) {
    u64 pos = i * (u64)bits;
    u64 w = pos >> 5;
    u64 win = (u64)__ldg(words + w) | ((u64)__ldg(words + w + 1) << 32);
    return (u32)(win >> (pos & 31)) & mask;
}
