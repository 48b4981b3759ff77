"""Histogram-kernel lab (issue 13, item 3): variants of build_histograms on synthetic pages.

Every variant must give variant 0's int64 histograms exactly; then each is timed (CUDA events,
median of 7) on the root level (1 node, rows in order) and a deep level (128 nodes, rows
permuted) of a 10M x 28 page, at 8 and 9 bits per symbol. Prints a table; JSON lines to $OUT.
"""
import json
import math
import os
import sys
from pathlib import Path

import cupy as cp
import numpy as np

HERE = Path(__file__).parent
COMMON = (HERE.parent.parent / "dgbdt/kernels/cuda/common.cuh").read_text()
SRC = (HERE / "hist_variants.cu").read_text().replace('#include "common.cuh"', COMMON)
# name: (kernel, options, bytes per slot, must equal the reference)
SPECS = {"v0": ("hist", ("-DVARIANT=0",), 16, True),
         "v1": ("hist", ("-DVARIANT=1",), 16, True),
         "v2": ("hist", ("-DVARIANT=2",), 24, True),
         "v2_noatomics": ("hist", ("-DVARIANT=6",), 24, False),
         "rows": ("hist_rows", (), 24, True),
         "rows_byte": ("hist_rows", ("-DBYTE_SYM",), 24, True),
         "rows_noatomics": ("hist_rows", ("-DROWS_ATOMICS=0",), 24, False)}

PACK = cp.RawKernel(COMMON + r'''
extern "C" __global__ void pack(const unsigned short* __restrict__ sym, i64 n_sym, int bits,
                                i64 n_data_words, u32* __restrict__ words) {
    const i64 w = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= n_data_words) return;
    const i64 bit0 = w * 32;
    const i64 i0 = bit0 / bits;
    i64 i1 = (bit0 + 32 + bits - 1) / bits;
    if (i1 > n_sym) i1 = n_sym;
    u64 acc = 0;
    for (i64 i = i0; i < i1; ++i) {
        const i64 off = i * bits - bit0;
        const u64 s = sym[i];
        acc |= off >= 0 ? (s << off) : (s >> (-off));
    }
    words[w] = (u32)acc;
}''', "pack")

TILE_OFFSETS = cp.RawKernel(COMMON + r'''
extern "C" __global__ void tile_offsets(const i64* b, const i64* e, const i64* nodes, int m,
                                        int tile, i64* tp) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        i64 acc = 0; tp[0] = 0;
        for (int j = 0; j < m; ++j) { acc += (e[nodes[j]] - b[nodes[j]] + tile - 1) / tile; tp[j + 1] = acc; }
    }
}''', "tile_offsets")


def kernels():
    return {name: cp.RawKernel(SRC, kn, options=("--std=c++17",) + opts)
            for name, (kn, opts, _, _) in SPECS.items()}


def choose_w(M: int):
    """Piece width w maximizing R = 2**r, r = min(32 - w, 31 - M + 2 w)."""
    best = max(range(1, 22), key=lambda w: (min(32 - w, 31 - M + 2 * w), -w))
    return best, min(32 - best, 31 - M + 2 * best)


def groups_for(F, slots_per_f, budget, slot_bytes):
    cap = budget // slot_bytes
    g, acc = [0], 0
    for f in range(F):
        if acc + slots_per_f > cap:
            g.append(f)
            acc = 0
        acc += slots_per_f
    g.append(F)
    return np.asarray(g, dtype=np.int32)


