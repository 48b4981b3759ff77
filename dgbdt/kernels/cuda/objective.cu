// Objective gradients (dgbdt/kernels/cpu_objective.py, same formulas): g, h float64 [n, K] for
// margins m [n, K], labels y [n], weights w [n] (has_w == 0: every weight is 1).
#include "common.cuh"

#define HESS_FLOOR 1e-16
#define ROWS for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; \
                  i += (i64)gridDim.x * blockDim.x)

// The fixed-point scale of a round needs max |g| and max h of each class over all rows. Each
// kernel folds them into mx (u64 [2, K], zeroed): a non-negative double's bits order like the
// double, so a per-warp maximum posted with atomicMax is exact. (A separate cupy reduction along
// axis 0 of an [n, 1] array runs in one block: milliseconds for 10 M rows.)
__device__ __forceinline__ void post_max(u64* mx, int K, int k, double ag, double ah) {
    u64 a = (u64)__double_as_longlong(ag), b = (u64)__double_as_longlong(ah);
    for (int o = 16; o > 0; o >>= 1) {
        const u64 x = __shfl_xor_sync(0xffffffffu, a, o);
        const u64 y = __shfl_xor_sync(0xffffffffu, b, o);
        a = x > a ? x : a;
        b = y > b ? y : b;
    }
    if ((threadIdx.x & 31) == 0) {
        if (a) atomicMax(mx + k, a);
        if (b) atomicMax(mx + K + k, b);
    }
}

extern "C" __global__ void squared_error(const double* __restrict__ m, const double* __restrict__ y,
        const double* __restrict__ w, int has_w, i64 n, int K, double* __restrict__ g,
        double* __restrict__ h, u64* __restrict__ mx) {
    double ag = 0.0, ah = 0.0;
    ROWS {
        const double wi = has_w ? w[i] : 1.0;
        g[i] = (m[i] - y[i]) * wi;
        h[i] = wi;
        ag = fmax(ag, fabs(g[i]));
        ah = fmax(ah, h[i]);
    }
    post_max(mx, K, 0, ag, ah);
}

extern "C" __global__ void logistic(const double* __restrict__ m, const double* __restrict__ y,
        const double* __restrict__ w, int has_w, i64 n, int K, double* __restrict__ g,
        double* __restrict__ h, u64* __restrict__ mx) {
    double ag = 0.0, ah = 0.0;
    ROWS {
        const double x = m[i];
        double p;
        if (x >= 0.0) {
            p = 1.0 / (1.0 + exp(-x));
        } else {
            const double e = exp(x);
            p = e / (1.0 + e);
        }
        const double wi = has_w ? w[i] : 1.0;
        g[i] = (p - y[i]) * wi;
        h[i] = fmax(p * (1.0 - p), HESS_FLOOR) * wi;
        ag = fmax(ag, fabs(g[i]));
        ah = fmax(ah, h[i]);
    }
    post_max(mx, K, 0, ag, ah);
}

extern "C" __global__ void softmax(const double* __restrict__ m, const double* __restrict__ y,
        const double* __restrict__ w, int has_w, i64 n, int K, double* __restrict__ g,
        double* __restrict__ h, u64* __restrict__ mx) {
    // maxima: column_max below, once per class
    ROWS {
        const double* mi = m + i * K;
        double top = mi[0];
        for (int k = 1; k < K; ++k) top = fmax(top, mi[k]);
        double total = 0.0;
        for (int k = 0; k < K; ++k) total += exp(mi[k] - top);
        const double wi = has_w ? w[i] : 1.0;
        const int label = (int)y[i];
        for (int k = 0; k < K; ++k) {
            const double p = exp(mi[k] - top) / total;
            g[i * K + k] = (p - (k == label ? 1.0 : 0.0)) * wi;
            h[i * K + k] = fmax(2.0 * p * (1.0 - p), HESS_FLOOR) * wi;
        }
    }
}

// mx[k] = max |g[:, k]|, mx[K + k] = max h[:, k] (for multi-class objectives).
extern "C" __global__ void column_max(const double* __restrict__ g, const double* __restrict__ h,
        i64 n, int K, int k, u64* __restrict__ mx) {
    double ag = 0.0, ah = 0.0;
    ROWS {
        ag = fmax(ag, fabs(g[i * K + k]));
        ah = fmax(ah, h[i * K + k]);
    }
    post_max(mx, K, k, ag, ah);
}
