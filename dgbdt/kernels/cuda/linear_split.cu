// The split search of piecewise-linear trees (dgbdt.kernels.linear_math's half-additive gain) on the
// device: kernels/cpu_linear.py evaluate_linear_splits (_node_best) in parallel over (node,
// feature), with the same integer sums, the same float64 operations in the same order
// (side_score3's scalar 3x3 Cholesky; compiled with --fmad=false, so nothing is contracted;
// sqrt and / are IEEE-rounded in CUDA as on the CPU) and the same tie rule, so the chosen
// splits are the CPU's bit for bit. Only the winners (a row of 22 int64 a node) leave the
// device. The CI test tests/test_linear_split_host.py compiles this file as host C++ (a
// block's threads as host threads; shuffles through a barrier) against the numba kernel.
//
// Histograms: int64 [m, n_slots, 9], slot payload (g, h, g p~, h p~, h p~^2, g x~, h x~,
// h p~ x~, h x~^2) (dgbdt.kernels.linear_math.PAYLOAD); feature f's slots hist_ptrs[f] ..
// hist_ptrs[f + 1] - 1, the last one its missing values.
#include "common.cuh"

#define LIN_DROP 1e-9      // dgbdt.kernels.linear_math.DROP

// tree.linear._third: the x~ variable's step of side_score3.
__device__ __forceinline__ double lin_third(const i64* s, double inv_sg, double inv_sh,
                                            double lam1, bool k0, double l20, double y0,
                                            bool k1, double l21, double y1) {
    const double a22 = (double)s[8] * inv_sh + lam1;
    double d2 = a22;
    double sub = (double)s[5] * inv_sg;
    if (k0) {
        d2 -= l20 * l20;
        sub -= l20 * y0;
    }
    if (k1) {
        d2 -= l21 * l21;
        sub -= l21 * y1;
    }
    if (d2 > LIN_DROP * a22 && a22 > 0.0) {
        const double y2 = sub / sqrt(d2);
        return y2 * y2;
    }
    return 0.0;
}

// tree.linear.side_score3: b^T A^-1 b of one side's 9 sums in the basis (1, [p~], [x~]),
// a variable whose pivot falls below LIN_DROP of its diagonal dropped; 0 when H <= 0.
__device__ __forceinline__ double lin_side_score(const i64* s, double inv_sg, double inv_sh,
                                                 double lam0, double lam1, bool use_p,
                                                 bool use_x) {
    if (s[1] <= 0) return 0.0;
    const double a00 = (double)s[1] * inv_sh + lam0;
    const double b0 = (double)s[0] * inv_sg;
    double score = 0.0, y0 = 0.0, r0 = 0.0;
    const bool k0 = a00 > LIN_DROP * a00 && a00 > 0.0;
    if (k0) {
        r0 = sqrt(a00);
        y0 = b0 / r0;
        score += y0 * y0;
    }
    if (use_p) {
        double l10 = 0.0;
        const double a11 = (double)s[4] * inv_sh + lam1;
        const double a01 = (double)s[3] * inv_sh;
        double d1 = a11;
        if (k0) {
            l10 = a01 / r0;
            d1 -= l10 * l10;
        }
        if (d1 > LIN_DROP * a11 && a11 > 0.0) {
            const double r1 = sqrt(d1);
            const double ip = k0 ? l10 * y0 : 0.0;
            const double y1 = ((double)s[2] * inv_sg - ip) / r1;
            score += y1 * y1;
            if (use_x) {
                double l21num = (double)s[7] * inv_sh;
                double l20 = 0.0;
                if (k0) {
                    l20 = ((double)s[6] * inv_sh) / r0;
                    l21num -= l20 * l10;
                }
                const double l21 = l21num / r1;
                return score + lin_third(s, inv_sg, inv_sh, lam1, k0, l20, y0, true, l21, y1);
            }
        } else if (use_x) {
            const double l20 = k0 ? ((double)s[6] * inv_sh) / r0 : 0.0;
            return score + lin_third(s, inv_sg, inv_sh, lam1, k0, l20, y0, false, 0.0, 0.0);
        }
        return score;
    }
    if (use_x) {
        const double l20 = k0 ? ((double)s[6] * inv_sh) / r0 : 0.0;
        return score + lin_third(s, inv_sg, inv_sh, lam1, k0, l20, y0, false, 0.0, 0.0);
    }
    return score;
}

