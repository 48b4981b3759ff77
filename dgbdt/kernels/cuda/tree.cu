// Tree-growth kernels over bit-packed pages: histograms, row partitioning, leaf updates,
// fixed-point gradients. The CPU twins are in dgbdt/kernels/cpu_tree.py; the conventions
// (pages, histogram slots, row segments) are documented there.
#include "common.cuh"
#include "scan.cuh"

// Exact int64 sums in 32-bit shared accumulators. A fixed-point summand q (dgbdt/kernels/fixedpoint.py,
// |q| < 2^M) is cut into three pieces, q = p0 + p1 2^w + p2 2^(2w), with p0, p1 in [0, 2^w)
// unsigned and p2 = q >> 2w signed (|p2| <= 2^e, e = max(M - 2w, 0)). Each piece goes to its
// own 32-bit shared word with a plain atomicAdd whose result is unused (a fire-and-forget
// reduction: no round trip, unlike a 64-bit add emulated with a carry, which waited for the
// old value). A word absorbs R = 2^r summands without overflow when R (2^w - 1) < 2^32 and
// R 2^e <= 2^31, i.e. r = min(32 - w, 31 - e); the block adds its words into the int64 output
// (and restarts from zero) before a slot can have taken R summands, so every sum stays exact.
// M comes from the tree's largest |q| (start_tree's qmax): 10M rows give M = 39, w = 13 and
// R = 2^18 rows between flushes; any M <= 62 (every training of two rows or more) gives
// R >= 2^11, a whole tile (HIST_TILE). Measured on an H100 (benchmarks/lab/hist_lab.py): 1.6x
// faster at the root of 10M x 28 and 1.5x at deep levels than the carry pairs.
struct PieceSplit {
    int w;
    i64 R;
};
__device__ __forceinline__ PieceSplit piece_split(u64 qmax) {
    const int M = qmax ? 64 - __clzll((long long)qmax) : 0;
    PieceSplit best = {1, 1};
    int best_r = -1;
    for (int w = 1; w <= 22; ++w) {
        const int e = M - 2 * w > 0 ? M - 2 * w : 0;
        const int r = (32 - w) < (31 - e) ? (32 - w) : (31 - e);
        if (r > best_r) { best_r = r; best.w = w; }
    }
    best.R = (i64)1 << best_r;
    return best;
}

__device__ __forceinline__ u64 pieces_value(const u32* p0, int stride, int w) {
    return (u64)p0[0] + ((u64)p0[stride] << w) + ((u64)(i64)(int)p0[2 * stride] << (2 * w));
}

// tile_ptr (int64 [m + 1]) of the segments of nodes[0..m): see tile_node in common.cuh. One
// block of a multiple of 32 threads; m may exceed the block (block_exclusive_scan).
extern "C" __global__ void tile_offsets(
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ nodes, int m, int tile, i64* __restrict__ tile_ptr) {
    // each node's tile count in tile_ptr[0..m) (tile_ptr[m] = 0), then an exclusive scan of m + 1
    for (int j = threadIdx.x; j <= m; j += blockDim.x) {
        i64 v = 0;
        if (j < m) {
            const i64 node = nodes[j];
            v = (seg_end[node] - seg_begin[node] + tile - 1) / tile;
        }
        tile_ptr[j] = v;
    }
    __syncthreads();
    block_exclusive_scan(tile_ptr, (i64)m + 1);
}

