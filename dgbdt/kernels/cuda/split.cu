// Split evaluation on merged integer histograms: the loop of dgbdt/kernels/cpu_split.py, in
// parallel over (feature, node), with the same float64 arithmetic in the same order (compiled
// with --fmad=false, so no fused multiply-adds) and the same tie rule, hence the same splits.
#include "common.cuh"
#include "gain.cuh"

// Decode node j's best key: out int64 [m, 6] row j = (float32 gain bits, feature (-1: none),
// split_bin, default_left, left G, left H), the left sums recomputed from the histogram. One
// warp (lane = its lane): the lanes sum the split's bins 32 apart and a shuffle adds the lanes
// (exact integers, so any order gives the same sums); one thread walking up to 256 bins waited
// on each load in turn, ~40 us a level at any row count.
__device__ __forceinline__ void finish_node(
        const i64* __restrict__ hist, int n_slots, const i64* __restrict__ hist_ptrs,
        const i64* __restrict__ totals, int nb_max, int j, u64 key, int lane,
        i64* __restrict__ out) {
    i64* o = out + 6 * (i64)j;
    if (key == 0) {
        if (lane == 0) { o[0] = 0; o[1] = -1; o[2] = 0; o[3] = 0; o[4] = 0; o[5] = 0; }
        return;
    }
    const u64 idx = (u64)(0xffffffffu - (u32)(key & 0xffffffffu));
    const int f = (int)(idx / (2 * (u64)nb_max));
    const int local = (int)(idx - (u64)f * 2 * (u64)nb_max);
    const i64 p0 = hist_ptrs[f];
    const int nb = (int)(hist_ptrs[f + 1] - p0 - 1);
    const i64* H = hist + ((i64)j * n_slots + p0) * 2;
    const bool forward = local < nb;    // forward: bins 0..local left; else bins i..nb-1 right
    const int i = forward ? 0 : nb - 1 - (local - nb);
    const int lo = forward ? 0 : i, hi = forward ? local + 1 : nb;
    i64 g = 0, h = 0;
    for (int b = lo + lane; b < hi; b += 32) { g += H[2 * b]; h += H[2 * b + 1]; }
    for (int d = 16; d > 0; d >>= 1) {
        g += __shfl_xor_sync(0xffffffffu, g, d);
        h += __shfl_xor_sync(0xffffffffu, h, d);
    }
    if (lane) return;
    o[0] = (i64)(key >> 32);
    o[1] = f;
    if (forward) {
        o[2] = local; o[3] = 0; o[4] = g; o[5] = h;
    } else {
        o[2] = i - 1; o[3] = 1; o[4] = totals[2 * j] - g; o[5] = totals[2 * j + 1] - h;
    }
}

// finish_node for every node, a warp each (a level whose evaluation had no features to scan).
extern "C" __global__ void finish_splits(
        const i64* __restrict__ hist, int n_slots, const i64* __restrict__ hist_ptrs,
        const i64* __restrict__ totals, int nb_max, int m, const u64* __restrict__ best,
        i64* __restrict__ out) {
    const i64 gid = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const int j = (int)(gid >> 5);
    if (j >= m) return;                 // whole warps leave together: m is per warp
    finish_node(hist, n_slots, hist_ptrs, totals, nb_max, j, best[j], threadIdx.x & 31, out);
}

