// Piecewise-linear leaves (dgbdt.kernels.linear_math; GBDT-PL): the linear histograms of a level's
// nodes, the leaves' ridge sums, and the linear leaves added to the margins. The CPU twins are
// dgbdt/kernels/cpu_linear.py's linear_histograms, leaf_sums and add_linear_leaves; every
// float64 term here is formed by the same operations in the same order (compiled with
// --fmad=false, so no multiply-add is contracted), and each summand is rounded once to a
// fixed-point integer with rint (round half to even, as numpy's), so the int64 sums equal the
// CPU's exactly, whatever the order of the atomic adds.
//
// Sums are added with 64-bit integer atomics, in shared memory as two 32-bit ones
// (shared_add64) (two's complement: a negative summand wraps like the CPU's int64 add). The
// CI test tests/test_linear_kernel_host.py compiles this file as host C++ and runs each
// block's threads as host threads (a barrier for __syncthreads, host atomics), against the
// numba kernels.
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

// A row's part of its elements' summands (the same for each of its features), from its
// record (linear_ptilde): gs, hs the scaled g and h of class k, hps = hs p~, and the summands
// g, h, g p~, h p~, h p~^2 (q[0..5); g and h 0 with p_only: the p~ pass sums only GP, HP,
// HPP, HPX). cpu_linear's operations in its order.
struct RowTerms {
    double gs, hs, hps;
    i64 q[5];
};

__device__ __forceinline__ RowTerms row_terms(const double* __restrict__ rec,
                                             const i64* __restrict__ recq, i64 i, int p_only) {
    RowTerms t;
    t.gs = rec[3 * i];
    t.hs = rec[3 * i + 1];
    const double pt = rec[3 * i + 2];
    t.hps = t.hs * pt;
    t.q[0] = p_only ? 0 : recq[2 * i];
    t.q[1] = p_only ? 0 : recq[2 * i + 1];
    t.q[2] = (i64)rint(t.gs * pt);
    t.q[3] = (i64)rint(t.hps);
    t.q[4] = (i64)rint(t.hps * pt);
    return t;
}

// The element's own summands q[5..9) (g x~, h x~, h p~ x~, h x~^2; with p_only only h p~ x~),
// 0 where cpu_linear adds nothing (x~ = 0: missing, or not a regressor).
__device__ __forceinline__ void feature_terms(const RowTerms& t, double xt, int p_only,
                                              i64* q) {
    q[5] = q[6] = q[7] = q[8] = 0;
    if (xt == 0.0) return;
    q[7] = (i64)rint(t.hps * xt);
    if (!p_only) {
        const double hx = t.hs * xt;
        q[5] = (i64)rint(t.gs * xt);
        q[6] = (i64)rint(hx);
        q[8] = (i64)rint(hx * xt);
    }
}

// The nine rounded summands of the element (row at position i of rows, feature f) (q[0..9):
// row_terms' and feature_terms') and its symbol.
__device__ __forceinline__ u32 element_summands(
        const u32* __restrict__ words, int bits, u32 mask, int F, u64 r, int f, i64 i,
        const double* __restrict__ rec, const i64* __restrict__ recq,
        const float* __restrict__ raw, const double* __restrict__ center,
        const double* __restrict__ inv_scale, const unsigned char* __restrict__ xmask,
        int p_only, i64* q) {
    const RowTerms t = row_terms(rec, recq, i, p_only);
    for (int c = 0; c < 5; ++c) q[c] = t.q[c];
    feature_terms(t, xtilde(raw, r, F, f, xmask, center, inv_scale), p_only, q);
    return read_symbol(words, r * (u64)F + (u64)f, bits, mask);
}

// *p += v (mod 2^64) in shared memory as two native 32-bit atomics: the low word's add
// returns its old value, whose carry goes with the high word's add (XGBoost's
// AtomicAdd64As32; a 64-bit shared atomicAdd is a compare-and-swap loop on Hopper: measured
// 1.8x slower for this kernel, benchmarks/lab/linear_hist_lab.py). Integer sums, so the
// result is the same in any order; little-endian: the low word first.
__device__ __forceinline__ void shared_add64(u64* p, u64 v) {
    u32* w = reinterpret_cast<u32*>(p);
    const u32 lo = (u32)v, hi = (u32)(v >> 32);
    const u32 old = atomicAdd(w, lo);
    const u32 up = hi + (old > 0xffffffffu - lo ? 1u : 0u);
    if (up) atomicAdd(w + 1, up);
}

