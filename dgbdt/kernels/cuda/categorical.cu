// Categorical split search on merged integer histograms: dgbdt/kernels/cpu_categorical.py's
// evaluate_categorical, one block per (categorical feature, node), with the same float64
// arithmetic (gain.cuh) in the same candidate order, hence the same candidates.
//
// Launched with 256 threads a block (dgbdt/kernels/gpu_categorical.py).
//
// One-hot (nb < max_cat_to_onehot): each category i in order, missing left then right.
// Partition: the categories in the stable ascending order of their float32 weight key
// (numpy's argsort(kind="mergesort")); with n = min(max_cat_threshold, nb) only the n - 1
// first (forward scan: a sorted prefix goes right, missing left) and the n - 1 last (backward
// scan: a sorted suffix goes left, missing right) are visited. The block finds them without
// sorting: each category's code (key as order-preserving bits << 32 | category, so equal keys
// order by category as a stable sort does; -0.0 is 0.0 as the CPU compares them) is written to
// ``codes``, then n - 1 rounds each take the smallest code above the last one taken (forward)
// and the largest below the last one taken (backward), block-wide.
//
// Per (node j, feature slot fi) it writes res[j, fi, 0..5]: the float32 gain's bits (-1: no
// candidate with gain > 0), kind (0 one-hot, 1 forward, 2 backward), arg (one-hot: the
// category; forward: how many sorted categories go right; backward: how many go left),
// default left, the left child's (G, H); and sel[j, fi, 0, :] / sel[j, fi, 1, :], the forward
// and backward visiting orders. dgbdt/kernels/gpu_categorical.py picks each node's best
// feature (the first of the largest gain) and builds its set from them.
#include "common.cuh"
#include "gain.cuh"

struct CatNode {
    GainParams p;
    i64 tg, th;
    double parent, lo, hi;
    bool bounded;
    int c;   // the feature's monotone constraint
};

// cpu_categorical._gain: float32 loss change of left (lg, lh), or -1 where a side's hessian is
// below min_child_weight (or, bounded, the constraint fails)
__device__ float cat_gain(i64 lg, i64 lh, const CatNode& n) {
    const double hl = lh * n.p.inv_sh;
    const double hr = (n.th - lh) * n.p.inv_sh;
    if (hl < n.p.min_child_weight || hr < n.p.min_child_weight) return -1.0f;
    const double gl = lg * n.p.inv_sg, gr = (n.tg - lg) * n.p.inv_sg;
    if (!n.bounded)
        return (float)(node_gain(gl, hl, n.p) + node_gain(gr, hr, n.p) - n.parent);
    const double wl = clip_weight(leaf_weight(gl, hl, n.p), n.lo, n.hi);
    const double wr = clip_weight(leaf_weight(gr, hr, n.p), n.lo, n.hi);
    if ((n.c > 0 && wl > wr) || (n.c < 0 && wl < wr)) return -1.0f;
    return (float)(gain_at(gl, hl, n.p.lam, wl) + gain_at(gr, hr, n.p.lam, wr) - n.parent);
}

__device__ __forceinline__ u64 order_code(float key, int category) {
    if (key == 0.0f) key = 0.0f;                 // -0.0 sorts as 0.0 (numpy compares them equal)
    u32 b = __float_as_uint(key);
    b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
    return ((u64)b << 32) | (u32)category;
}

