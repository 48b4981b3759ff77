// Metric kernels (dgbdt/metrics/sorted_scores.py, dgbdt/kernels/gpu_metric.py).
#include "common.cuh"

// Twice the ROC area of rows held as up to 4 parts, each sorted by score (dgbdt.metrics.sorted_scores):
// row i of score s adds pos[i] * (2 N(< s) + N(= s)), N over every part's negatives; per part
// q = [off_q, off_{q+1}), N(< s) and N(<= s) are its exclusive prefix sums of negatives
// (cneg, over all rows, cneg[0] = 0) at the lower and upper bound of s. out[0] += the sum,
// out[1] += sum pos. int64 throughout (exact; the caller checks the bound).
__device__ __forceinline__ i64 lower_bound(const double* __restrict__ s, i64 a, i64 b, double v) {
    while (a < b) { const i64 m = (a + b) >> 1; if (s[m] < v) a = m + 1; else b = m; }
    return a;
}
__device__ __forceinline__ i64 upper_bound(const double* __restrict__ s, i64 a, i64 b, double v) {
    while (a < b) { const i64 m = (a + b) >> 1; if (s[m] <= v) a = m + 1; else b = m; }
    return a;
}

extern "C" __global__ void auc_twice_area(
        const double* __restrict__ score, const i64* __restrict__ pos,
        const i64* __restrict__ cneg, i64 n, int n_parts,
        i64 off0, i64 off1, i64 off2, i64 off3, i64 off4, unsigned long long* __restrict__ out) {
    const i64 off[5] = {off0, off1, off2, off3, off4};
    i64 area = 0, p = 0;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double v = score[i];
        i64 acc = 0;
        for (int q = 0; q < n_parts; ++q) {
            const i64 a = off[q], b = off[q + 1];
            const i64 base = cneg[a];
            acc += (cneg[lower_bound(score, a, b, v)] - base)
                 + (cneg[upper_bound(score, a, b, v)] - base);
        }
        area += pos[i] * acc;
        p += pos[i];
    }
    for (int d = 16; d > 0; d >>= 1) {
        area += __shfl_down_sync(0xffffffffu, area, d);
        p += __shfl_down_sync(0xffffffffu, p, d);
    }
    if ((threadIdx.x & 31) == 0) {
        if (area) atomicAdd(out, (unsigned long long)area);
        if (p) atomicAdd(out + 1, (unsigned long long)p);
    }
}

// p[i] = sigmoid(m[i * stride]), stably: e = exp(-|m|), then 1 / (1 + e) for m >= 0, else
// e / (1 + e) (dgbdt.objectives.base.sigmoid: the same operations, so the same bits).
extern "C" __global__ void sigmoid_f64(const double* __restrict__ m, i64 n, i64 stride,
                                       double* __restrict__ p) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double x = m[i * stride];
        const double e = exp(-fabs(x));
        p[i] = x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    }
}

// Unit-weight binary labels (dgbdt.metrics.auc): pos[i] = 1 for y = 1, 0 for y = 0, else
// rint(y) as int64; neg[i] = 1 - pos[i].
extern "C" __global__ void unit_labels(const double* __restrict__ y, i64 n, i64 stride,
                                       i64* __restrict__ pos, i64* __restrict__ neg) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double v = y[i * stride];
        const i64 p = v == 1.0 ? 1 : (v == 0.0 ? 0 : (i64)rint(v));
        pos[i] = p;
        neg[i] = 1 - p;
    }
}

// out_k[i] = in_k[order[i]] for three arrays of 8-byte values (rows sorted by score).
extern "C" __global__ void gather3_u64(const i64* __restrict__ order, i64 n,
                                       const u64* __restrict__ a, const u64* __restrict__ b,
                                       const u64* __restrict__ c, u64* __restrict__ oa,
                                       u64* __restrict__ ob, u64* __restrict__ oc) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 r = order[i];
        oa[i] = a[r];
        ob[i] = b[r];
        oc[i] = c[r];
    }
}

// rows[i] = (a[i], b[i], c[i]) and back: the [n, 3] rows of 8-byte values that ranks gather
// for a collective auc (dgbdt.metrics.sorted_scores.rows / from_rows)
extern "C" __global__ void stack3_u64(const u64* __restrict__ a, const u64* __restrict__ b,
                                      const u64* __restrict__ c, i64 n, u64* __restrict__ rows) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        rows[3 * i] = a[i];
        rows[3 * i + 1] = b[i];
        rows[3 * i + 2] = c[i];
    }
}

extern "C" __global__ void unstack3_u64(const u64* __restrict__ rows, i64 n, u64* __restrict__ a,
                                        u64* __restrict__ b, u64* __restrict__ c) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        a[i] = rows[3 * i];
        b[i] = rows[3 * i + 1];
        c[i] = rows[3 * i + 2];
    }
}