// Each row's record for the histogram kernels, at its position i in rows (the nodes'
// segments: a level's smaller children, then from p_from on its larger ones): rec[i] =
// (g sg, h sh, p~) of class k (float64 [n, 3]) and recq[i] = the row's fixed-point g and h
// (int64 [n, 2]; not for the larger children's p~ pass, whose sums leave them out), p~ =
// (sum_t reg_coef[j, t] x~(r, reg_feat[j, t])) inv_sp[j] over node j's regressors (-1
// padded): cpu_linear's operations in its order. So the histogram kernels read a row's
// gradients and p~ in the order they take the rows (coalesced, once), not gathered by row id
// for each feature group. Tiles as the histogram kernels'.
extern "C" __global__ void linear_ptilde(
        const int* __restrict__ rows, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes,
        const i64* __restrict__ tile_ptr, int m, int tile, const float* __restrict__ raw,
        int F, const double* __restrict__ center, const double* __restrict__ inv_scale,
        const unsigned char* __restrict__ xmask, const i64* __restrict__ reg_feat,
        const double* __restrict__ reg_coef, const double* __restrict__ inv_sp, int D,
        const double* __restrict__ g, const double* __restrict__ h, int K, int k,
        const i64* __restrict__ grad, const double* __restrict__ consts, int p_from,
        double* __restrict__ rec, i64* __restrict__ recq) {
    const double sg = consts[0], sh = consts[1];   // the tree's scales (tree_consts)
    const i64 total = tile_ptr[m];
    for (i64 t = blockIdx.x; t < total; t += gridDim.x) {
        const int j = tile_node(tile_ptr, m, t);
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[node] ? rb + tile : seg_end[node];
        const i64* rf = reg_feat + (i64)j * D;
        const double* rc = reg_coef + (i64)j * D;
        for (i64 i = rb + threadIdx.x; i < re; i += blockDim.x) {
            const u64 r = (u32)rows[i];
            double acc = 0.0;
            for (int t2 = 0; t2 < D; ++t2) {
                const i64 fr = rf[t2];
                if (fr < 0) break;
                acc += rc[t2] * xtilde(raw, r, F, (int)fr, xmask, center, inv_scale);
            }
            rec[3 * i] = g[r * (u64)K + (u64)k] * sg;
            rec[3 * i + 1] = h[r * (u64)K + (u64)k] * sh;
            rec[3 * i + 2] = acc * inv_sp[j];
            if (j < p_from) {
                recq[2 * i] = grad[2 * r];
                recq[2 * i + 1] = grad[2 * r + 1];
            }
        }
    }
}

// out [m, n_slots, 9] (zeroed by the caller) += each (row, feature) element's nine rounded
// summands (element_summands) in the slot of the row's symbol; for nodes j >= p_from, whose
// other entries are their parents' minus their siblings', only the p~ entries (p_only). rec,
// recq: the rows' records
// (linear_ptilde). Thread el of a tile handles feature el % F of the tile's row el / F. Every
// sum goes to global memory (the specification: linear_histograms_shared privatizes it).
extern "C" __global__ void linear_histograms(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const double* __restrict__ rec, const i64* __restrict__ recq,
        const float* __restrict__ raw, const double* __restrict__ center,
        const double* __restrict__ inv_scale, const unsigned char* __restrict__ xmask,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ nodes, int n_slots, const i64* __restrict__ tile_ptr, int m,
        int tile, int p_from, u64* __restrict__ out) {
    const i64 total = tile_ptr[m];
    const int F = n_features;
    i64 q[9];
    for (i64 t = blockIdx.x; t < total; t += gridDim.x) {
        const int j = tile_node(tile_ptr, m, t);
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[node] ? rb + tile : seg_end[node];
        const i64 n_el = (re - rb) * F;
        const int p_only = j >= p_from;
        for (i64 el = threadIdx.x; el < n_el; el += blockDim.x) {
            const i64 ri = el / F;
            const int f = (int)(el - ri * F);
            const u64 r = (u32)rows[rb + ri];
            const u32 sym = element_summands(words, bits, mask, F, r, f, rb + ri, rec, recq,
                                             raw, center, inv_scale, xmask, p_only, q);
            u64* o = out + (((i64)j * n_slots) + hist_ptrs[f] + (i64)sym) * 9;
            for (int c = 0; c < 9; ++c)
                if (q[c]) atomicAdd(o + c, (u64)q[c]);
        }
    }
}

