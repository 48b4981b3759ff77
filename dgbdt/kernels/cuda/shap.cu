// SHAP values and SHAP interaction values from an ensemble's root-to-leaf paths
// (dgbdt/kernels/shap_paths.py, whose contributions_from_paths and interactions_from_paths
// are these kernels' specifications, step for step).
//
// One thread per row; a block's threads walk the same paths in the same order, so every load
// of a path's elements is one broadcast per warp. A thread's running values live in shared
// memory, feature-major (phi[f * blockDim.x + thread]: no bank conflicts), and go to `out`
// when the paths' output class changes and at the end (paths come grouped by class).
// shap_paths: gridDim.y cuts the paths into chunks for small row counts; chunks then add with
// atomics. shap_interactions: blockIdx.y is the conditioned feature i, so each (row, class,
// i) row of the output has exactly one writer and no atomics: deterministic.
// MAXL (a compile-time bound on a path's length, root element included) lets the per-path
// arrays stay in registers: every loop over elements is unrolled and guarded. HAS_CAT (0/1):
// whether any element tests a category bitset (numerical models skip those loads).
#include "common.cuh"

#ifndef MAXL
#define MAXL 10
#endif
#ifndef HAS_CAT
#define HAS_CAT 1
#endif

// INV[j] = 1 / j (INV[0] unused); MAXL <= 32
__constant__ double INV[35] = {
    0.0, 1.0, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5, 1.0 / 6, 1.0 / 7, 1.0 / 8, 1.0 / 9, 1.0 / 10,
    1.0 / 11, 1.0 / 12, 1.0 / 13, 1.0 / 14, 1.0 / 15, 1.0 / 16, 1.0 / 17, 1.0 / 18, 1.0 / 19,
    1.0 / 20, 1.0 / 21, 1.0 / 22, 1.0 / 23, 1.0 / 24, 1.0 / 25, 1.0 / 26, 1.0 / 27, 1.0 / 28,
    1.0 / 29, 1.0 / 30, 1.0 / 31, 1.0 / 32, 1.0 / 33, 1.0 / 34};

struct Elements {                 // ensemble_paths' per-element arrays
    const int* feat;
    const float* lo;
    const float* hi;
    const unsigned char* miss;
    const double* z;
    const double* invz;
    const i64* cat;               // first word of the category bitset, -1: numerical
    const int* cat_words;
    const unsigned char* beyond;  // codes past the bitset, values outside [0, 2^24 - 1)
    const u32* bits;
};

// shap_paths._satisfies: 1 when the value v satisfies element e (every split on its feature
// along the path sends v the path's way), else 0
__device__ __forceinline__ double satisfies(const Elements& el, i64 e, float v) {
    if (v != v) return el.miss[e] ? 1.0 : 0.0;
    if (!(el.lo[e] <= v && v < el.hi[e])) return 0.0;
#if HAS_CAT
    const i64 cat = el.cat[e];
    if (cat < 0) return 1.0;
    if (v < 0.0f || v >= 16777216.0f - 1.0f) return el.beyond[e] ? 1.0 : 0.0;
    const i64 c = (i64)v;
    if (c >= 32 * (i64)el.cat_words[e]) return el.beyond[e] ? 1.0 : 0.0;
    return ((el.bits[cat + (c >> 5)] >> (u32)(c & 31)) & 1u) ? 1.0 : 0.0;
#else
    return 1.0;
#endif
}

// pw[0..L-1]: TreeSHAP's subset weights of elements 0..L-1 (shap_paths._extend_all)
__device__ __forceinline__ void extend_all(const double* z, const double* o, int L,
                                           double* pw) {
#pragma unroll
    for (int e = 0; e < MAXL; ++e) pw[e] = 0.0;
    pw[0] = 1.0;
#pragma unroll
    for (int d = 1; d < MAXL; ++d) {          // EXTEND by element d
        if (d < L) {
            pw[d] = 0.0;
#pragma unroll
            for (int i = MAXL - 2; i >= 0; --i) {
                if (i < d) {
                    pw[i + 1] += o[d] * pw[i] * ((i + 1) * (1.0 / (d + 1)));
                    pw[i] = z[d] * pw[i] * ((d - i) * (1.0 / (d + 1)));
                }
            }
        }
    }
}

// UNWOUND_SUM of an element with o = 1 (shap_paths._unwound_sum) from pw[0..D], top = pw[D]
__device__ __forceinline__ double unwound_sum_known(const double* pw, int D, double top,
                                                    double zk) {
    const double dp1 = (double)(D + 1), inv_dp1 = INV[D + 1];
    double nxt = top, total = 0.0;
#pragma unroll
    for (int i = MAXL - 2; i >= 0; --i) {
        if (i < D) {
            const double tmp = nxt * dp1 * (1.0 / (i + 1));
            total += tmp;
            nxt = pw[i] - tmp * zk * (double)(D - i) * inv_dp1;
        }
    }
    return total;
}

