// Prediction on raw float32 features (dgbdt/kernels/cpu_tree.py: predict_raw), one thread per
// row, trees in order (so float64 sums are added in the CPU's order).
#include "common.cuh"

// Categorical splits (dgbdt/kernels/cpu_categorical.py: goes_left_cat): a node with is_cat
// sends x right iff it is a whole code 0 <= c < cat_size whose byte cats[cat_begin + c] is set;
// any other value goes left (XGBoost's rule; codes up to 2^24 - 1). NaN is handled before.
struct CatSets {
    const unsigned char* __restrict__ is_cat;
    const i64* __restrict__ begin;
    const i64* __restrict__ size;
    const unsigned char* __restrict__ cats;
};

// nodes[i] = (left, right, feature | default_left << 31, threshold bits): one 16-byte load per
// node visited instead of five (dgbdt/backends/cuda.py: pack_nodes). A leaf has left == -1 and
// its value in the threshold. With one output (K == 1) the row's margin is summed in a
// register (the same additions in the same order as adding into out tree by tree). CAT: the
// trees have categorical splits (``sets``); without, the loop is the numerical one alone.
template <bool CAT>
__device__ __forceinline__ void predict_row(
        const float* __restrict__ X, i64 n, int n_features, const int4* __restrict__ nodes,
        const i64* __restrict__ tree_ptrs, const i64* __restrict__ tree_class, int n_trees,
        int K, double* __restrict__ out, int* __restrict__ leaf_out, int want_leaf,
        CatSets sets) {
    const i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    const float* x = X + r * n_features;
    double acc = K == 1 ? out[r] : 0.0;
    for (int t = 0; t < n_trees; ++t) {
        const i64 base = tree_ptrs[t];
        const int4* tree = nodes + base;
        int node = 0;
        int4 nd = __ldg(tree);
        while (nd.x != -1) {
            const float v = x[nd.z & 0x7fffffff];
            bool go_left;
            if (v != v) {
                go_left = nd.z < 0;
            } else if (CAT && sets.is_cat[base + node]) {
                const i64 c = (i64)v;
                go_left = v < 0.0f || v >= 16777215.0f || c >= sets.size[base + node]
                          || !sets.cats[sets.begin[base + node] + c];
            } else {
                go_left = v < __int_as_float(nd.w);
            }
            node = go_left ? nd.x : nd.y;
            nd = __ldg(tree + node);
        }
        const double leaf = (double)__int_as_float(nd.w);
        if (K == 1) acc += leaf;
        else out[r * K + tree_class[t]] += leaf;
        if (want_leaf) leaf_out[r * n_trees + t] = node;
    }
    if (K == 1) out[r] = acc;
}

extern "C" __global__ void predict_raw(
        const float* __restrict__ X, i64 n, int n_features, const int4* __restrict__ nodes,
        const i64* __restrict__ tree_ptrs, const i64* __restrict__ tree_class, int n_trees,
        int K, double* __restrict__ out, int* __restrict__ leaf_out, int want_leaf) {
    predict_row<false>(X, n, n_features, nodes, tree_ptrs, tree_class, n_trees, K, out,
                       leaf_out, want_leaf, CatSets{nullptr, nullptr, nullptr, nullptr});
}

extern "C" __global__ void predict_raw_cat(
        const float* __restrict__ X, i64 n, int n_features, const int4* __restrict__ nodes,
        const i64* __restrict__ tree_ptrs, const i64* __restrict__ tree_class, int n_trees,
        int K, double* __restrict__ out, int* __restrict__ leaf_out, int want_leaf,
        const unsigned char* __restrict__ is_cat, const i64* __restrict__ cat_begin,
        const i64* __restrict__ cat_size, const unsigned char* __restrict__ cats) {
    predict_row<true>(X, n, n_features, nodes, tree_ptrs, tree_class, n_trees, K, out,
                      leaf_out, want_leaf, CatSets{is_cat, cat_begin, cat_size, cats});
}
