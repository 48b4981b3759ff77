"""Linear-histogram lab (issue 15): variants of cuda/linear.cu's linear_histograms_shared
(linear_hist_variants.cu: how a block adds its 9 int64 sums a slot in shared memory, and how
many features a block's shared memory holds) on bench_linear-shaped inputs (1M x 12, 256 bins
and a missing slot, 9-bit symbols, tiles of 128 rows).

Every variant but the no-atomics floor must give the library kernel's int64 histograms
exactly; each is timed with CUDA events (median of 7) on a root pass (1 node, rows in order),
the smaller children's full pass and the larger children's p~ pass of a 16-node level (rows
permuted). Prints a table; JSON lines to $OUT/linear_hist_lab.jsonl.

    python benchmarks/lab/linear_hist_lab.py
"""
import json
import math
import os
from pathlib import Path

import cupy as cp
import numpy as np

HERE = Path(__file__).parent
CUDA = HERE.parent.parent / "dgbdt/kernels/cuda"
COMMON = (CUDA / "common.cuh").read_text()
LINEAR = (CUDA / "linear.cu").read_text().replace('#include "common.cuh"', "")
SRC = COMMON + LINEAR + (HERE / "linear_hist_variants.cu").read_text()
OPTS = ("--std=c++17", "--fmad=false")

TILE_OFFSETS = cp.RawKernel(COMMON + r'''
extern "C" __global__ void tile_offsets(const i64* b, const i64* e, const i64* nodes, int m,
                                        int tile, i64* tp) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        i64 acc = 0; tp[0] = 0;
        for (int j = 0; j < m; ++j) { acc += (e[nodes[j]] - b[nodes[j]] + tile - 1) / tile; tp[j + 1] = acc; }
    }
}''', "tile_offsets")


def groups_for(F, slots_per_f, budget):
    cap = budget // 72
    pairs, start, acc = [], 0, 0
    for f in range(F):
        if acc + slots_per_f > cap:
            pairs += [start, f]
            start, acc = f, 0
        acc += slots_per_f
    pairs += [start, F]
    return np.asarray(pairs, dtype=np.int32)


