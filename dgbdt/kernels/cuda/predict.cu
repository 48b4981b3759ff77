// Prediction on raw float32 features (dgbdt/kernels/cpu_tree.py: predict_raw), one thread per
// row, trees in order (so float64 sums are added in the CPU's order).
#include "common.cuh"

extern "C" __global__ void predict_raw(
        const float* __restrict__ X, i64 n, int n_features, const int* __restrict__ left,
        const int* __restrict__ right, const int* __restrict__ feature,
        const float* __restrict__ threshold, const unsigned char* __restrict__ default_left,
        const i64* __restrict__ tree_ptrs, const i64* __restrict__ tree_class, int n_trees,
        int K, double* __restrict__ out, int* __restrict__ leaf_out, int want_leaf) {
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    const float* x = X + r * n_features;
    for (int t = 0; t < n_trees; ++t) {
        const i64 base = tree_ptrs[t];
        int node = 0;
        while (left[base + node] != -1) {
            const float v = x[feature[base + node]];
            const bool go_left = (v != v) ? default_left[base + node] != 0
                                          : v < threshold[base + node];
            node = go_left ? left[base + node] : right[base + node];
        }
        out[r * K + tree_class[t]] += (double)threshold[base + node];
        if (want_leaf) leaf_out[r * n_trees + t] = node;
    }
}