// Candidates of one feature in the CPU's scan order: forward b = 0..nb-1 (index b), then, if
// the node has missing values of the feature, backward i = nb-1..0 (index nb + nb-1-i, split
// bin i-1). The CPU keeps the first candidate of the largest float32 gain > 0; here every
// candidate with gain > 0 posts key = gain bits << 32 | ~(f * 2 * nb_max + index) with
// atomicMax (positive float32 bits order like the floats), which selects the same one.
//
// Grid (features, nodes); a block scans its feature's bins in chunks of blockDim (a block
// prefix sum of the int64 pairs, carried between chunks). The node's last block writes its row
// of out (finish_node).
extern "C" __global__ void evaluate_splits(
        const i64* __restrict__ hist, int n_slots, const i64* __restrict__ hist_ptrs,
        const i64* __restrict__ totals, const double* __restrict__ consts, double lam,
        double alpha, double max_delta_step, double min_child_weight, int nb_max,
        u64* __restrict__ best, i64* __restrict__ out) {
    GainParams p;    // consts: the tree's constants (TREE_CONSTS in dgbdt/backends/cuda.py)
    p.inv_sg = consts[2]; p.inv_sh = consts[3]; p.lam = lam; p.alpha = alpha;
    p.max_delta_step = max_delta_step; p.min_child_weight = min_child_weight;
    __shared__ i64 wg[32], wh[32];
    __shared__ i64 carry_g, carry_h;
    __shared__ u64 wbest[32];
    const int f = blockIdx.x, j = blockIdx.y;
    const i64 p0 = hist_ptrs[f];
    const int nb = (int)(hist_ptrs[f + 1] - p0 - 1);
    const i64* H = hist + ((i64)j * n_slots + p0) * 2;
    const i64 tg = totals[2 * j], th = totals[2 * j + 1];
    const double parent = node_gain(tg * p.inv_sg, th * p.inv_sh, p);
    const bool has_missing = H[2 * nb] != 0 || H[2 * nb + 1] != 0;
    const i64 fs_g = tg - H[2 * nb], fs_h = th - H[2 * nb + 1];   // non-missing sums
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const u64 base = (u64)f * 2 * (u64)nb_max;
    u64 mine = 0;
    if (threadIdx.x == 0) { carry_g = 0; carry_h = 0; }
    __syncthreads();
    for (int c0 = 0; c0 < nb; c0 += blockDim.x) {
        const int bin = c0 + threadIdx.x;
        i64 vg = 0, vh = 0;
        if (bin < nb) { vg = H[2 * bin]; vh = H[2 * bin + 1]; }
        const i64 sg = warp_inclusive_scan(vg), sh = warp_inclusive_scan(vh);
        if (lane == 31) { wg[warp] = sg; wh[warp] = sh; }
        __syncthreads();
        i64 pg = carry_g, ph = carry_h;
        for (int w = 0; w < warp; ++w) { pg += wg[w]; ph += wh[w]; }
        const i64 lg = pg + sg, lh = ph + sh;          // bins 0..bin
        if (bin < nb) {
            // forward: bins 0..bin left, the rest (missing included) right
            double hl = lh * p.inv_sh, hr = (th - lh) * p.inv_sh;
            if (hl >= p.min_child_weight && hr >= p.min_child_weight) {
                const float gain = (float)(node_gain(lg * p.inv_sg, hl, p)
                                           + node_gain((tg - lg) * p.inv_sg, hr, p) - parent);
                if (gain > 0.0f) {
                    const u64 key = ((u64)__float_as_uint(gain) << 32)
                                    | (u64)(0xffffffffu - (u32)(base + bin));
                    if (key > mine) mine = key;
                }
            }
            if (has_missing) {
                // backward: bins bin..nb-1 right, the rest (missing included) left
                const i64 rg = fs_g - (lg - vg), rh = fs_h - (lh - vh);
                hr = rh * p.inv_sh;
                hl = (th - rh) * p.inv_sh;
                if (hl >= p.min_child_weight && hr >= p.min_child_weight) {
                    const float gain = (float)(node_gain((tg - rg) * p.inv_sg, hl, p)
                                               + node_gain(rg * p.inv_sg, hr, p) - parent);
                    if (gain > 0.0f) {
                        const u64 key = ((u64)__float_as_uint(gain) << 32)
                                        | (u64)(0xffffffffu - (u32)(base + nb + (nb - 1 - bin)));
                        if (key > mine) mine = key;
                    }
                }
            }
        }
        __syncthreads();
        if (threadIdx.x == blockDim.x - 1) { carry_g = lg; carry_h = lh; }
        __syncthreads();
    }
    for (int o = 16; o > 0; o >>= 1) {
        const u64 other = __shfl_xor_sync(0xffffffffu, mine, o);
        if (other > mine) mine = other;
    }
    if (lane == 0) wbest[warp] = mine;
    __syncthreads();
    __shared__ bool last;
    if (threadIdx.x == 0) {
        u64 top = 0;
        for (int w = 0; w < nwarps; ++w) if (wbest[w] > top) top = wbest[w];
        if (top) atomicMax(best + j, top);
        // the node's last block to finish decodes its best key (finish_node), where a launch
        // of its own each level cost more than the work: best [2m] holds the keys, then each
        // node's count of blocks done (both zeroed by the caller)
        __threadfence();
        last = atomicAdd(best + gridDim.y + j, 1ull) == (u64)(gridDim.x - 1);
    }
    __syncthreads();
    if (!last || threadIdx.x >= 32) return;
    __threadfence();
    const u64 key = atomicOr(best + j, 0ull);     // every block's atomicMax, past any cache
    finish_node(hist, n_slots, hist_ptrs, totals, nb_max, j, key, threadIdx.x, out);
}

