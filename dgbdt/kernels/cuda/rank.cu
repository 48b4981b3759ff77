// LambdaMART gradients of the rank:* objectives on the GPU: the CPU kernel's algorithm
// (dgbdt/kernels/cpu_rank.py, XGBoost 3.x's arithmetic), one thread per query group.
//
// A query is computed whole, in the CPU's order, by the thread that owns it: its rows' float32
// gradients accumulate pair after pair in the order the CPU visits the pairs, so every row has
// one writer and the sums are the CPU's (no atomics, nothing depends on the launch shape).
// Its sorts (predictions descending, labels descending) are a stable bottom-up merge sort in
// the thread's slice of global scratch arrays: the same permutation as numpy's stable argsort
// of the negated keys (NaN last). Built with --fmad=false (dgbdt.backends.cuda) as the CPU's
// numba code is compiled without contraction, so the products and sums round the same way.
// Where the two may differ: the sigmoid's exp (here exp in double rounded to float32; the CPU's
// expf) and the topk normalization's log2 (CUDA's vs libm's) can differ in their last bit.
//
// loss: 0 rank:ndcg, 1 rank:pairwise, 2 rank:map; method: 0 topk, 1 mean (hashed draws).
#include "common.cuh"

__device__ __forceinline__ u64 rank_mix(u64 z) {
    // splitmix64's finalizer (cpu_rank._mix)
    z = z + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// cpu_rank.pair_draw: the counter-th partner draw of query qid in round epoch, in [0, n)
__device__ __forceinline__ i64 pair_draw(u64 seed, u64 epoch, u64 qid, u64 counter, i64 n) {
    u64 h = rank_mix(seed);
    h = rank_mix(h ^ epoch);
    h = rank_mix(h ^ qid);
    h = rank_mix(h ^ counter);
    return (i64)(h % (u64)n);
}

// exp of a float32, rounded to float32: here exp in double, then rounded (within CUDA's 1 ulp
// of double, so the float32 result is the correctly rounded one but in rare halfway cases);
// tests/test_rank_kernel_host.py defines it as libm's expf, the CPU kernel's
#ifndef RANK_EXP32
#define RANK_EXP32(x) ((float)exp((double)(x)))
#endif

// XGBoost's common::Sigmoid(float) in float32 (cpu_rank._sigmoid32)
__device__ __forceinline__ float sigmoid32(float x) {
    x = fminf(-x, 88.7f);
    const float denom = RANK_EXP32(x) + 1.0f + 1e-16f;
    return 1.0f / denom;
}

__device__ __forceinline__ double rank_gain(float y, int exp_gain) {
    if (exp_gain) return (double)((1u << (u32)y) - 1u);
    return (double)y;
}

// a sorts strictly before b: descending, NaN last (numpy's argsort of -key)
__device__ __forceinline__ bool sorts_before(float a, float b) {
    return a > b || (isnan(b) && !isnan(a));
}

// idx[0:n] = the stable descending order of key[0:n]; tmp: n ints of scratch
__device__ void stable_sort_desc(const float* key, int* idx, int* tmp, int n) {
    for (int i = 0; i < n; ++i) idx[i] = i;
    int* src = idx;
    int* dst = tmp;
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            const int mid = lo + width < n ? lo + width : n;
            const int hi = lo + 2 * width < n ? lo + 2 * width : n;
            int a = lo, b = mid, o = lo;
            while (a < mid && b < hi) {
                if (sorts_before(key[src[b]], key[src[a]])) dst[o++] = src[b++];
                else dst[o++] = src[a++];
            }
            while (a < mid) dst[o++] = src[a++];
            while (b < hi) dst[o++] = src[b++];
        }
        int* t = src; src = dst; dst = t;
    }
    if (src != idx)
        for (int i = 0; i < n; ++i) idx[i] = src[i];
}

