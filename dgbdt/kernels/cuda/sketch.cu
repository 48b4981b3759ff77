// The device quantile sketch's passes over every value (dgbdt/data/sketch_device.py, whose
// array operations are the specification): the sort keys, and the bit lengths of neighbouring
// sorted keys with their per-feature histogram. One kernel each instead of a dozen array
// passes (10M x 28: the sketch's elementwise work was most of the quantize stage).
#include "common.cuh"

#define NAN_KEY 0xFFFFFFFFu

// The sort key of float32 bits u: NaN -> NAN_KEY (sorts last), negative nonzero -> ~u,
// anything else (-0.0 as +0.0) -> magnitude | 0x80000000, so keys order as the values.
__device__ __forceinline__ u32 sketch_key(u32 u) {
    const u32 m = u & 0x7FFFFFFFu;
    if (m > 0x7F800000u) return NAN_KEY;
    return (u != m && m != 0) ? ~u : (m | 0x80000000u);
}

// comp[f * n + r] = f << 32 | sketch_key(X[r, f0 + f]) for features f < g of the float32 X
// (element strides s0 between rows, s1 between features); counts[2 f] += NaNs of feature f,
// counts[2 f + 1] += its infinities (counts zeroed by the caller). Block (32, 8), grid
// (ceil(n / 32), ceil(g / 32)): a 32 x 32 tile through shared memory, so reads follow X's
// rows and writes each feature's run.
extern "C" __global__ void sketch_keys(const float* __restrict__ X, i64 n, int g, i64 s0,
                                       i64 s1, int f0, u64* __restrict__ comp,
                                       u64* __restrict__ counts) {
    __shared__ u32 tile[32][33];
    const i64 r0 = (i64)blockIdx.x * 32;
    const int fb = blockIdx.y * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const i64 r = r0 + ty + 8 * i;
        const int f = fb + tx;
        tile[ty + 8 * i][tx] = (r < n && f < g)
            ? __float_as_uint(X[r * s0 + (i64)(f0 + f) * s1]) : 0u;
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int f = fb + ty + 8 * i;
        const i64 r = r0 + tx;
        const bool ok = f < g && r < n;
        const u32 u = tile[tx][ty + 8 * i];
        const u32 m = u & 0x7FFFFFFFu;
        if (ok) comp[(i64)f * n + r] = ((u64)f << 32) | sketch_key(u);
        const u32 nan = __ballot_sync(0xffffffffu, ok && m > 0x7F800000u);
        const u32 inf = __ballot_sync(0xffffffffu, ok && m == 0x7F800000u);
        if (tx == 0 && f < g) {
            if (nan) atomicAdd(counts + 2 * f, (u64)__popc(nan));
            if (inf) atomicAdd(counts + 2 * f + 1, (u64)__popc(inf));
        }
    }
}

// For the sorted comp [g, n] (keys in the low 32 bits) and cnt[f] (the feature's non-NaN
// count, its NaN keys sorted after): bl[f, j - 1] = bit_length(k[f, j] ^ k[f, j - 1]) for
// 1 <= j < n, 0 where j >= cnt[f]; hist[f * 33 + h] += the count of h in row f of bl (hist
// zeroed by the caller). Grid (x, g); warps add equal bit lengths with one shared atomic.
extern "C" __global__ void sketch_bit_lengths(const u64* __restrict__ comp, i64 n,
                                              const i64* __restrict__ cnt,
                                              unsigned char* __restrict__ bl,
                                              u64* __restrict__ hist) {
    __shared__ u32 h33[33];
    const int f = blockIdx.y;
    if (threadIdx.x < 33) h33[threadIdx.x] = 0;
    __syncthreads();
    const u64* k = comp + (i64)f * n;
    unsigned char* out = bl + (i64)f * (n - 1);
    const i64 c = cnt[f];
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const i64 start = (i64)blockIdx.x * blockDim.x + threadIdx.x + 1;
    // every lane of a warp runs the same number of iterations (the match below needs them all)
    for (i64 j0 = start - (threadIdx.x & 31); j0 < n; j0 += stride) {
        const i64 j = j0 + (threadIdx.x & 31);
        u32 h = 0;
        const bool ok = j < n;
        if (ok && j < c) {
            const u32 d = (u32)k[j] ^ (u32)k[j - 1];
            h = d ? 32 - __clz(d) : 0;
        }
        if (ok) out[j - 1] = (unsigned char)h;
        const u32 active = __ballot_sync(0xffffffffu, ok);
        const u32 same = __match_any_sync(0xffffffffu, ok ? h : 0xFFFFFFFFu);
        const int lane = threadIdx.x & 31;
        if (ok && lane == __ffs(same & active) - 1) atomicAdd(h33 + h, (u32)__popc(same & active));
    }
    __syncthreads();
    if (threadIdx.x < 33 && h33[threadIdx.x])
        atomicAdd(hist + (i64)f * 33 + threadIdx.x, (u64)h33[threadIdx.x]);
}
