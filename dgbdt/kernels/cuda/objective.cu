// Objective gradients (dgbdt/kernels/cpu_objective.py, same formulas): g, h float64 [n, K] for
// margins m [n, K], labels y [n], weights w [n] (has_w == 0: every weight is 1). The kernels
// of ONE_COLUMN_KERNEL also take a, the objective's one parameter (Objective.kernel_param: a
// slope, a power, scale_pos_weight...; Objective.cuda_takes_param says which kernels do).
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

#define ONE_COLUMN_KERNEL(NAME, BODY)                                                         \
extern "C" __global__ void NAME(const double* __restrict__ m, const double* __restrict__ y,    \
        const double* __restrict__ w, int has_w, double a, i64 n, int K,                     \
        double* __restrict__ g, double* __restrict__ h, u64* __restrict__ mx) {              \
    double ag = 0.0, ah = 0.0;                                                                \
    ROWS {                                                                                    \
        const double wi = has_w ? w[i] : 1.0;                                                 \
        double gi, hi;                                                                        \
        BODY                                                                                  \
        g[i] = gi;                                                                            \
        h[i] = hi;                                                                            \
        ag = fmax(ag, fabs(gi));                                                              \
        ah = fmax(ah, hi);                                                                    \
    }                                                                                         \
    post_max(mx, K, 0, ag, ah);                                                               \
}

// m floored at -1 + 1e-6; g = (log1p(m) - log1p(y)) / (m + 1),
// h = max((log1p(y) - log1p(m) + 1) / (m + 1)^2, 1e-6)
ONE_COLUMN_KERNEL(squared_log_error, {
    const double p = fmax(m[i], -1.0 + 1e-6);
    const double d = log1p(p) - log1p(y[i]);
    gi = d / (p + 1.0) * wi;
    hi = fmax((1.0 - d) / ((p + 1.0) * (p + 1.0)), 1e-6) * wi;
})

// z = m - y, s = sqrt(1 + (z/a)^2): g = z / s, h = a^2 / ((a^2 + z^2) s)
ONE_COLUMN_KERNEL(pseudo_huber, {
    const double a2 = a * a;
    const double z = m[i] - y[i];
    const double sq = sqrt(1.0 + z * z / a2);
    gi = z / sq * wi;
    hi = a2 / ((a2 + z * z) * sq) * wi;
})

// g = exp(m) - y, h = exp(m + a), a = max_delta_step
ONE_COLUMN_KERNEL(poisson, {
    gi = (exp(m[i]) - y[i]) * wi;
    hi = exp(m[i] + a) * wi;
})

// g = 1 - y exp(-m), h = y exp(-m)
ONE_COLUMN_KERNEL(gamma_regression, {
    const double r = y[i] / exp(m[i]);
    gi = (1.0 - r) * wi;
    hi = r * wi;
})

// a = the variance power: g = -y exp((1 - a) m) + exp((2 - a) m),
// h = -y (1 - a) exp((1 - a) m) + (2 - a) exp((2 - a) m)
ONE_COLUMN_KERNEL(tweedie, {
    const double e1 = exp((1.0 - a) * m[i]);
    const double e2 = exp((2.0 - a) * m[i]);
    gi = (-y[i] * e1 + e2) * wi;
    hi = (-y[i] * (1.0 - a) * e1 + (2.0 - a) * e2) * wi;
})

// s = 2y - 1: where m s < 1, g = -s w and h = w; else g = 0, h = FLT_MIN (unweighted)
ONE_COLUMN_KERNEL(hinge, {
    const double s = 2.0 * y[i] - 1.0;
    if (m[i] * s < 1.0) {
        gi = -s * wi;
        hi = wi;
    } else {
        gi = 0.0;
        hi = 1.1754943508222875e-38;
    }
})

// logistic with a = scale_pos_weight: rows labelled 1 weigh a times their weight
ONE_COLUMN_KERNEL(logistic_scaled, {
    const double x = m[i];
    double p;
    if (x >= 0.0) {
        p = 1.0 / (1.0 + exp(-x));
    } else {
        const double e = exp(x);
        p = e / (1.0 + e);
    }
    const double ws = y[i] == 1.0 ? wi * a : wi;
    gi = (p - y[i]) * ws;
    hi = fmax(p * (1.0 - p), HESS_FLOOR) * ws;
})

// g = sign(m - y) (0 where equal), h = 1
ONE_COLUMN_KERNEL(absolute_error, {
    const double d = m[i] - y[i];
    gi = (d > 0.0 ? 1.0 : (d < 0.0 ? -1.0 : 0.0)) * wi;
    hi = wi;
})

// a = alpha: g = 1 - a where m >= y, else -a; h = 1
ONE_COLUMN_KERNEL(quantile, {
    gi = (m[i] >= y[i] ? 1.0 - a : -a) * wi;
    hi = wi;
})

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
