"""Device memory left behind by repeated in-process GPU fits (issue 46's finding: ~6.3 MB a
fit with tree graphs on, none with DGBDT_CUDA_GRAPHS=0, on 2x H200 on 2026-11-28).

    python3 benchmarks/lab/fit_memory_lab.py [--fits 4] [--rows 200000] [--depth 6]

Runs the same fits under four settings (tree graphs on / off, with / without an eval set:
with one, trees are not read a round late, so no side-stream copies) and prints, after each
fit, the device memory in use (``memGetInfo``, after ``gc.collect()`` and the default pool's
``free_all_blocks()``) against the first fit, and CuPy's default pool's used / total / free
bytes and free blocks: memory the pool holds but cannot free (split blocks) shows as total
above used. One line of JSON per setting at the end.
"""
import argparse
import gc
import json
import os

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("--fits", type=int, default=4)
ap.add_argument("--rows", type=int, default=200_000)
ap.add_argument("--depth", type=int, default=6)
ap.add_argument("--rounds", type=int, default=5)
a = ap.parse_args()

import cupy as cp  # noqa: E402

import dgbdt  # noqa: E402

pool = cp.get_default_memory_pool()


def snapshot() -> dict:
    gc.collect()
    pool.free_all_blocks()
    free, total = cp.cuda.runtime.memGetInfo()
    return {"device_used_mb": (total - free) / 1e6, "pool_used_mb": pool.used_bytes() / 1e6,
            "pool_total_mb": pool.total_bytes() / 1e6, "pool_free_mb": pool.free_bytes() / 1e6,
            "pool_free_blocks": pool.n_free_blocks()}


rng = np.random.default_rng(0)
X = rng.standard_normal((a.rows, 20)).astype(np.float32)
y = (X[:, 0] > 0).astype(np.float32)
d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
dv = dgbdt.Dataset(cp.asarray(X[:1000]), label=cp.asarray(y[:1000]))
p = {"device": "cuda", "max_depth": a.depth}
for graphs in ("1", "0"):
    for evals in (False, True):
        os.environ["DGBDT_CUDA_GRAPHS"] = graphs
        kw = {"evals": [(dv, "v")], "verbose_eval": False} if evals else {}
        dgbdt.train(p, d, a.rounds, **kw)
        base = snapshot()
        rows = []
        for i in range(a.fits):
            dgbdt.train(p, d, a.rounds, **kw)
            s = snapshot()
            s["device_growth_mb"] = round(s["device_used_mb"] - base["device_used_mb"], 2)
            rows.append({k: round(v, 2) for k, v in s.items()})
            print(f"graphs={graphs} evals={evals} fit {i + 1}:", rows[-1], flush=True)
        print(json.dumps({"bench": "fit_memory_lab", "graphs": graphs == "1", "evals": evals,
                          "rows": a.rows, "depth": a.depth, "per_fit": rows}), flush=True)
