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
// (element strides s0 between rows, s1 between features); counts[f] += the feature's non-NaN
// values, counts[g + f] += its infinities (counts zeroed by the caller). Block (32, 8), grid
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
        const u32 valid = __ballot_sync(0xffffffffu, ok && m <= 0x7F800000u);
        const u32 inf = __ballot_sync(0xffffffffu, ok && m == 0x7F800000u);
        if (tx == 0 && f < g) {
            if (valid) atomicAdd(counts + f, (u64)__popc(valid));
            if (inf) atomicAdd(counts + g + f, (u64)__popc(inf));
        }
    }
}

// h_j of the sorted comp [g, n] (keys in the low 32 bits; cnt[f] non-NaN keys, then the NaN
// ones): bit_length(k[f, j] ^ k[f, j - 1]) for 1 <= j < cnt[f], else 0.
__device__ __forceinline__ u32 sorted_bit_length(const u64* __restrict__ k, i64 j, i64 c) {
    if (j >= c) return 0;
    const u32 d = (u32)k[j] ^ (u32)k[j - 1];
    return d ? 32 - __clz(d) : 0;
}

// hist[f * 33 + h] += the number of j in 1 .. n - 1 with h_j = h in feature f (hist zeroed by
// the caller). Grid (x, g); a warp adds equal bit lengths with one shared atomic.
extern "C" __global__ void sketch_bit_hist(const u64* __restrict__ comp, i64 n,
                                           const i64* __restrict__ cnt,
                                           u64* __restrict__ hist) {
    __shared__ u32 h33[33];
    const int f = blockIdx.y;
    if (threadIdx.x < 33) h33[threadIdx.x] = 0;
    __syncthreads();
    const u64* k = comp + (i64)f * n;
    const i64 c = cnt[f];
    const int lane = threadIdx.x & 31;
    const i64 stride = (i64)gridDim.x * blockDim.x;
    // the lanes of a warp run the same iterations (the match below needs all of them)
    for (i64 j0 = (i64)blockIdx.x * blockDim.x + (threadIdx.x - lane) + 1; j0 < n;
         j0 += stride) {
        const i64 j = j0 + lane;
        const bool ok = j < n;
        const u32 h = ok ? sorted_bit_length(k, j, c) : 0xFFFFFFFFu;
        const u32 same = __match_any_sync(0xffffffffu, h);
        if (ok && lane == __ffs(same) - 1) atomicAdd(h33 + h, (u32)__popc(same));
    }
    __syncthreads();
    if (threadIdx.x < 33 && h33[threadIdx.x])
        atomicAdd(hist + (i64)f * 33 + threadIdx.x, (u64)h33[threadIdx.x]);
}

// starts[f, j] = 1 where a bucket of feature f starts at sorted position j: j = 0 if the
// feature has a non-NaN value, else h_j > shift[f] (uint8 [g, n]). Grid (x, g).
extern "C" __global__ void sketch_starts(const u64* __restrict__ comp, i64 n,
                                         const i64* __restrict__ cnt,
                                         const i64* __restrict__ shift,
                                         unsigned char* __restrict__ starts) {
    const int f = blockIdx.y;
    const u64* k = comp + (i64)f * n;
    const i64 c = cnt[f];
    const u32 s = (u32)shift[f];
    unsigned char* out = starts + (i64)f * n;
    for (i64 j = (i64)blockIdx.x * blockDim.x + threadIdx.x; j < n;
         j += (i64)gridDim.x * blockDim.x)
        out[j] = j == 0 ? (c > 0) : (sorted_bit_length(k, j, c) > s);
}

// shift[f] = #{s in 0 .. 32 : N_s > max_keys} with N_s = 1 + sum_{h > s} hist[f, h] (the
// bucket count at shift s; non-increasing in s, so this is the smallest fitting shift).
// One thread per feature.
extern "C" __global__ void sketch_shifts(const u64* __restrict__ hist, int g, i64 max_keys,
                                         i64* __restrict__ shift) {
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= g) return;
    const u64* h = hist + (i64)f * 33;
    u64 above = 0;     // sum of h[t] for t > s, s going down from 32
    i64 count = 0;
    for (int s = 32; s >= 0; --s) {
        if ((i64)(1 + above) > max_keys) ++count;
        above += h[s];
    }
    shift[f] = count;
}