// linear_histograms (nodes j >= p_from: the p~ pass) with each block's sums privatized in
// shared memory: block (x, z) takes
// feature group z (groups [2 z], [2 z + 1]: a run of features whose gs slots x 9 int64 fit the
// block's shared memory) over a contiguous range of the level's tiles, a node's part of it as
// one run of rows; a thread a row: its row_terms once, then its features of the group in turn
// (each element's nine summands into the slot of its symbol, shared_add64). The block adds
// its shared sums to `out` (nonzero ones, global atomics) after each node's run. Integer
// sums: the same result as linear_histograms in any order. (A thread a (row, feature)
// element instead, row_terms again for every feature, measured 2x slower at the root.)
#ifndef LINEAR_HIST_THREADS         // the block size the registers are planned for
#define LINEAR_HIST_THREADS 1024
#endif
#ifndef LINEAR_HIST_MIN_BLOCKS      // resident blocks an SM the registers must allow
#define LINEAR_HIST_MIN_BLOCKS 1
#endif
extern "C" __global__ void __launch_bounds__(LINEAR_HIST_THREADS, LINEAR_HIST_MIN_BLOCKS)
linear_histograms_shared(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const double* __restrict__ rec, const i64* __restrict__ recq,
        const float* __restrict__ raw, const double* __restrict__ center,
        const double* __restrict__ inv_scale, const unsigned char* __restrict__ xmask,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ nodes, int n_slots, const i64* __restrict__ tile_ptr, int m,
        int tile, int p_from, const int* __restrict__ groups, u64* __restrict__ out) {
    extern __shared__ u64 sh64[];
    const int f0 = groups[2 * blockIdx.z], f1 = groups[2 * blockIdx.z + 1];
    const i64 s0 = hist_ptrs[f0];
    const int gs = (int)(hist_ptrs[f1] - s0);
    for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) sh64[s] = 0;
    __syncthreads();
    const i64 total = tile_ptr[m];
    const i64 per = (total + gridDim.x - 1) / gridDim.x;
    const i64 t0 = (i64)blockIdx.x * per;
    const i64 t1 = t0 + per < total ? t0 + per : total;
    const int F = n_features;
    i64 q[9];
    if (t0 >= t1) return;
    for (int j = tile_node(tile_ptr, m, t0); j < m && tile_ptr[j] < t1; ++j) {
        // block-uniform: node j's tiles [ta, tb) of the block's range, rows [rb, re)
        const i64 ta = t0 > tile_ptr[j] ? t0 : tile_ptr[j];
        const i64 tb = t1 < tile_ptr[j + 1] ? t1 : tile_ptr[j + 1];
        if (ta >= tb) continue;
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (ta - tile_ptr[j]) * tile;
        const i64 rt = seg_begin[node] + (tb - tile_ptr[j]) * tile;
        const i64 re = rt < seg_end[node] ? rt : seg_end[node];
        const int p_only = j >= p_from;
        for (i64 i = rb + threadIdx.x; i < re; i += blockDim.x) {
            const u64 r = (u32)rows[i];
            const RowTerms t = row_terms(rec, recq, i, p_only);
            for (int f = f0; f < f1; ++f) {
                feature_terms(t, xtilde(raw, r, F, f, xmask, center, inv_scale), p_only, q);
                const u32 sym = read_symbol(words, r * (u64)F + (u64)f, bits, mask);
                u64* o = sh64 + (hist_ptrs[f] - s0 + (i64)sym) * 9;
                for (int c = 0; c < 5; ++c)
                    if (t.q[c]) shared_add64(o + c, (u64)t.q[c]);
                for (int c = 5; c < 9; ++c)
                    if (q[c]) shared_add64(o + c, (u64)q[c]);
            }
        }
        __syncthreads();          // node j's sums are complete: add them to out, zero them
        u64* o = out + ((i64)j * n_slots + s0) * 9;
        for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) {
            const u64 v = sh64[s];
            sh64[s] = 0;
            if (v) atomicAdd(o + s, v);
        }
        __syncthreads();
    }
}

