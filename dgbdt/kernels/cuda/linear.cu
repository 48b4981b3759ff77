// Piecewise-linear leaves (dgbdt.tree.linear; GBDT-PL): the linear histograms of a level's
// nodes, the leaves' ridge sums, and the linear leaves added to the margins. The CPU twins are
// dgbdt/kernels/cpu_linear.py's linear_histograms, leaf_sums and add_linear_leaves; every
// float64 term here is formed by the same operations in the same order (compiled with
// --fmad=false, so no multiply-add is contracted), and each summand is rounded once to a
// fixed-point integer with rint (round half to even, as numpy's), so the int64 sums equal the
// CPU's exactly, whatever the order of the atomic adds.
//
// First version: no shared memory and no barriers; every sum goes to global memory with a
// 64-bit integer atomicAdd (two's complement: a negative summand wraps like the CPU's int64
// add). That makes each thread's work independent of the others', which the CI test
// tests/test_linear_kernel_host.py relies on: it compiles this file as host C++ and runs the
// grid one thread after another.
//
// Conventions (cpu_linear's): raw float32 [n, F] the shard's rows; x~ = (x - center[f]) *
// inv_scale[f] (float64), 0 for a missing value or a feature that may not be a regressor
// (xmask[f] == 0); a node's slope part p~ = inv_sp[j] * sum_t coef[j, t] x~_{feat[j, t]}
// (feat -1 padded, D wide). Rows of node j: rows[seg_begin[nodes[j]] .. seg_end[nodes[j]]),
// cut into tiles of `tile` rows (tile_ptr: tile_offsets of cuda/tree.cu; common.cuh).
#include "common.cuh"

__device__ __forceinline__ double xtilde(const float* __restrict__ raw, u64 r, int F, int f,
                                         const unsigned char* __restrict__ xmask,
                                         const double* __restrict__ center,
                                         const double* __restrict__ inv_scale) {
    if (!xmask[f]) return 0.0;
    const float x = raw[r * (u64)F + (u64)f];
    if (x != x) return 0.0;
    return ((double)x - center[f]) * inv_scale[f];
}

__device__ __forceinline__ void add_q(u64* o, double v) {
    const i64 q = (i64)rint(v);
    if (q) atomicAdd(o, (u64)q);
}

// out [m, n_slots, 9] (zeroed by the caller) += each (row, feature) element's nine rounded
// summands (g, h, g p~, h p~, h p~^2, g x~, h x~, h p~ x~, h x~^2) in the slot of the row's
// symbol; p_only: only the four that depend on p~ (GP, HP, HPP, HPX), for a node whose
// others are its parent's minus its sibling's. g, h: float64 [n, K] (class k's column);
// grad int64 [n, 2] their fixed-point values (the plain histogram's summands). Thread el of a
// tile handles feature el % F of the tile's row el / F; p~ is recomputed per element (the
// same float64 operations each time, so the same value).
extern "C" __global__ void linear_histograms(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const double* __restrict__ g, const double* __restrict__ h, int K, int k,
        const i64* __restrict__ grad, const float* __restrict__ raw,
        const double* __restrict__ center, const double* __restrict__ inv_scale,
        const unsigned char* __restrict__ xmask, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes,
        const i64* __restrict__ reg_feat, const double* __restrict__ reg_coef,
        const double* __restrict__ inv_sp, int D, double sg, double sh, int n_slots,
        const i64* __restrict__ tile_ptr, int m, int tile, int p_only,
        u64* __restrict__ out) {
    const i64 total = tile_ptr[m];
    const int F = n_features;
    for (i64 t = blockIdx.x; t < total; t += gridDim.x) {
        const int j = tile_node(tile_ptr, m, t);
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[node] ? rb + tile : seg_end[node];
        const i64 n_el = (re - rb) * F;
        const i64* rf = reg_feat + (i64)j * D;
        const double* rc = reg_coef + (i64)j * D;
        for (i64 el = threadIdx.x; el < n_el; el += blockDim.x) {
            const i64 ri = el / F;
            const int f = (int)(el - ri * F);
            const u64 r = (u32)rows[rb + ri];
            double acc = 0.0;
            for (int q = 0; q < D; ++q) {
                const i64 fr = rf[q];
                if (fr < 0) break;
                acc += rc[q] * xtilde(raw, r, F, (int)fr, xmask, center, inv_scale);
            }
            const double pt = acc * inv_sp[j];
            const double gs = g[r * (u64)K + (u64)k] * sg;
            const double hs = h[r * (u64)K + (u64)k] * sh;
            const double hps = hs * pt;
            const u32 sym = read_symbol(words, r * (u64)F + (u64)f, bits, mask);
            u64* o = out + (((i64)j * n_slots) + hist_ptrs[f] + (i64)sym) * 9;
            add_q(o + 2, gs * pt);
            add_q(o + 3, hps);
            add_q(o + 4, hps * pt);
            const double xt = xtilde(raw, r, F, f, xmask, center, inv_scale);
            if (p_only) {
                if (xt != 0.0) add_q(o + 7, hps * xt);
                continue;
            }
            const i64 q0 = grad[2 * r], q1 = grad[2 * r + 1];
            if (q0) atomicAdd(o, (u64)q0);
            if (q1) atomicAdd(o + 1, (u64)q1);
            if (xt != 0.0) {
                const double hx = hs * xt;
                add_q(o + 5, gs * xt);
                add_q(o + 6, hx);
                add_q(o + 7, hps * xt);
                add_q(o + 8, hx * xt);
            }
        }
    }
}