def main():
    n, F, nb = int(os.environ.get("LAB_ROWS", 10_000_000)), 28, 256
    out_dir = os.environ.get("OUT", "/tmp")
    dev = cp.cuda.Device()
    n_sm = dev.attributes["MultiProcessorCount"]
    optin = dev.attributes["MaxSharedMemoryPerBlockOptin"]
    rng = cp.random.default_rng(0)
    sym = rng.integers(0, nb, size=n * F, dtype=cp.int32)
    sym9 = sym.copy()
    sym9[rng.random(n * F) < 0.1] = nb            # 10 % missing -> 9-bit symbols
    M = 38
    g = rng.integers(-(2 ** M), 2 ** M, size=n, dtype=cp.int64)
    h = rng.integers(0, 2 ** M, size=n, dtype=cp.int64)
    grad = cp.stack([g, h], axis=1).ravel()
    hist_ptrs = cp.asarray(np.arange(F + 1, dtype=np.int64) * (nb + 1))
    n_slots = F * (nb + 1)
    pages = {}
    for bits, s in ((8, sym), (9, sym9)):
        if bits == 8:
            s = s.copy()
        nd = (n * F * bits + 31) // 32
        words = cp.zeros(nd + 1, dtype=cp.uint32)
        PACK(((nd + 255) // 256,), (256,), (s.astype(cp.uint16), np.int64(n * F), np.int32(bits),
                                            np.int64(nd), words))
        pages[bits] = words
    del sym, sym9
    scen = {}
    nodes = cp.asarray([0], dtype=cp.int64)
    scen["root"] = (cp.arange(n, dtype=cp.int32), cp.asarray([0], dtype=cp.int64),
                    cp.asarray([n], dtype=cp.int64), nodes)
    cuts = np.sort(np.random.default_rng(1).choice(np.arange(1, n), 127, replace=False))
    b = np.concatenate([[0], cuts]).astype(np.int64)
    e = np.concatenate([cuts, [n]]).astype(np.int64)
    scen["deep128"] = (cp.asarray(np.random.default_rng(2).permutation(n).astype(np.int32)),
                       cp.asarray(b), cp.asarray(e), cp.arange(128, dtype=cp.int64))
    for name, m_ in (("sorted8", 8), ("sorted128", 128)):
        node = np.random.default_rng(3).integers(0, m_, n)
        order = np.argsort(node, kind="stable").astype(np.int32)
        cnt = np.bincount(node, minlength=m_)
        e = np.cumsum(cnt).astype(np.int64)
        b = (e - cnt).astype(np.int64)
        scen[name] = (cp.asarray(order), cp.asarray(b), cp.asarray(e),
                      cp.arange(m_, dtype=cp.int64))
    ks = kernels()
    w, r = choose_w(M + 1)
    R = 2 ** r
    tile = 2048
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    # copy rate
    src = cp.ones(2 ** 28, dtype=cp.float32)
    dst = cp.empty_like(src)
    dst[...] = src
    start.record()
    for _ in range(10):
        dst[...] = src
    stop.record()
    stop.synchronize()
    copy_rate = 2 * src.nbytes * 10 / (cp.cuda.get_elapsed_time(start, stop) / 1e3) / 1e9
    del src, dst
    rows_out = []
    print(f"n={n} F={F} sm={n_sm} optin={optin} w={w} R=2^{r} copy={copy_rate:.0f} GB/s",
          flush=True)
    configs = [("v0", 48 * 1024, 512), ("v2", 48 * 1024, 512), ("v2", 48 * 1024, 1024)]
    configs += [(v, bud, blk) for v in ("v2", "rows")
                for bud in (100 * 1024, 200 * 1024) for blk in (512, 1024)]
    configs += [("rows", 48 * 1024, 512), ("rows", 48 * 1024, 1024)]
    for scen_name, (rows, sb, se, nd_) in scen.items():
        m = int(nd_.size)
        tp = cp.empty(m + 1, dtype=cp.int64)
        TILE_OFFSETS((1,), (1,), (sb, se, nd_, np.int32(m), np.int32(tile), tp))
        for bits, words in pages.items():
            ref = None
            for v, budget, blk in configs:
                sbytes = SPECS[v][2]
                grp = groups_for(F, nb + 1, budget, sbytes)
                G = len(grp) - 1
                nfg = int(np.diff(grp).max())
                gs = int(np.diff(grp).max()) * (nb + 1)
                smem = sbytes * gs + 4 * (nfg + 1)
                if smem > optin:
                    continue
                k = ks[v]
                k.max_dynamic_shared_size_bytes = smem
                occ = max(1, min(2048 // blk, (228 * 1024) // (smem + 1024)))
                if os.environ.get("LAB_WAVES"):
                    occ *= int(os.environ["LAB_WAVES"])
                gx = max(1, math.ceil(n_sm * occ / G))
                hist = cp.zeros((m, n_slots, 2), dtype=cp.int64)
                Rv = R if sbytes == 24 else 2 ** 62
                args = (words, np.int32(bits), np.uint32((1 << bits) - 1), np.int32(F),
                        hist_ptrs, rows, grad, sb, se, nd_, tp, np.int32(m), np.int32(tile),
                        cp.asarray(grp), np.int32(n_slots), np.int32(w), np.int64(Rv), hist)
                k((gx, 1, G), (blk,), args, shared_mem=smem)
                cp.cuda.runtime.deviceSynchronize()
                if ref is None:
                    ref = hist.copy()
                    ok = True
                else:
                    ok = bool((hist == ref).all()) if SPECS[v][3] else None
                ts = []
                for _ in range(7):
                    hist.fill(0)
                    start.record()
                    k((gx, 1, G), (blk,), args, shared_mem=smem)
                    stop.record()
                    stop.synchronize()
                    ts.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
                t = float(np.median(ts))
                nbytes = words.nbytes + 4 * n + 16 * n
                row = {"scenario": scen_name, "bits": bits, "variant": v, "budget": budget,
                       "block": blk, "groups": G, "smem": smem, "grid": gx * G, "exact": ok,
                       "ms": round(t * 1e3, 3), "gb_s": round(nbytes / t / 1e9, 1),
                       "over_copy": round(nbytes / t / 1e9 / copy_rate, 3)}
                rows_out.append(row)
                print(f"{scen_name:9s} {bits} {v:14s} {budget // 1024:4d}K {blk:5d} G={G} "
                      f"{row['ms']:7.3f} ms {row['over_copy']:.3f} {ok}", flush=True)
                del hist
    with open(os.path.join(out_dir, "hist_lab.jsonl"), "w") as f:
        for row in rows_out:
            f.write(json.dumps(row) + "\n")
    if any(x["exact"] is False for x in rows_out):
        print("NOT EXACT:", [x for x in rows_out if x["exact"] is False])
        sys.exit(1)


if __name__ == "__main__":
    main()
