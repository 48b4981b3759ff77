"""SHAP values: dgbdt's TreeSHAP beside XGBoost's on the same trees (the XGBoost export), one run.

    python benchmarks/bench_shap.py                      # 100k x 28, 100 trees, depth 6, CPU
    python benchmarks/bench_shap.py --rows 20000 --out result.jsonl

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
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--out", help="also append the JSON line to this file")
    a = ap.parse_args()

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
    b.predict(X[:100], pred_contribs=True)
    xb.predict(xgb.DMatrix(X[:100]), pred_contribs=True)
    dm = xgb.DMatrix(X)
    t = time.perf_counter()
    c = b.predict(X, pred_contribs=True)
    td = time.perf_counter() - t
    t = time.perf_counter()
    cx = xb.predict(dm, pred_contribs=True)
    tx = time.perf_counter() - t
    line = json.dumps({"bench": "shap", "device": "cpu", "rows": a.rows, "features": a.features,
                       "trees": a.trees, "depth": a.depth, "threads": numba.get_num_threads(),
                       "cpus": os.cpu_count(), "dgbdt_s": round(td, 3),
                       "xgboost_s": round(tx, 3), "ratio": round(td / tx, 3),
                       "max_abs_diff": float(np.abs(c - cx).max()),
                       "xgboost": xgb.__version__, "dgbdt": dgbdt.__version__})
    print(line)
    if a.out:
        with open(a.out, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
