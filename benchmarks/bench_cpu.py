"""dgbdt vs XGBoost hist on the CPU, same data, same cores, one run; prints one JSON line.

    python benchmarks/bench_cpu.py                      # 1M x 28, 100 rounds, depth 6
    python benchmarks/bench_cpu.py --rows 200000 --rounds 20

Synthetic Higgs-shaped binary classification: 28 standard-normal features, labels drawn from a
logistic model with interactions. Times include quantization (sketch + binning + packing for
dgbdt, QuantileDMatrix for XGBoost); a warm-up run on a small sample first keeps numba's JIT
compilation out of dgbdt's time. AUC on a held-out 10 %.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np


def make_data(n: int, n_features: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features), dtype=np.float32)
    logit = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - X[:, 4]
             + 0.3 * X[:, 5:15].sum(axis=1))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
    return X, y


def auc(y, p) -> float:
    from dgbdt.metrics.registry import get_metric
    return float(get_metric("auc")(y.astype(np.float64), p.astype(np.float64)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--max-bin", type=int, default=256)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--no-xgboost", action="store_true")
    ap.add_argument("--max-leaves", type=int, default=0,
                    help='> 0: grow_policy="lossguide" with this many leaves (--depth 0: no '
                         "depth limit)")
    a = ap.parse_args()

    import dgbdt

    X, y = make_data(a.rows, a.features, 0)
    n_test = a.rows // 10
    Xtr, ytr, Xte, yte = X[n_test:], y[n_test:], X[:n_test], y[:n_test]
    params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.3,
              "max_bin": a.max_bin, "nthread": a.threads}
    if a.max_leaves:
        params |= {"grow_policy": "lossguide", "max_leaves": a.max_leaves}

    # warm-up: compile the numba kernels outside the timed region, the serial builds (small
    # shards) and the parallel ones (dgbdt.kernels.twins)
    for n in (2000, 40000):
        dgbdt.train(params, dgbdt.Dataset(Xtr[:n], label=ytr[:n]), 2, verbose_eval=False)

    t0 = time.perf_counter()
    booster = dgbdt.train(params, dgbdt.Dataset(Xtr, label=ytr), a.rounds, verbose_eval=False)
    t_dgbdt = time.perf_counter() - t0
    auc_dgbdt = auc(yte, booster.predict(Xte))
    out = {"bench": "cpu", "rows": a.rows, "features": a.features, "rounds": a.rounds,
           "depth": a.depth, "max_bin": a.max_bin, "threads": a.threads,
           "max_leaves": a.max_leaves or None,
           "machine": f"{platform.machine()} {os.cpu_count()} cores",
           "dgbdt_s": round(t_dgbdt, 3), "dgbdt_auc": round(auc_dgbdt, 5),
           "dgbdt_stages_s": {k: round(v, 3) for k, v in booster.timings.items()}}
    if not a.no_xgboost:
        import xgboost as xgb
        t0 = time.perf_counter()
        dm = xgb.QuantileDMatrix(Xtr, label=ytr, max_bin=a.max_bin)
        bst = xgb.train({**params, "tree_method": "hist"}, dm, a.rounds)
        t_xgb = time.perf_counter() - t0
        auc_xgb = auc(yte, bst.predict(xgb.DMatrix(Xte)))
        out.update({"xgboost": xgb.__version__, "xgboost_s": round(t_xgb, 3),
                    "xgboost_auc": round(auc_xgb, 5),
                    "ratio_dgbdt_over_xgboost": round(t_dgbdt / t_xgb, 3),
                    "auc_diff": round(auc_dgbdt - auc_xgb, 5)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