// hist[j, hist_ptrs[f] + bin(r, f)] += grad[r] for every row r in node nodes[j]'s segment
// rows[seg_begin[node]:seg_end[node]] and every feature f of the block's feature group.
//
// Grid (blocks, 1, feature groups): group z is features [groups[2z], groups[2z + 1]) (features
// too wide for shared memory are in none: build_histograms_global sums them). Block x takes a contiguous range of the level's tiles
// (tile_ptr), so the rows, not the nodes, are shared evenly. It privatizes its group's
// histogram in shared memory as three 32-bit planes per gradient component (the pieces above:
// g's p0 | g's p1 | g's p2 | h's p0 | h's p1 | h's p2, each plane one word per slot, so the
// lanes of a warp spread over the banks) and adds it to global memory whenever its range moves
// to another node, before a slot could take more than R rows, and at the end. Within a tile,
// thread t of the flattened (row, feature) space handles feature t % nfg of row t / nfg: the
// lanes of a warp hit different features' slots (few conflicts, the aim of LightGBM's rotated
// feature order) and read consecutive symbols of a row (coalesced).
extern "C" __global__ void build_histograms(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const i64* __restrict__ grad, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes,
        const i64* __restrict__ tile_ptr, int m, int tile, const int* __restrict__ groups,
        int n_slots, const u64* __restrict__ qmax, u64* __restrict__ out) {
    extern __shared__ u32 sh32[];
    const int f0 = groups[2 * blockIdx.z], f1 = groups[2 * blockIdx.z + 1];
    const int nfg = f1 - f0;
    const i64 s0 = hist_ptrs[f0];
    const int gs = (int)(hist_ptrs[f1] - s0);
    int* ptr = (int*)(sh32 + 6 * gs);   // group-local slot offset of each feature
    for (int s = threadIdx.x; s < 6 * gs; s += blockDim.x) sh32[s] = 0;
    for (int f = threadIdx.x; f < nfg; f += blockDim.x) ptr[f] = (int)(hist_ptrs[f0 + f] - s0);
    __syncthreads();
    const PieceSplit ps = piece_split(*qmax);
    const int w = ps.w, w2 = 2 * ps.w;
    const u32 wmask = (1u << w) - 1u;
    const i64 total = tile_ptr[m];
    const i64 per = (total + gridDim.x - 1) / gridDim.x;
    const i64 t0 = (i64)blockIdx.x * per;
    const i64 t1 = t0 + per < total ? t0 + per : total;
    const int dq = blockDim.x / nfg, dr = blockDim.x - dq * nfg;
    const longlong2* g2 = (const longlong2*)grad;
    int cur = -1;
    i64 since = 0;    // rows added since the last flush (block-uniform)
    for (i64 t = t0; t < t1; ++t) {
        const int j = tile_node(tile_ptr, m, t);
        const i64 node = nodes[j];
        const i64 rb = seg_begin[node] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[node] ? rb + tile : seg_end[node];
        if (j != cur || since + (re - rb) > ps.R) {
            if (cur >= 0) {       // flush the sums so far and start from zero
                __syncthreads();
                u64* o = out + ((i64)cur * n_slots + s0) * 2;
                for (int s = threadIdx.x; s < 2 * gs; s += blockDim.x) {
                    u32* p = sh32 + 3 * (s & 1) * gs + (s >> 1);
                    const u64 v = pieces_value(p, gs, w);
                    p[0] = 0; p[gs] = 0; p[2 * gs] = 0;
                    if (v) atomicAdd(o + s, v);
                }
                __syncthreads();
            }
            cur = j;
            since = 0;
        }
        since += re - rb;
        const int n_el = (int)(re - rb) * nfg;
        int ri = threadIdx.x / nfg, fl = threadIdx.x - ri * nfg;
        for (int el = threadIdx.x; el < n_el; el += blockDim.x) {
            const u64 r = (u32)rows[rb + ri];
            const u32 sym = read_symbol(words, r * n_features + f0 + fl, bits, mask);
            u32* p = sh32 + ptr[fl] + (int)sym;
            const longlong2 gv = __ldg(g2 + r);
            atomicAdd(p, (u32)gv.x & wmask);
            atomicAdd(p + gs, (u32)((u64)gv.x >> w) & wmask);
            atomicAdd(p + 2 * gs, (u32)(gv.x >> w2));
            atomicAdd(p + 3 * gs, (u32)gv.y & wmask);
            atomicAdd(p + 4 * gs, (u32)((u64)gv.y >> w) & wmask);
            atomicAdd(p + 5 * gs, (u32)(gv.y >> w2));
            ri += dq;
            fl += dr;
            if (fl >= nfg) { fl -= nfg; ++ri; }
        }
    }
    __syncthreads();
    if (cur >= 0) {
        u64* o = out + ((i64)cur * n_slots + s0) * 2;
        for (int s = threadIdx.x; s < 2 * gs; s += blockDim.x) {
            const u64 v = pieces_value(sh32 + 3 * (s & 1) * gs + (s >> 1), gs, w);
            if (v) atomicAdd(o + s, v);
        }
    }
}

