// Device-wide exclusive prefix sums and a stable LSD radix sort (dgbdt/kernels/gpu_sort.py),
// prebuilt: CuPy's cumsum and argsort compile their kernels with NVRTC at first use, which a
// fresh GPU's first fit with an auc eval set paid (0.1 s each).
#include "common.cuh"
#include "scan.cuh"

#define SCAN_TILE 4096     // elements a block sums or scans
#define RADIX_TILE 4096    // keys a block counts and scatters
#define RADIX_WARPS 8      // radix_scatter's block: 256 threads

// sums[b] = a[bT] + ... + a[min((b + 1)T, n) - 1], T = SCAN_TILE (u64: wraps as numpy's int64)
extern "C" __global__ void tile_totals(const u64* __restrict__ a, i64 n, u64* __restrict__ sums) {
    __shared__ u64 part[32];
    const i64 t0 = (i64)blockIdx.x * SCAN_TILE;
    const i64 t1 = t0 + SCAN_TILE < n ? t0 + SCAN_TILE : n;
    u64 acc = 0;
    for (i64 i = t0 + threadIdx.x; i < t1; i += blockDim.x) acc += a[i];
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, d);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 s = 0;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += part[w];
        sums[blockIdx.x] = s;
    }
}

// sums[0..m) becomes its exclusive prefix sums and *total their sum. One block.
extern "C" __global__ void scan_totals(u64* sums, i64 m, u64* total) {
    const u64 t = block_exclusive_scan(sums, m);
    if (threadIdx.x == 0) *total = t;
}

// out[i] = offsets[b] + a[bT] + ... + a[i - 1] for i in tile b (out may be a: in place)
extern "C" __global__ void tile_scan(const u64* a, i64 n, const u64* __restrict__ offsets,
                                     u64* out) {
    const i64 t0 = (i64)blockIdx.x * SCAN_TILE;
    const i64 len = n - t0 < SCAN_TILE ? n - t0 : SCAN_TILE;
    if (out != a)
        for (i64 i = threadIdx.x; i < len; i += blockDim.x) out[t0 + i] = a[t0 + i];
    __syncthreads();
    block_exclusive_scan(out + t0, len);
    const u64 off = offsets[blockIdx.x];
    for (i64 i = threadIdx.x; i < len; i += blockDim.x) out[t0 + i] += off;
}

// keys[i]: the bits of score[i] (float64) as an unsigned integer of the same order (negative
// values' bits flipped, the sign bit set on the others; NaN last, as numpy sorts it);
// vals[i] = i
extern "C" __global__ void f64_sort_keys(const u64* __restrict__ score, i64 n,
                                         u64* __restrict__ keys, i64* __restrict__ vals) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const u64 b = score[i];
        keys[i] = (b >> 63) ? ~b : (b | 0x8000000000000000ull);
        vals[i] = i;
    }
}

// counts[d * B + b] = the keys of tile b (RADIX_TILE keys, B = gridDim.x tiles) whose digit
// (bits [shift, shift + 8)) is d
extern "C" __global__ void radix_counts(const u64* __restrict__ keys, i64 n, int shift,
                                        u64* __restrict__ counts) {
    __shared__ u32 c[256];
    for (int d = threadIdx.x; d < 256; d += blockDim.x) c[d] = 0;
    __syncthreads();
    const i64 t0 = (i64)blockIdx.x * RADIX_TILE;
    const i64 t1 = t0 + RADIX_TILE < n ? t0 + RADIX_TILE : n;
    for (i64 i = t0 + threadIdx.x; i < t1; i += blockDim.x)
        atomicAdd(&c[(u32)(keys[i] >> shift) & 255u], 1u);
    __syncthreads();
    for (int d = threadIdx.x; d < 256; d += blockDim.x)
        counts[(i64)d * gridDim.x + blockIdx.x] = c[d];
}

// One stable pass: tile b's keys (and their vals) go to offsets[d * B + b] (radix_counts'
// counts, exclusively scanned) onwards, in their order within the tile for each digit d.
// 256 threads take the tile 256 keys at a time; a key's place among the equal digits of its
// round is its rank in its warp (__match_any_sync) plus the counts of the warps before.
extern "C" __global__ void radix_scatter(const u64* __restrict__ keys,
                                         const i64* __restrict__ vals, i64 n, int shift,
                                         const u64* __restrict__ offsets,
                                         u64* __restrict__ keys_out, i64* __restrict__ vals_out) {
    __shared__ u64 base[256];                 // where each digit's next key goes
    __shared__ u32 wc[RADIX_WARPS][256];      // this round's keys of each digit, by warp
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int d = threadIdx.x; d < 256; d += blockDim.x)
        base[d] = offsets[(i64)d * gridDim.x + blockIdx.x];
    const i64 t0 = (i64)blockIdx.x * RADIX_TILE;
    const i64 t1 = t0 + RADIX_TILE < n ? t0 + RADIX_TILE : n;
    for (i64 r0 = t0; r0 < t1; r0 += RADIX_WARPS * 32) {
        for (int k = threadIdx.x; k < RADIX_WARPS * 256; k += blockDim.x) (&wc[0][0])[k] = 0;
        __syncthreads();
        const i64 i = r0 + threadIdx.x;
        const bool live = i < t1;
        u64 key = 0;
        i64 val = 0;
        u32 d = 256u;         // no digit: a lane past the end
        if (live) {
            key = keys[i];
            val = vals[i];
            d = (u32)(key >> shift) & 255u;
        }
        const u32 peers = __match_any_sync(0xffffffffu, d);
        const u32 below = __popc(peers & ((1u << lane) - 1u));
        if (live && below == 0) wc[w][d] = __popc(peers);
        __syncthreads();
        if (live) {
            u64 pos = base[d] + below;
            for (int v = 0; v < w; ++v) pos += wc[v][d];
            keys_out[pos] = key;
            vals_out[pos] = val;
        }
        __syncthreads();
        for (int dd = threadIdx.x; dd < 256; dd += blockDim.x) {
            u32 s = 0;
            for (int v = 0; v < RADIX_WARPS; ++v) s += wc[v][dd];
            base[dd] += s;
        }
        __syncthreads();
    }
}
