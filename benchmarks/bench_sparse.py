"""Sparse rows on one GPU: dgbdt's ELLPACK pages vs XGBoost, same CSR data, one run (#21).

    python benchmarks/bench_sparse.py                    # 5M x 2,000 at 1 %, 100 rounds, depth 8
    python benchmarks/bench_sparse.py --rows 200000 --rounds 10 --skip xgboost
    python benchmarks/bench_sparse.py --out result.jsonl   # also append the lines

Data (seeded, made on the host with numpy): a CSR matrix whose entries are present with
probability --density each (drawn as geometric gaps over the row-major positions, so every
row's columns come sorted), values standard normal rounded to 3 decimals; the label is
Bernoulli(sigmoid(z)) with z = X w (absent entries 0) plus a product of two frequent features
(columns 0 and 1 are present in 30 % of rows), standardized to 1.5. The held-out set (5 % of
--rows) comes from another seed and the same w.

Legs: dgbdt (dgbdt.Dataset of the scipy CSR rows, then dgbdt.train with device="cuda": the
rows are sketched on the GPU and quantized into ELLPACK pages) and xgboost (QuantileDMatrix of
the same CSR rows, then xgb.train with device="cuda"), both binary:logistic, --depth, max_bin
256, eta 0.1. Each leg's time starts after a device synchronize and includes the quantization
(Dataset / QuantileDMatrix construction, reported apart as well), not data generation; each
leg first trains 2 rounds on 20k rows so compilation stays outside. Output: one JSON line per
leg (seconds, quantize seconds, held-out AUC, dgbdt's page bytes against the dense layout's and
its stage timers), then a line with the ratio dgbdt / xgboost.
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

from bench_categorical import auc, timed  # noqa: E402  (the same helpers)

WARM_ROWS = 20_000
TRAIN_SEED, TEST_SEED, W_SEED = 0, 1, 2


def make_data(n: int, f: int, density: float, seed: int):
    """(scipy CSR float32 [n, f], labels float32 [n])."""
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    total = n * f
    expect = int(total * density)
    gaps = rng.geometric(density, size=int(expect * 1.02) + 1024)
    pos = np.cumsum(gaps, dtype=np.int64) - 1
    pos = pos[pos < total]
    rows, cols = np.divmod(pos, f)
    # two frequent features (30 % of rows each) that interact
    extra = []
    for c in (0, 1):
        r = np.flatnonzero(rng.random(n) < 0.3)
        extra.append((r, np.full(r.shape, c, np.int64)))
    keep = cols >= 2
    rows = np.concatenate([rows[keep]] + [e[0] for e in extra])
    cols = np.concatenate([cols[keep]] + [e[1] for e in extra])
    vals = np.round(rng.standard_normal(rows.shape[0]), 3).astype(np.float32)
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, f), dtype=np.float32)
    X.sum_duplicates()
    w = np.random.default_rng(W_SEED).standard_normal(f).astype(np.float32) * 0.3
    z = np.asarray(X @ w).ravel()
    a, b = X[:, 0].toarray().ravel(), X[:, 1].toarray().ravel()
    z = z + 1.5 * a * b
    z = (z - z.mean()) / (z.std() + 1e-12) * 1.5
    y = (rng.random(n) < 1 / (1 + np.exp(-z))).astype(np.float32)
    return X, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--features", type=int, default=2000)
    ap.add_argument("--density", type=float, default=0.01)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--skip", default="", help="comma-separated legs to skip: dgbdt,xgboost")
    ap.add_argument("--out", default=None, help="append the JSON lines to this file")
    ap.add_argument("--commit", default=None,
                    help="the commit to record (default: git rev-parse of this checkout)")
    a = ap.parse_args()
    import cupy as cp

    import dgbdt
    skip = set(filter(None, a.skip.split(",")))
    t = time.perf_counter()
    Xtr, ytr = make_data(a.rows, a.features, a.density, TRAIN_SEED)
    Xte, yte = make_data(max(1, a.rows // 20), a.features, a.density, TEST_SEED)
    gen = time.perf_counter() - t
    params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1, "max_bin": 256}
    commit = a.commit
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, cwd=os.path.dirname(os.path.abspath(__file__))
                                    ).stdout.strip()
        except OSError:
            commit = ""
    base = {"bench": "sparse", "rows": a.rows, "features": a.features, "density": a.density,
            "nnz": int(Xtr.nnz), "rounds": a.rounds, "depth": a.depth,
            "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
            "date": datetime.date.today().isoformat(), "commit": commit}
    print(f"# data made in {gen:.1f} s: {Xtr.nnz} stored entries", flush=True)
    lines = []

    def emit(d):
        line = json.dumps({**base, **d})
        print(line, flush=True)
        lines.append(line)

    results = {}
    if "dgbdt" not in skip:
        def fit(X, y, rounds, out=None):
            d = dgbdt.Dataset(X, label=y)
            t0 = time.perf_counter()
            b = dgbdt.train({**params, "device": "cuda"}, d, rounds, verbose_eval=False)
            if out is not None:
                out["dataset"] = d
                out["train_call"] = time.perf_counter() - t0
            return b
        fit(Xtr[:WARM_ROWS], ytr[:WARM_ROWS], 2)
        cp.get_default_memory_pool().free_all_blocks()
        info = {}
        b, s = timed(cp, lambda: fit(Xtr, ytr, a.rounds, info))
        pages = [p for ps in info["dataset"]._pages.values() for p in ps]
        score = auc(yte, cp.asnumpy(b.predict(Xte)))
        timers = {k: round(float(v), 3) for k, v in getattr(b, "timings", {}).items()
                  if isinstance(v, (int, float))}
        results["dgbdt"] = s
        from dgbdt.kernels.pages import bits_for
        cuts = next(iter(info["dataset"]._cuts.values()))
        dense_bytes = a.rows * a.features * bits_for(cuts.max_bins) // 8
        emit({"impl": "dgbdt", "seconds": round(s, 3),
              "quantize_seconds": round(float(b.timings.get("quantize", 0.0)), 3),
              "auc": round(score, 6), "ellpack": all(p.ell for p in pages),
              "page_bytes": int(sum(p.nbytes for p in pages)), "dense_page_bytes": dense_bytes,
              "row_stride": int(pages[0].n_features), "timers": timers})
        del b, info, pages
        cp.get_default_memory_pool().free_all_blocks()
    if "xgboost" not in skip:
        import xgboost as xgb
        xparams = {**params, "tree_method": "hist", "device": "cuda"}
        q = {}

        def xfit(X, y, rounds):
            t0 = time.perf_counter()
            d = xgb.QuantileDMatrix(X, label=y, max_bin=256)
            q["s"] = time.perf_counter() - t0
            return xgb.train(xparams, d, rounds)
        xfit(Xtr[:WARM_ROWS], ytr[:WARM_ROWS], 2)
        bst, s = timed(cp, lambda: xfit(Xtr, ytr, a.rounds))
        pred = bst.predict(xgb.DMatrix(Xte))
        results["xgboost"] = s
        emit({"impl": "xgboost", "version": xgb.__version__, "seconds": round(s, 3),
              "quantize_seconds": round(q["s"], 3), "auc": round(auc(yte, pred), 6)})
    if len(results) == 2:
        emit({"impl": "ratio", "dgbdt_over_xgboost": round(results["dgbdt"] /
                                                          results["xgboost"], 3)})
    if a.out:
        with open(a.out, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
