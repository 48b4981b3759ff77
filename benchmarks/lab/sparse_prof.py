"""Kernel time of a sparse (ELLPACK) GPU training (issue #21), for ncu:

    ncu --csv --metrics gpu__time_duration.sum python benchmarks/lab/sparse_prof.py \
        --rows 1000000 --rounds 3 > k.csv; python benchmarks/lab/ncu_sum.py k.csv

and the quantization's stages (sketch, page) timed without the profiler (--stages).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_sparse import make_data  # noqa: E402

import dgbdt  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--rows", type=int, default=1_000_000)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--stages", action="store_true")
a = ap.parse_args()
import cupy as cp  # noqa: E402
X, y = make_data(a.rows, 2000, 0.01, 0)
p = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "device": "cuda"}
if a.stages:
    from dgbdt.backends.device import get_backend
    be = get_backend("cuda")
    dgbdt.train(p, dgbdt.Dataset(X[:20000], y[:20000]), 2)
    d = dgbdt.Dataset(X, y)
    t = time.perf_counter(); cuts = d.cuts(256, be); cp.cuda.Device().synchronize()
    print(f"cuts {time.perf_counter() - t:.3f} s")
    t = time.perf_counter(); d.pages(cuts, 256, be); cp.cuda.Device().synchronize()
    print(f"pages {time.perf_counter() - t:.3f} s")
    t = time.perf_counter(); dgbdt.train(p, d, 20); cp.cuda.Device().synchronize()
    print(f"train 20 rounds (pages built) {time.perf_counter() - t:.3f} s")
else:
    dgbdt.train(p, dgbdt.Dataset(X, y), a.rounds)
cp.cuda.Device().synchronize()
