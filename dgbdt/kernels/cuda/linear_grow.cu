// The small solves of a device-grown piecewise-linear tree (dgbdt.tree.linear_device): each
// splitting slot's two half-additive fits and its children's regressors (linear_children),
// and every leaf's ridge fit (fit_linear_leaves). One thread a slot / a leaf; the
// specification is kernels/cpu_linear_fit.py (the same loops), whose solves are
// dgbdt.kernels.linear_math's basis_system and ridge_solve: the same float64 operations in the same
// order (compiled with --fmad=false, so nothing is contracted; sqrt and / are IEEE-rounded),
// so the same coefficients bit for bit. The CI test tests/test_linear_grow_host.py compiles
// this file as host C++ against the numba functions.
//
// consts: the tree's constants in device memory (dgbdt.backends.cuda.tree_consts: scale_g,
// scale_h, 1 / scale_g, 1 / scale_h, eta), so a tree captured as a CUDA graph replays with the
// next tree's (dgbdt.tree.tree_graph). Tables (cap rows, one a node): regs int64 [cap, D] (a node's regressors, -1 padded), slopes
// float64 [cap, D] (its slope part v), nreg int64 [cap] (|S|), inv_sp float64 [cap] (1 / s_p,
// s_p the power of two >= sum_j |v_j|, summed in order). Sums: the 9 fixed-point sums of a
// side (dgbdt.kernels.linear_math.PAYLOAD: g, h, g p~, h p~, h p~^2, g x~, h x~, h p~ x~, h x~^2).
#include "common.cuh"

#define LIN_DROP 1e-9      // dgbdt.kernels.linear_math.DROP

// tree.linear.ridge_solve with want_w: w = -A^-1 b over the first n entries of A (row-major,
// leading dimension ld), a pivot below LIN_DROP times its diagonal dropping its variable.
__device__ void lin_ridge_solve(const double* A, const double* b, int n, int ld, double* w,
                                double* L, bool* keep, double* y) {
    for (int i = 0; i < n; ++i) {
        keep[i] = false;
        y[i] = 0.0;
        double d = A[i * ld + i];
        for (int k = 0; k < i; ++k)
            if (keep[k]) d -= L[i * ld + k] * L[i * ld + k];
        if (!(d > LIN_DROP * A[i * ld + i]) || !(A[i * ld + i] > 0.0)) continue;
        keep[i] = true;
        const double r = sqrt(d);
        L[i * ld + i] = r;
        for (int j = i + 1; j < n; ++j) {
            double s = A[j * ld + i];
            for (int k = 0; k < i; ++k)
                if (keep[k]) s -= L[j * ld + k] * L[i * ld + k];
            L[j * ld + i] = s / r;
        }
        double s = b[i];
        for (int k = 0; k < i; ++k)
            if (keep[k]) s -= L[i * ld + k] * y[k];
        y[i] = s / r;
    }
    for (int i = n - 1; i >= 0; --i) {
        if (!keep[i]) {
            w[i] = 0.0;
            continue;
        }
        double s = y[i];
        for (int k = i + 1; k < n; ++k)
            if (keep[k]) s -= L[k * ld + i] * w[k];
        w[i] = s / L[i * ld + i];
    }
    for (int i = 0; i < n; ++i) w[i] = -w[i];
}

// tree.linear.basis_system: A (3x3) and b of the basis (1, [p~], [x~]); returns its size.
__device__ int lin_basis_system(const i64* s, double inv_sg, double inv_sh, double lam0,
                                double lam1, bool use_p, bool use_x, double* A, double* b) {
    int n = 1;
    A[0] = (double)s[1] * inv_sh + lam0;
    b[0] = (double)s[0] * inv_sg;
    int ip = -1;
    if (use_p) {
        ip = n;
        A[n * 3 + n] = (double)s[4] * inv_sh + lam1;
        A[n] = (double)s[3] * inv_sh;
        A[n * 3] = A[n];
        b[n] = (double)s[2] * inv_sg;
        n += 1;
    }
    if (use_x) {
        A[n * 3 + n] = (double)s[8] * inv_sh + lam1;
        A[n] = (double)s[6] * inv_sh;
        A[n * 3] = A[n];
        if (ip >= 0) {
            A[ip * 3 + n] = (double)s[7] * inv_sh;
            A[n * 3 + ip] = A[ip * 3 + n];
        }
        b[n] = (double)s[5] * inv_sg;
        n += 1;
    }
    return n;
}

// cpu_linear_fit.abs_sum and pow2_at_least.
__device__ double lin_abs_sum(const double* v, int n) {
    double s = 0.0;
    for (int j = 0; j < n; ++j) s += fabs(v[j]);
    return s;
}

__device__ double lin_pow2_at_least(double x) {
    if (!(x > 0.0) || !isfinite(x)) return 1.0;
    int e;
    const double m = frexp(x, &e);
    if (m == 0.5) e -= 1;
    return ldexp(1.0, e);
}

