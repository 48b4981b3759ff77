"""Linear-histogram lab (issue 15): cuda/linear.cu's linear_ptilde (the rows' records) and
linear_histograms_shared on bench_linear-shaped inputs (1M x 12, 256 bins and a missing slot,
9-bit symbols, tiles of 128 rows), at a few shared-memory budgets and block sizes; the
shared kernel's histograms must equal the global (specification) kernel's.

Timed with CUDA events (median of 7): a root pass (1 node, rows in order), and the smaller
children's full pass and the larger children's p~ pass of a 16- and a 32-node level (rows of a
node in order, nodes interleaved). Prints a table; JSON lines to $OUT/linear_hist_lab.jsonl.

The kernel variants measured on the way to the present kernel (64-bit compare-and-swap shared
atomics, a thread a (row, feature) element, planar or swizzled 32-bit words, chunked or
software-pipelined loads, p~ computed inline) are in commit 0758a42's
benchmarks/lab/linear_hist_variants.cu; their figures are in docs/linear-trees.md.

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
SRC = COMMON + (CUDA / "linear.cu").read_text().replace('#include "common.cuh"', "")
OPTS = ("--std=c++17", "--fmad=false")

from hist_lab import TILE_OFFSETS  # noqa: E402  (the constant-tree lab's tile_ptr kernel)


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


def timed(fn, reps=7):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ts.append(cp.cuda.get_elapsed_time(start, stop))
    return float(np.median(ts))


def scenarios(n, rs):
    out = {"root": (np.arange(n, dtype=np.int32), np.array([0]), np.array([n]),
                    np.array([0]), 0)}
    for levels in (16, 32):
        node = rs.integers(0, levels, n)
        order = np.argsort(node, kind="stable").astype(np.int32)
        cnt = np.bincount(node, minlength=levels)
        e = np.cumsum(cnt)
        out[f"{levels}_small_full"] = (order, e - cnt, e, np.arange(levels // 2), 0)
        out[f"{levels}_large_p"] = (order, e - cnt, e, np.arange(levels // 2, levels), 1)
    return out


def main():
    from dgbdt.kernels.pages import pack
    n, F, nb, tile, D = int(os.environ.get("LAB_ROWS", 1_000_000)), 12, 256, 128, 5
    dev = cp.cuda.Device()
    n_sm = dev.attributes["MultiProcessorCount"]
    optin = dev.attributes["MaxSharedMemoryPerBlockOptin"]
    rs = np.random.default_rng(0)
    raw = rs.uniform(-1, 1, (n, F)).astype(np.float32)
    missing = rs.random((n, F)) < 0.01
    raw[missing] = np.nan
    sym = np.where(missing, nb, np.clip(((np.nan_to_num(raw) + 1) / 2 * nb).astype(np.int64),
                                        0, nb - 1))
    words = cp.asarray(pack(sym.astype(np.uint32), 9).words)
    g, h = rs.normal(size=(n, 1)), rs.uniform(0.1, 1.0, size=(n, 1))
    sg = 2.0 ** math.floor(math.log2(2 ** 62 / (n * np.abs(g).max())))
    sh = 2.0 ** math.floor(math.log2(2 ** 62 / (n * h.max())))
    grad = np.stack([np.rint(g[:, 0] * sg), np.rint(h[:, 0] * sh)], axis=1).astype(np.int64)
    consts = cp.asarray(np.array([sg, sh, 1 / sg, 1 / sh, 0.1]))
    hist_ptrs = cp.asarray(np.arange(F + 1, dtype=np.int64) * (nb + 1))
    n_slots = F * (nb + 1)
    center, inv_scale, xmask = cp.zeros(F), cp.ones(F), cp.ones(F, dtype=cp.uint8)
    raw_d, g_d, h_d, grad_d = cp.asarray(raw), cp.asarray(g), cp.asarray(h), cp.asarray(grad)
    rec, recq = cp.empty((n, 3)), cp.empty((n, 2), dtype=cp.int64)
    ptilde = cp.RawKernel(SRC, "linear_ptilde", options=OPTS)
    # (budget, block, blocks an SM the registers must allow: __launch_bounds__)
    shapes = ((48 * 1024, 512, 1), (113 * 1024, 1024, 1), (113 * 1024, 1024, 2),
              (113 * 1024, 768, 2), (75 * 1024, 512, 3), (222 * 1024, 1024, 1))
    kernels = {(blk, mb): cp.RawKernel(SRC, "linear_histograms_shared",
                                       options=OPTS + (f"-DLINEAR_HIST_THREADS={blk}",
                                                       f"-DLINEAR_HIST_MIN_BLOCKS={mb}"))
               for _, blk, mb in shapes}
    spec = cp.RawKernel(SRC, "linear_histograms", options=OPTS)
    rows_out = []
    print(f"n={n} F={F} sm={n_sm} optin={optin}", flush=True)
    for sname, (rows, sb, se, nodes, p_only) in scenarios(n, rs).items():
        rows_d, nodes_d = cp.asarray(rows), cp.asarray(nodes, dtype=cp.int64)
        sb_d, se_d = cp.asarray(sb, dtype=cp.int64), cp.asarray(se, dtype=cp.int64)
        m = len(nodes)
        tp = cp.empty(m + 1, dtype=cp.int64)
        TILE_OFFSETS((1,), (1,), (sb_d, se_d, nodes_d, np.int32(m), np.int32(tile), tp))
        nreg = rs.integers(1, D + 1, m) * (sname != "root")
        rfeat, rcoef = np.full((m, D), -1, dtype=np.int64), np.zeros((m, D))
        for j in range(m):
            rfeat[j, :nreg[j]] = rs.choice(F, nreg[j], replace=False)
            rcoef[j, :nreg[j]] = rs.normal(size=nreg[j])
        isp = 1.0 / 2.0 ** np.ceil(np.log2(np.maximum(np.abs(rcoef).sum(1), 1e-300)))
        pt_args = (rows_d, sb_d, se_d, nodes_d, tp, np.int32(m), np.int32(tile), raw_d,
                   np.int32(F), center, inv_scale, xmask, cp.asarray(rfeat), cp.asarray(rcoef),
                   cp.asarray(isp), np.int32(D), g_d, h_d, np.int32(1), np.int32(0), grad_d,
                   consts, np.int32(p_only), rec, recq)
        ms = timed(lambda: ptilde((n_sm * 32,), (tile,), pt_args))
        print(f"{sname:14s} linear_ptilde {ms:8.4f} ms", flush=True)
        rows_out.append({"scenario": sname, "kernel": "linear_ptilde", "ms": round(ms, 4)})
        common = (words, np.int32(9), np.uint32(511), np.int32(F), hist_ptrs, rows_d, rec, recq,
                  raw_d, center, inv_scale, xmask, sb_d, se_d, nodes_d, np.int32(n_slots), tp,
                  np.int32(m), np.int32(tile), np.int32(p_only))
        ref = cp.zeros((m, n_slots, 9), dtype=cp.int64)
        spec((n_sm * 16,), (256,), common + (ref,))
        for budget, blk, mb in shapes:
            grp = groups_for(F, nb + 1, budget)
            G = len(grp) // 2
            smem = 72 * int(max(grp[2 * i + 1] - grp[2 * i] for i in range(G))) * (nb + 1)
            kern = kernels[(blk, mb)]
            if smem > optin or blk > kern.max_threads_per_block:
                continue
            kern.max_dynamic_shared_size_bytes = max(smem, 48 * 1024)
            occ = max(1, min(2048 // blk, (228 * 1024) // (smem + 1024)))
            gx = max(1, math.ceil(n_sm * occ / G))
            hist = cp.zeros((m, n_slots, 9), dtype=cp.int64)
            args = common + (cp.asarray(grp), hist)
            kern((gx, 1, G), (blk,), args, shared_mem=smem)
            ok = bool((hist == ref).all())

            def run():
                hist.fill(0)
                kern((gx, 1, G), (blk,), args, shared_mem=smem)
            ms = timed(run)
            row = {"scenario": sname, "kernel": "linear_histograms_shared",
                   "budget_k": budget // 1024, "block": blk, "min_blocks": mb,
                   "registers": kern.num_regs, "local_bytes": kern.local_size_bytes,
                   "groups": G, "grid": gx * G, "exact": ok, "ms": round(ms, 4)}
            rows_out.append(row)
            print(f"{sname:14s} {budget // 1024:4d}K blk={blk:5d}x{mb} regs={kern.num_regs:3d} "
                  f"local={kern.local_size_bytes:3d} G={G:2d} grid={gx * G:4d} {ms:8.4f} ms "
                  f"exact={ok}", flush=True)
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "linear_hist_lab.jsonl"), "w") as f:
        for row in rows_out:
            f.write(json.dumps(row) + "\n")
    bad = [x for x in rows_out if x.get("exact") is False]
    print("NOT EXACT:" if bad else "all exact", bad if bad else "")


if __name__ == "__main__":
    main()