// One pair (rank positions rank_high, rank_low) into g, h; returns its lambda (float32).
__device__ __forceinline__ float one_pair(int loss, int rank_high, int rank_low,
        const int* rank, const float* ranked_y, const float* p, float* g, float* h,
        const double* discount, double inv_idcg, const double* n_rel, const double* acc,
        int cnt, int exp_gain, bool scale_by_score) {
    if (ranked_y[rank_high] < ranked_y[rank_low]) {
        const int t = rank_high; rank_high = rank_low; rank_low = t;
    }
    const int idx_high = rank[rank_high];
    const int idx_low = rank[rank_low];
    const float y_high = ranked_y[rank_high];
    const float y_low = ranked_y[rank_low];
    const float s_high = p[idx_high];
    const float s_low = p[idx_low];
    const double delta_score = (double)fabsf(s_high - s_low);
    const double sig = (double)sigmoid32(s_high - s_low);
    double delta;
    if (loss == 0) {
        const double gh = rank_gain(y_high, exp_gain), gl = rank_gain(y_low, exp_gain);
        const double dh = discount[rank_high], dl = discount[rank_low];
        delta = fabs(((gh * dh + gl * dl) - (gl * dh + gh * dl)) * inv_idcg);
    } else if (loss == 1) {
        delta = 1.0;
    } else {
        int rh = rank_high, rl = rank_low;
        float yh = y_high, yl = y_low;
        if (rh > rl) {
            const int t = rh; rh = rl; rl = t;
            const float u = yh; yh = yl; yl = u;
        }
        const double r_h = (double)rh + 1.0, r_l = (double)rl + 1.0;
        const double n_total = n_rel[cnt - 1];
        const double m = n_rel[rl], nn = n_rel[rh];
        const double b = acc[rl - 1] - acc[rh];
        if (yh < yl) delta = fabs(((m / r_l - (nn + 1.0) / r_h) - b) / n_total);
        else delta = fabs(((nn / r_h - m / r_l) + b) / n_total);
    }
    if (scale_by_score) delta /= (delta_score + 0.01);
    const float lam = (float)((sig - 1.0) * delta);
    const float hes = (float)(fmax(sig * (1.0 - sig), 1e-16) * delta * 2.0);
    g[idx_high] += lam;
    h[idx_high] += hes;
    g[idx_low] += -lam;
    h[idx_low] += hes;
    return lam;
}