// A level's larger children: out [2 m, S, 9] holds the smaller children's histograms (rows
// 0..m) and the larger ones' p~ entries from their own rows (rows m..2 m, the p_only pass: its
// other entries 0); each larger child's entries that do not depend on its p~ (g, h, g x~,
// h x~, h x~^2: c = 0, 1, 5, 6, 8) become its parent's (parent [.., S, 9], row
// parent_slot[i]) minus its sibling's: exact in int64 (tree.cu's subtract_siblings, less the
// p~ entries).
extern "C" __global__ void linear_siblings(
        const i64* __restrict__ parent, const i64* __restrict__ parent_slot, int m,
        i64 n_slots, i64* __restrict__ out) {
    const i64 width = n_slots * 9;
    const i64 n = (i64)m * width;
    for (i64 x = (i64)blockIdx.x * blockDim.x + threadIdx.x; x < n;
         x += (i64)gridDim.x * blockDim.x) {
        const int c = (int)(x % 9);
        if (c == 2 || c == 3 || c == 4 || c == 7) continue;
        const i64 i = x / width, rest = x - i * width;
        out[n + x] = parent[parent_slot[i] * width + rest] - out[x];
    }
}

// The upper triangle of each leaf's ridge sums: out [Lf, D + 1, D + 2] (zeroed by the
// caller) entry (a, b <= a..D) += rint(h z_a z_b sh) and (a, D + 1) += rint(g z_a sg) over the
// leaf's rows, z = (1, x~ of the leaf's regressors feats [Lf, D], -1 padded; a missing value
// 0; no xmask: regressors only). The caller mirrors the lower triangle (cpu_linear.leaf_sums).
// A block takes a tile of `tile` rows (all of one leaf) at a time: its threads first put each
// row's z, g and h in shared memory (a thread a row: the row's loads once, in parallel), then
// thread w sums entry e = w % n_entries (n_entries = (D + 1) (D + 2) / 2 + D + 1: the upper
// triangle row by row, then the g column) over every n_sub-th row of the tile from shared
// memory, adds that to the block's sum of e (shared_add64), and the block adds its sums to
// `out` once a tile (global atomics). Integer sums: the same in any order. (A thread an entry
// over a tile's rows read from global memory, each row's loads again for every entry and
// in series, measured 5x slower.) Shared memory: tile (D + 3) float64 + n_entries int64.
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

// Entry e's (a, b) (b = D + 1: the g column).
__device__ __forceinline__ void leaf_entry(int e, int D, int* a, int* b) {
    const int n_tri = (D + 1) * (D + 2) / 2;
    if (e >= n_tri) {
        *a = e - n_tri;
        *b = D + 1;
        return;
    }
    int row = 0, rest = e;        // upper triangle rows a = 0.. of D + 1 - a entries
    while (rest >= D + 1 - row) { rest -= D + 1 - row; ++row; }
    *a = row;
    *b = row + rest;
}

