// The device quantile sketch's passes over every value (dgbdt/data/sketch_device.py, whose
// array operations are the specification): the sort keys, and the bit lengths of neighbouring
// sorted keys with their per-feature histogram, and the buckets. Kernels instead of array
// passes: 10M x 28, the sketch's elementwise work was most of the quantize stage, and CuPy's
// array operations are compiled by NVRTC at a fresh install's first fit (these ship built).
#include "common.cuh"
#include "scan.cuh"

#define NAN_KEY 0xFFFFFFFFu

// The sort key of float32 bits u: NaN -> NAN_KEY (sorts last), negative nonzero -> ~u,
// anything else (-0.0 as +0.0) -> magnitude | 0x80000000, so keys order as the values.
__device__ __forceinline__ u32 sketch_key(u32 u) {
    const u32 m = u & 0x7FFFFFFFu;
    if (m > 0x7F800000u) return NAN_KEY;
    return (u != m && m != 0) ? ~u : (m | 0x80000000u);
}

// comp[f * ld + row0 + r] = sketch_key(X[r, f0 + f]) for features f < g of the
// float32 X [n, ...] (element strides s0 between rows, s1 between features): X's rows are rows
// row0 .. row0 + n of a [g, ld] key matrix that several blocks of rows fill (ld >= row0 + n).
// counts[f] += the feature's non-NaN values, counts[g + f] += its infinities (counts zeroed by
// the caller before the first block). Block (32, 8), grid
// (ceil(n / 32), ceil(g / 32)): a 32 x 32 tile through shared memory, so reads follow X's
// rows and writes each feature's run.
extern "C" __global__ void sketch_keys(const float* __restrict__ X, i64 n, int g, i64 s0,
                                       i64 s1, int f0, u32* __restrict__ comp,
                                       u64* __restrict__ counts, i64 ld, i64 row0) {
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
        if (ok) comp[(i64)f * ld + row0 + r] = sketch_key(u);
        const u32 valid = __ballot_sync(0xffffffffu, ok && m <= 0x7F800000u);
        const u32 inf = __ballot_sync(0xffffffffu, ok && m == 0x7F800000u);
        if (tx == 0 && f < g) {
            if (valid) atomicAdd(counts + f, (u64)__popc(valid));
            if (inf) atomicAdd(counts + g + f, (u64)__popc(inf));
        }
    }
}

// h_j of the sorted keys comp [g, n] (each feature's row sorted; cnt[f] non-NaN keys, then
// the NaN ones): bit_length(k[f, j] ^ k[f, j - 1]) for 1 <= j < cnt[f], else 0.
__device__ __forceinline__ u32 sorted_bit_length(const u32* __restrict__ k, i64 j, i64 c) {
    if (j >= c) return 0;
    const u32 d = k[j] ^ k[j - 1];
    return d ? 32 - __clz(d) : 0;
}

