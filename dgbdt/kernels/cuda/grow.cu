// Device-resident growth (dgbdt/tree/device_grower.py): the bookkeeping between a level's
// split evaluation and the next level, fused into one launch each. The array code of
// DeviceGrowth._advance_arrays / _finish_arrays is the CPU twin and the specification: the same
// decisions, child numbers and float roundings (compiled with --fmad=false).
#include "common.cuh"
#include "scan.cuh"

// One level. cand [W, 6] = finish_splits' rows (float32 gain bits, feature or -1, split bin,
// default left, left G, left H); totals [W, 2] the slots' fixed-point sums (0 for an absent
// slot); slots [W] the node of each histogram row (sentinel: absent); natural [W] its
// breadth-first position in 0..width-1.
//
// A slot's node splits iff it exists, has a candidate, gain > min_gain, gain >= gamma (float32
// comparisons) and both children have a nonzero hessian sum. Splitting nodes are ranked by
// position (flags: int64 scratch [width + 1], a block-wide exclusive scan) and their children
// numbered n_nodes + 2 rank (left), + 1 (right). Writes the node table of the splitting nodes,
// the shards' split batch [6, W] (node, feature, bin, default left, left, right; sentinel rows
// for the others) and, with want_next, the next level: slot s is the smaller child of slot s
// (by hessian sum, left on a tie), slot W + s the larger, with positions and totals.
//
// One block: a single block sees every slot (W <= 2^15), so the scan needs no second pass.
extern "C" __global__ void __launch_bounds__(1024) advance_level(
        const i64* __restrict__ cand, const i64* __restrict__ totals,
        const i64* __restrict__ slots, const i64* __restrict__ natural, int W, int width,
        i64 sentinel, float min_gain, float gamma, const float* __restrict__ cut_values,
        const i64* __restrict__ cut_ptrs, const float* __restrict__ cut_min,
        i64* __restrict__ n_nodes, i64* __restrict__ t_left, i64* __restrict__ t_right,
        i64* __restrict__ t_parent, i64* __restrict__ t_feature,
        bool* __restrict__ t_default_left, float* __restrict__ t_threshold,
        float* __restrict__ t_loss, i64* __restrict__ t_totals, i64* __restrict__ flags,
        i64* __restrict__ batch, int want_next, i64* __restrict__ next_slots,
        i64* __restrict__ next_natural, i64* __restrict__ next_totals) {
    const i64 n0 = n_nodes[0];
    for (int p = threadIdx.x; p <= width; p += blockDim.x) flags[p] = 0;
    __syncthreads();
    for (int j = threadIdx.x; j < W; j += blockDim.x) {
        const i64* c = cand + 6 * (i64)j;
        const float gain = __int_as_float((int)(u32)c[0]);
        const i64 lh = c[5], rh = totals[2 * j + 1] - c[5];
        const bool ok = slots[j] != sentinel && c[1] >= 0 && gain > min_gain
                        && gain >= gamma && lh != 0 && rh != 0;
        if (ok) flags[natural[j]] = 1;
    }
    __syncthreads();
    const i64 n_split = block_exclusive_scan(flags, (i64)width);   // ranks by position
    for (int j = threadIdx.x; j < W; j += blockDim.x) {
        const i64* c = cand + 6 * (i64)j;
        const float gain = __int_as_float((int)(u32)c[0]);
        const i64 f = c[1], b = c[2], lg = c[4], lh = c[5];
        const i64 rg = totals[2 * j] - lg, rh = totals[2 * j + 1] - lh;
        const i64 node = slots[j];
        const bool ok = node != sentinel && f >= 0 && gain > min_gain && gain >= gamma
                        && lh != 0 && rh != 0;
        i64 l = sentinel, r = sentinel;
        if (ok) {
            l = n0 + 2 * flags[natural[j]];
            r = l + 1;
            t_feature[node] = f;
            t_default_left[node] = c[3] != 0;
            t_loss[node] = gain;
            t_threshold[node] = b >= 0 ? cut_values[cut_ptrs[f] + b] : cut_min[f];
            t_left[node] = l;
            t_right[node] = r;
            t_parent[l] = node;
            t_parent[r] = node;
            t_totals[2 * l] = lg; t_totals[2 * l + 1] = lh;
            t_totals[2 * r] = rg; t_totals[2 * r + 1] = rh;
        }
        batch[j] = ok ? node : sentinel;
        batch[W + j] = ok ? f : 0;
        batch[2 * W + j] = ok ? b : 0;
        batch[3 * W + j] = ok ? (c[3] != 0) : 0;
        batch[4 * W + j] = l;
        batch[5 * W + j] = r;
        if (want_next) {
            const bool left_small = lh <= rh;
            const i64 at = ok ? 2 * natural[j] : 2 * (i64)width;
            const int s = j, t = W + j;
            next_slots[s] = left_small ? l : r;
            next_slots[t] = left_small ? r : l;
            next_natural[s] = left_small ? at : at + 1;
            next_natural[t] = left_small ? at + 1 : at;
            next_totals[2 * s] = ok ? (left_small ? lg : rg) : 0;
            next_totals[2 * s + 1] = ok ? (left_small ? lh : rh) : 0;
            next_totals[2 * t] = ok ? (left_small ? rg : lg) : 0;
            next_totals[2 * t + 1] = ok ? (left_small ? rh : lh) : 0;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) n_nodes[0] = n0 + 2 * n_split;
}

// The leaves of a grown tree and their values: nodes [cap] = i for a leaf i < n_nodes, else
// the sentinel; values [cap] = eta * w* of (G, H) = (totals / scale_g, totals / scale_h) as
// float32, then float64 (dgbdt.tree.split.leaf_weights: the same operations), else 0.
// consts: the tree's constants (scale_g, scale_h, 1 / scale_g, 1 / scale_h, eta), in device
// memory so that a captured tree (a CUDA graph) replays with the next tree's values.
extern "C" __global__ void leaf_values(
        const i64* __restrict__ n_nodes, const i64* __restrict__ left,
        const i64* __restrict__ totals, int cap, i64 sentinel,
        const double* __restrict__ consts, double lam, double alpha, double max_delta_step,
        double min_child_weight, i64* __restrict__ nodes, double* __restrict__ values) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= cap) return;
    const double scale_g = consts[0], scale_h = consts[1], eta = consts[4];
    const bool leaf = i < n_nodes[0] && left[i] == -1;
    double w = 0.0;
    if (leaf) {
        const double g = (double)totals[2 * i] / scale_g;
        const double h = (double)totals[2 * i + 1] / scale_h;
        if (!(h < min_child_weight || h <= 0.0)) {
            const double t = g > alpha ? g - alpha : (g < -alpha ? g + alpha : 0.0);
            w = -t / (h + lam);
            if (max_delta_step != 0.0 && fabs(w) > max_delta_step)
                w = w > 0 ? max_delta_step : -max_delta_step;
        }
        w = (double)(float)(w * eta);
    }
    nodes[i] = leaf ? (i64)i : sentinel;
    values[i] = w;
}