// The larger siblings by subtraction: out[m + i] = parent[parent_slot[i]] - out[i] (int64
// [*, S, 2] histograms, exact).
extern "C" __global__ void subtract_siblings(
        const i64* __restrict__ parent, const i64* __restrict__ parent_slot, int m, i64 width,
        i64* __restrict__ out) {
    const i64 n = (i64)m * width;
    for (i64 k = (i64)blockIdx.x * blockDim.x + threadIdx.x; k < n;
         k += (i64)gridDim.x * blockDim.x) {
        const i64 i = k / width, c = k - i * width;
        out[n + k] = parent[parent_slot[i] * width + c] - out[k];
    }
}

// The same sums straight into global memory for the features wide[0..n_wide) whose bins do not
// fit in shared memory (max_bin, or a categorical feature's codes, in the thousands); the other
// features go through build_histograms. Grid (blocks per node, nodes).
extern "C" __global__ void build_histograms_global(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ hist_ptrs, const int* __restrict__ rows,
        const i64* __restrict__ grad, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ nodes, int n_slots,
        const int* __restrict__ wide, int n_wide, u64* __restrict__ out) {
    const int j = blockIdx.y;
    const i64 node = nodes[j];
    const i64 b = seg_begin[node];
    const i64 n_elem = (seg_end[node] - b) * n_wide;
    const i64 stride = (i64)gridDim.x * blockDim.x;
    u64* o = out + (i64)j * n_slots * 2;
    for (i64 t = (i64)blockIdx.x * blockDim.x + threadIdx.x; t < n_elem; t += stride) {
        const i64 ri = t / n_wide;
        const int f = wide[(int)(t - ri * n_wide)];
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
// the missing symbol (n_bins[feature]) and default_left. Blocks take tiles of
// PART_ITEMS * blockDim rows of any split node (tile_ptr; PART_ITEMS per thread, coalesced reads); a block-wide scan of the
// threads' counts places them, and one atomicAdd per side reserves the tile's slots (counts
// [m, 2], zeroed). The order within a side depends on block timing; nothing computed from a
// segment depends on its order (histograms are integer sums, leaf values per-row updates).
//
// CAT (partition_scatter_cat): a split j with is_cat[j] != 0 is categorical: s goes right iff
// bit s of its set is set (cats: uint8 [m, cat_bytes], bit s & 7 of byte s >> 3, as
// np.packbits(..., bitorder="little")), the missing symbol the default way; split_bin is
// unused there (dgbdt/kernels/cpu_tree.py's _goes_left, the CPU's rule).
#define PART_ITEMS 8
#define PART_BLOCK 256   // the launch's block size (dgbdt/backends/cuda.py: BLOCK)
// Which way row r of split j goes: the rule above (the row's symbol, read at random through the
// segment), or, ROUTED, the direction route_rows left in dir[r] (row order, below).
template <bool CAT, bool ROUTED>
__device__ __forceinline__ void partition_scatter_impl(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ n_bins, const int* __restrict__ rows, int* __restrict__ scratch,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ split, int m, const i64* __restrict__ tile_ptr,
        u64* __restrict__ counts, const unsigned char* __restrict__ is_cat,
        const unsigned char* __restrict__ cats, int cat_bytes, int ell,
        const i64* __restrict__ hist_ptrs, const unsigned char* __restrict__ dir) {
    __shared__ u32 warp_l[32], warp_r[32], tot_l, tot_r;
    __shared__ u64 base_l, base_r;
    __shared__ int lbuf[PART_BLOCK * PART_ITEMS], rbuf[PART_BLOCK * PART_ITEMS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const i64 total = tile_ptr[m];
    for (i64 t = blockIdx.x; t < total; t += gridDim.x) {
        const int j = tile_node(tile_ptr, m, t);
        const i64 node = split[j], f = split[m + j], cut = split[2 * m + j];
        const bool dleft = split[3 * m + j] != 0;
        const i64 b = seg_begin[node], e = seg_end[node];
        const u32 missing = ROUTED ? 0u : (u32)n_bins[f];
        const bool categorical = CAT && is_cat[j] != 0;
        const unsigned char* set = CAT ? cats + (i64)j * cat_bytes : nullptr;
        const i64 start = b + (t - tile_ptr[j]) * (i64)blockDim.x * PART_ITEMS;
        int r[PART_ITEMS];
        u32 left = 0, valid = 0;
#pragma unroll
        for (int k = 0; k < PART_ITEMS; ++k) {
            const i64 i = start + (i64)k * blockDim.x + threadIdx.x;
            r[k] = 0;
            if (i < e) {
                r[k] = rows[i];
                valid |= 1u << k;
                bool go_left;
                if (ROUTED) {
                    go_left = dir[(u32)r[k]] != 0;
                } else {
                    const u32 s = row_symbol(words, (u64)(u32)r[k], n_features, f, bits, mask,
                                             ell, hist_ptrs, missing);
                    if (s == missing) go_left = dleft;
                    else if (categorical) go_left = ((set[s >> 3] >> (s & 7)) & 1) == 0;
                    else go_left = (i64)s <= cut;
                }
                if (go_left) left |= 1u << k;
            }
        }
        const u32 nl = __popc(left), nr = __popc(valid & ~left);
        const u32 sl = warp_inclusive_scan(nl), sr = warp_inclusive_scan(nr);
        if (lane == 31) { warp_l[warp] = sl; warp_r[warp] = sr; }
        __syncthreads();
        if (threadIdx.x == 0) {
            u32 tl = 0, tr = 0;
            for (int w = 0; w < nwarps; ++w) {
                const u32 a = warp_l[w], c = warp_r[w];
                warp_l[w] = tl; warp_r[w] = tr;
                tl += a; tr += c;
            }
            tot_l = tl;
            tot_r = tr;
            base_l = tl ? atomicAdd(counts + 2 * j, (u64)tl) : 0;
            base_r = tr ? atomicAdd(counts + 2 * j + 1, (u64)tr) : 0;
        }
        __syncthreads();
        // stage the tile's lefts and rights in shared memory, then write each side coalesced
        u32 pl = warp_l[warp] + sl - nl, pr = warp_r[warp] + sr - nr;
#pragma unroll
        for (int k = 0; k < PART_ITEMS; ++k) {
            if (valid & (1u << k)) {
                if (left & (1u << k)) lbuf[pl++] = r[k];
                else rbuf[pr++] = r[k];
            }
        }
        __syncthreads();
        for (u32 i = threadIdx.x; i < tot_l; i += blockDim.x)
            scratch[b + (i64)(base_l + i)] = lbuf[i];
        for (u32 i = threadIdx.x; i < tot_r; i += blockDim.x)
            scratch[e - 1 - (i64)(base_r + i)] = rbuf[i];
        __syncthreads();
    }
}

extern "C" __global__ void partition_scatter(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ n_bins, const int* __restrict__ rows, int* __restrict__ scratch,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ split, int m, const i64* __restrict__ tile_ptr,
        u64* __restrict__ counts, int ell, const i64* __restrict__ hist_ptrs) {
    partition_scatter_impl<false, false>(words, bits, mask, n_features, n_bins, rows, scratch,
                                         seg_begin, seg_end, split, m, tile_ptr, counts,
                                         nullptr, nullptr, 0, ell, hist_ptrs, nullptr);
}

extern "C" __global__ void partition_scatter_cat(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ n_bins, const int* __restrict__ rows, int* __restrict__ scratch,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ split, int m, const i64* __restrict__ tile_ptr,
        u64* __restrict__ counts, const unsigned char* __restrict__ is_cat,
        const unsigned char* __restrict__ cats, int cat_bytes, int ell,
        const i64* __restrict__ hist_ptrs) {
    partition_scatter_impl<true, false>(words, bits, mask, n_features, n_bins, rows, scratch,
                                        seg_begin, seg_end, split, m, tile_ptr, counts, is_cat,
                                        cats, cat_bytes, ell, hist_ptrs, nullptr);
}

// Pass 1 after route_rows: the same scatter with each row's direction read from dir (one byte a
// row, which stays in L2) instead of its symbol from the page.
extern "C" __global__ void partition_scatter_routed(
        const unsigned char* __restrict__ dir, const int* __restrict__ rows,
        int* __restrict__ scratch, const i64* __restrict__ seg_begin,
        const i64* __restrict__ seg_end, const i64* __restrict__ split, int m,
        const i64* __restrict__ tile_ptr, u64* __restrict__ counts) {
    partition_scatter_impl<false, true>(nullptr, 0, 0u, 0, nullptr, rows, scratch, seg_begin,
                                        seg_end, split, m, tile_ptr, counts, nullptr, nullptr,
                                        0, 0, nullptr, dir);
}

// index[nodes[j]] = j for j < m: a node's row in a batch (split [6, m]'s first row, or add_leaves'
// nodes). The sentinel node of absent slots may get any of its j: no row is ever in it.
extern "C" __global__ void index_nodes(const i64* __restrict__ nodes, int m,
                                       int* __restrict__ index) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < m) index[nodes[j]] = j;
}

// Partition pass 0, in row order: every row r of a split node (node_slot[row_node[r]] = j >= 0,
// from index_nodes over the batch; -1 for the nodes not split at this level) goes left or right
// by the rule of partition_scatter(_cat) (split j, cats as there); dir[r] = 1 for left, 0 for
// right, and row_node[r] moves to that child. Rows of other nodes are left as they are.
// Neighbouring threads read neighbouring rows' symbols (a warp's rows share a few sectors),
// where pass 1 reading them through the segments fetched a sector a row. With cols (the page's
// feature-major copy, page_columns; else null) a row's symbol is read from its feature's
// column: a warp reads 32 adjacent symbols, not the 32 rows' whole lines of the page.
#define ROUTE_ITEMS 4
template <bool CAT>
__device__ __forceinline__ void route_rows_impl(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ n_bins, i64 n, int* __restrict__ row_node,
        const int* __restrict__ node_slot, const i64* __restrict__ split, int m,
        unsigned char* __restrict__ dir, const unsigned char* __restrict__ is_cat,
        const unsigned char* __restrict__ cats, int cat_bytes, int ell,
        const i64* __restrict__ hist_ptrs, const u32* __restrict__ cols, i64 col_words) {
    // ROUTE_ITEMS rows a thread, each step's loads issued for all of them before the next
    // step's: a row's node, its split and its symbol are dependent loads, and one row a thread
    // left too few bytes in flight to reach the memory's bandwidth
    const i64 chunk = (i64)blockDim.x * ROUTE_ITEMS;
    for (i64 base = (i64)blockIdx.x * chunk + threadIdx.x; base < n;
         base += (i64)gridDim.x * chunk) {
        int j[ROUTE_ITEMS];
#pragma unroll
        for (int k = 0; k < ROUTE_ITEMS; ++k) {
            const i64 r = base + (i64)k * blockDim.x;
            j[k] = r < n ? row_node[r] : -1;
        }
#pragma unroll
        for (int k = 0; k < ROUTE_ITEMS; ++k) j[k] = j[k] >= 0 ? __ldg(node_slot + j[k]) : -1;
        u32 s[ROUTE_ITEMS];
#pragma unroll
        for (int k = 0; k < ROUTE_ITEMS; ++k) {
            s[k] = 0;
            if (j[k] < 0) continue;
            const i64 r = base + (i64)k * blockDim.x;
            const i64 f = __ldg(split + m + j[k]);
            s[k] = cols ? read_symbol(cols + f * col_words, (u64)r, bits, mask)
                        : row_symbol(words, (u64)r, n_features, f, bits, mask, ell, hist_ptrs,
                                     (u32)__ldg(n_bins + f));
        }
#pragma unroll
        for (int k = 0; k < ROUTE_ITEMS; ++k) {
            if (j[k] < 0) continue;
            const i64 r = base + (i64)k * blockDim.x;
            const int jj = j[k];
            const u32 missing = (u32)__ldg(n_bins + __ldg(split + m + jj));
            bool go_left;
            if (s[k] == missing) go_left = __ldg(split + 3 * m + jj) != 0;
            else if (CAT && is_cat[jj])
                go_left = ((cats[(i64)jj * cat_bytes + (s[k] >> 3)] >> (s[k] & 7)) & 1) == 0;
            else go_left = (i64)s[k] <= __ldg(split + 2 * m + jj);
            dir[r] = go_left ? 1 : 0;
            row_node[r] = (int)__ldg(split + (go_left ? 4 : 5) * m + jj);
        }
    }
}

extern "C" __global__ void route_rows(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ n_bins, i64 n, int* __restrict__ row_node,
        const int* __restrict__ node_slot, const i64* __restrict__ split, int m,
        unsigned char* __restrict__ dir, int ell, const i64* __restrict__ hist_ptrs,
        const u32* __restrict__ cols, i64 col_words) {
    route_rows_impl<false>(words, bits, mask, n_features, n_bins, n, row_node, node_slot, split,
                           m, dir, nullptr, nullptr, 0, ell, hist_ptrs, cols, col_words);
}

extern "C" __global__ void route_rows_cat(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ n_bins, i64 n, int* __restrict__ row_node,
        const int* __restrict__ node_slot, const i64* __restrict__ split, int m,
        unsigned char* __restrict__ dir, const unsigned char* __restrict__ is_cat,
        const unsigned char* __restrict__ cats, int cat_bytes, int ell,
        const i64* __restrict__ hist_ptrs, const u32* __restrict__ cols, i64 col_words) {
    route_rows_impl<true>(words, bits, mask, n_features, n_bins, n, row_node, node_slot, split,
                          m, dir, is_cat, cats, cat_bytes, ell, hist_ptrs, cols, col_words);
}

// The page's feature-major copy for route_rows: feature f's symbols of rows 0..n, packed at the
// page's width in words cols[f * col_words ..] (col_words = n_words(n, bits): one padding
// word), as a page of one feature a row would pack them. Dense pages only (an ELLPACK page's
// rows are narrower than its features). Thread i writes word i of every feature's column: the
// symbols of the rows whose bits overlap it, read from the warp's few lines of the page (in L1
// across the features).
extern "C" __global__ void page_columns(
        const u32* __restrict__ words, int bits, u32 mask, int n_features, i64 n,
        i64 col_words, u32* __restrict__ cols) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < col_words; i += stride) {
        const i64 lo = 32 * i;                       // the word's first bit in the column
        const i64 r0 = lo / bits;
        i64 r1 = (lo + 31) / bits + 1;               // rows [r0, r1) overlap bits [lo, lo + 32)
        if (r1 > n) r1 = n;
        for (int f = 0; f < n_features; ++f) {
            u64 acc = 0;
            for (i64 r = r0; r < r1; ++r) {
                const u64 s = read_symbol(words, (u64)r * n_features + f, bits, mask);
                const i64 at = r * bits - lo;        // where the symbol's bit 0 lands
                acc |= at >= 0 ? s << at : s >> -at;
            }
            cols[(i64)f * col_words + i] = (u32)acc;
        }
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

// margin[r, k] += values[j] for every row r of leaf leaves[j] (no tree traversal); blocks take
// tiles of `tile` rows of any leaf (tile_ptr).
extern "C" __global__ void add_leaf_values(
        double* __restrict__ margin, int K, int k, const int* __restrict__ rows,
        const i64* __restrict__ seg_begin, const i64* __restrict__ seg_end,
        const i64* __restrict__ leaves, const double* __restrict__ values,
        const i64* __restrict__ tile_ptr, int m, int tile) {
    const i64 total = tile_ptr[m];
    for (i64 t = blockIdx.x; t < total; t += gridDim.x) {
        const int j = tile_node(tile_ptr, m, t);
        const i64 node = leaves[j];
        const double v = values[j];
        const i64 rb = seg_begin[node] + (t - tile_ptr[j]) * tile;
        const i64 re = rb + tile < seg_end[node] ? rb + tile : seg_end[node];
        for (i64 i = rb + threadIdx.x; i < re; i += blockDim.x)
            margin[(i64)rows[i] * K + k] += v;
    }
}

// margin[r, k] += values[j] for every row r whose node row_node[r] is the leaf nodes[j]
// (leaf_of: index_nodes of the leaves over a table of -1), in row order: coalesced, where
// add_leaf_values updates the margins of a segment's rows at random.
extern "C" __global__ void add_leaf_rows(
        double* __restrict__ margin, int K, int k, const int* __restrict__ row_node,
        const int* __restrict__ leaf_of, const double* __restrict__ values, i64 n) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += stride) {
        const int j = __ldg(leaf_of + row_node[r]);
        if (j >= 0) margin[r * K + k] += __ldg(values + j);
    }
}

