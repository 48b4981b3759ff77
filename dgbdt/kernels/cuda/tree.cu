// Tree-growth kernels over bit-packed pages: histograms, row partitioning, leaf updates,
// fixed-point gradients. The CPU twins are in dgbdt/kernels/cpu_tree.py; the conventions
// (pages, histogram slots, row segments) are documented there.
#include "common.cuh"

// A 64-bit add to shared memory as two native 32-bit atomics (a 64-bit shared atomicAdd is a
// compare-and-swap loop, which stalls on hot bins): add the low words, carry into the high
// word when the low add wrapped. The result is exact mod 2^64 in any interleaving.
__device__ __forceinline__ void shared_add64(u64* addr, u64 v) {
    u32* a = (u32*)addr;
    const u32 lo = (u32)v;
    u32 hi = (u32)(v >> 32);
    const u32 old = atomicAdd(a, lo);
    hi += (u32)(old + lo < old);
    if (hi) atomicAdd(a + 1, hi);
}

// hist[j, hist_ptrs[f] + bin(r, f)] += grad[r] for every row r in node nodes[j]'s segment
// rows[seg_begin[node]:seg_end[node]] and every feature f of the block's feature group.
//
// Grid (blocks per node, nodes, feature groups). Each block privatizes its group's histogram in
// shared memory (integer atomics: exact, so the order of additions is irrelevant), then adds it
// to global memory once. Thread t of the flattened (row, feature) space handles feature
// t % nfg of row t / nfg: the lanes of a warp hit different features' slots (few conflicts, the
// aim of LightGBM's rotated feature order) and read consecutive symbols of a row (coalesced).
// The (row, feature) pair advances by a precomputed quotient/remainder (no 64-bit division).
extern "C" __global__ void build_histograms(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const i64* __restrict__ grad, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes,
        const int* __restrict__ groups, int n_slots, u64* __restrict__ out) {
    extern __shared__ u64 sh[];
    const int j = blockIdx.y;
    const int f0 = groups[blockIdx.z], f1 = groups[blockIdx.z + 1];
    const int nfg = f1 - f0;
    const i64 s0 = hist_ptrs[f0];
    const int gslots = (int)(hist_ptrs[f1] - s0);
    int* ptr = (int*)(sh + 2 * gslots);   // group-local slot offset of each feature
    for (int s = threadIdx.x; s < 2 * gslots; s += blockDim.x) sh[s] = 0;
    for (int f = threadIdx.x; f < nfg; f += blockDim.x) ptr[f] = (int)(hist_ptrs[f0 + f] - s0);
    __syncthreads();
    const i64 node = nodes[j];
    const i64 b = seg_begin[node];
    const i64 n_seg = seg_end[node] - b;
    const i64 stride = (i64)gridDim.x * blockDim.x;
    const i64 dq = stride / nfg;
    const int dr = (int)(stride - dq * nfg);
    const i64 t0 = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 ri = t0 / nfg;
    int fl = (int)(t0 - ri * nfg);
    const longlong2* g2 = (const longlong2*)grad;
    while (ri < n_seg) {
        const u64 r = (u32)rows[b + ri];
        const u32 sym = read_symbol(words, r * n_features + f0 + fl, bits, mask);
        const int slot = ptr[fl] + (int)sym;
        const longlong2 gv = __ldg(g2 + r);
        shared_add64(&sh[2 * slot], (u64)gv.x);
        shared_add64(&sh[2 * slot + 1], (u64)gv.y);
        ri += dq;
        fl += dr;
        if (fl >= nfg) { fl -= nfg; ++ri; }
    }
    __syncthreads();
    u64* o = out + ((i64)j * n_slots + s0) * 2;
    for (int s = threadIdx.x; s < 2 * gslots; s += blockDim.x) {
        const u64 v = sh[s];
        if (v) atomicAdd(o + s, v);
    }
}

// The same sums straight into global memory, for a feature whose bins do not fit in shared
// memory (max_bin in the tens of thousands). Grid (blocks per node, nodes).
extern "C" __global__ void build_histograms_global(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const i64* __restrict__ grad, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes, int n_slots,
        u64* __restrict__ out) {
    const int j = blockIdx.y;
    const i64 node = nodes[j];
    const i64 b = seg_begin[node];
    const i64 n_elem = (seg_end[node] - b) * n_features;
    const i64 stride = (i64)gridDim.x * blockDim.x;
    u64* o = out + (i64)j * n_slots * 2;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < n_elem; t += stride) {
        const i64 ri = t / n_features;
        const int f = (int)(t - ri * n_features);
        const u64 r = (u32)rows[b + ri];
        const u32 sym = read_symbol(words, r * n_features + f, bits, mask);
        const i64 slot = hist_ptrs[f] + sym;
        atomicAdd(o + 2 * slot, (u64)__ldg(grad + 2 * r));
        atomicAdd(o + 2 * slot + 1, (u64)__ldg(grad + 2 * r + 1));
    }
}

