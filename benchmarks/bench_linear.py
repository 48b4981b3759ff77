"""Piecewise-linear trees (linear_tree, issue #15): dgbdt linear vs dgbdt constant vs
LightGBM linear_tree vs XGBoost hist, on two synthetic datasets with linear structure inside
regions; one run each; one JSON line per (dataset, model).

    python benchmarks/bench_linear.py                          # 1M rows, 100 and 500 rounds
    python benchmarks/bench_linear.py --rows 200000 --out benchmarks/results/x.jsonl
    python benchmarks/bench_linear.py --device cuda      # on a GPU: dgbdt and XGBoost there

Data: 12 uniform features on [-1, 1] (1 % missing); 8 regions cut by x0, x1 and x2; in each
region a linear function of x3..x8 with the region's own coefficients, plus a small smooth
term (sin(3 x9)) no tree fits exactly. "pl-reg": that plus Gaussian noise (sd 0.3), RMSE;
"pl-cls": labels drawn from a logistic model of it, logloss and AUC. Test metrics on a
held-out 20 % after 100 and 500 rounds (the 100-round figure is the 500-round model's first
100 rounds: each library's iteration_range / num_iteration), training time to round 100
(a callback's clock) and to round 500, quantization included. Same eta, depth, bins and
threads for every model; a warm-up on a small sample keeps numba's compilation out of
dgbdt's times (and CUDA's kernel compilation out of the GPU's).

``--device cuda`` trains on one GPU: dgbdt linear and constant (cupy input, device='cuda';
a linear tree's split search and leaf solves run on the host over the GPU's sums) and
XGBoost (device='cuda', cupy input); LightGBM's linear_tree has no GPU version and is left
out unless named in --models. Each dataset's last line gives dgbdt's linear / constant
training-time ratio (issue #15's GPU target: at most 2).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time

import numpy as np

DATASETS = ("pl-reg", "pl-cls")
MODELS = ("dgbdt-linear", "dgbdt-constant", "lightgbm-linear", "xgboost")


def make_data(kind: str, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 12)).astype(np.float32)
    coef = np.random.default_rng(1).normal(0, 1.5, (8, 7))      # region -> (c, x3..x8)
    region = (X[:, 0] > 0).astype(int) * 4 + (X[:, 1] > 0.3).astype(int) * 2 + \
        (X[:, 2] > -0.2).astype(int)
    f = coef[region, 0] + np.einsum("ij,ij->i", coef[region, 1:], X[:, 3:9]) \
        + 0.3 * np.sin(3 * X[:, 9])
    if kind == "pl-reg":
        y = f + 0.3 * rng.normal(size=n)
    else:
        y = (rng.random(n) < 1 / (1 + np.exp(-f))).astype(np.float64)
    X[rng.random(X.shape) < 0.01] = np.nan
    return X, y


def metrics(kind, y, pred) -> dict:
    if kind == "pl-reg":
        return {"rmse": round(float(np.sqrt(np.mean((pred - y) ** 2))), 5)}
    from dgbdt.metrics.registry import get_metric
    p = np.clip(pred, 1e-15, 1 - 1e-15)
    return {"logloss": round(float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))), 5),
            "auc": round(float(get_metric("auc")(y, pred.astype(np.float64))), 5)}


class Clock:
    """Seconds from start to the end of round ``mark`` (a callback in every library)."""

    def __init__(self, mark: int):
        self.mark, self.t0, self.at_mark = mark, time.perf_counter(), None

    def tick(self, rounds_done: int) -> None:
        if rounds_done == self.mark and self.at_mark is None:
            self.at_mark = time.perf_counter() - self.t0


def _device_rows(common, X, y=None):
    """X (and y) as the training device wants them: cupy arrays on a GPU, else as they are."""
    if common["device"] != "cuda":
        return X, y
    import cupy as cp
    return cp.asarray(X), None if y is None else cp.asarray(y)


def run_dgbdt(kind, Xtr, ytr, Xte, common, rounds, mark, linear):
    import dgbdt
    from dgbdt.callback import TrainingCallback

    params = {"objective": "reg:squarederror" if kind == "pl-reg" else "binary:logistic",
              "eta": common["eta"], "max_depth": common["depth"], "max_bin": common["max_bin"],
              "nthread": common["threads"], "linear_tree": linear, "device": common["device"]}
    dgbdt.train(params, dgbdt.Dataset(*_device_rows(common, Xtr[:3000], ytr[:3000])), 2,
                verbose_eval=False)
    Xd, yd = _device_rows(common, Xtr, ytr)

    class Tick(TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick(epoch + 1)
            return False
    clock = Clock(mark)
    b = dgbdt.train(params, dgbdt.Dataset(Xd, label=yd), rounds, verbose_eval=False,
                    callbacks=[Tick()])
    total = time.perf_counter() - clock.t0
    return clock.at_mark, total, {r: b.predict(Xte, iteration_range=(0, r))
                                  for r in (mark, rounds)}, b.timings


def run_lightgbm(kind, Xtr, ytr, Xte, common, rounds, mark):
    import lightgbm as lgb
    params = {"objective": "regression" if kind == "pl-reg" else "binary",
              "learning_rate": common["eta"], "max_depth": common["depth"],
              "num_leaves": 2 ** common["depth"], "max_bin": common["max_bin"] - 1,
              "num_threads": common["threads"], "linear_tree": True, "verbose": -1}
    clock = Clock(mark)
    b = lgb.train(params, lgb.Dataset(Xtr, label=ytr), rounds,
                  callbacks=[lambda env: clock.tick(env.iteration + 1)])
    total = time.perf_counter() - clock.t0
    return clock.at_mark, total, {r: b.predict(Xte, num_iteration=r) for r in (mark, rounds)}, \
        None


def run_xgboost(kind, Xtr, ytr, Xte, common, rounds, mark):
    import xgboost as xgb

    class Tick(xgb.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            clock.tick(epoch + 1)
            return False
    params = {"objective": "reg:squarederror" if kind == "pl-reg" else "binary:logistic",
              "eta": common["eta"], "max_depth": common["depth"], "max_bin": common["max_bin"],
              "nthread": common["threads"], "tree_method": "hist",
              "device": common["device"]}
    Xd, yd = _device_rows(common, Xtr, ytr)
    if common["device"] == "cuda":          # warm-up: CUDA context and kernels
        xgb.train(params, xgb.QuantileDMatrix(Xd[:3000], label=yd[:3000],
                                              max_bin=common["max_bin"]), 2)
    clock = Clock(mark)
    b = xgb.train(params, xgb.QuantileDMatrix(Xd, label=yd, max_bin=common["max_bin"]),
                  rounds, callbacks=[Tick()])
    total = time.perf_counter() - clock.t0
    d = xgb.DMatrix(Xte)
    return clock.at_mark, total, {r: b.predict(d, iteration_range=(0, r))
                                  for r in (mark, rounds)}, None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--mark", type=int, default=100, help="the earlier round reported")
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--max-bin", type=int, default=256)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--models", default=None,
                    help=f"comma-separated, of {','.join(MODELS)} (default: all; on cuda all "
                         "but lightgbm-linear)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--out", default=None, help="append the JSON lines to this file too")
    a = ap.parse_args()
    from bench_gpu import checkout_commit
    common = {"eta": a.eta, "depth": a.depth, "max_bin": a.max_bin, "threads": a.threads,
              "device": a.device}
    models = a.models.split(",") if a.models else \
        [m for m in MODELS if a.device == "cpu" or m != "lightgbm-linear"]
    head = {"bench": "linear", "rows": a.rows, "rounds": a.rounds, "mark": a.mark, **common,
            "machine": f"{platform.machine()} {os.cpu_count()} cores", "device": a.device,
            "date": datetime.date.today().isoformat(), "commit": checkout_commit()}
    lines = []
    for kind in a.datasets.split(","):
        X, y = make_data(kind, a.rows)
        n_test = a.rows // 5
        Xtr, ytr, Xte, yte = X[n_test:], y[n_test:], X[:n_test], y[:n_test]
        times = {}
        for model in models:
            runner = {"dgbdt-linear": lambda *z: run_dgbdt(*z, linear=True),
                      "dgbdt-constant": lambda *z: run_dgbdt(*z, linear=False),
                      "lightgbm-linear": run_lightgbm, "xgboost": run_xgboost}[model]
            try:
                t_mark, t_all, preds, stages = runner(kind, Xtr, ytr, Xte, common, a.rounds,
                                                      a.mark)
            except ImportError as e:
                lines.append({**head, "dataset": kind, "model": model,
                              "skipped": f"not installed: {e}"})
                print(json.dumps(lines[-1]), flush=True)
                continue
            line = {**head, "dataset": kind, "model": model,
                    f"train_s_{a.mark}": round(t_mark, 2), f"train_s_{a.rounds}": round(t_all, 2),
                    f"test_{a.mark}": metrics(kind, yte, preds[a.mark]),
                    f"test_{a.rounds}": metrics(kind, yte, preds[a.rounds])}
            if stages:
                line["stages_s"] = {k: round(v, 2) for k, v in stages.items()}
            times[model] = t_all
            lines.append(line)
            print(json.dumps(line), flush=True)
        if "dgbdt-linear" in times and "dgbdt-constant" in times:
            lines.append({**head, "dataset": kind, "model": "ratio",
                          "dgbdt_linear_over_constant_train_s": round(
                              times["dgbdt-linear"] / times["dgbdt-constant"], 2)})
            print(json.dumps(lines[-1]), flush=True)
    if a.out:
        with open(a.out, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
