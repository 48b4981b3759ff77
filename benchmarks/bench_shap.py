"""SHAP values: dgbdt's TreeSHAP beside XGBoost's on the same trees (the XGBoost export), one run.

    python benchmarks/bench_shap.py                      # 100k x 28, 100 trees, depth 6, CPU
    python benchmarks/bench_shap.py --rows 20000 --out result.jsonl
    python3 benchmarks/bench_shap.py --device cuda --rows 1000000 --trees 500 --depth 8
    python3 benchmarks/bench_shap.py --device cuda --interactions   # 100k x 28, depth 8

``--interactions`` times SHAP interaction values (``pred_interactions``, [n, F + 1, F + 1]:
100k x 28 rows are 29 x 29 float64 values each, 0.67 GB on the device; 1M rows would be
6.7 GB, and XGBoost's float32 copy on the host half that) instead of SHAP values: on the GPU
dgbdt's shap_interactions kernel against XGBoost's GPUTreeShap interactions, same trees.

On the GPU (``--device cuda``) both libraries train and explain on the device: dgbdt's path-form
TreeSHAP kernel (dgbdt.kernels.gpu_shap) against XGBoost's GPUTreeShap on the same trees, rows
given as a cupy array; dgbdt's first call (which extracts and uploads the model's paths, after a
warm-up of the kernel on one tree) and second call are both timed; XGBoost's values come back to
the host, dgbdt's stay on the device (their copy is timed separately).

Trains dgbdt (binary:logistic on bench_cpu.py's Higgs-shaped formula), loads its XGBoost export
into XGBoost, and times ``predict(X, pred_contribs=True)`` of both after a warm-up on 100 rows
(numba compilation outside the timing). Prints one JSON line with the ratio and the largest
difference of the values (XGBoost computes in float32).
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--features", type=int, default=28, help="at least 15")
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--depth", type=int, help="default 6 (8 with --interactions)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--interactions", action="store_true",
                    help="time pred_interactions instead of pred_contribs")
    ap.add_argument("--out", help="also append the JSON line to this file")
    a = ap.parse_args()
    if a.depth is None:
        a.depth = 8 if a.interactions else 6
    a.what = "pred_interactions" if a.interactions else "pred_contribs"
    if a.device == "cuda":
        return gpu(a)

    import numba
    import xgboost as xgb

    import dgbdt
    rng = np.random.default_rng(0)
    X = rng.standard_normal((a.rows, a.features)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) - X[:, 4] + 0.3 * X[:, 5:15].sum(1)
         > 0).astype(np.float64)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1},
                    dgbdt.Dataset(X, y), a.trees, verbose_eval=False)
    xb = xgb.Booster()
    xb.load_model(bytearray(b.save_raw("xgboost").encode()))
    kw = {a.what: True}
    b.predict(X[:100], **kw)
    xb.predict(xgb.DMatrix(X[:100]), **kw)
    dm = xgb.DMatrix(X)
    t = time.perf_counter()
    c = b.predict(X, **kw)
    td = time.perf_counter() - t
    t = time.perf_counter()
    cx = xb.predict(dm, **kw)
    tx = time.perf_counter() - t
    line = json.dumps({"bench": "shap", "what": a.what, "shape": list(c.shape),
                       "device": "cpu", "rows": a.rows, "features": a.features,
                       "trees": a.trees, "depth": a.depth, "threads": numba.get_num_threads(),
                       "cpus": os.cpu_count(), "dgbdt_s": round(td, 3),
                       "xgboost_s": round(tx, 3), "ratio": round(td / tx, 3),
                       "max_abs_diff": float(np.abs(c - cx).max()),
                       "xgboost": xgb.__version__, "dgbdt": dgbdt.__version__})
    print(line)
    if a.out:
        with open(a.out, "a") as f:
            f.write(line + "\n")


def gpu(a) -> None:
    import cupy as cp
    import xgboost as xgb

    import dgbdt
    rng = np.random.default_rng(0)
    X = rng.standard_normal((a.rows, a.features)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) - X[:, 4] + 0.3 * X[:, 5:15].sum(1)
         > 0).astype(np.float64)
    Xd = cp.asarray(X)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1,
                     "device": "cuda"}, dgbdt.Dataset(Xd, cp.asarray(y)), a.trees,
                    verbose_eval=False)
    xb = xgb.Booster()
    xb.load_model(bytearray(b.save_raw("xgboost").encode()))
    xb.set_param({"device": "cuda"})
    kw = {a.what: True}
    b.predict(Xd[:100], iteration_range=(0, 1), **kw)   # compiles the kernel
    dm = xgb.DMatrix(Xd)
    xb.predict(xgb.DMatrix(Xd[:100]), **kw)

    def timed(fn):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        out = fn()
        cp.cuda.Device().synchronize()
        return out, time.perf_counter() - t

    c, first = timed(lambda: b.predict(Xd, **kw))
    c, second = timed(lambda: b.predict(Xd, **kw))
    ch, copy = timed(lambda: cp.asnumpy(c))
    cx, tx = timed(lambda: xb.predict(dm, **kw))
    cx2, tx2 = timed(lambda: xb.predict(dm, **kw))
    margin = cp.asnumpy(b.predict(Xd, output_margin=True))
    total = ch.sum(axis=(1, 2)) if a.interactions else ch.sum(1)
    line = json.dumps({
        "bench": "shap", "what": a.what, "shape": list(ch.shape),
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "rows": a.rows, "features": a.features, "trees": a.trees, "depth": a.depth,
        "dgbdt_first_s": round(first, 3), "dgbdt_s": round(second, 3),
        "dgbdt_copy_to_host_s": round(copy, 3),
        "xgboost_first_s": round(tx, 3), "xgboost_s": round(tx2, 3),
        "ratio": round(second / tx2, 3), "ratio_first": round(first / tx, 3),
        "max_abs_diff": float(np.abs(ch - cx).max()),
        "max_abs_sum_minus_margin": float(np.abs(total - margin).max()),
        "xgboost": xgb.__version__, "dgbdt": dgbdt.__version__})
    print(line)
    if a.out:
        with open(a.out, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
