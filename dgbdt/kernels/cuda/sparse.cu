// Sparse rows on the device: CSR quantization into ELLPACK symbols and the histograms of
// ELLPACK pages (dgbdt/data/sparse.py documents the layout; the CPU twins are in
// dgbdt/kernels/cpu_sparse.py). Row lookups (partition, tree walks) are common.cuh's row_symbol.
#include "common.cuh"

// out[r] = row r's stored entries that are not NaN. One thread a row.
extern "C" __global__ void present_counts(const i64* __restrict__ indptr,
                                          const float* __restrict__ data, i64 n,
                                          i64* __restrict__ out) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += stride) {
        i64 c = 0;
        for (i64 i = indptr[r]; i < indptr[r + 1]; ++i) c += data[i] == data[i];
        out[r] = c;
    }
}

// out[r * stride ..] = row r's ELLPACK symbols: each stored non-NaN entry (column f, value x,
// columns ascending) as the slot cut_ptrs[f] + f + bin(x), with bin(x) the number of the first
// nb - 1 cuts <= x (dgbdt/data/quantize.py), then `null` up to the stride. One thread a row.
extern "C" __global__ void quantize_csr(
        const i64* __restrict__ indptr, const int* __restrict__ indices,
        const float* __restrict__ data, const float* __restrict__ values,
        const i64* __restrict__ cut_ptrs, i64 n, int stride, u32 null, u32* __restrict__ out) {
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += step) {
        int k = 0;
        u32* o = out + r * stride;
        for (i64 i = indptr[r]; i < indptr[r + 1]; ++i) {
            const float x = data[i];
            if (x != x) continue;
            const int f = indices[i];
            const i64 base = cut_ptrs[f];
            i64 lo = base, hi = cut_ptrs[f + 1] - 1;
            while (lo < hi) {
                const i64 mid = (lo + hi) >> 1;
                if (values[mid] <= x) lo = mid + 1; else hi = mid;
            }
            o[k++] = (u32)(lo + f);
        }
        for (; k < stride; ++k) o[k] = null;
    }
}

// hist[j, s] += grad[r] for every present entry s of every row r of node nodes[j], straight
// into global memory (an ELLPACK page's slots are the whole histogram, too many for shared
// memory); totals[j] += grad[r] once a row (the entry k = 0 thread's rows, summed in
// registers and over the warp first: one address a node would serialize a row's atomics).
// Grid (blocks per node, nodes); thread t of a node takes entry t % stride of row t / stride:
// a warp reads consecutive symbols. Integer sums: exact in any order.
extern "C" __global__ void build_histograms_ell(
        const u32* __restrict__ words, int bits, u32 mask, int stride, u32 null,
        const int* __restrict__ rows, const i64* __restrict__ grad,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ nodes, int n_slots, u64* __restrict__ out,
        u64* __restrict__ totals) {
    const int j = blockIdx.y;
    const i64 node = nodes[j];
    const i64 b = seg_begin[node];
    const i64 n_elem = (seg_end[node] - b) * stride;
    const i64 step = (i64)gridDim.x * blockDim.x;
    u64* o = out + (i64)j * n_slots * 2;
    u64 t0 = 0, t1 = 0;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < n_elem; t += step) {
        const i64 ri = t / stride;
        const int k = (int)(t - ri * stride);
        const u64 r = (u32)rows[b + ri];
        const u32 s = read_symbol(words, r * stride + k, bits, mask);
        const u64 g = (u64)__ldg(grad + 2 * r), h = (u64)__ldg(grad + 2 * r + 1);
        if (k == 0) { t0 += g; t1 += h; }
        if (s == null) continue;
        atomicAdd(o + 2 * s, g);
        atomicAdd(o + 2 * s + 1, h);
    }
    for (int d = 16; d; d >>= 1) {
        t0 += __shfl_xor_sync(0xffffffffu, t0, d);
        t1 += __shfl_xor_sync(0xffffffffu, t1, d);
    }
    if ((threadIdx.x & 31) == 0 && (t0 | t1)) {
        atomicAdd(totals + 2 * j, t0);
        atomicAdd(totals + 2 * j + 1, t1);
    }
}

// hist[j, missing slot of f] = totals[j] - the sum of f's bins, per (node j, feature f,
// component c): one thread each. The dense page's missing sums, exactly (integers).
extern "C" __global__ void fill_missing(i64* __restrict__ hist, const i64* __restrict__ hist_ptrs,
                                        int n_features, int n_slots,
                                        const i64* __restrict__ totals, int m) {
    const i64 n = (i64)m * n_features * 2;
    const i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += step) {
        const int c = (int)(t & 1);
        const i64 jf = t >> 1;
        const int f = (int)(jf % n_features);
        const i64 j = jf / n_features;
        const i64* h = hist + j * n_slots * 2 + c;
        const i64 miss = hist_ptrs[f + 1] - 1;
        i64 acc = totals[2 * j + c];
        for (i64 s = hist_ptrs[f]; s < miss; ++s) acc -= h[2 * s];
        hist[(j * n_slots + miss) * 2 + c] = acc;
    }
}
