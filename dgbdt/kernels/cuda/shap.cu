// SHAP values from an ensemble's root-to-leaf paths (dgbdt/kernels/shap_paths.py, whose
// contributions_from_paths is this kernel's specification, step for step).
//
// One thread per row; a block's threads walk the same paths in the same order, so every load
// of a path's elements is one broadcast per warp. A thread's running SHAP values live in
// shared memory, feature-major (phi[f * blockDim.x + thread]: no bank conflicts), and go to
// `out` when the paths' output class changes and at the end (paths come grouped by class).
// gridDim.y cuts the paths into chunks for small row counts; chunks then add with atomics.
// MAXL (a compile-time bound on a path's length, root element included) lets the per-path
// arrays stay in registers: every loop over elements is unrolled and guarded.
#include "common.cuh"

#ifndef MAXL
#define MAXL 10
#endif

// INV[j] = 1 / j (INV[0] unused); MAXL <= 32
__constant__ double INV[35] = {
    0.0, 1.0, 1.0 / 2, 1.0 / 3, 1.0 / 4, 1.0 / 5, 1.0 / 6, 1.0 / 7, 1.0 / 8, 1.0 / 9, 1.0 / 10,
    1.0 / 11, 1.0 / 12, 1.0 / 13, 1.0 / 14, 1.0 / 15, 1.0 / 16, 1.0 / 17, 1.0 / 18, 1.0 / 19,
    1.0 / 20, 1.0 / 21, 1.0 / 22, 1.0 / 23, 1.0 / 24, 1.0 / 25, 1.0 / 26, 1.0 / 27, 1.0 / 28,
    1.0 / 29, 1.0 / 30, 1.0 / 31, 1.0 / 32, 1.0 / 33, 1.0 / 34};

__device__ __forceinline__ void flush(double* __restrict__ out, const double* phi, i64 r,
                                      int k, int K, int F, int atomic) {
    double* o = out + (r * K + k) * (i64)(F + 1);
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
        const double* __restrict__ el_z, const double* __restrict__ el_invz, int K,
        double* __restrict__ out) {
    extern __shared__ double phi[];
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
            if (live) flush(out, phi, r, k_now, K, F, atomic);
            for (int f = 0; f < F; ++f) phi[f * blockDim.x + threadIdx.x] = 0.0;
            k_now = k;
        }
        const i64 b = path_ptr[p];
        const int L = (int)(path_ptr[p + 1] - b);
        double z[MAXL], o[MAXL], pw[MAXL];
        int fe[MAXL];
#pragma unroll
        for (int e = 0; e < MAXL; ++e) {
            z[e] = 0.0; o[e] = 0.0; pw[e] = 0.0; fe[e] = -1;
            if (e < L) {
                fe[e] = el_feat[b + e];
                z[e] = el_z[b + e];
                if (e == 0) {
                    o[e] = 1.0;
                } else {
                    const float v = x[fe[e]];
                    o[e] = (v != v) ? (el_miss[b + e] ? 1.0 : 0.0)
                                    : ((el_lo[b + e] <= v && v < el_hi[b + e]) ? 1.0 : 0.0);
                }
            }
        }
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
        // UNWOUND_SUM of each element k. With o_k = 0 it is sum_i pw[i] (D + 1) / (z_k (D - i)),
        // the same sum for every such element but for 1 / z_k: once a path. With o_k = 1 it
        // is the recursion of the specification. Divisions by loop constants are
        // multiplications by their reciprocals (INV; constant-folded where unrolled).
        const int D = L - 1;
        const double dp1 = (double)(D + 1), inv_dp1 = INV[D + 1];
        double top = 0.0, s0 = 0.0;
#pragma unroll
        for (int j = 0; j < MAXL; ++j) if (j == D) top = pw[j];
#pragma unroll
        for (int i = MAXL - 2; i >= 0; --i) if (i < D) s0 += pw[i] * INV[D - i];
        s0 *= dp1;
        const double value = path_value[p];
#pragma unroll
        for (int kk = 1; kk < MAXL; ++kk) {
            if (kk < L) {
                const double zk = z[kk];
                double total;
                if (o[kk] != 0.0) {
                    double nxt = top;
                    total = 0.0;
#pragma unroll
                    for (int i = MAXL - 2; i >= 0; --i) {
                        if (i < D) {
                            const double tmp = nxt * dp1 * (1.0 / (i + 1));
                            total += tmp;
                            nxt = pw[i] - tmp * zk * (double)(D - i) * inv_dp1;
                        }
                    }
                } else {
                    total = s0 * el_invz[b + kk];
                }
                phi[fe[kk] * blockDim.x + threadIdx.x] += total * (o[kk] - zk) * value;
            }
        }
    }
    if (live && p0 < p1) flush(out, phi, r, k_now, K, F, atomic);
}
