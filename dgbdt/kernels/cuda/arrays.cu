// Array basics without NVRTC (dgbdt/kernels/gpu_arrays.py): CuPy's own fill, arange, tile and
// axis sums compile a kernel per dtype at first use (0.1-0.2 s each), which a fresh GPU
// worker's first fit paid a dozen times. These are prebuilt with the other modules.
#include "common.cuh"

// a[i] = v for i < n, on the bits of 4- and 8-byte elements
extern "C" __global__ void fill_b32(u32* __restrict__ a, u32 v, i64 n) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) a[i] = v;
}

extern "C" __global__ void fill_b64(u64* __restrict__ a, u64 v, i64 n) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) a[i] = v;
}

// a[i, j] = row[j] for i < n, j < k (8-byte elements): a row repeated n times
extern "C" __global__ void repeat_row_b64(u64* __restrict__ a, const u64* __restrict__ row,
                                          i64 n, int k) {
    const i64 total = n * k;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (i64)gridDim.x * blockDim.x) a[i] = row[i % k];
}

// a[i] = i for i < n
extern "C" __global__ void iota_i32(int* __restrict__ a, i64 n) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) a[i] = (int)i;
}

extern "C" __global__ void iota_i64(i64* __restrict__ a, i64 n) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) a[i] = i;
}

// out[c] = sum of a[r, c] over rows r in [lo, hi) of an int64 [*, k] array, k <= 8 (exact in
// any order: integers, wrapping like numpy's int64 sums). One block of a power of two threads.
extern "C" __global__ void row_range_sums(const i64* __restrict__ a, i64 lo, i64 hi, int k,
                                          i64* __restrict__ out) {
    __shared__ i64 part[256 * 8];
    i64 acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (i64 r = lo + threadIdx.x; r < hi; r += blockDim.x)
        for (int c = 0; c < k; ++c) acc[c] = (i64)((u64)acc[c] + (u64)a[r * k + c]);
    for (int c = 0; c < k; ++c) part[threadIdx.x * 8 + c] = acc[c];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            for (int c = 0; c < k; ++c)
                part[threadIdx.x * 8 + c] = (i64)((u64)part[threadIdx.x * 8 + c] +
                                                  (u64)part[(threadIdx.x + s) * 8 + c]);
        __syncthreads();
    }
    if (threadIdx.x < k) out[threadIdx.x] = part[threadIdx.x];
}

// out[i] = (double)a[i]: a label or weight vector as float64 (CuPy's astype compiles a cast
// kernel per dtype at first use)
template <typename T>
__device__ __forceinline__ void to_f64(const T* __restrict__ a, double* __restrict__ out, i64 n) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) out[i] = (double)a[i];
}
extern "C" __global__ void to_f64_f32(const float* a, double* out, i64 n) { to_f64(a, out, n); }
extern "C" __global__ void to_f64_i8(const signed char* a, double* out, i64 n) { to_f64(a, out, n); }
extern "C" __global__ void to_f64_u8(const unsigned char* a, double* out, i64 n) { to_f64(a, out, n); }
extern "C" __global__ void to_f64_i16(const short* a, double* out, i64 n) { to_f64(a, out, n); }
extern "C" __global__ void to_f64_u16(const unsigned short* a, double* out, i64 n) { to_f64(a, out, n); }
extern "C" __global__ void to_f64_i32(const int* a, double* out, i64 n) { to_f64(a, out, n); }
extern "C" __global__ void to_f64_u32(const u32* a, double* out, i64 n) { to_f64(a, out, n); }
extern "C" __global__ void to_f64_i64(const i64* a, double* out, i64 n) { to_f64(a, out, n); }
extern "C" __global__ void to_f64_u64(const u64* a, double* out, i64 n) { to_f64(a, out, n); }

// out[i, 0] = 1 - p[i], out[i, 1] = p[i] in p's type (CuPy's ``1.0 - p`` of a float32 p is
// computed in float32 too): a binary model's class probabilities
template <typename T>
__device__ __forceinline__ void proba_pair(const T* __restrict__ p, T* __restrict__ out, i64 n) {
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (i64)gridDim.x * blockDim.x) {
        const T v = p[i];
        out[2 * i] = (T)1 - v;
        out[2 * i + 1] = v;
    }
}
extern "C" __global__ void proba_pair_f32(const float* p, float* out, i64 n) { proba_pair(p, out, n); }
extern "C" __global__ void proba_pair_f64(const double* p, double* out, i64 n) { proba_pair(p, out, n); }