// A candidate's key for the per-node atomicMax: float32 gain bits << 32 | ~index, index the
// candidate's place in the CPU's scan order (features ascending; per feature forward bins
// 0..nb-1 (index b), then backward bins nb-1..0 (index nb + nb-1-b)). Gains > 0 only (the CPU's
// best starts at 0 and a candidate must beat it strictly; NaN never does); positive float32
// bits order as the floats, and of equal gains the smaller index has the larger key: the
// CPU's "ties keep the first".
__device__ __forceinline__ void lin_post(u64& mine, float gain, u64 index) {
    if (gain > 0.0f) {
        const u64 key = ((u64)__float_as_uint(gain) << 32) | (u64)(0xffffffffu - (u32)index);
        if (key > mine) mine = key;
    }
}

// The gain of one candidate (lft, rgt: its sides' 9 sums), as _node_best computes it: both
// sides' hessian >= min_child_weight, else none (-1: never posted).
__device__ __forceinline__ float lin_gain(const i64* lft, const i64* rgt, double inv_sg,
                                          double inv_sh, double lam0, double lam1,
                                          double min_child_weight, bool use_p, bool use_x,
                                          double parent) {
    if ((double)lft[1] * inv_sh < min_child_weight || (double)rgt[1] * inv_sh < min_child_weight)
        return -1.0f;
    return (float)(lin_side_score(lft, inv_sg, inv_sh, lam0, lam1, use_p, use_x)
                   + lin_side_score(rgt, inv_sg, inv_sh, lam0, lam1, use_p, use_x) - parent);
}

