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
template <typename T>
__device__ __forceinline__ void scan_labels(const T* __restrict__ y, i64 n, u64* __restrict__ out) {
    u64 bad = (u64)n, nonint = (u64)n, lo = ~0ull, hi = 0ull;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const double v = (double)y[i];       // exact for float32
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
extern "C" __global__ void label_scan(const double* __restrict__ y, i64 n, u64* __restrict__ out) {
    scan_labels<double>(y, n, out);
}
extern "C" __global__ void label_scan_f32(const float* __restrict__ y, i64 n, u64* __restrict__ out) {
    scan_labels<float>(y, n, out);
}

// Class labels that are integers in a small range [lo, lo + range) (dgbdt.data.labels):
// present[v - lo] = 1 for every label v (plain stores: every writer writes 1), then each
// label's class index rank[v - lo] as a double; a label outside the range or whose rank is
// -1 (not a class) sets unknown[0] to the least such index (it starts at n). Integers below
// 2**53 in magnitude subtract exactly in double, so v - lo is the exact offset.
// T: the labels' type; A: the type of the arithmetic (double for floats, i64 for integers:
// a 32-bit label converts to it exactly).
template <typename T, typename A>
__device__ __forceinline__ void presence(const T* __restrict__ y, i64 n, A lo, i64 range,
                                         u32* __restrict__ present) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const A d = (A)y[i] - lo;
        if (d >= 0 && d < (A)range) present[(i64)d] = 1u;
    }
}
extern "C" __global__ void label_presence_f64(const double* __restrict__ y, i64 n, double lo,
                                              i64 range, u32* __restrict__ present) {
    presence<double, double>(y, n, lo, range, present);
}
extern "C" __global__ void label_presence_f32(const float* __restrict__ y, i64 n, double lo,
                                              i64 range, u32* __restrict__ present) {
    presence<float, double>(y, n, lo, range, present);
}
extern "C" __global__ void label_presence_i64(const i64* __restrict__ y, i64 n, i64 lo,
                                              i64 range, u32* __restrict__ present) {
    presence<i64, i64>(y, n, lo, range, present);
}
extern "C" __global__ void label_presence_i32(const int* __restrict__ y, i64 n, i64 lo,
                                              i64 range, u32* __restrict__ present) {
    presence<int, i64>(y, n, lo, range, present);
}

template <typename T, typename A>
__device__ __forceinline__ void encode(const T* __restrict__ y, i64 n, A lo, i64 range,
                                       const i64* __restrict__ rank, double* __restrict__ out,
                                       u64* __restrict__ unknown) {
    u64 first = (u64)n;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const A d = (A)y[i] - lo;
        i64 r = -1;
        if (d >= 0 && d < (A)range && (double)d == floor((double)d)) r = rank[(i64)d];
        if (r < 0 && (u64)i < first) first = (u64)i;
        out[i] = r < 0 ? 0.0 : (double)r;
    }
    if (first < (u64)n) atomicMin(unknown, first);
}
extern "C" __global__ void label_encode_f64(const double* __restrict__ y, i64 n, double lo,
                                            i64 range, const i64* __restrict__ rank,
                                            double* __restrict__ out, u64* __restrict__ unknown) {
    encode<double, double>(y, n, lo, range, rank, out, unknown);
}
extern "C" __global__ void label_encode_f32(const float* __restrict__ y, i64 n, double lo,
                                            i64 range, const i64* __restrict__ rank,
                                            double* __restrict__ out, u64* __restrict__ unknown) {
    encode<float, double>(y, n, lo, range, rank, out, unknown);
}
extern "C" __global__ void label_encode_i64(const i64* __restrict__ y, i64 n, i64 lo, i64 range,
                                            const i64* __restrict__ rank,
                                            double* __restrict__ out, u64* __restrict__ unknown) {
    encode<i64, i64>(y, n, lo, range, rank, out, unknown);
}
extern "C" __global__ void label_encode_i32(const int* __restrict__ y, i64 n, i64 lo, i64 range,
                                            const i64* __restrict__ rank,
                                            double* __restrict__ out, u64* __restrict__ unknown) {
    encode<int, i64>(y, n, lo, range, rank, out, unknown);
}

// The least and greatest of integer labels: out[0] starts at INT64_MAX, out[1] at INT64_MIN.
template <typename T>
__device__ __forceinline__ void int_range(const T* __restrict__ y, i64 n, i64* __restrict__ out) {
    i64 lo = 0x7FFFFFFFFFFFFFFFll, hi = (i64)0x8000000000000000ull;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const i64 v = (i64)y[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    atomicMin(out, lo);
    atomicMax(out + 1, hi);
}
extern "C" __global__ void int_range_i64(const i64* __restrict__ y, i64 n, i64* __restrict__ out) {
    int_range<i64>(y, n, out);
}
extern "C" __global__ void int_range_i32(const int* __restrict__ y, i64 n, i64* __restrict__ out) {
    int_range<int>(y, n, out);
}
