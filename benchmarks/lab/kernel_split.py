"""Per-kernel GPU time of a few trees (issue 13): run under Nsight Compute, e.g.

    ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum \
        --csv --log-file k.csv python benchmarks/lab/kernel_split.py --lib dgbdt
    python benchmarks/lab/kernel_split.py --table k.csv --rounds 3

Trains --rounds rounds (after a warm-up training that builds and caches the pages) between
cudaProfilerStart/Stop, so only the trees' kernels are profiled; --table sums the CSV by kernel
name, per tree."""
import argparse
import csv
import collections
import os
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--lib", default="dgbdt", choices=["dgbdt", "xgboost"])
ap.add_argument("--rows", type=int, default=10_000_000)
ap.add_argument("--features", type=int, default=28)
ap.add_argument("--depth", type=int, default=8)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--table", help="a CSV of ncu to sum")
a = ap.parse_args()

if a.table:
    per = collections.defaultdict(float)
    count = collections.Counter()
    with open(a.table) as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        name = row["Kernel Name"].split("(")[0][:60]
        v = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        ns = v * {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}.get(unit, 1)
        per[name] += ns
        count[name] += 1
    total = sum(per.values())
    print(f"{'kernel':60s} {'ms/tree':>8s} {'launches/tree':>13s} {'share':>6s}")
    for name, ns in sorted(per.items(), key=lambda kv: -kv[1]):
        print(f"{name:60s} {ns / 1e6 / a.rounds:8.3f} {count[name] / a.rounds:13.1f} "
              f"{ns / total:6.1%}")
    print(f"{'total':60s} {total / 1e6 / a.rounds:8.3f}")
    sys.exit()

import cupy as cp  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_gpu import make_data_gpu  # noqa: E402

X, y = make_data_gpu(a.rows, a.features, 0)
params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1, "max_bin": 256}
if a.lib == "dgbdt":
    import dgbdt
    ds = dgbdt.Dataset(X, label=y)
    p = params | {"device": "cuda"}
    dgbdt.train(p, ds, 2, verbose_eval=False)
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.start()
    dgbdt.train(p, ds, a.rounds, verbose_eval=False)
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.stop()
else:
    import xgboost as xgb
    dm = xgb.QuantileDMatrix(X, label=y, max_bin=256)
    p = params | {"device": "cuda", "tree_method": "hist"}
    xgb.train(p, dm, 2)
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.start()
    xgb.train(p, dm, a.rounds)
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.stop()
