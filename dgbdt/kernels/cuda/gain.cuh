// The float64 gain arithmetic of dgbdt/kernels/cpu_split.py (leaf weight, structure score,
// and under monotone bounds the gain at a clipped weight), shared by the split searches
// (split.cu, categorical.cu). The same operations in the same order; compiled with
// --fmad=false (no fused multiply-adds), so the same bits as the CPU's.
#pragma once

struct GainParams {
    double inv_sg, inv_sh, lam, alpha, max_delta_step, min_child_weight;
};

__device__ __forceinline__ double threshold_l1(double g, double alpha) {
    if (g > alpha) return g - alpha;
    if (g < -alpha) return g + alpha;
    return 0.0;
}

__device__ double leaf_weight(double g, double h, const GainParams& p) {
    if (h < p.min_child_weight || h <= 0.0) return 0.0;
    double w = -threshold_l1(g, p.alpha) / (h + p.lam);
    if (p.max_delta_step != 0.0 && fabs(w) > p.max_delta_step)
        w = w > 0 ? p.max_delta_step : -p.max_delta_step;
    return w;
}

__device__ double node_gain(double g, double h, const GainParams& p) {
    if (h <= 0.0) return 0.0;
    if (p.max_delta_step == 0.0) {
        const double t = threshold_l1(g, p.alpha);
        return t * t / (h + p.lam);
    }
    const double w = leaf_weight(g, h, p);
    return -(2.0 * g * w + (h + p.lam) * w * w);
}

__device__ __forceinline__ double clip_weight(double w, double lo, double hi) {
    return w < lo ? lo : (w > hi ? hi : w);
}

// -(2 G w + (H + lambda) w^2): XGBoost's gain of a node at weight w (0 when empty).
__device__ __forceinline__ double gain_at(double g, double h, double lam, double w) {
    if (h <= 0.0) return 0.0;
    return -(2.0 * g * w + (h + lam) * w * w);
}