extern "C" __global__ void __launch_bounds__(256) evaluate_categorical(
        const i64* __restrict__ hist, int n_slots, const i64* __restrict__ hist_ptrs,
        const i64* __restrict__ totals, const double* __restrict__ consts, double lam,
        double alpha, double max_delta_step, double min_child_weight,
        const i64* __restrict__ features, int n_cat, int max_cat_to_onehot,
        int max_cat_threshold, int bounded, const int* __restrict__ monotone,
        const double* __restrict__ lower, const double* __restrict__ upper,
        u64* __restrict__ codes, int sel_width, i64* __restrict__ res,
        int* __restrict__ sel) {
    __shared__ u64 wlo[32], whi[32];
    __shared__ u64 taken_lo, taken_hi;
    const int fi = blockIdx.x, j = blockIdx.y;
    const int f = (int)features[fi];
    const i64 p0 = hist_ptrs[f];
    const int nb = (int)(hist_ptrs[f + 1] - p0 - 1);
    const i64* H = hist + ((i64)j * n_slots + p0) * 2;
    CatNode n;
    n.p.inv_sg = consts[2]; n.p.inv_sh = consts[3]; n.p.lam = lam; n.p.alpha = alpha;
    n.p.max_delta_step = max_delta_step; n.p.min_child_weight = min_child_weight;
    n.tg = totals[2 * j]; n.th = totals[2 * j + 1];
    n.bounded = bounded != 0;
    n.lo = n.bounded ? lower[j] : 0.0;
    n.hi = n.bounded ? upper[j] : 0.0;
    n.c = n.bounded ? monotone[f] : 0;
    const double tgd = n.tg * n.p.inv_sg, thd = n.th * n.p.inv_sh;
    n.parent = n.bounded ? gain_at(tgd, thd, lam, clip_weight(leaf_weight(tgd, thd, n.p),
                                                              n.lo, n.hi))
                         : node_gain(tgd, thd, n.p);
    i64* out = res + ((i64)j * n_cat + fi) * 6;
    int* fwd = sel + (((i64)j * n_cat + fi) * 2) * sel_width;
    int* bwd = fwd + sel_width;
    const bool onehot = nb < max_cat_to_onehot;
    const int cnt = onehot ? 0 : min(max_cat_threshold, nb) - 1;
    if (cnt > 0) {
        u64* C = codes + ((i64)j * n_slots + p0);
        for (int i = threadIdx.x; i < nb; i += blockDim.x)
            C[i] = order_code((float)leaf_weight(H[2 * i] * n.p.inv_sg,
                                                 H[2 * i + 1] * n.p.inv_sh, n.p), i);
        if (threadIdx.x == 0) { taken_lo = 0; taken_hi = ~0ull; }
        __syncthreads();
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
        for (int t = 0; t < cnt; ++t) {
            // codes are distinct (the category is in the low bits): strict comparisons
            const u64 after = taken_lo, before = taken_hi;
            u64 lo = ~0ull, hi = 0;
            for (int i = threadIdx.x; i < nb; i += blockDim.x) {
                const u64 c = C[i];
                if ((t == 0 || c > after) && c < lo) lo = c;
                if ((t == 0 || c < before) && c > hi) hi = c;
            }
            for (int o = 16; o > 0; o >>= 1) {
                const u64 a = __shfl_down_sync(0xffffffffu, lo, o);
                const u64 b = __shfl_down_sync(0xffffffffu, hi, o);
                lo = a < lo ? a : lo;
                hi = b > hi ? b : hi;
            }
            if (lane == 0) { wlo[warp] = lo; whi[warp] = hi; }
            __syncthreads();
            if (threadIdx.x == 0) {
                for (int w = 1; w < nwarps; ++w) {
                    lo = wlo[w] < lo ? wlo[w] : lo;
                    hi = whi[w] > hi ? whi[w] : hi;
                }
                taken_lo = lo;
                taken_hi = hi;
                fwd[t] = (int)(u32)lo;
                bwd[t] = (int)(u32)hi;
            }
            __syncthreads();
        }
    }
    if (threadIdx.x != 0) return;
    // the scans, in the CPU's candidate order (strictly larger gains replace)
    float bg = 0.0f;
    int kind = -1, arg = 0;
    bool dleft = false;
    i64 blg = 0, blh = 0;
    const i64 mg = H[2 * nb], mh = H[2 * nb + 1];
    if (onehot) {
        for (int i = 0; i < nb; ++i) {
            for (int side = 0; side < 2; ++side) {        // missing left, then right
                i64 rg = H[2 * i], rh = H[2 * i + 1];
                if (side == 1) { rg += mg; rh += mh; }
                const float g = cat_gain(n.tg - rg, n.th - rh, n);
                if (g > bg) {
                    bg = g; kind = 0; arg = i; dleft = side == 0;
                    blg = n.tg - rg; blh = n.th - rh;
                }
            }
        }
    } else {
        i64 rg = 0, rh = 0;
        for (int k = 0; k < cnt; ++k) {                   // forward: sorted prefix right
            rg += H[2 * fwd[k]]; rh += H[2 * fwd[k] + 1];
            const float g = cat_gain(n.tg - rg, n.th - rh, n);
            if (g > bg) {
                bg = g; kind = 1; arg = k + 1; dleft = true;
                blg = n.tg - rg; blh = n.th - rh;
            }
        }
        i64 lg = 0, lh = 0;
        for (int k = 0; k < cnt; ++k) {                   // backward: sorted suffix left
            lg += H[2 * bwd[k]]; lh += H[2 * bwd[k] + 1];
            const float g = cat_gain(lg, lh, n);
            if (g > bg) {
                bg = g; kind = 2; arg = k + 1; dleft = false;
                blg = lg; blh = lh;
            }
        }
    }
    out[0] = kind < 0 ? -1 : (i64)__float_as_uint(bg);
    out[1] = kind;
    out[2] = arg;
    out[3] = dleft ? 1 : 0;
    out[4] = blg;
    out[5] = blh;
}
