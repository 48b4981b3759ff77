"""Native categorical features on one GPU: dgbdt vs XGBoost, same data, one run (#17).

    python benchmarks/bench_categorical.py                  # 10M rows, 200 rounds, depth 8
    python benchmarks/bench_categorical.py --rows 1000000 --rounds 20 --skip xgboost
    python benchmarks/bench_categorical.py --out result.jsonl   # also append the lines

Data (made on the GPU with cupy, seeded): 10 numerical features (standard normal) and 10
categorical features of 10, 22, 46, 100, 215, 464, 1000, 2154, 4642 and 10000 categories (codes
drawn uniformly, 2 % missing); the label is Bernoulli(sigmoid(z)) with z a sum of one random
effect per category of each categorical feature (not monotone in the code, so one-hot and
partition splits are needed) and a nonlinear function of the numerical features. The held-out
set (10 % of --rows) comes from another seed with the same category effects.

Legs: dgbdt (dgbdt.Dataset of the device rows with feature_types, then dgbdt.train) and
xgboost (QuantileDMatrix with feature_types and enable_categorical=True, then xgb.train), both
binary:logistic, --depth, max_bin 256, eta 0.1, XGBoost's categorical defaults
(max_cat_to_onehot 4, max_cat_threshold 64) in both. Times start after a device synchronize
and include quantization / DMatrix construction, not data generation; each leg first trains
2 rounds on 20k rows so compilation stays outside. Output: one JSON line per leg (seconds,
held-out AUC, dgbdt's stage timers), then one line with the ratio dgbdt / xgboost time.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

CARDINALITIES = (10, 22, 46, 100, 215, 464, 1000, 2154, 4642, 10000)
N_NUMERIC = 10
WARM_ROWS = 20_000
TRAIN_SEED, TEST_SEED, EFFECT_SEED = 0, 1, 2


def feature_types() -> list[str]:
    return ["q"] * N_NUMERIC + ["c"] * len(CARDINALITIES)


def make_data(cp, n: int, seed: int, missing: float = 0.02):
    """float32 cupy X [n, 20] (numerical, then category codes; NaN missing) and labels."""
    eff = cp.random.RandomState(EFFECT_SEED)      # the same effects for train and test
    effects = [eff.standard_normal(k, dtype=cp.float64) * 0.8 for k in CARDINALITIES]
    rs = cp.random.RandomState(seed)
    num = rs.standard_normal((n, N_NUMERIC), dtype=cp.float32)
    z = 0.6 * num[:, 0] - 0.5 * num[:, 1] ** 2 + 0.4 * num[:, 2] * num[:, 3] \
        + 0.3 * cp.sin(2 * num[:, 4])
    codes = []
    for k, e in zip(CARDINALITIES, effects):
        c = rs.randint(0, k, n)
        z = z + e[c]
        codes.append(c.astype(cp.float32))
    X = cp.concatenate([num, cp.stack(codes, 1)], axis=1)
    X[rs.random_sample(X.shape) < missing] = cp.nan
    z = (z - z.mean()) / z.std() * 1.5
    y = (rs.random_sample(n) < 1 / (1 + cp.exp(-z))).astype(cp.float32)
    return cp.ascontiguousarray(X), y


def auc(y, p) -> float:
    from dgbdt.metrics.registry import get_metric
    return float(get_metric("auc")(np.asarray(y, np.float64), np.asarray(p, np.float64)))


def timed(cp, fn):
    cp.cuda.Device().synchronize()
    t = time.perf_counter()
    out = fn()
    cp.cuda.Device().synchronize()
    return out, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--skip", default="", help="comma-separated legs to skip: dgbdt,xgboost")
    ap.add_argument("--out", default=None, help="append the JSON lines to this file")
    ap.add_argument("--commit", default=None,
                    help="the commit to record (default: git rev-parse of this checkout, "
                         "which a copied tree may not have)")
    a = ap.parse_args()
    import cupy as cp

    import dgbdt
    skip = set(filter(None, a.skip.split(",")))
    types = feature_types()
    Xtr, ytr = make_data(cp, a.rows, TRAIN_SEED)
    Xte, yte = make_data(cp, max(1, a.rows // 10), TEST_SEED)
    yte_host = cp.asnumpy(yte)
    params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1, "max_bin": 256,
              "max_cat_to_onehot": 4, "max_cat_threshold": 64}
    commit = a.commit
    try:
        commit = commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=os.path.dirname(os.path.abspath(__file__))
                                ).stdout.strip()
    except OSError:
        commit = ""
    base = {"bench": "categorical", "rows": a.rows, "rounds": a.rounds, "depth": a.depth,
            "features": f"{N_NUMERIC} numerical + {len(CARDINALITIES)} categorical "
                        f"({CARDINALITIES[0]}..{CARDINALITIES[-1]} categories)",
            "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "date": datetime.date.today().isoformat(), "commit": commit}
    lines = []

    def emit(d):
        line = json.dumps({**base, **d})
        print(line, flush=True)
        lines.append(line)

    results = {}
    if "dgbdt" not in skip:
        def fit(X, y, rounds):
            return dgbdt.train({**params, "device": "cuda"},
                               dgbdt.Dataset(X, label=y, feature_types=types), rounds,
                               verbose_eval=False)
        fit(Xtr[:WARM_ROWS], ytr[:WARM_ROWS], 2)
        b, s = timed(cp, lambda: fit(Xtr, ytr, a.rounds))
        score = auc(yte_host, cp.asnumpy(b.predict(Xte)))
        timers = {k: round(float(v), 3) for k, v in getattr(b, "timings", {}).items()
                  if isinstance(v, (int, float))}
        results["dgbdt"] = s
        emit({"impl": "dgbdt", "seconds": round(s, 3), "auc": round(score, 6),
              "categorical_splits": sum(len(t.categories or {}) for t in b.trees),
              "timers": timers})
        del b
    if "xgboost" not in skip:
        import xgboost as xgb
        xparams = {**params, "tree_method": "hist", "device": "cuda"}

        def xfit(X, y, rounds):
            return xgb.train(xparams, xgb.QuantileDMatrix(
                X, label=y, feature_types=types, enable_categorical=True, max_bin=256), rounds)
        xfit(Xtr[:WARM_ROWS], ytr[:WARM_ROWS], 2)
        bst, s = timed(cp, lambda: xfit(Xtr, ytr, a.rounds))
        pred = bst.inplace_predict(Xte)
        results["xgboost"] = s
        emit({"impl": "xgboost", "version": xgb.__version__, "seconds": round(s, 3),
              "auc": round(auc(yte_host, cp.asnumpy(pred)), 6)})
    if len(results) == 2:
        emit({"impl": "ratio", "dgbdt_over_xgboost": round(results["dgbdt"] /
                                                          results["xgboost"], 3)})
    if a.out:
        with open(a.out, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