// With o_k = 0 UNWOUND_SUM is sum_i pw[i] (D + 1) / (z_k (D - i)): this sum without 1 / z_k,
// the same for every such element of the path (computed once)
__device__ __forceinline__ double unwound_sum_unknown(const double* pw, int D) {
    double s0 = 0.0;
#pragma unroll
    for (int i = MAXL - 2; i >= 0; --i) if (i < D) s0 += pw[i] * INV[D - i];
    return s0 * (double)(D + 1);
}

__device__ __forceinline__ void flush(double* __restrict__ o, const double* phi, int F,
                                      int atomic) {
    for (int f = 0; f < F; ++f) {
        const double v = phi[f * blockDim.x + threadIdx.x];
        if (v == 0.0) continue;
        if (atomic) atomicAdd(o + f, v); else o[f] += v;
    }
}

extern "C" __global__ void shap_paths(
        const float* __restrict__ X, i64 n, int F, const i64* __restrict__ path_ptr,
        const int* __restrict__ path_class, const double* __restrict__ path_value, int n_paths,
        const int* __restrict__ el_feat, const float* __restrict__ el_lo,
        const float* __restrict__ el_hi, const unsigned char* __restrict__ el_miss,
        const double* __restrict__ el_z, const double* __restrict__ el_invz,
        const i64* __restrict__ el_cat, const int* __restrict__ el_cat_words,
        const unsigned char* __restrict__ el_beyond, const u32* __restrict__ el_bits, int K,
        double* __restrict__ out) {
    extern __shared__ double phi[];
    const Elements el = {el_feat, el_lo, el_hi, el_miss, el_z, el_invz, el_cat, el_cat_words,
                         el_beyond, el_bits};
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool live = r < n;
    for (int f = 0; f < F; ++f) phi[f * blockDim.x + threadIdx.x] = 0.0;
    const int chunk = (n_paths + gridDim.y - 1) / gridDim.y;
    const int p0 = blockIdx.y * chunk;
    const int p1 = min(n_paths, p0 + chunk);
    const int atomic = gridDim.y > 1;
    const float* x = X + (live ? r : 0) * (i64)F;
    int k_now = p0 < p1 ? path_class[p0] : 0;
    for (int p = p0; p < p1; ++p) {
        const int k = path_class[p];
        if (k != k_now) {
            if (live) flush(out + (r * K + k_now) * (i64)(F + 1), phi, F, atomic);
            for (int f = 0; f < F; ++f) phi[f * blockDim.x + threadIdx.x] = 0.0;
            k_now = k;
        }
        const i64 b = path_ptr[p];
        const int L = (int)(path_ptr[p + 1] - b);
        double z[MAXL], o[MAXL], pw[MAXL];
        int fe[MAXL];
#pragma unroll
        for (int e = 0; e < MAXL; ++e) {
            z[e] = 0.0; o[e] = 0.0; fe[e] = -1;
            if (e < L) {
                fe[e] = el_feat[b + e];
                z[e] = el_z[b + e];
                o[e] = e == 0 ? 1.0 : satisfies(el, b + e, x[fe[e]]);
            }
        }
        extend_all(z, o, L, pw);
        // UNWOUND_SUM of each element k: the recursion of the specification for o_k = 1, the
        // path's shared sum over z_k for o_k = 0. Divisions by loop constants are
        // multiplications by their reciprocals (INV; constant-folded where unrolled).
        const int D = L - 1;
        double top = 0.0;
#pragma unroll
        for (int j = 0; j < MAXL; ++j) if (j == D) top = pw[j];
        const double s0 = unwound_sum_unknown(pw, D);
        const double value = path_value[p];
#pragma unroll
        for (int kk = 1; kk < MAXL; ++kk) {
            if (kk < L) {
                const double total = o[kk] != 0.0 ? unwound_sum_known(pw, D, top, z[kk])
                                                  : s0 * el_invz[b + kk];
                phi[fe[kk] * blockDim.x + threadIdx.x] += total * (o[kk] - z[kk]) * value;
            }
        }
    }
    if (live && p0 < p1) flush(out + (r * K + k_now) * (i64)(F + 1), phi, F, atomic);
}

