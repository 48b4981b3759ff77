// Piecewise-linear leaves (dgbdt.tree.linear; GBDT-PL): the linear histograms of a level's
// nodes, the leaves' ridge sums, and the linear leaves added to the margins. The CPU twins are
// dgbdt/kernels/cpu_linear.py's linear_histograms, leaf_sums and add_linear_leaves; every
// float64 term here is formed by the same operations in the same order (compiled with
// --fmad=false, so no multiply-add is contracted), and each summand is rounded once to a
// fixed-point integer with rint (round half to even, as numpy's), so the int64 sums equal the
// CPU's exactly, whatever the order of the atomic adds.
//
// Sums are added with 64-bit integer atomics (two's complement: a negative summand wraps
// like the CPU's int64 add). The CI test tests/test_linear_kernel_host.py compiles this file
// as host C++ and runs each block's threads as host threads (a barrier for __syncthreads,
// host atomics), against the numba kernels.
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

// The nine rounded summands of one (row, feature) element (g, h, g p~, h p~, h p~^2, g x~,
// h x~, h p~ x~, h x~^2: q[0..9), 0 where cpu_linear adds nothing; with p_only the four that
// depend on p~ (GP, HP, HPP, HPX), the others 0), and the element's symbol. cpu_linear's
// operations in its order; shared by both histogram kernels, so they sum the same integers.
// pt: the row's p~ (linear_ptilde, once a row: not again for each of its features).
__device__ __forceinline__ u32 element_summands(
        const u32* __restrict__ words, int bits, u32 mask, int F, u64 r, int f,
        const double* __restrict__ g, const double* __restrict__ h, int K, int k,
        const i64* __restrict__ grad, const float* __restrict__ raw,
        const double* __restrict__ center, const double* __restrict__ inv_scale,
        const unsigned char* __restrict__ xmask, double pt, double sg, double sh, int p_only,
        i64* q) {
    const double gs = g[r * (u64)K + (u64)k] * sg;
    const double hs = h[r * (u64)K + (u64)k] * sh;
    const double hps = hs * pt;
    q[2] = (i64)rint(gs * pt);
    q[3] = (i64)rint(hps);
    q[4] = (i64)rint(hps * pt);
    const double xt = xtilde(raw, r, F, f, xmask, center, inv_scale);
    q[0] = q[1] = q[5] = q[6] = q[7] = q[8] = 0;
    if (xt != 0.0) q[7] = (i64)rint(hps * xt);
    if (!p_only) {
        q[0] = grad[2 * r];
        q[1] = grad[2 * r + 1];
        if (xt != 0.0) {
            const double hx = hs * xt;
            q[5] = (i64)rint(gs * xt);
            q[6] = (i64)rint(hx);
            q[8] = (i64)rint(hx * xt);
        }
    }
    return read_symbol(words, r * (u64)F + (u64)f, bits, mask);
}

// p~ of every row of the nodes' segments (the smaller or the larger children of a level):
// pt[r] = (sum_t reg_coef[j, t] x~(r, reg_feat[j, t])) inv_sp[j] over node j's regressors
// (-1 padded), cpu_linear's operations in its order, so the histogram kernels read the value
// they used to recompute for every (row, feature) element. Tiles as the histogram kernels'.
extern "C" __global__ void linear_ptilde(
        const int* __restrict__ rows, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes,
        const i64* __restrict__ tile_ptr, int m, int tile, const float* __restrict__ raw,
        int F, const double* __restrict__ center, const double* __restrict__ inv_scale,
        const unsigned char* __restrict__ xmask, const i64* __restrict__ reg_feat,
        const double* __restrict__ reg_coef, const double* __restrict__ inv_sp, int D,
        double* __restrict__ pt) {
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
            pt[r] = acc * inv_sp[j];
        }
    }
}