// hist[f * 33 + h] += the number of j in 1 .. n - 1 with h_j = h in feature f (hist zeroed by
// the caller). Grid (x, g); a warp adds equal bit lengths with one shared atomic.
extern "C" __global__ void sketch_bit_hist(const u32* __restrict__ comp, i64 n,
                                           const i64* __restrict__ cnt,
                                           u64* __restrict__ hist) {
    __shared__ u32 h33[33];
    const int f = blockIdx.y;
    if (threadIdx.x < 33) h33[threadIdx.x] = 0;
    __syncthreads();
    const u32* k = comp + (i64)f * n;
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

// Whether sorted position j of a feature (keys k, c non-NaN, shift s) starts a bucket: j = 0
// if the feature has a non-NaN value, else h_j > s (never in the NaN tail, where h_j = 0).
__device__ __forceinline__ bool bucket_start(const u32* __restrict__ k, i64 j, i64 c, u32 s) {
    return j == 0 ? c > 0 : sorted_bit_length(k, j, c) > s;
}

// The inverse of sketch_key on a non-NaN key: the float32 bits it came from (-0.0 as +0.0).
__device__ __forceinline__ u32 key_bits(u32 k) {
    return k >= 0x80000000u ? (k & 0x7FFFFFFFu) : ~k;
}

// Buckets of the sorted comp [g, n] over flat positions p = f * n + j: a block takes
// BUCKET_ITEMS consecutive positions a thread (BLOCK x BUCKET_ITEMS a block); the bucket of
// position p is the number of starts at or before p, minus one (feature-major, the order of
// the array code's flatnonzero of the starts).
#define BUCKET_ITEMS 16

// The bucket starts among this thread's BUCKET_ITEMS positions from p0 (returned), their
// inclusive prefix sum over the warp's lanes (*incl), and each warp's total in
// warp_sums[warp] (visible to the block on return). Every thread of the block calls it.
__device__ __forceinline__ u32 thread_starts(const u32* __restrict__ comp, i64 n, i64 total,
                                             const i64* __restrict__ cnt,
                                             const i64* __restrict__ shift, i64 p0,
                                             u32* warp_sums, u32* incl) {
    u32 mine = 0;
    i64 f = p0 / n, j = p0 - f * n;
    for (int i = 0; i < BUCKET_ITEMS && p0 + i < total; ++i) {
        mine += bucket_start(comp + f * n, j, cnt[f], (u32)shift[f]);
        if (++j == n) { j = 0; ++f; }
    }
    *incl = warp_inclusive_scan(mine);
    if ((threadIdx.x & 31) == 31) warp_sums[threadIdx.x >> 5] = *incl;
    __syncthreads();
    return mine;
}

// counts[b] = the bucket starts among block b's positions (three kernels: these counts, their
// exclusive scan, then the buckets written at the scanned offsets).
extern "C" __global__ void sketch_bucket_counts(const u32* __restrict__ comp, i64 n, int g,
                                                const i64* __restrict__ cnt,
                                                const i64* __restrict__ shift,
                                                u64* __restrict__ counts) {
    __shared__ u32 warp_sums[32];
    const i64 p0 = ((i64)blockIdx.x * blockDim.x + threadIdx.x) * BUCKET_ITEMS;
    u32 incl;
    thread_starts(comp, n, n * (i64)g, cnt, shift, p0, warp_sums, &incl);
    if (threadIdx.x == 0) {
        u64 sum = 0;
        for (int x = 0; x < (int)(blockDim.x >> 5); ++x) sum += warp_sums[x];
        counts[blockIdx.x] = sum;
    }
}

// The exclusive prefix sum of counts[0 .. nb) in place, the total at counts[nb]. One block of
// 1024 threads (nb is at most a few thousand: a group's positions / 4096).
extern "C" __global__ void sketch_bucket_offsets(u64* __restrict__ counts, i64 nb) {
    const u64 total = block_exclusive_scan(counts, nb);
    if (threadIdx.x == 0) counts[nb] = total;
}

// Bucket b of the sorted comp: out[b] = its key >> shift[f], out[m + b] / out[2m + b] = the
// float32 bits of its first / last key, out[3m + b] / out[4m + b] = its first / last flat
// position (m buckets in all; offsets from sketch_bucket_offsets). Same launch as the counts;
// a bucket's first and last position may lie in different blocks, hence rows of their own.
extern "C" __global__ void sketch_buckets(const u32* __restrict__ comp, i64 n, int g,
                                          const i64* __restrict__ cnt,
                                          const i64* __restrict__ shift,
                                          const u64* __restrict__ offsets, i64 m,
                                          i64* __restrict__ out) {
    __shared__ u32 warp_sums[32];
    const i64 total = n * (i64)g;
    const i64 p0 = ((i64)blockIdx.x * blockDim.x + threadIdx.x) * BUCKET_ITEMS;
    u32 incl;
    const u32 mine = thread_starts(comp, n, total, cnt, shift, p0, warp_sums, &incl);
    i64 b = (i64)offsets[blockIdx.x] + (i64)(incl - mine) - 1;    // the bucket before p0's
    for (int x = 0; x < (int)(threadIdx.x >> 5); ++x) b += warp_sums[x];
    i64 f = p0 / n, j = p0 - f * n;
    for (int i = 0; i < BUCKET_ITEMS && p0 + i < total; ++i) {
        const u32* k = comp + f * n;
        const i64 c = cnt[f];
        if (j < c) {
            const u32 s = (u32)shift[f];
            const u32 key = k[j];
            if (bucket_start(k, j, c, s)) {
                ++b;
                out[b] = (i64)((u64)key >> s);      // s may be 32: shift in 64 bits
                out[m + b] = (i64)key_bits(key);
                out[3 * m + b] = p0 + i;
            }
            if (j == c - 1 || bucket_start(k, j + 1, c, s)) {
                out[2 * m + b] = (i64)key_bits(key);
                out[4 * m + b] = p0 + i;
            }
        }
        if (++j == n) { j = 0; ++f; }
    }
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
