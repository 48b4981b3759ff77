// Input checks on the device (dgbdt/kernels/gpu_checks.py): a few integers out, one copy back.
// Written as kernels, not CuPy reductions, because each CuPy reduction is compiled by NVRTC at
// first use (with CUB's headers, about a second each): a fresh install's first fit paid ~10 s
// for these two checks alone.
#include "common.cuh"

// out[0] = the smallest flat index i < n with x[i] infinite (out[0] starts at n). Each thread
// keeps the first it meets on its stride; the least of those is the first overall.
template <typename T>
__device__ __forceinline__ void first_inf(const T* __restrict__ x, i64 n, u64* __restrict__ out) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        if (isinf(x[i])) { atomicMin(out, (u64)i); return; }
    }
}
extern "C" __global__ void first_inf_f32(const float* __restrict__ x, i64 n, u64* __restrict__ out) {
    first_inf<float>(x, n, out);
}
extern "C" __global__ void first_inf_f64(const double* __restrict__ x, i64 n, u64* __restrict__ out) {
    first_inf<double>(x, n, out);
}

// A double's bits mapped to a u64 whose unsigned order is the doubles' order.
__device__ __forceinline__ u64 order_key(double v) {
    const u64 b = (u64)__double_as_longlong(v);
    return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

// The labels' witnesses (dgbdt.objectives.base.label_witnesses) of y [n]:
// out[0] min index of a non-finite label (starts at n), out[1] min index of a finite label
// that is not an integer (starts at n), out[2] the least finite label's order key (starts at
// ~0), out[3] the greatest's (starts at 0). One atomic per thread for each.
extern "C" __global__ void label_scan(const double* __restrict__ y, i64 n, u64* __restrict__ out) {
    u64 bad = (u64)n, nonint = (u64)n, lo = ~0ull, hi = 0ull;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double v = y[i];
        if (!isfinite(v)) {
            if ((u64)i < bad) bad = (u64)i;
            continue;
        }
        if (v != floor(v) && (u64)i < nonint) nonint = (u64)i;
        const u64 k = order_key(v);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
    }
    if (bad < (u64)n) atomicMin(out, bad);
    if (nonint < (u64)n) atomicMin(out + 1, nonint);
    if (lo != ~0ull) atomicMin(out + 2, lo);
    if (hi != 0ull) atomicMax(out + 3, hi);
}