// out [m, n_slots, 9] (zeroed by the caller) += each (row, feature) element's nine rounded
// summands (element_summands) in the slot of the row's symbol; for a node whose other
// entries are its parent's minus its sibling's, p_only. g, h: float64 [n, K] (class k's
// column); grad int64 [n, 2] their fixed-point values (the plain histogram's summands).
// Thread el of a tile handles feature el % F of the tile's row el / F; p~ is recomputed per
// element (the same float64 operations each time, so the same value). Every sum goes to
// global memory (the specification: linear_histograms_shared privatizes it).
extern "C" __global__ void linear_histograms(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const double* __restrict__ g, const double* __restrict__ h, int K, int k,
        const i64* __restrict__ grad, const float* __restrict__ raw,
        const double* __restrict__ center, const double* __restrict__ inv_scale,
        const unsigned char* __restrict__ xmask, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes,
        const double* __restrict__ ptilde, const double* __restrict__ consts, int n_slots,
        const i64* __restrict__ tile_ptr, int m, int tile, int p_only,
        u64* __restrict__ out) {
    const double sg = consts[0], sh = consts[1];   // the tree's scales (tree_consts)
    const i64 total = tile_ptr[m];
    const int F = n_features;
    i64 q[9];
    for (i64 t = blockIdx.x; t < total; t += gridDim.x) {
        const int j = tile_node(tile_ptr, m, t);
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[node] ? rb + tile : seg_end[node];
        const i64 n_el = (re - rb) * F;
        for (i64 el = threadIdx.x; el < n_el; el += blockDim.x) {
            const i64 ri = el / F;
            const int f = (int)(el - ri * F);
            const u64 r = (u32)rows[rb + ri];
            const u32 sym = element_summands(words, bits, mask, F, r, f, g, h, K, k, grad, raw,
                                             center, inv_scale, xmask, ptilde[r], sg, sh,
                                             p_only, q);
            u64* o = out + (((i64)j * n_slots) + hist_ptrs[f] + (i64)sym) * 9;
            for (int c = 0; c < 9; ++c)
                if (q[c]) atomicAdd(o + c, (u64)q[c]);
        }
    }
}

// linear_histograms with each block's sums privatized in shared memory (64-bit shared
// atomics): block (x, z) takes feature group z (groups [2 z], [2 z + 1]: a run of features
// whose gs slots x 9 int64 fit the block's shared memory) over a contiguous range of the
// level's tiles, and adds its shared sums to `out` (nonzero ones, global atomics) whenever
// its range moves to another node and at the end. Integer sums: the same result as
// linear_histograms in any order.
extern "C" __global__ void linear_histograms_shared(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const double* __restrict__ g, const double* __restrict__ h, int K, int k,
        const i64* __restrict__ grad, const float* __restrict__ raw,
        const double* __restrict__ center, const double* __restrict__ inv_scale,
        const unsigned char* __restrict__ xmask, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes,
        const double* __restrict__ ptilde, const double* __restrict__ consts, int n_slots,
        const i64* __restrict__ tile_ptr, int m, int tile, int p_only,
        const int* __restrict__ groups, u64* __restrict__ out) {
    extern __shared__ u64 sh64[];
    const double sg = consts[0], sh = consts[1];   // the tree's scales (tree_consts)
    const int f0 = groups[2 * blockIdx.z], f1 = groups[2 * blockIdx.z + 1];
    const int nfg = f1 - f0;
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
    int cur = -1;
    for (i64 t = t0; t < t1; ++t) {
        const int j = tile_node(tile_ptr, m, t);
        if (j != cur) {           // block-uniform: flush the previous node's sums
            if (cur >= 0) {
                __syncthreads();
                u64* o = out + ((i64)cur * n_slots + s0) * 9;
                for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) {
                    const u64 v = sh64[s];
                    sh64[s] = 0;
                    if (v) atomicAdd(o + s, v);
                }
                __syncthreads();
            }
            cur = j;
        }
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[node] ? rb + tile : seg_end[node];
        const i64 n_el = (re - rb) * nfg;
        for (i64 el = threadIdx.x; el < n_el; el += blockDim.x) {
            const i64 ri = el / nfg;
            const int f = f0 + (int)(el - ri * nfg);
            const u64 r = (u32)rows[rb + ri];
            const u32 sym = element_summands(words, bits, mask, F, r, f, g, h, K, k, grad, raw,
                                             center, inv_scale, xmask, ptilde[r], sg, sh,
                                             p_only, q);
            u64* o = sh64 + (hist_ptrs[f] - s0 + (i64)sym) * 9;
            for (int c = 0; c < 9; ++c)
                if (q[c]) atomicAdd(o + c, (u64)q[c]);
        }
    }
    __syncthreads();
    if (cur >= 0) {
        u64* o = out + ((i64)cur * n_slots + s0) * 9;
        for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) {
            const u64 v = sh64[s];
            if (v) atomicAdd(o + s, v);
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
        const double* __restrict__ inv_scale, const i64* __restrict__ feats, int D,
        const double* __restrict__ consts, const i64* __restrict__ tile_ptr, int m, int tile,
        u64* __restrict__ out) {
    const double sg = consts[0], sh = consts[1];   // the tree's scales (tree_consts)
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