// margin[r, k] += the leaf value of row r, found by walking one tree over the row's symbols
// (dgbdt.engine.sampled_rounds's fold of a streamed page; the CPU's cpu_tree.fold_tree is the same walk).
// The rule of partition_scatter: the missing symbol n_bins[f] goes the default way, else left
// iff symbol <= split bin. table [nodes, 5]: feature, split bin, default left, left, right
// (left < 0: a leaf); at most `steps` nodes a row; ell: an ELLPACK page (row_symbol). One
// thread a row: a row's symbols are contiguous, the table is small and read through the read-only cache; one addition a row, so
// the margins are the replay's bits (the same float64 leaf value added once).
extern "C" __global__ void fold_tree(
        const u32* __restrict__ words, int bits, u32 mask, int n_features,
        const i64* __restrict__ n_bins, const i64* __restrict__ table,
        const double* __restrict__ values, int steps, i64 n, double* __restrict__ margin,
        int K, int k, int ell, const i64* __restrict__ hist_ptrs) {
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += stride) {
        i64 node = 0;
        for (int d = 0; d < steps; ++d) {
            const i64* t = table + node * 5;
            const i64 left = __ldg(t + 3);
            if (left < 0) break;
            const i64 f = __ldg(t);
            const u32 s = row_symbol(words, (u64)r, n_features, f, bits, mask, ell, hist_ptrs,
                                     (u32)__ldg(n_bins + f));
            const bool go_left = (i64)s == __ldg(n_bins + f) ? __ldg(t + 2) != 0
                                                             : (i64)s <= __ldg(t + 1);
            node = go_left ? left : __ldg(t + 4);
        }
        margin[r * K + k] += __ldg(values + node);
    }
}

