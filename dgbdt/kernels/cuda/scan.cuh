// A block-wide prefix sum in place (include after common.cuh: it uses warp_inclusive_scan).

// a[i] = a[0] + ... + a[i - 1] for i in 0..n, by one block of any size that is a multiple of 32
// (at most 1024); n may exceed the block: chunks of the block, each carrying the sum of those
// before it. Returns the total of the old a[0..n) to every thread. Every thread of the block
// must call it, once a launch (its shared words are the same for every call site).
template <typename T>
__device__ T block_exclusive_scan(T* __restrict__ a, i64 n) {
    __shared__ T warp_sums[32];
    __shared__ T carry;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (i64 c0 = 0; c0 < n; c0 += blockDim.x) {
        const i64 i = c0 + threadIdx.x;
        const T v = i < n ? a[i] : (T)0;
        const T incl = warp_inclusive_scan(v);
        if (lane == 31) warp_sums[w] = incl;
        __syncthreads();
        if (w == 0) {      // the warps' totals, scanned by the first warp
            const T t = warp_inclusive_scan(lane < warps ? warp_sums[lane] : (T)0);
            if (lane < warps) warp_sums[lane] = t;
        }
        __syncthreads();
        if (i < n) a[i] = carry + (w ? warp_sums[w - 1] : (T)0) + incl - v;
        const T chunk = warp_sums[warps - 1];
        __syncthreads();
        if (threadIdx.x == 0) carry += chunk;
        __syncthreads();
    }
    return carry;
}
