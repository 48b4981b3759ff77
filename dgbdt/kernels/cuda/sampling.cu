// Row sampling's per-row draws on the device in one kernel (dgbdt.engine.sampling, dgbdt.engine.sampled_rounds).
// The twin of dgbdt/engine/sampling.py's ``uniform`` (SplitMix64's finalizer over id + key, the top
// 53 bits as a float64 in [0, 1)) and of dgbdt/engine/sampled_rounds.py's ``candidate_rows``: the same
// integer and float64 operations, each rounded once (compiled with --fmad=false), so the
// same rows. tests/gpu/test_gpu_compact_rows.py checks it against the array code.
#include "common.cuh"

__device__ __forceinline__ double draw(u64 key, u64 id) {
    u64 x = id + key;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ULL;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBULL;
    x ^= x >> 31;
    return (double)(x >> 11) * (1.0 / 9007199254740992.0);
}

// keep[i] = 1 iff row i (global index id0 + i) may be in the round's sample:
// uniform sampling (K == 0): draw(key0, id) < rate;
// gradient-based sampling: for some class k, with v = sqrt(g^2 + lam h^2),
//   draw(keys[k], id) < (v + step[k]) * cr[k]  or  v >= vt[k]
// (cr = c * REACH and vt = v_t / REACH, formed on the host as candidate_rows forms them).
// g, h: float64 [n, K] row-major.
extern "C" __global__ void candidates(
        const double* __restrict__ g, const double* __restrict__ h, int K, i64 n, i64 id0,
        const u64* __restrict__ keys, const double* __restrict__ cr,
        const double* __restrict__ step, const double* __restrict__ vt, double lam,
        u64 key0, double rate, unsigned char* __restrict__ keep) {
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const u64 id = (u64)(id0 + i);
        unsigned char hit = 0;
        if (K == 0) {
            hit = draw(key0, id) < rate;
        } else {
            for (int k = 0; k < K && !hit; ++k) {
                const double gk = g[i * K + k], hk = h[i * K + k];
                const double v = sqrt(gk * gk + lam * (hk * hk));
                hit = (draw(keys[k], id) < (v + step[k]) * cr[k]) || (v >= vt[k]);
            }
        }
        keep[i] = hit;
    }
}

// Round sampling applied to the gradients in place, the twin of dgbdt.engine.sampling's apply_rows
// (by_gradient 0: every class's g and h times 1.0 if draw(key, id) < rate, else 0.0) and of
// dgbdt.engine.gradient_sampling's magnitudes / probabilities / sample_class for class k
// (by_gradient 1): q = min(ceil(v qscale), 2^24 - 1) (0 when qscale <= 0), p = 1 at or
// above t_star, else q ratio (0 when v_zero), and g, h times 1 / p where draw < p, else 0.
extern "C" __global__ void apply_sample(
        double* __restrict__ g, double* __restrict__ h, int K, int k, i64 n, i64 id0, u64 key,
        int by_gradient, double rate, double lam, double qscale, i64 t_star, double ratio,
        int v_zero) {
    const i64 qcap = (1LL << 24) - 1;
    for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double u = draw(key, (u64)(id0 + i));
        if (!by_gradient) {
            const double keep = u < rate ? 1.0 : 0.0;
            for (int c = 0; c < K; ++c) {
                g[i * K + c] *= keep;
                h[i * K + c] *= keep;
            }
            continue;
        }
        const double gk = g[i * K + k], hk = h[i * K + k];
        i64 q = 0;
        if (qscale > 0.0) {
            const double v = sqrt(gk * gk + lam * (hk * hk));
            q = (i64)ceil(v * qscale);
            if (q > qcap) q = qcap;
        }
        double p;
        if (q >= t_star) p = 1.0;
        else p = v_zero ? 0.0 : (double)q * ratio;
        const double s = u < p ? 1.0 / (p > 0.0 ? p : 1.0) : 0.0;
        g[i * K + k] = gk * s;
        h[i * K + k] = hk * s;
    }
}
