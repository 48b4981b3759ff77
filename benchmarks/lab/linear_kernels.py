"""Kernel time of a piecewise-linear GPU training (issue #15), under nsys: the same training as
linear_prof.py without the profiler, for `nsys profile --stats=true --cuda-graph-trace=node`.

    nsys profile -o /tmp/lin --stats=true --cuda-graph-trace=node \
        python benchmarks/lab/linear_kernels.py --rows 1000000 --rounds 50
    ncu --profile-from-start off --csv --metrics gpu__time_duration.sum \
        python benchmarks/lab/linear_kernels.py --warm --rounds 10 > k.csv
    python benchmarks/lab/ncu_sum.py k.csv
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_linear import make_data  # noqa: E402

import dgbdt  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--rows", type=int, default=1_000_000)
ap.add_argument("--rounds", type=int, default=50)
ap.add_argument("--constant", action="store_true")
ap.add_argument("--warm", action="store_true",
                help="train 3 rounds first and profile only the rest (ncu --profile-from-start "
                     "off: cudaProfilerStart / Stop around the measured training)")
a = ap.parse_args()
import cupy as cp  # noqa: E402
X, y = make_data("pl-reg", a.rows)
Xd, yd = cp.asarray(X), cp.asarray(y)
p = {"linear_tree": not a.constant, "max_depth": 6, "eta": 0.1, "device": "cuda"}
if a.warm:
    dgbdt.train(p, dgbdt.Dataset(Xd, label=yd), 3)
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.start()
dgbdt.train(p, dgbdt.Dataset(Xd, label=yd), a.rounds)
cp.cuda.Device().synchronize()
if a.warm:
    cp.cuda.profiler.stop()