// Partition pass 1: each split node's rows go to scratch, lefts from the segment's start,
// rights from its end. split is int64 [6, m]: node, feature, split_bin, default_left, left
// child, right child. Row r goes left iff its symbol s of the feature is <= split_bin, or s is
// the missing symbol (n_bins[feature]) and default_left. A block takes tiles of
// PART_ITEMS * blockDim rows (PART_ITEMS per thread, coalesced reads); a block-wide scan of the
// threads' counts places them, and one atomicAdd per side reserves the tile's slots (counts
// [m, 2], zeroed). The order within a side depends on block timing; nothing computed from a
// segment depends on its order (histograms are integer sums, leaf values per-row updates).
#define PART_ITEMS 8
extern "C" __global__ void partition_scatter(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ n_bins, const int* __restrict__ rows, int* __restrict__ scratch,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ split, int m, u64* __restrict__ counts) {
    __shared__ u32 warp_l[32], warp_r[32];
    __shared__ u64 base_l, base_r;
    const int j = blockIdx.y;
    const i64 node = split[j], f = split[m + j], cut = split[2 * m + j];
    const bool dleft = split[3 * m + j] != 0;
    const i64 b = seg_begin[node], e = seg_end[node];
    const u32 missing = (u32)n_bins[f];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const i64 tile = (i64)blockDim.x * PART_ITEMS;
    for (i64 start = b + (i64)blockIdx.x * tile; start < e; start += (i64)gridDim.x * tile) {
        int r[PART_ITEMS];
        u32 left = 0, valid = 0;
#pragma unroll
        for (int k = 0; k < PART_ITEMS; ++k) {
            const i64 i = start + (i64)k * blockDim.x + threadIdx.x;
            r[k] = 0;
            if (i < e) {
                r[k] = rows[i];
                valid |= 1u << k;
                const u32 s = read_symbol(words, (u64)(u32)r[k] * n_features + f, bits, mask);
                if ((s == missing) ? dleft : ((i64)s <= cut)) left |= 1u << k;
            }
        }
        const u32 nl = __popc(left), nr = __popc(valid & ~left);
        u32 sl = nl, sr = nr;                          // inclusive scan within the warp
        for (int o = 1; o < 32; o <<= 1) {
            const u32 a = __shfl_up_sync(0xffffffffu, sl, o);
            const u32 c = __shfl_up_sync(0xffffffffu, sr, o);
            if (lane >= o) { sl += a; sr += c; }
        }
        if (lane == 31) { warp_l[warp] = sl; warp_r[warp] = sr; }
        __syncthreads();
        if (threadIdx.x == 0) {
            u32 tl = 0, tr = 0;
            for (int w = 0; w < nwarps; ++w) {
                const u32 a = warp_l[w], c = warp_r[w];
                warp_l[w] = tl; warp_r[w] = tr;
                tl += a; tr += c;
            }
            base_l = tl ? atomicAdd(counts + 2 * j, (u64)tl) : 0;
            base_r = tr ? atomicAdd(counts + 2 * j + 1, (u64)tr) : 0;
        }
        __syncthreads();
        i64 pl = (i64)(base_l + warp_l[warp] + sl - nl);
        i64 pr = (i64)(base_r + warp_r[warp] + sr - nr);
#pragma unroll
        for (int k = 0; k < PART_ITEMS; ++k) {
            if (valid & (1u << k)) {
                if (left & (1u << k)) scratch[b + pl++] = r[k];
                else scratch[e - 1 - pr++] = r[k];
            }
        }
        __syncthreads();
    }
}

// Partition pass 2: copy the split segments back from scratch and record the children's
// segments: left = [b, b + n_left), right = [b + n_left, e).
extern "C" __global__ void partition_finish(
        int* __restrict__ rows, const int* __restrict__ scratch, i64* __restrict__ seg_begin,
        i64* __restrict__ seg_end, const i64* __restrict__ split, int m,
        const u64* __restrict__ counts) {
    const int j = blockIdx.y;
    const i64 node = split[j];
    const i64 b = seg_begin[node], e = seg_end[node];
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = b + (i64)blockIdx.x * blockDim.x + threadIdx.x; i < e; i += stride)
        rows[i] = scratch[i];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const i64 nl = (i64)counts[2 * j];
        const i64 lc = split[4 * m + j], rc = split[5 * m + j];
        seg_begin[lc] = b; seg_end[lc] = b + nl;
        seg_begin[rc] = b + nl; seg_end[rc] = e;
    }
}

// margin[r, k] += values[j] for every row r of leaf leaves[j] (no tree traversal).
extern "C" __global__ void add_leaf_values(
        double* __restrict__ margin, int K, int k, const int* __restrict__ rows,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ leaves, const double* __restrict__ values) {
    const int j = blockIdx.y;
    const i64 node = leaves[j];
    const double v = values[j];
    const i64 e = seg_end[node];
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = seg_begin[node] + (i64)blockIdx.x * blockDim.x + threadIdx.x; i < e; i += stride)
        margin[(i64)rows[i] * K + k] += v;
}

// out[r] = (rint(g[r, k] * scale_g), rint(h[r, k] * scale_h)) as int64 (round half to even,
// as numpy's rint); rows[r] = r (every row back in the root's segment).
extern "C" __global__ void start_tree(
        const double* __restrict__ g, const double* __restrict__ h, int K, int k,
        double scale_g, double scale_h, i64 n, i64* __restrict__ out, int* __restrict__ rows) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += stride) {
        out[2 * r] = __double2ll_rn(g[r * K + k] * scale_g);
        out[2 * r + 1] = __double2ll_rn(h[r * K + k] * scale_h);
        rows[r] = (int)r;
    }
}
