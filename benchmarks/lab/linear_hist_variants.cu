// Variants of cuda/linear.cu's linear_histograms_shared for benchmarks/lab/linear_hist_lab.py
// (issue 15: linear histograms are most of a linear tree's GPU time). Compiled after
// common.cuh and linear.cu (for element_summands), with one of:
//   ATOMICS=0  the library's 64-bit shared atomics (compare-and-swap loops on Hopper)
//   ATOMICS=1  each sum two u32 words, interleaved (the u64's own bytes): a native 32-bit
//              atomicAdd on the low word, its carry (from the returned old value) with the
//              high word's (XGBoost's AtomicAdd64As32)
//   ATOMICS=2  as 1 with planar words: lo[9][gs] then hi[9][gs] (consecutive slots in
//              consecutive banks)
//   ATOMICS=3  plain shared adds, no atomics (wrong sums: the floor of the rest)
// Integer sums mod 2^64 either way, so 0, 1 and 2 give the same int64 histograms.

__device__ __forceinline__ void shared_add(u64* sh64, int gs, int slot, int c, u64 v) {
#if ATOMICS == 0
    atomicAdd(sh64 + (i64)slot * 9 + c, v);
#elif ATOMICS == 1
    u32* w = reinterpret_cast<u32*>(sh64 + (i64)slot * 9 + c);
    const u32 lo = (u32)v, hi = (u32)(v >> 32);
    const u32 old = atomicAdd(w, lo);
    const u32 up = hi + (old > 0xffffffffu - lo ? 1u : 0u);
    if (up) atomicAdd(w + 1, up);
#elif ATOMICS == 2
    u32* w = reinterpret_cast<u32*>(sh64);
    const int i = c * gs + slot;
    const u32 lo = (u32)v, hi = (u32)(v >> 32);
    const u32 old = atomicAdd(w + i, lo);
    const u32 up = hi + (old > 0xffffffffu - lo ? 1u : 0u);
    if (up) atomicAdd(w + 9 * gs + i, up);
#elif ATOMICS == 4
    // interleaved, the halves swapped where bit 4 of the slot is set: a warp's low-word adds
    // spread over all 32 banks (slot * 18 + 2 c alone lands them on the 16 even ones)
    u32* w = reinterpret_cast<u32*>(sh64 + (i64)slot * 9 + c);
    const int sw = (slot >> 4) & 1;
    const u32 lo = (u32)v, hi = (u32)(v >> 32);
    const u32 old = atomicAdd(w + sw, lo);
    const u32 up = hi + (old > 0xffffffffu - lo ? 1u : 0u);
    if (up) atomicAdd(w + 1 - sw, up);
#elif ATOMICS == 5
    // no shared memory at all: the summand and its address kept live (the floor of the loads
    // and arithmetic)
    asm volatile("" :: "l"(v), "l"(sh64 + (i64)slot * 9 + c));
#elif ATOMICS == 6
    // the low words' atomics only (wrong sums: what half the atomics cost)
    atomicAdd(reinterpret_cast<u32*>(sh64 + (i64)slot * 9 + c), (u32)v);
#else
    sh64[(i64)slot * 9 + c] += v;
#endif
}

// The block's sum of slot s (0 <= s < 9 gs, in the u64 layout's order: slot s / 9, entry s % 9)
// and zero it.
__device__ __forceinline__ u64 shared_take(u64* sh64, int gs, int s) {
#if ATOMICS == 2
    u32* w = reinterpret_cast<u32*>(sh64);
    const int i = (s % 9) * gs + s / 9;
    const u64 v = (u64)w[i] | ((u64)w[9 * gs + i] << 32);
    w[i] = 0;
    w[9 * gs + i] = 0;
    return v;
#elif ATOMICS == 4
    u32* w = reinterpret_cast<u32*>(sh64 + s);
    const int sw = ((s / 9) >> 4) & 1;
    const u64 v = (u64)w[sw] | ((u64)w[1 - sw] << 32);
    sh64[s] = 0;
    return v;
#else
    const u64 v = sh64[s];
    sh64[s] = 0;
    return v;
#endif
}