extern "C" __global__ void linear_leaf_sums(
        const int* __restrict__ rows, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ leaves,
        const float* __restrict__ raw, int F, const double* __restrict__ g,
        const double* __restrict__ h, int K, int k, const double* __restrict__ center,
        const double* __restrict__ inv_scale, const i64* __restrict__ feats, int D,
        const double* __restrict__ consts, const i64* __restrict__ tile_ptr, int m, int tile,
        u64* __restrict__ out) {
    extern __shared__ u64 sh64[];
    const double sg = consts[0], sh = consts[1];   // the tree's scales (tree_consts)
    const int W = D + 3;                           // a row's z_0..z_D, g, h
    const int n_tri = (D + 1) * (D + 2) / 2;
    const int n_entries = n_tri + D + 1;
    double* zs = reinterpret_cast<double*>(sh64);
    u64* acc = sh64 + (i64)tile * W;
    for (int e = threadIdx.x; e < n_entries; e += blockDim.x) acc[e] = 0;
    const int n_sub = (int)blockDim.x >= n_entries ? (int)blockDim.x / n_entries : 1;
    const i64 total = tile_ptr[m];
    for (i64 t = blockIdx.x; t < total; t += gridDim.x) {     // block-uniform
        const int j = tile_node(tile_ptr, m, t);
        const i64 leaf = leaves[j];
        const i64 rb = seg_begin[leaf] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[leaf] ? rb + tile : seg_end[leaf];
        const int n = (int)(re - rb);
        const i64* fl = feats + (i64)j * D;
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            const u64 r = (u32)rows[rb + i];
            double* z = zs + (i64)i * W;
            for (int a = 0; a <= D; ++a) z[a] = zval(raw, r, F, fl, center, inv_scale, a);
            z[D + 1] = g[r * (u64)K + (u64)k];
            z[D + 2] = h[r * (u64)K + (u64)k];
        }
        __syncthreads();
        for (int w = threadIdx.x; w < n_entries * n_sub; w += blockDim.x) {
            const int e = w % n_entries, sub = w / n_entries;
            int a, b;
            leaf_entry(e, D, &a, &b);
            if ((a > 0 && fl[a - 1] < 0) || (b <= D && b > 0 && fl[b - 1] < 0))
                continue;         // a padded regressor: z = 0, every summand rint(0) = 0
            i64 s = 0;
            for (int i = sub; i < n; i += n_sub) {
                const double* z = zs + (i64)i * W;
                if (b == D + 1)
                    s += (i64)rint(z[D + 1] * z[a] * sg);
                else
                    s += (i64)rint(z[D + 2] * z[a] * z[b] * sh);
            }
            if (s) shared_add64(acc + e, (u64)s);
        }
        __syncthreads();
        for (int e = threadIdx.x; e < n_entries; e += blockDim.x) {
            const u64 v = acc[e];
            if (v) {
                int a, b;
                leaf_entry(e, D, &a, &b);
                atomicAdd(out + ((i64)j * (D + 1) + a) * (D + 2) + b, v);
                acc[e] = 0;
            }
        }
        __syncthreads();
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

// Prediction with linear leaves (cpu_linear.predict_linear): row r walks each tree in order
// (nodes: gpu.pack_nodes' int4 rows (left, right, feature | default_left << 31, threshold
// bits); x < threshold goes left, NaN the default way) and adds its leaf's value to
// out[r, tree_class[t]]: the linear model at lin_begin[i] where lin_size[i] >= 0 (as
// add_linear_leaves computes it), else the threshold as float64. One thread a row, trees in
// order: the CPU's additions in its order.
extern "C" __global__ void predict_linear(
        const float* __restrict__ X, i64 n, int F, const int4* __restrict__ nodes,
        const i64* __restrict__ tree_ptrs, const i64* __restrict__ tree_class, int n_trees,
        int K, const i64* __restrict__ lin_begin, const i64* __restrict__ lin_size,
        const double* __restrict__ coef, const i64* __restrict__ feat,
        const double* __restrict__ center, const double* __restrict__ inv_scale,
        double* __restrict__ out) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += stride) {
        const float* x = X + r * F;
        for (int t = 0; t < n_trees; ++t) {
            const i64 base = tree_ptrs[t];
            const int4* tree = nodes + base;
            int node = 0;
            int4 nd = tree[0];
            while (nd.x != -1) {
                const float v = x[nd.z & 0x7fffffff];
                const bool go_left = v != v ? nd.z < 0 : v < __int_as_float(nd.w);
                node = go_left ? nd.x : nd.y;
                nd = tree[node];
            }
            const i64 i = base + node;
            double v;
            if (lin_size[i] >= 0) {
                const i64 b0 = lin_begin[i], d = lin_size[i];
                v = coef[b0];
                for (i64 q = 1; q <= d; ++q) {
                    const float xf = x[feat[b0 + q]];
                    if (xf == xf)
                        v += coef[b0 + q] * (((double)xf - center[b0 + q]) * inv_scale[b0 + q]);
                }
            } else {
                v = (double)__int_as_float(nd.w);
            }
            out[r * K + tree_class[t]] += v;
        }
    }
}