// out[r] = (rint(g[r, k] * scale_g), rint(h[r, k] * scale_h)) as int64 (round half to even,
// as numpy's rint); rows[r] = r (every row back in the root's segment); *qmax (zeroed by the
// caller) = the largest |out| of the tree, which sets build_histograms' pieces. The scales are
// consts[0], consts[1] (the tree's constants in device memory, as leaf_values).
extern "C" __global__ void start_tree(
        const double* __restrict__ g, const double* __restrict__ h, int K, int k,
        const double* __restrict__ consts, i64 n, i64* __restrict__ out,
        int* __restrict__ rows, u64* __restrict__ qmax) {
    __shared__ u64 wmax[32];
    const double scale_g = consts[0], scale_h = consts[1];
    const i64 stride = (i64)gridDim.x * blockDim.x;
    u64 mx = 0;
    for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < n; r += stride) {
        const i64 a = __double2ll_rn(g[r * K + k] * scale_g);
        const i64 b = __double2ll_rn(h[r * K + k] * scale_h);
        out[2 * r] = a;
        out[2 * r + 1] = b;
        rows[r] = (int)r;
        const u64 ua = (u64)(a < 0 ? -a : a), ub = (u64)(b < 0 ? -b : b);
        mx = mx > ua ? mx : ua;
        mx = mx > ub ? mx : ub;
    }
    for (int o = 16; o; o >>= 1) {
        const u64 v = __shfl_xor_sync(0xffffffffu, mx, o);
        mx = mx > v ? mx : v;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) wmax[warp] = mx;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < (int)(blockDim.x >> 5); ++i) mx = mx > wmax[i] ? mx : wmax[i];
        if (mx) atomicMax(qmax, mx);
    }
}

