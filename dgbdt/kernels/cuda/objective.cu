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

// several quantiles (reg:quantileerror, quantile_alpha a list; cpu_objective.quantiles): column
// k as quantile at alphas[k] (device, K entries); maxima: column_max, once per column
extern "C" __global__ void quantiles(const double* __restrict__ m, const double* __restrict__ y,
        const double* __restrict__ w, int has_w, const double* __restrict__ alphas, i64 n, int K,
        double* __restrict__ g, double* __restrict__ h, u64* __restrict__ mx) {
    ROWS {
        const double wi = has_w ? w[i] : 1.0;
        for (int k = 0; k < K; ++k) {
            const double a = alphas[k];
            g[i * K + k] = (m[i * K + k] >= y[i] ? 1.0 - a : -a) * wi;
            h[i * K + k] = wi;
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

// survival:aft (dgbdt/kernels/cpu_survival.py, XGBoost's survival_util.h): y [n, 2] the label
// intervals (lower, upper), a = the distribution's scale s; D = 0 normal, 1 logistic, 2 extreme.
#define AFT_MIN_G -15.0
#define AFT_MAX_G 15.0
#define AFT_MIN_H 1e-16
#define AFT_MAX_H 15.0
#define AFT_EPS 1e-12

template <int D> __device__ __forceinline__ double aft_pdf(double z) {
    if (D == 0) return exp(-z * z / 2.0) / sqrt(2.0 * 3.14159265358979323846);
    const double w = exp(z);
    if (D == 1) return (isinf(w) || isinf(w * w)) ? 0.0 : w / ((1.0 + w) * (1.0 + w));
    return isinf(w) ? 0.0 : w * exp(-w);
}
template <int D> __device__ __forceinline__ double aft_cdf(double z) {
    if (D == 0) return 0.5 * (1.0 + erf(z / sqrt(2.0)));
    const double w = exp(z);
    if (D == 1) return isinf(w) ? 1.0 : w / (1.0 + w);
    return 1.0 - exp(-w);
}
template <int D> __device__ __forceinline__ double aft_grad_pdf(double z) {
    if (D == 0) return -z * aft_pdf<D>(z);
    const double w = exp(z);
    if (isinf(w)) return 0.0;
    if (D == 1) return aft_pdf<D>(z) * (1.0 - w) / (1.0 + w);
    return (1.0 - w) * aft_pdf<D>(z);
}
template <int D> __device__ __forceinline__ double aft_hess_pdf(double z) {
    if (D == 0) return (z * z - 1.0) * aft_pdf<D>(z);
    const double w = exp(z);
    if (isinf(w) || isinf(w * w)) return 0.0;
    if (D == 1) return aft_pdf<D>(z) * (w * w - 4.0 * w + 1.0) / ((1.0 + w) * (1.0 + w));
    return (w * w - 3.0 * w + 1.0) * aft_pdf<D>(z);
}
// censoring: 0 uncensored, 1 right, 2 left, 3 interval
template <int D> __device__ __forceinline__ double aft_limit_grad(int c, bool sign, double s) {
    if (D == 0) {
        if (c == 1) return sign ? AFT_MIN_G : 0.0;
        if (c == 2) return sign ? 0.0 : AFT_MAX_G;
        return sign ? AFT_MIN_G : AFT_MAX_G;
    }
    if (D == 1) {
        if (c == 1) return sign ? -1.0 / s : 0.0;
        if (c == 2) return sign ? 0.0 : 1.0 / s;
        return sign ? -1.0 / s : 1.0 / s;
    }
    if (c == 1) return sign ? AFT_MIN_G : 0.0;
    if (c == 2) return sign ? 0.0 : 1.0 / s;
    return sign ? AFT_MIN_G : 1.0 / s;
}
template <int D> __device__ __forceinline__ double aft_limit_hess(int c, bool sign, double s) {
    if (D == 0) {
        if (c == 1) return sign ? 1.0 / (s * s) : AFT_MIN_H;
        if (c == 2) return sign ? AFT_MIN_H : 1.0 / (s * s);
        return 1.0 / (s * s);
    }
    if (D == 1) return AFT_MIN_H;
    if (c == 2) return AFT_MIN_H;
    return sign ? AFT_MAX_H : AFT_MIN_H;
}
template <int D> __device__ __forceinline__ void aft_grad_hess(double lo, double hi, double pred,
                                                               double s, double& g, double& h) {
    const double log_lo = lo > 0.0 ? log(lo) : -__longlong_as_double(0x7ff0000000000000LL);  // log 0
    double g_num, g_den, h_num, h_den;
    int c;
    bool sign;
    if (lo == hi) {
        const double z = (log_lo - pred) / s;
        const double p = aft_pdf<D>(z), gp = aft_grad_pdf<D>(z), hp = aft_hess_pdf<D>(z);
        c = 0;
        g_num = gp;
        g_den = s * p;
        h_num = -(p * hp - gp * gp);
        h_den = s * s * p * p;
        sign = z > 0.0;
    } else {
        double z_u = 0.0, z_l = 0.0, pdf_u, cdf_u, gpdf_u, pdf_l, cdf_l, gpdf_l;
        c = 3;
        if (isinf(hi)) {
            pdf_u = 0.0; cdf_u = 1.0; gpdf_u = 0.0;
            c = 1;
        } else {
            z_u = (log(hi) - pred) / s;
            pdf_u = aft_pdf<D>(z_u); cdf_u = aft_cdf<D>(z_u); gpdf_u = aft_grad_pdf<D>(z_u);
        }
        if (lo <= 0.0) {
            pdf_l = 0.0; cdf_l = 0.0; gpdf_l = 0.0;
            c = 2;
        } else {
            z_l = (log_lo - pred) / s;
            pdf_l = aft_pdf<D>(z_l); cdf_l = aft_cdf<D>(z_l); gpdf_l = aft_grad_pdf<D>(z_l);
        }
        sign = z_u > 0.0 || z_l > 0.0;
        const double cdf_diff = cdf_u - cdf_l, pdf_diff = pdf_u - pdf_l;
        g_num = pdf_diff;
        g_den = s * cdf_diff;
        h_num = -(cdf_diff * (gpdf_u - gpdf_l) - pdf_diff * pdf_diff);
        h_den = (s * cdf_diff) * (s * cdf_diff);
    }
    g = g_num / g_den;
    if (g_den < AFT_EPS && (isnan(g) || isinf(g))) g = aft_limit_grad<D>(c, sign, s);
    h = h_num / h_den;
    if (h_den < AFT_EPS && (isnan(h) || isinf(h))) h = aft_limit_hess<D>(c, sign, s);
    g = fmin(fmax(g, AFT_MIN_G), AFT_MAX_G);
    h = fmin(fmax(h, AFT_MIN_H), AFT_MAX_H);
}

#define AFT_KERNEL(NAME, D)                                                                   \
extern "C" __global__ void NAME(const double* __restrict__ m, const double* __restrict__ y,    \
        const double* __restrict__ w, int has_w, double a, i64 n, int K,                     \
        double* __restrict__ g, double* __restrict__ h, u64* __restrict__ mx) {              \
    double ag = 0.0, ah = 0.0;                                                                \
    ROWS {                                                                                    \
        const double wi = has_w ? w[i] : 1.0;                                                 \
        double gi, hi;                                                                        \
        aft_grad_hess<D>(y[2 * i], y[2 * i + 1], m[i], a, gi, hi);                            \
        gi *= wi;                                                                             \
        hi *= wi;                                                                             \
        g[i] = gi;                                                                            \
        h[i] = hi;                                                                            \
        ag = fmax(ag, fabs(gi));                                                              \
        ah = fmax(ah, hi);                                                                    \
    }                                                                                         \
    post_max(mx, K, 0, ag, ah);                                                               \
}
AFT_KERNEL(aft_normal, 0)
AFT_KERNEL(aft_logistic, 1)
AFT_KERNEL(aft_extreme, 2)