extern "C" __global__ void lab_linear_shared(
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
    const double sg = consts[0], sh = consts[1];
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
        if (j != cur) {
            if (cur >= 0) {
                __syncthreads();
                u64* o = out + ((i64)cur * n_slots + s0) * 9;
                for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) {
                    const u64 v = shared_take(sh64, gs, s);
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
            const int slot = (int)(hist_ptrs[f] - s0) + (int)sym;
            for (int c = 0; c < 9; ++c)
                if (q[c]) shared_add(sh64, gs, slot, c, (u64)q[c]);
        }
    }
    __syncthreads();
    if (cur >= 0) {
        u64* o = out + ((i64)cur * n_slots + s0) * 9;
        for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) {
            const u64 v = shared_take(sh64, gs, s);
            if (v) atomicAdd(o + s, v);
        }
    }
}

// A thread a row: the row's g, h, p~ terms once (ROW_PT=1: its p~ too, linear_ptilde's
// operations, from the node's regressors), then its features of the block's group in turn,
// each element's summands as element_summands forms them. A block's tiles of one node are
// one contiguous run of rows, taken whole.
extern "C" __global__ void __launch_bounds__(1024) lab_linear_rows(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const double* __restrict__ g, const double* __restrict__ h, int K, int k,
        const i64* __restrict__ grad, const float* __restrict__ raw,
        const double* __restrict__ center, const double* __restrict__ inv_scale,
        const unsigned char* __restrict__ xmask, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes,
        const double* __restrict__ ptilde, const double* __restrict__ consts, int n_slots,
        const i64* __restrict__ tile_ptr, int m, int tile, int p_only,
        const int* __restrict__ groups, const i64* __restrict__ reg_feat,
        const double* __restrict__ reg_coef, const double* __restrict__ inv_sp, int D,
        u64* __restrict__ out) {
    extern __shared__ u64 sh64[];
    const double sg = consts[0], sh = consts[1];
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
    if (t0 < t1) {
        for (int j = tile_node(tile_ptr, m, t0); j < m && tile_ptr[j] < t1; ++j) {
            const i64 node = nodes[j];
            const i64 ta = t0 > tile_ptr[j] ? t0 : tile_ptr[j];
            const i64 tb = t1 < tile_ptr[j + 1] ? t1 : tile_ptr[j + 1];
            const i64 rb = seg_begin[node] + (ta - tile_ptr[j]) * tile;
            i64 re = seg_begin[node] + (tb - tile_ptr[j]) * tile;
            if (re > seg_end[node]) re = seg_end[node];
            const i64* rf = reg_feat + (i64)j * D;
            const double* rc = reg_coef + (i64)j * D;
            for (i64 i = rb + threadIdx.x; i < re; i += blockDim.x) {
                const u64 r = (u32)rows[i];
#if ROW_PT
                double pt = 0.0;
                for (int t2 = 0; t2 < D; ++t2) {
                    const i64 fr = rf[t2];
                    if (fr < 0) break;
                    pt += rc[t2] * xtilde(raw, r, F, (int)fr, xmask, center, inv_scale);
                }
                pt = pt * inv_sp[j];
#else
                const double pt = ptilde[r];
#endif
                const double gs_ = g[r * (u64)K + (u64)k] * sg;
                const double hs = h[r * (u64)K + (u64)k] * sh;
                const double hps = hs * pt;
                const i64 q2 = (i64)rint(gs_ * pt), q3 = (i64)rint(hps), q4 = (i64)rint(hps * pt);
                i64 q0 = 0, q1 = 0;
                if (!p_only) { q0 = grad[2 * r]; q1 = grad[2 * r + 1]; }
                for (int f = f0; f < f1; ++f) {
                    const double xt = xtilde(raw, r, F, f, xmask, center, inv_scale);
                    const u32 sym = read_symbol(words, r * (u64)F + (u64)f, bits, mask);
                    const int slot = (int)(hist_ptrs[f] - s0) + (int)sym;
                    if (q0) shared_add(sh64, gs, slot, 0, (u64)q0);
                    if (q1) shared_add(sh64, gs, slot, 1, (u64)q1);
                    if (q2) shared_add(sh64, gs, slot, 2, (u64)q2);
                    if (q3) shared_add(sh64, gs, slot, 3, (u64)q3);
                    if (q4) shared_add(sh64, gs, slot, 4, (u64)q4);
                    if (xt != 0.0) {
                        const i64 q7 = (i64)rint(hps * xt);
                        if (q7) shared_add(sh64, gs, slot, 7, (u64)q7);
                        if (!p_only) {
                            const double hx = hs * xt;
                            const i64 q5 = (i64)rint(gs_ * xt), q6 = (i64)rint(hx),
                                      q8 = (i64)rint(hx * xt);
                            if (q5) shared_add(sh64, gs, slot, 5, (u64)q5);
                            if (q6) shared_add(sh64, gs, slot, 6, (u64)q6);
                            if (q8) shared_add(sh64, gs, slot, 8, (u64)q8);
                        }
                    }
                }
            }
            __syncthreads();       // block-uniform: flush node j's sums
            u64* o = out + ((i64)j * n_slots + s0) * 9;
            for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) {
                const u64 v = shared_take(sh64, gs, s);
                if (v) atomicAdd(o + s, v);
            }
            __syncthreads();
        }
    }
}