// dgbdt.kernels.fixedpoint.scale_for(m, n) on the device: 2^(62 - e) with n m = f 2^e, f in
// [0.5, 1) (frexp); 1 when m or n is 0; NaN when m is not finite (the host, reading the tree,
// raises scale_for's error from the same maxima). One float64 product: the host's value.
__device__ __forceinline__ double fixed_scale(double m, double n) {
    if (!(m <= 1.7976931348623157e308)) return __longlong_as_double(0x7ff8000000000000LL);
    if (m <= 0.0 || n <= 0.0) return 1.0;
    int e;
    frexp(n * m, &e);
    return ldexp(1.0, 62 - e);
}

// consts (dgbdt.backends.cuda.tree_consts: scale_g, scale_h, 1 / scale_g, 1 / scale_h, eta) of
// class k from the round's gradient maxima mx (u64 [2, K]: the float64 bits of max |g| and max
// h, as the objective kernels post them) and the row count n: a tree replayed as a CUDA graph
// (dgbdt.tree.tree_graph) gets its scales without the host waiting for the maxima. One thread.
extern "C" __global__ void tree_scales(const u64* __restrict__ mx, int K, int k, double n,
                                       double eta, double* __restrict__ consts) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const double sg = fixed_scale(__longlong_as_double((i64)mx[k]), n);
    const double sh = fixed_scale(__longlong_as_double((i64)mx[K + k]), n);
    consts[0] = sg;
    consts[1] = sh;
    consts[2] = 1.0 / sg;
    consts[3] = 1.0 / sh;
    consts[4] = eta;
}