// Pass 1. Work item w = j * F + f (node j, feature f), a block an item (grid-stride over
// items; every __syncthreads is block-uniform). The block sums the feature's slots (its total
// `tot`, missing included), then scans its bins in chunks of blockDim (a block prefix sum of
// the 9 int64 sums, carried between chunks): thread `bin` scores the forward candidate (bins
// 0..bin left, the rest right) and, when the feature has missing values in the node (the
// missing slot's g or h nonzero), the backward one (bins bin..nb-1 right, the rest left). As
// on the CPU a bin whose 9 sums are all 0 is skipped unless it is its direction's first (its
// sides are the previous candidate's: the same gain, and the earlier one wins a tie anyway).
// The block's best key goes to best[j] by atomicMax (best zeroed by the caller).
// node_totals int64 [m, 9]: the node's own sums (before any slot zeroing: its score);
// addable uint8 [m, F]: x~_f enters the basis; has_p uint8 [m]: p~ does. blockDim: a multiple
// of 32, at most 1024.
extern "C" __global__ void linear_split_scan(
        const i64* __restrict__ hist, int n_slots, const i64* __restrict__ hist_ptrs, int F,
        const i64* __restrict__ node_totals, const unsigned char* __restrict__ addable,
        const unsigned char* __restrict__ has_p, const double* __restrict__ consts,
        double lam0, double lam1, double min_child_weight, int nb_max, int m,
        u64* __restrict__ best) {
    const double inv_sg = consts[2], inv_sh = consts[3];   // the tree's 1 / scales
    __shared__ i64 wsum[32 * 9];
    __shared__ i64 tot[9];
    __shared__ i64 carry[9];
    __shared__ u64 wbest[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const i64 n_items = (i64)m * F;
    for (i64 w = blockIdx.x; w < n_items; w += gridDim.x) {
        const int j = (int)(w / F), f = (int)(w - (i64)j * F);
        const i64 p0 = hist_ptrs[f];
        const int nb = (int)(hist_ptrs[f + 1] - p0 - 1);
        const i64* H = hist + ((i64)j * n_slots + p0) * 9;
        const bool use_p = has_p[j] != 0, use_x = addable[w] != 0;
        i64 v[9], acc[9];
        for (int c = 0; c < 9; ++c) v[c] = node_totals[(i64)j * 9 + c];
        const double parent = lin_side_score(v, inv_sg, inv_sh, lam0, lam1, use_p, false);
        // the feature's total over its nb + 1 slots (integers: any order)
        for (int c = 0; c < 9; ++c) acc[c] = 0;
        for (int s = threadIdx.x; s <= nb; s += blockDim.x)
            for (int c = 0; c < 9; ++c) acc[c] += H[(i64)s * 9 + c];
        for (int c = 0; c < 9; ++c) {
            i64 a = acc[c];
            for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
            if (lane == 0) wsum[warp * 9 + c] = a;
        }
        __syncthreads();
        if (threadIdx.x < 9) {
            i64 a = 0;
            for (int q = 0; q < nwarps; ++q) a += wsum[q * 9 + threadIdx.x];
            tot[threadIdx.x] = a;
            carry[threadIdx.x] = 0;
        }
        __syncthreads();
        const bool missing = H[(i64)nb * 9] != 0 || H[(i64)nb * 9 + 1] != 0;
        const u64 base = (u64)f * 2 * (u64)nb_max;
        u64 mine = 0;
        for (int c0 = 0; c0 < nb; c0 += blockDim.x) {
            const int bin = c0 + threadIdx.x;
            bool empty = true;
            for (int c = 0; c < 9; ++c) {
                v[c] = bin < nb ? H[(i64)bin * 9 + c] : 0;
                empty = empty && v[c] == 0;
                acc[c] = warp_inclusive_scan(v[c]);
                if (lane == 31) wsum[warp * 9 + c] = acc[c];
            }
            __syncthreads();
            for (int c = 0; c < 9; ++c) {         // acc: the sums of bins 0..bin
                i64 pre = carry[c];
                for (int q = 0; q < warp; ++q) pre += wsum[q * 9 + c];
                acc[c] += pre;
            }
            if (bin < nb) {
                i64 lft[9], rgt[9];
                if (bin == 0 || !empty) {         // forward: bins 0..bin left
                    for (int c = 0; c < 9; ++c) {
                        lft[c] = acc[c];
                        rgt[c] = tot[c] - acc[c];
                    }
                    lin_post(mine, lin_gain(lft, rgt, inv_sg, inv_sh, lam0, lam1,
                                            min_child_weight, use_p, use_x, parent),
                             base + (u64)bin);
                }
                if (missing && (bin == nb - 1 || !empty)) {   // backward: bins bin..nb-1 right
                    for (int c = 0; c < 9; ++c) {
                        rgt[c] = (tot[c] - H[(i64)nb * 9 + c]) - (acc[c] - v[c]);
                        lft[c] = tot[c] - rgt[c];
                    }
                    lin_post(mine, lin_gain(lft, rgt, inv_sg, inv_sh, lam0, lam1,
                                            min_child_weight, use_p, use_x, parent),
                             base + (u64)nb + (u64)(nb - 1 - bin));
                }
            }
            __syncthreads();
            if (threadIdx.x == blockDim.x - 1)
                for (int c = 0; c < 9; ++c) carry[c] = acc[c];
            __syncthreads();
        }
        for (int o = 16; o > 0; o >>= 1) {
            const u64 other = __shfl_xor_sync(0xffffffffu, mine, o);
            if (other > mine) mine = other;
        }
        if (lane == 0) wbest[warp] = mine;
        __syncthreads();
        if (threadIdx.x == 0) {
            u64 top = 0;
            for (int q = 0; q < nwarps; ++q) if (wbest[q] > top) top = wbest[q];
            if (top) atomicMax(best + j, top);
        }
        __syncthreads();      // wsum, tot, carry, wbest are reused by the next item
    }
}

// A warp's sum of v (every lane gets it): int64, exact in any order.
__device__ __forceinline__ i64 warp_sum_i64(i64 v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Pass 2: each node's winner decoded into out int64 [m, 22]: float32 gain bits, feature (-1:
// none), split bin, default left, the left side's 9 sums, the right side's 9 sums (the
// feature's total minus the left: what cpu_linear.feature_totals minus the left gives; for a
// node without a split feature 0's total, the left 0, as the CPU's). A block a node: its
// threads sum the feature's bins (the total, and the left side's bins) in registers, then
// the block adds the partial sums (integers: the same in any order). blockDim: at most 1024.
extern "C" __global__ void linear_split_finish(
        const i64* __restrict__ hist, int n_slots, const i64* __restrict__ hist_ptrs,
        int nb_max, int m, const u64* __restrict__ best, i64* __restrict__ out) {
    __shared__ i64 part[32 * 18];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (i64 j = blockIdx.x; j < m; j += gridDim.x) {
        const u64 key = best[j];
        int f = 0, local = -1;
        if (key) {
            const u64 idx = (u64)(0xffffffffu - (u32)(key & 0xffffffffu));
            f = (int)(idx / (2 * (u64)nb_max));
            local = (int)(idx - (u64)f * 2 * (u64)nb_max);
        }
        const i64 p0 = hist_ptrs[f];
        const int nb = (int)(hist_ptrs[f + 1] - p0 - 1);
        const i64* H = hist + (j * n_slots + p0) * 9;
        // the left side's bins: forward 0..local; backward (bins i..nb-1 go right) the others
        const bool fwd = key && local < nb;
        const int i = key && !fwd ? nb - 1 - (local - nb) : 0;
        i64 tot[9], side[9];
        for (int c = 0; c < 9; ++c) { tot[c] = 0; side[c] = 0; }
        for (int s = threadIdx.x; s <= nb; s += blockDim.x) {
            const bool left = key && (fwd ? s <= local : (s < i || s == nb));
            for (int c = 0; c < 9; ++c) {
                const i64 v = H[(i64)s * 9 + c];
                tot[c] += v;
                if (left) side[c] += v;
            }
        }
        for (int c = 0; c < 9; ++c) {
            tot[c] = warp_sum_i64(tot[c]);
            side[c] = warp_sum_i64(side[c]);
        }
        if (lane == 0)
            for (int c = 0; c < 9; ++c) {
                part[warp * 18 + c] = tot[c];
                part[warp * 18 + 9 + c] = side[c];
            }
        __syncthreads();
        if (threadIdx.x < 18) {
            i64 v = 0;
            for (int w = 0; w < nwarps; ++w) v += part[w * 18 + threadIdx.x];
            part[threadIdx.x] = v;        // warp 0's row: read by its own thread only
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            i64* o = out + 22 * j;
            o[0] = (i64)(key >> 32);
            o[1] = key ? f : -1;
            o[2] = !key ? 0 : fwd ? local : i - 1;
            o[3] = key && !fwd ? 1 : 0;
            for (int c = 0; c < 9; ++c) {
                o[4 + c] = part[9 + c];
                o[13 + c] = part[c] - part[9 + c];
            }
        }
        __syncthreads();
    }
}

// Each node's own sums: out[j, c] = sum of hist[j, s, c] over slots s of [s0, s1) (every
// feature's slots hold a node's rows once; the caller passes feature 0's, as the host
// grower's node_totals). A block a node: its threads sum slots in registers, then warps and
// the block add the partial sums (integers: the same in any order). blockDim: a multiple of
// 32, at most 1024.
extern "C" __global__ void linear_node_totals(
        const i64* __restrict__ hist, int n_slots, int s0, int s1, int m,
        i64* __restrict__ out) {
    __shared__ i64 part[32 * 9];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    for (i64 j = blockIdx.x; j < m; j += gridDim.x) {
        const i64* H = hist + j * n_slots * 9;
        i64 tot[9];
        for (int c = 0; c < 9; ++c) tot[c] = 0;
        for (int s = s0 + threadIdx.x; s < s1; s += blockDim.x)
            for (int c = 0; c < 9; ++c) tot[c] += H[(i64)s * 9 + c];
        for (int c = 0; c < 9; ++c) tot[c] = warp_sum_i64(tot[c]);
        if (lane == 0)
            for (int c = 0; c < 9; ++c) part[warp * 9 + c] = tot[c];
        __syncthreads();
        if (threadIdx.x < 9) {
            i64 v = 0;
            for (int w = 0; w < nwarps; ++w) v += part[w * 9 + threadIdx.x];
            out[j * 9 + threadIdx.x] = v;
        }
        __syncthreads();
    }
}
