"""What row sampling costs in accuracy, and what it saves in time, on the CPU: dgbdt without
sampling, then uniform and gradient-based sampling at several rates, one run, the same data
(bench_cpu's Higgs-shaped rows); one JSON line per model. ``--device cuda`` trains on a GPU.

    python benchmarks/bench_sampling.py                         # 1M x 28, 100 rounds, depth 8
    python benchmarks/bench_sampling.py --rows 200000 --rates 0.2 --out results.jsonl

AUC and logloss on a held-out 20 %; times are the whole dgbdt.train call (quantization
included, the kernels compiled by a warm-up first). XGBoost's CPU hist has no gradient-based
sampling (GPU only), so it is not a leg here; bench_ooc.py compares it on a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import auc, make_data  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--rates", default="0.1,0.2,0.5")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--out", help="append the JSON lines to this file")
    a = ap.parse_args()

    import dgbdt
    from sklearn.metrics import log_loss

    X, y = make_data(a.rows, a.features, 0)
    cut = int(a.rows * 0.8)
    dtrain = dgbdt.Dataset(X[:cut], label=y[:cut])
    Xt, yt = X[cut:], y[cut:]
    base = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1, "seed": 1,
            "device": a.device}
    dgbdt.train(base, dgbdt.Dataset(X[:5000], label=y[:5000]), 2, verbose_eval=False)
    legs = [("none", 1.0)] + [(m, float(r)) for r in a.rates.split(",") if r
                              for m in ("uniform", "gradient_based")]
    for method, rate in legs:
        p = dict(base)
        if method != "none":
            p |= {"subsample": rate, "sampling_method": method}
        t = time.perf_counter()
        b = dgbdt.train(p, dtrain, a.rounds, verbose_eval=False)
        seconds = time.perf_counter() - t
        pred = b.predict(dgbdt.Dataset(Xt))
        line = {"bench": "sampling", "rows": a.rows, "features": a.features,
                "rounds": a.rounds, "depth": a.depth, "method": method, "subsample": rate,
                "seconds": round(seconds, 3), "auc": round(auc(yt, pred), 6),
                "logloss": round(float(log_loss(yt, pred)), 6), "dgbdt": dgbdt.__version__,
                "device": a.device, "commit": os.environ.get("BENCH_COMMIT"),
                "machine": platform.machine(), "cpus": os.cpu_count(),
                "python": platform.python_version()}
        print(json.dumps(line), flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