def main():
    from dgbdt.data.pages import pack
    n, F, nb, tile = int(os.environ.get("LAB_ROWS", 1_000_000)), 12, 256, 128
    out_dir = os.environ.get("OUT", "/tmp")
    dev = cp.cuda.Device()
    n_sm = dev.attributes["MultiProcessorCount"]
    optin = dev.attributes["MaxSharedMemoryPerBlockOptin"]
    rs = np.random.default_rng(0)
    raw = rs.uniform(-1, 1, (n, F)).astype(np.float32)
    raw[rs.random((n, F)) < 0.01] = np.nan
    sym = np.where(np.isnan(raw), nb, np.clip(((raw + 1) / 2 * nb).astype(np.int64), 0, nb - 1))
    words = cp.asarray(pack(sym.astype(np.uint32), 9).words)
    g = rs.normal(size=(n, 1))
    h = rs.uniform(0.1, 1.0, size=(n, 1))
    sg = 2.0 ** math.floor(math.log2(2 ** 62 / (n * np.abs(g).max())))
    sh = 2.0 ** math.floor(math.log2(2 ** 62 / (n * h.max())))
    grad = np.stack([np.rint(g[:, 0] * sg), np.rint(h[:, 0] * sh)], axis=1).astype(np.int64)
    consts = cp.asarray(np.array([sg, sh, 1 / sg, 1 / sh, 0.1]))
    hist_ptrs = cp.asarray(np.arange(F + 1, dtype=np.int64) * (nb + 1))
    n_slots = F * (nb + 1)
    center, inv_scale = cp.zeros(F), cp.ones(F)
    xmask = cp.ones(F, dtype=cp.uint8)
    pt = cp.empty(n)
    D = 5
    dev_in = dict(raw=cp.asarray(raw), g=cp.asarray(g), h=cp.asarray(h), grad=cp.asarray(grad))
    del raw, sym
    scen = {"root": (np.arange(n, dtype=np.int32), np.array([0]), np.array([n]),
                     np.array([0]), 0)}
    node = rs.integers(0, 16, n)
    order = np.argsort(node, kind="stable").astype(np.int32)
    cnt = np.bincount(node, minlength=16)
    e = np.cumsum(cnt)
    b = e - cnt
    scen["l4_small_full"] = (order, b, e, np.arange(8), 0)
    scen["l4_large_p"] = (order, b, e, np.arange(8, 16), 1)
    node = rs.integers(0, 32, n)
    order = np.argsort(node, kind="stable").astype(np.int32)
    cnt = np.bincount(node, minlength=32)
    e = np.cumsum(cnt)
    b = e - cnt
    scen["l5_small_full"] = (order, b, e, np.arange(16), 0)
    scen["l5_large_p"] = (order, b, e, np.arange(16, 32), 1)
    kernels = {a: cp.RawKernel(SRC, "lab_linear_shared", options=OPTS + (f"-DATOMICS={a}",))
               for a in (0, 1, 2, 3)}
    kernels.update({f"rows{a}{p}": cp.RawKernel(SRC, "lab_linear_rows",
                                                options=OPTS + (f"-DATOMICS={a}", f"-DROW_PT={p}"))
                    for a in (1, 2, 3, 4, 5, 6) for p in (0, 1)})
    kernels.update({f"chunk{c}p{p}": cp.RawKernel(SRC, "lab_linear_chunked",
                                                  options=OPTS + ("-DATOMICS=1", f"-DCHUNK={c}",
                                                                  f"-DPREFETCH={p}"))
                    for c in (2, 4, 6) for p in (0, 1)})
    kernels["lib"] = cp.RawKernel(SRC, "linear_histograms_shared", options=OPTS)
    kernels.update({f"pipe{gm}b{pb}": cp.RawKernel(SRC, "lab_linear_pipe",
                                                   options=OPTS + (f"-DGMAX={gm}",
                                                                   f"-DPIPE_BLOCK={pb}"))
                    for gm in (3, 6) for pb in (256, 512, 1024)})
    ptilde_kernel = cp.RawKernel(SRC, "linear_ptilde", options=OPTS)
    ref_kernel = cp.RawKernel(SRC, "linear_histograms_shared", options=OPTS)
    shapes = ((48 * 1024, 256), (48 * 1024, 512), (112 * 1024, 512), (112 * 1024, 1024),
              (222 * 1024, 1024))
    configs = [(a, bud, blk) for a in os.environ.get("LAB_ATOMICS", "0,1,2,3").split(",")
               if a for bud, blk in shapes]
    configs = [(int(a), bud, blk) for a, bud, blk in configs]
    configs += [(f"rows{a}{p}", bud, blk)
                for a, p in ((1, 0), (2, 0), (3, 0), (4, 0), (4, 1), (5, 0), (6, 0))
                for bud, blk in ((48 * 1024, 512), (112 * 1024, 1024))]
    configs += [(name, 112 * 1024, 1024) for name in kernels
                if str(name).startswith("chunk") or name == "lib"]
    # pipe: GMAX 6 -> 112K groups (6 features), GMAX 3 -> 56K groups (3 features)
    configs += [(f"pipe{gm}b{pb}", (112 if gm == 6 else 56) * 1024, pb)
                for gm in (3, 6) for pb in (256, 512, 1024)]
    configs = [c for c in configs if str(c[0]) in os.environ.get("LAB_ONLY", str(c[0])).split(",")]
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    rows_out = []
    print(f"n={n} F={F} sm={n_sm} optin={optin}", flush=True)
    for sname, (rows, sb, se, nodes, p_only) in scen.items():
        rows_d, sb_d, se_d = cp.asarray(rows), cp.asarray(sb, dtype=cp.int64), cp.asarray(se, dtype=cp.int64)
        nodes_d = cp.asarray(nodes, dtype=cp.int64)
        m = len(nodes)
        tp = cp.empty(m + 1, dtype=cp.int64)
        TILE_OFFSETS((1,), (1,), (sb_d, se_d, nodes_d, np.int32(m), np.int32(tile), tp))

        # each node's regressors (none at the root) and p~ (linear_ptilde, timed)
        nreg = rs.integers(0 if sname == "root" else 1, D + 1, m) * (sname != "root")
        rfeat = np.full((m, D), -1, dtype=np.int64)
        rcoef = np.zeros((m, D))
        for j in range(m):
            rfeat[j, :nreg[j]] = rs.choice(F, nreg[j], replace=False)
            rcoef[j, :nreg[j]] = rs.normal(size=nreg[j])
        isp = 1.0 / 2.0 ** np.ceil(np.log2(np.maximum(np.abs(rcoef).sum(1), 1e-300)))
        rfeat_d, rcoef_d, isp_d = cp.asarray(rfeat), cp.asarray(rcoef), cp.asarray(isp)
        pt_args = (rows_d, sb_d, se_d, nodes_d, tp, np.int32(m), np.int32(tile), dev_in["raw"],
                   np.int32(F), center, inv_scale, xmask, rfeat_d, rcoef_d, isp_d, np.int32(D),
                   pt)
        ptilde_kernel((n_sm * 32,), (tile,), pt_args)
        ts = []
        for _ in range(7):
            start.record()
            ptilde_kernel((n_sm * 32,), (tile,), pt_args)
            stop.record()
            stop.synchronize()
            ts.append(cp.cuda.get_elapsed_time(start, stop))
        print(f"{sname:14s} linear_ptilde {float(np.median(ts)):8.4f} ms", flush=True)
        rows_out.append({"scenario": sname, "kernel": "linear_ptilde",
                         "ms": round(float(np.median(ts)), 4)})

        def args_for(grp):
            return (words, np.int32(9), np.uint32(511), np.int32(F), hist_ptrs, rows_d,
                    dev_in["g"], dev_in["h"], np.int32(1), np.int32(0), dev_in["grad"],
                    dev_in["raw"], center, inv_scale, xmask, sb_d, se_d, nodes_d, pt, consts,
                    np.int32(n_slots), tp, np.int32(m), np.int32(tile), np.int32(p_only),
                    cp.asarray(grp))

        grp48 = groups_for(F, nb + 1, 48 * 1024)
        ref = cp.zeros((m, n_slots, 9), dtype=cp.int64)
        G = len(grp48) // 2
        ref_kernel((math.ceil(n_sm * 4 / G), 1, G), (256,), args_for(grp48) + (ref,),
                   shared_mem=72 * 2 * (nb + 1))
        for a, budget, blk in configs:
            grp = groups_for(F, nb + 1, budget)
            G = len(grp) // 2
            gs = int(max(grp[2 * i + 1] - grp[2 * i] for i in range(G))) * (nb + 1)
            smem = 72 * gs
            if smem > optin:
                continue
            k = kernels[a]
            k.max_dynamic_shared_size_bytes = smem
            occ = max(1, min(2048 // blk, (228 * 1024) // (smem + 1024)))
            gx = max(1, math.ceil(n_sm * occ / G))
            hist = cp.zeros((m, n_slots, 9), dtype=cp.int64)
            args = args_for(grp)
            if isinstance(a, str) and a.startswith("rows"):
                args += (rfeat_d, rcoef_d, isp_d, np.int32(D))
            args += (hist,)
            if blk > k.max_threads_per_block:
                print(f"{sname:14s} {a!s:6s} blk={blk}: over the kernel's "
                      f"{k.max_threads_per_block} threads (registers)")
                continue
            k((gx, 1, G), (blk,), args, shared_mem=smem)
            cp.cuda.runtime.deviceSynchronize()
            ok = None if a == 3 or str(a)[:5] in ("rows3", "rows5", "rows6") else \
                bool((hist == ref).all())
            ts = []
            for _ in range(7):
                hist.fill(0)
                start.record()
                k((gx, 1, G), (blk,), args, shared_mem=smem)
                stop.record()
                stop.synchronize()
                ts.append(cp.cuda.get_elapsed_time(start, stop))
            row = {"scenario": sname, "atomics": a, "budget_k": budget // 1024, "block": blk,
                   "groups": G, "grid": gx * G, "smem": smem, "exact": ok,
                   "ms": round(float(np.median(ts)), 4)}
            rows_out.append(row)
            print(f"{sname:14s} {a!s:6s} {budget // 1024:4d}K blk={blk:5d} G={G:2d} "
                  f"grid={gx * G:4d} {row['ms']:8.4f} ms exact={ok}", flush=True)
    with open(os.path.join(out_dir, "linear_hist_lab.jsonl"), "w") as f:
        for row in rows_out:
            f.write(json.dumps(row) + "\n")
    bad = [x for x in rows_out if x.get("exact") is False]
    print("NOT EXACT:" if bad else "all exact", bad if bad else "")


if __name__ == "__main__":
    main()