// lab_linear_rows with each row's raw values and symbols of CHUNK features loaded before any
// of their atomics (memory-level parallelism: the loads do not wait behind the adds), and
// (PREFETCH=1) the next row's index and gradients loaded before this row's work.
#ifndef CHUNK
#define CHUNK 4
#endif
extern "C" __global__ void __launch_bounds__(1024) lab_linear_chunked(
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
    const double sg = consts[0], sh = consts[1];
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
    if (t0 >= t1) return;
    for (int j = tile_node(tile_ptr, m, t0); j < m && tile_ptr[j] < t1; ++j) {
        const i64 ta = t0 > tile_ptr[j] ? t0 : tile_ptr[j];
        const i64 tb = t1 < tile_ptr[j + 1] ? t1 : tile_ptr[j + 1];
        if (ta >= tb) continue;
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (ta - tile_ptr[j]) * tile;
        const i64 rt = seg_begin[node] + (tb - tile_ptr[j]) * tile;
        const i64 re = rt < seg_end[node] ? rt : seg_end[node];
        i64 i = rb + threadIdx.x;
#if PREFETCH
        u64 rn = i < re ? (u32)rows[i] : 0;
#endif
        for (; i < re; i += blockDim.x) {
#if PREFETCH
            const u64 r = rn;
            if (i + blockDim.x < re) rn = (u32)__ldg(rows + i + blockDim.x);
#else
            const u64 r = (u32)rows[i];
#endif
            const RowTerms t = row_terms(g, h, K, k, grad, r, ptilde[r], sg, sh, p_only);
            for (int fb = f0; fb < f1; fb += CHUNK) {
                float xv[CHUNK];
                u32 sv[CHUNK];
#pragma unroll
                for (int u = 0; u < CHUNK; ++u) {
                    const int f = fb + u;
                    if (f < f1) {
                        xv[u] = __ldg(raw + r * (u64)F + (u64)f);
                        sv[u] = read_symbol(words, r * (u64)F + (u64)f, bits, mask);
                    }
                }
#pragma unroll
                for (int u = 0; u < CHUNK; ++u) {
                    const int f = fb + u;
                    if (f >= f1) break;
                    const float x = xv[u];
                    const double xt = (!xmask[f] || x != x) ? 0.0
                                      : ((double)x - center[f]) * inv_scale[f];
                    i64 q[9];
                    feature_terms(t, xt, p_only, q);
                    u64* o = sh64 + (hist_ptrs[f] - s0 + (i64)sv[u]) * 9;
                    for (int c = 0; c < 5; ++c)
                        if (t.q[c]) shared_add64(o + c, (u64)t.q[c]);
                    for (int c = 5; c < 9; ++c)
                        if (q[c]) shared_add64(o + c, (u64)q[c]);
                }
            }
        }
        __syncthreads();
        u64* o = out + ((i64)j * n_slots + s0) * 9;
        for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) {
            const u64 v = sh64[s];
            sh64[s] = 0;
            if (v) atomicAdd(o + s, v);
        }
        __syncthreads();
    }
}