// out[r, k, i, j] += the SHAP interaction values of row r (out: [n, K, F + 1, F + 1]) for the
// conditioned feature i = blockIdx.y: interactions_from_paths for one i. A path without i
// adds nothing (its game does not change with i), so the block skips it (i is the same for
// the whole block: no divergence). On a path where i is element c, pw' = the weights of the
// other elements (EXTEND skipping c), and
//   phi_ij += v (o_c - z_c) (o_j - z_j) UNWOUND_SUM_j(pw') / 2   (j != i on the path)
//   phi_ii += v (o_c - z_c) sum(pw') - sum_j of the above.
extern "C" __global__ void shap_interactions(
        const float* __restrict__ X, i64 n, int F, const i64* __restrict__ path_ptr,
        const int* __restrict__ path_class, const double* __restrict__ path_value, int n_paths,
        const int* __restrict__ el_feat, const float* __restrict__ el_lo,
        const float* __restrict__ el_hi, const unsigned char* __restrict__ el_miss,
        const double* __restrict__ el_z, const double* __restrict__ el_invz,
        const i64* __restrict__ el_cat, const int* __restrict__ el_cat_words,
        const unsigned char* __restrict__ el_beyond, const u32* __restrict__ el_bits, int K,
        double* __restrict__ out) {
    extern __shared__ double phi[];
    const Elements el = {el_feat, el_lo, el_hi, el_miss, el_z, el_invz, el_cat, el_cat_words,
                         el_beyond, el_bits};
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;                       // no shared state between threads
    const int fi = blockIdx.y;
    const i64 F1 = F + 1;
    for (int f = 0; f < F; ++f) phi[f * blockDim.x + threadIdx.x] = 0.0;
    const float* x = X + r * (i64)F;
    int k_now = n_paths > 0 ? path_class[0] : 0;
    for (int p = 0; p < n_paths; ++p) {
        const int k = path_class[p];
        if (k != k_now) {
            flush(out + ((r * K + k_now) * F1 + fi) * F1, phi, F, 0);
            for (int f = 0; f < F; ++f) phi[f * blockDim.x + threadIdx.x] = 0.0;
            k_now = k;
        }
        const i64 b = path_ptr[p];
        const int L = (int)(path_ptr[p + 1] - b);
        int fe[MAXL];
        int c = -1;
#pragma unroll
        for (int e = 1; e < MAXL; ++e) {
            fe[e] = -1;
            if (e < L) {
                fe[e] = el_feat[b + e];
                if (fe[e] == fi) c = e;
            }
        }
        fe[0] = -1;
        if (c < 0) continue;
        double z[MAXL], o[MAXL], pw[MAXL];
#pragma unroll
        for (int e = 0; e < MAXL; ++e) {
            z[e] = 0.0; o[e] = 0.0; pw[e] = 0.0;
            if (e < L) {
                z[e] = el_z[b + e];
                o[e] = e == 0 ? 1.0 : satisfies(el, b + e, x[fe[e]]);
            }
        }
        // the conditioned element's fractions from memory, not from the register arrays (a
        // select over them would be turned into an indexed load from local memory)
        const double zc = el_z[b + c];
        const double oc = satisfies(el, b + c, x[fi]);
        // EXTEND by every element but c, element d at depth d - (d > c) (the specification
        // swaps c with the last element instead: the same weights up to rounding, EXTEND's
        // order not mattering); pw[depth] is still 0 where each EXTEND starts
        pw[0] = 1.0;
#pragma unroll
        for (int d = 1; d < MAXL; ++d) {
            if (d < L && d != c) {
                const int dd = d > c ? d - 1 : d;
                const double inv = INV[dd + 1];
#pragma unroll
                for (int i = MAXL - 2; i >= 0; --i) {
                    if (i < dd) {
                        pw[i + 1] += o[d] * pw[i] * ((double)(i + 1) * inv);
                        pw[i] = z[d] * pw[i] * ((double)(dd - i) * inv);
                    }
                }
            }
        }
        const int Lc = L - 1;                 // elements without c, root included
        const int D = Lc - 1;
        double top = 0.0, total = 0.0;
#pragma unroll
        for (int j = 0; j < MAXL; ++j) {
            if (j == D) top = pw[j];
            if (j < Lc) total += pw[j];
        }
        const double s0 = unwound_sum_unknown(pw, D);
        const double scale = path_value[p] * (oc - zc);
        double off = 0.0;
#pragma unroll
        for (int j = 1; j < MAXL; ++j) {
            if (j < L && j != c) {
                const double s = o[j] != 0.0 ? unwound_sum_known(pw, D, top, z[j])
                                             : s0 * el_invz[b + j];
                const double v = 0.5 * scale * (o[j] - z[j]) * s;
                phi[fe[j] * blockDim.x + threadIdx.x] += v;
                off += v;
            }
        }
        phi[fi * blockDim.x + threadIdx.x] += scale * total - off;
    }
    if (n_paths > 0) flush(out + ((r * K + k_now) * F1 + fi) * F1, phi, F, 0);
}