// cpu_linear_fit.level_inputs: a level's slots' rows of the node tables (the request's
// reg_feat [W, D], reg_coef [W, D], isp [W]) and what the split search needs of them:
// addable uint8 [W, F] (x~_f enters the candidates: f may be a regressor and |S| < D, or f is
// in S) and has_p uint8 [W] (|S| > 0). A thread a slot.
extern "C" __global__ void linear_level(
        const i64* slots, int W, const i64* regs, const double* slopes, const i64* nreg,
        const double* inv_sp, const unsigned char* regressor, int F, int D, i64* reg_feat,
        double* reg_coef, double* isp, unsigned char* addable, unsigned char* has_p) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < W; i += blockDim.x * gridDim.x) {
        const i64 node = slots[i];
        const i64 d = nreg[node];
        for (int t = 0; t < D; ++t) {
            reg_feat[(i64)i * D + t] = regs[node * D + t];
            reg_coef[(i64)i * D + t] = slopes[node * D + t];
        }
        isp[i] = inv_sp[node];
        has_p[i] = d > 0;
        for (int f = 0; f < F; ++f) {
            bool a = regressor[f] && d < D;
            if (regressor[f] && !a)
                for (int t = 0; t < d; ++t)
                    if (regs[node * D + t] == f) a = true;
            addable[(i64)i * F + f] = a;
        }
    }
}

// cpu_linear_fit.linear_children: slot i whose node nodes[i] splits (not the sentinel), on
// feat[i], gives its children lefts[i] / rights[i] their regressors, slope parts and 1 / s_p
// from the half-additive fits of their sums lsum[i] / rsum[i] (int64 [W, 9]): p~ in the basis
// when the node has regressors, x~ when addable[i, feat[i]].
extern "C" __global__ void linear_children(
        const i64* nodes, const i64* feat, const i64* lefts, const i64* rights,
        const i64* lsum, const i64* rsum, const unsigned char* addable, int F, i64 sentinel,
        i64* regs, double* slopes, i64* nreg, double* inv_sp, int W, int D,
        const double* consts, double lam0, double lam1) {
    const double inv_sg = consts[2], inv_sh = consts[3];   // the tree's 1 / scales
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < W; i += blockDim.x * gridDim.x) {
        const i64 node = nodes[i];
        if (node == sentinel) continue;
        const i64 f = feat[i];
        const int d = (int)nreg[node];
        const bool up = d > 0, ux = addable[(i64)i * F + f] != 0;
        const double sb = lin_pow2_at_least(lin_abs_sum(slopes + node * D, d));
        double A[9], b[3], w[3], L[9], y[3];
        bool keep[3];
        for (int side = 0; side < 2; ++side) {
            const i64 child = side == 0 ? lefts[i] : rights[i];
            const i64* s = (side == 0 ? lsum : rsum) + (i64)i * 9;
            const int n = lin_basis_system(s, inv_sg, inv_sh, lam0, lam1, up, ux, A, b);
            lin_ridge_solve(A, b, n, 3, w, L, keep, y);
            const double k1 = up ? w[1] : 0.0;
            const double k2 = ux ? w[n - 1] : 0.0;
            int at = -1;
            for (int j = 0; j < d; ++j) {
                regs[child * D + j] = regs[node * D + j];
                slopes[child * D + j] = k1 * slopes[node * D + j] / sb;
                if (regs[node * D + j] == f) at = j;
            }
            int dd = d;
            if (ux) {
                if (at >= 0) {
                    slopes[child * D + at] += k2;
                } else {
                    regs[child * D + d] = f;
                    slopes[child * D + d] = k2;
                    dd = d + 1;
                }
            }
            for (int j = dd; j < D; ++j) {
                regs[child * D + j] = -1;
                slopes[child * D + j] = 0.0;
            }
            nreg[child] = dd;
            inv_sp[child] = 1.0 / lin_pow2_at_least(lin_abs_sum(slopes + child * D, dd));
        }
    }
}

// cpu_linear_fit.fit_leaves: coefs[j, :d + 1] = eta * leaf slot j's ridge fit from its sums
// [D + 1, D + 2] (entries [:d+1, :d+1] h z z^T, column D + 1 g z); zeros for the sentinel
// and below min_child_weight. coefs float64 [m, D + 1], written whole. scratch: float64
// [m, LIN_SCRATCH(D + 1)], each thread's systems (global memory: a stack frame of the
// largest size, 33 x 33 twice, would reserve local memory for every resident thread).
#define LIN_SCRATCH(n) (2 * (n) * (n) + 4 * (n))
extern "C" __global__ void fit_linear_leaves(
        const i64* sums, const i64* leaves, const i64* nreg, i64 sentinel, int m, int D,
        const double* consts, double lam0, double lam1, double min_child_weight,
        double* scratch, double* coefs) {
    const double inv_sg = consts[2], inv_sh = consts[3], eta = consts[4];
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < m; j += blockDim.x * gridDim.x) {
        double* c = coefs + (i64)j * (D + 1);
        for (int t = 0; t <= D; ++t) c[t] = 0.0;
        const i64 node = leaves[j];
        if (node == sentinel) continue;
        const int d = (int)nreg[node], ld = D + 2;
        const i64* s = sums + (i64)j * (D + 1) * ld;
        const double h = (double)s[0] * inv_sh;
        if (h < min_child_weight || h <= 0.0) continue;
        const int n = d + 1;
        double* A = scratch + (i64)j * LIN_SCRATCH(D + 1);
        double* L = A + n * n;
        double* b = L + n * n;
        double* w = b + n;
        double* y = w + n;
        bool* keep = (bool*)(y + n);
        for (int a = 0; a < n; ++a) {
            for (int q = 0; q < n; ++q) A[a * n + q] = (double)s[a * ld + q] * inv_sh;
            b[a] = (double)s[a * ld + D + 1] * inv_sg;
        }
        A[0] += lam0;
        for (int a = 1; a < n; ++a) A[a * n + a] += lam1;
        lin_ridge_solve(A, b, n, n, w, L, keep, y);
        for (int t = 0; t < n; ++t) c[t] = w[t] * eta;
    }
}