// lab_linear_rows software-pipelined: everything the next row needs (its index, gradients,
// p~, its raw values and symbols of the group's features, at most GMAX of them) is loaded
// into registers before this row's shared atomics, so the loads' latency overlaps the adds
// (the compiler does not move global loads above the atomics by itself).
#ifndef GMAX
#define GMAX 6
#endif
#ifndef PIPE_BLOCK
#define PIPE_BLOCK 1024
#endif
struct RowLoad {
    u64 r;
    double g, h, pt;
    i64 q0, q1;
    float x[GMAX];
    u32 sym[GMAX];
};

__device__ __forceinline__ void load_row(RowLoad& L, u64 r, int f0, int nfg, int F,
        const u32* __restrict__ words, int bits, u32 mask, const double* __restrict__ g,
        const double* __restrict__ h, int K, int k, const i64* __restrict__ grad,
        const float* __restrict__ raw, const double* __restrict__ ptilde, int p_only) {
    L.r = r;
    L.g = __ldg(g + r * (u64)K + (u64)k);
    L.h = __ldg(h + r * (u64)K + (u64)k);
    L.pt = __ldg(ptilde + r);
    L.q0 = p_only ? 0 : __ldg(grad + 2 * r);
    L.q1 = p_only ? 0 : __ldg(grad + 2 * r + 1);
#pragma unroll
    for (int u = 0; u < GMAX; ++u) {
        if (u < nfg) {
            L.x[u] = __ldg(raw + r * (u64)F + (u64)(f0 + u));
            L.sym[u] = read_symbol(words, r * (u64)F + (u64)(f0 + u), bits, mask);
        }
    }
}

extern "C" __global__ void __launch_bounds__(PIPE_BLOCK) lab_linear_pipe(
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
    const double sg = consts[0], sh = consts[1];
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
    if (t0 >= t1) return;
    for (int j = tile_node(tile_ptr, m, t0); j < m && tile_ptr[j] < t1; ++j) {
        const i64 ta = t0 > tile_ptr[j] ? t0 : tile_ptr[j];
        const i64 tb = t1 < tile_ptr[j + 1] ? t1 : tile_ptr[j + 1];
        if (ta >= tb) continue;
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (ta - tile_ptr[j]) * tile;
        const i64 rt = seg_begin[node] + (tb - tile_ptr[j]) * tile;
        const i64 re = rt < seg_end[node] ? rt : seg_end[node];
        i64 i = rb + threadIdx.x;
        RowLoad cur;
        if (i < re)
            load_row(cur, (u32)rows[i], f0, nfg, F, words, bits, mask, g, h, K, k, grad, raw,
                     ptilde, p_only);
        for (; i < re; i += blockDim.x) {
            RowLoad nxt;
            const i64 in = i + blockDim.x;
            if (in < re)
                load_row(nxt, (u32)__ldg(rows + in), f0, nfg, F, words, bits, mask, g, h, K,
                         k, grad, raw, ptilde, p_only);
            RowTerms t;
            t.gs = cur.g * sg;
            t.hs = cur.h * sh;
            t.hps = t.hs * cur.pt;
            t.q[0] = cur.q0;
            t.q[1] = cur.q1;
            t.q[2] = (i64)rint(t.gs * cur.pt);
            t.q[3] = (i64)rint(t.hps);
            t.q[4] = (i64)rint(t.hps * cur.pt);
#pragma unroll
            for (int u = 0; u < GMAX; ++u) {
                if (u >= nfg) break;
                const int f = f0 + u;
                const float x = cur.x[u];
                const double xt = (!xmask[f] || x != x) ? 0.0
                                  : ((double)x - center[f]) * inv_scale[f];
                i64 q[9];
                feature_terms(t, xt, p_only, q);
                u64* o = sh64 + (hist_ptrs[f] - s0 + (i64)cur.sym[u]) * 9;
                for (int c = 0; c < 5; ++c)
                    if (t.q[c]) shared_add64(o + c, (u64)t.q[c]);
                for (int c = 5; c < 9; ++c)
                    if (q[c]) shared_add64(o + c, (u64)q[c]);
            }
            cur = nxt;
        }
        __syncthreads();
        u64* o = out + ((i64)j * n_slots + s0) * 9;
        for (int s = threadIdx.x; s < 9 * gs; s += blockDim.x) {
            const u64 v = sh64[s];
            sh64[s] = 0;
            if (v) atomicAdd(o + s, v);
        }
        __syncthreads();
    }
}
