// Objective gradients (dgbdt/kernels/cpu_objective.py, same formulas): g, h float64 [n, K] for
// margins m [n, K], labels y [n], weights w [n] (has_w == 0: every weight is 1).
#include "common.cuh"

#define HESS_FLOOR 1e-16
#define ROWS for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; \
                  i += (i64)gridDim.x * blockDim.x)

extern "C" __global__ void squared_error(const double* __restrict__ m, const double* __restrict__ y,
        const double* __restrict__ w, int has_w, i64 n, int K, double* __restrict__ g,
        double* __restrict__ h) {
    ROWS {
        const double wi = has_w ? w[i] : 1.0;
        g[i] = (m[i] - y[i]) * wi;
        h[i] = wi;
    }
}

extern "C" __global__ void logistic(const double* __restrict__ m, const double* __restrict__ y,
        const double* __restrict__ w, int has_w, i64 n, int K, double* __restrict__ g,
        double* __restrict__ h) {
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
    }
}

extern "C" __global__ void softmax(const double* __restrict__ m, const double* __restrict__ y,
        const double* __restrict__ w, int has_w, i64 n, int K, double* __restrict__ g,
        double* __restrict__ h) {
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