// Every group's gradients: group q is rows gptr[q]:gptr[q + 1] with query id qids[q] and
// float32 weight qw[q]; pred, label float32 [n]; writes float32 g, h [n]. discount: the CPU's
// 1 / log2(i + 2) table (computed on the host, at least the longest group's length). Scratch,
// n entries each (a group uses its own rows' slice): rank, idx2, tmp int32, ranked_y float32,
// n_rel, acc float64 (rank:map).
extern "C" __global__ void lambda_gradients(int loss, int method, int k, int exp_gain,
        int normalize, int score_norm, u64 seed, u64 epoch, const i64* __restrict__ gptr,
        const u64* __restrict__ qids, i64 n_groups, const float* __restrict__ pred,
        const float* __restrict__ label, const float* __restrict__ qw, double w_norm,
        const double* __restrict__ discount, int* rank_s, int* idx2_s, int* tmp_s,
        float* ranked_y_s, double* n_rel_s, double* acc_s, float* g_out, float* h_out) {
    for (i64 q = (i64)blockIdx.x * blockDim.x + threadIdx.x; q < n_groups;
         q += (i64)gridDim.x * blockDim.x) {
        const i64 a = gptr[q];
        const int cnt = (int)(gptr[q + 1] - a);
        const float* p = pred + a;
        const float* y = label + a;
        float* g = g_out + a;
        float* h = h_out + a;
        int* rank = rank_s + a;
        int* idx2 = idx2_s + a;
        int* tmp = tmp_s + a;
        float* ranked_y = ranked_y_s + a;
        double* n_rel = n_rel_s + a;
        double* acc = acc_s + a;
        for (int i = 0; i < cnt; ++i) { g[i] = 0.0f; h[i] = 0.0f; }
        if (cnt == 0) continue;
        stable_sort_desc(p, rank, tmp, cnt);
        for (int r = 0; r < cnt; ++r) ranked_y[r] = y[rank[r]];
        double inv_idcg = 0.0;
        if (loss == 0) {
            stable_sort_desc(y, idx2, tmp, cnt);        // by label (only the values matter)
            const int top = method == 1 ? cnt : (cnt < k ? cnt : k);
            double idcg = 0.0;
            for (int i = 0; i < top; ++i) idcg += discount[i] * rank_gain(y[idx2[i]], exp_gain);
            inv_idcg = idcg == 0.0 ? 0.0 : 1.0 / idcg;
        } else if (loss == 2) {
            n_rel[0] = (double)ranked_y[0];
            acc[0] = (double)ranked_y[0] / 1.0;
            for (int r = 1; r < cnt; ++r) {
                n_rel[r] = n_rel[r - 1] + (double)ranked_y[r];
                acc[r] = acc[r - 1] + (double)ranked_y[r] / (double)(r + 1);
            }
        }
        const bool scale_by_score = score_norm && p[rank[0]] != p[rank[cnt - 1]];
        double sum_lambda = 0.0;
        if (method == 1) {
            // for each row, k partners among the rows of another label (cpu_rank._group)
            stable_sort_desc(ranked_y, idx2, tmp, cnt);   // rank positions by label
            u64 counter = 0;
            int i = 0;
            while (i < cnt) {
                int j = i + 1;
                while (j < cnt && ranked_y[idx2[i]] == ranked_y[idx2[j]]) ++j;
                const int n_lefts = i, n_rights = cnt - j;
                if (n_lefts + n_rights > 0) {
                    for (int draw = 0; draw < k; ++draw) {
                        for (int pair_idx = i; pair_idx < j; ++pair_idx) {
                            i64 ridx = pair_draw(seed, epoch, qids[q], counter,
                                                 (i64)(n_lefts + n_rights));
                            ++counter;
                            if (ridx >= n_lefts) ridx = ridx - i + j;
                            const int rh = idx2[pair_idx], rl = idx2[ridx];
                            if (ranked_y[rh] == ranked_y[rl]) continue;
                            const float lam = one_pair(loss, rh, rl, rank, ranked_y, p, g, h,
                                                       discount, inv_idcg, n_rel, acc, cnt,
                                                       exp_gain, scale_by_score);
                            sum_lambda += -2.0 * (double)lam;
                        }
                    }
                }
                i = j;
            }
        } else {
            const int first = cnt < k ? cnt : k;
            for (int i = 0; i < first; ++i) {
                for (int j = i + 1; j < cnt; ++j) {
                    if (ranked_y[i] == ranked_y[j]) continue;
                    const float lam = one_pair(loss, i, j, rank, ranked_y, p, g, h, discount,
                                               inv_idcg, n_rel, acc, cnt, exp_gain,
                                               scale_by_score);
                    sum_lambda += -2.0 * (double)lam;
                }
            }
        }
        if (normalize) {
            double norm = 1.0;
            if (method == 1) norm = 1.0 / (double)k;
            else if (sum_lambda > 0.0) norm = log2(1.0 + sum_lambda) / sum_lambda;
            if (norm != 1.0) {
                for (int i = 0; i < cnt; ++i) {
                    g[i] = (float)((double)g[i] * norm);
                    h[i] = (float)((double)h[i] * norm);
                }
            }
        }
        // XGBoost's gpair * w * w_norm: a float32 product, then one in double
        const float w = qw[q];
        for (int i = 0; i < cnt; ++i) {
            g[i] = (float)((double)(g[i] * w) * w_norm);
            h[i] = (float)((double)(h[i] * w) * w_norm);
        }
    }
}