// The upper triangle of each leaf's ridge sums: out [Lf, D + 1, D + 2] (zeroed by the
// caller) entry (a, b <= a..D) += rint(h z_a z_b sh) and (a, D + 1) += rint(g z_a sg) over the
// leaf's rows, z = (1, x~ of the leaf's regressors feats [Lf, D], -1 padded; a missing value
// 0; no xmask: regressors only). Thread e of a tile sums entry e (of the n_entries = (D + 1)
// (D + 2) / 2 + D + 1 entries, upper triangle row by row, then the g column) over the tile's
// rows in a register and adds it once: few atomics, and a warp's threads read the same row.
// The caller mirrors the lower triangle (cpu_linear.leaf_sums).
__device__ __forceinline__ double zval(const float* __restrict__ raw, u64 r, int F,
                                       const i64* __restrict__ fl,
                                       const double* __restrict__ center,
                                       const double* __restrict__ inv_scale, int a) {
    if (a == 0) return 1.0;
    const i64 f = fl[a - 1];
    if (f < 0) return 0.0;
    const float x = raw[r * (u64)F + (u64)f];
    if (x != x) return 0.0;
    return ((double)x - center[f]) * inv_scale[f];
}

extern "C" __global__ void linear_leaf_sums(
        const int* __restrict__ rows, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ leaves,
        const float* __restrict__ raw, int F, const double* __restrict__ g,
        const double* __restrict__ h, int K, int k, const double* __restrict__ center,
        const double* __restrict__ inv_scale, const i64* __restrict__ feats, int D, double sg,
        double sh, const i64* __restrict__ tile_ptr, int m, int tile,
        u64* __restrict__ out) {
    const int n_tri = (D + 1) * (D + 2) / 2;
    const int n_entries = n_tri + D + 1;
    const i64 total = tile_ptr[m] * n_entries;
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x; w < total; w += stride) {
        const i64 t = w / n_entries;
        const int e = (int)(w - t * n_entries);
        const int j = tile_node(tile_ptr, m, t);
        const i64 leaf = leaves[j];
        const i64 rb = seg_begin[leaf] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[leaf] ? rb + tile : seg_end[leaf];
        const i64* fl = feats + (i64)j * D;
        int a, b;
        bool col = e >= n_tri;
        if (col) {
            a = e - n_tri;
            b = D + 1;
        } else {          // entry e of the upper triangle, rows a = 0.. of D + 1 - a entries
            a = 0;
            int rest = e;
            while (rest >= D + 1 - a) { rest -= D + 1 - a; ++a; }
            b = a + rest;
        }
        if ((a > 0 && fl[a - 1] < 0) || (!col && b > 0 && fl[b - 1] < 0))
            continue;     // a padded regressor: z = 0, every summand rint(0) = 0
        i64 s = 0;
        for (i64 i = rb; i < re; ++i) {
            const u64 r = (u32)rows[i];
            const double za = zval(raw, r, F, fl, center, inv_scale, a);
            if (col) {
                s += (i64)rint(g[r * (u64)K + (u64)k] * za * sg);
            } else {
                const double zb = zval(raw, r, F, fl, center, inv_scale, b);
                s += (i64)rint(h[r * (u64)K + (u64)k] * za * zb * sh);
            }
        }
        if (s) atomicAdd(out + ((i64)j * (D + 1) + a) * (D + 2) + b, (u64)s);
    }
}

// margin[r, k] += the linear value of each row's leaf j: coef[begin[j]] + sum_t coef[bt]
// ((x - center[bt]) * inv_scale[bt]), bt = begin[j] + t, t = 1..size[j], x = raw[r, feat[bt]],
// a missing x's term left out: cpu_linear._leaf_value's operations in its order. One thread a
// row (each row is in one leaf: one writer a margin).
extern "C" __global__ void add_linear_leaves(
        double* __restrict__ margin, int K, int k, const int* __restrict__ rows,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ leaves, const float* __restrict__ raw, int F,
        const i64* __restrict__ begin, const i64* __restrict__ size,
        const double* __restrict__ coef, const i64* __restrict__ feat,
        const double* __restrict__ center, const double* __restrict__ inv_scale,
        const i64* __restrict__ tile_ptr, int m, int tile) {
    const i64 total = tile_ptr[m];
    for (i64 t = blockIdx.x; t < total; t += gridDim.x) {
        const int j = tile_node(tile_ptr, m, t);
        const i64 leaf = leaves[j];
        const i64 rb = seg_begin[leaf] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[leaf] ? rb + tile : seg_end[leaf];
        const i64 b0 = begin[j], d = size[j];
        for (i64 i = rb + threadIdx.x; i < re; i += blockDim.x) {
            const u64 r = (u32)rows[i];
            double v = coef[b0];
            for (i64 q = 1; q <= d; ++q) {
                const float x = raw[r * (u64)F + (u64)feat[b0 + q]];
                if (x == x) v += coef[b0 + q] * (((double)x - center[b0 + q]) * inv_scale[b0 + q]);
            }
            margin[r * (u64)K + (u64)k] += v;
        }
    }
}
