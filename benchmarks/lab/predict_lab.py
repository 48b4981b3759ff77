"""Prediction speed on a GPU (issue 13 item 4): dgbdt vs XGBoost inplace_predict on 2M rows,
binary (500 trees, depth 8) and 5 classes (100 rounds = 500 trees, depth 6)."""
import sys
import time

import cupy as cp

sys.path.insert(0, "benchmarks")
from bench_gpu import make_data_gpu  # noqa: E402

import dgbdt  # noqa: E402

try:
    import xgboost as xgb
except ImportError:
    xgb = None


def timed(fn, reps=3):
    fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        r = fn()
        cp.cuda.Device().synchronize()
        ts.append(time.perf_counter() - t)
    return r, min(ts)


X, y = make_data_gpu(2_000_000, 28, 0)
Xs, ys = X[:100_000], y[:100_000]
yk = cp.floor(cp.clip((X[:100_000, 0] + 2) * 1.25, 0, 4.99)).astype(cp.float32)
cases = [("binary", {"objective": "binary:logistic", "max_depth": 8}, ys, 500),
         ("5 classes", {"objective": "multi:softprob", "num_class": 5, "max_depth": 6}, yk, 100)]
for name, p, lab, rounds in cases:
    b = dgbdt.train({**p, "device": "cuda"}, dgbdt.Dataset(Xs, label=lab), rounds,
                    verbose_eval=False)
    pd, td = timed(lambda: b.predict(X))
    line = f"{name}: dgbdt predict {td * 1e3:.1f} ms"
    if xgb is not None:
        bx = xgb.train({**p, "device": "cuda", "tree_method": "hist"},
                       xgb.QuantileDMatrix(Xs, label=lab), rounds)
        px, tx = timed(lambda: bx.inplace_predict(X))
        line += f", xgboost inplace_predict {tx * 1e3:.1f} ms, ratio {td / tx:.2f}"
    print(line, flush=True)
