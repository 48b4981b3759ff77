"""Small CPU fits on an idle and on a busy machine, under dgbdt's OpenMP spin setting and
under the runtime's default; JSON lines (issue 44, item 6).

    python benchmarks/bench_cpu_threads.py --repeat 7 --trials 3

Each trial is a fresh interpreter that fits breast_cancer (569 rows, 30 features, 100 rounds,
binary:logistic) ``--repeat`` times after a warm-up fit and reports the median and the worst
fit. "busy": as many spinning Python processes as the machine has cores run beside it (what
a Dask worker sees when the other workers of its machine train). "default": the interpreter
starts numba's OpenMP pool before importing dgbdt, so the runtime reads the environment
without dgbdt's GOMP_SPINCOUNT (libgomp's own 300,000-round spin); "dgbdt": a plain import.
"xgboost": XGBoost's hist fit of the same data and rounds, in the same run (its own
OpenMP settings). The last line gives the medians over trials and dgbdt's time over each.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r'''
import sys, time
if sys.argv[1] == "xgboost":            # XGBoost's own fit of the same data, same rounds
    import xgboost as xgb
    from sklearn.datasets import load_breast_cancer
    X, y = load_breast_cancer(return_X_y=True)
    p = {"objective": "binary:logistic", "tree_method": "hist"}
    xgb.train(p, xgb.DMatrix(X, y), 5)
    ts = []
    for _ in range(int(sys.argv[2])):
        t = time.perf_counter()
        xgb.train(p, xgb.DMatrix(X, y), 100)
        ts.append(time.perf_counter() - t)
    ts.sort()
    print(ts[len(ts) // 2], ts[-1], "xgboost")
    sys.exit(0)
if sys.argv[1] == "default":          # OpenMP starts before dgbdt sets its spin count
    import numba, numpy as np
    @numba.njit(parallel=True)
    def touch(a):
        for i in numba.prange(a.shape[0]):
            a[i] += 1.0
    touch(np.zeros(64))
import dgbdt
from dgbdt.kernels.threads import spin_policy
from sklearn.datasets import load_breast_cancer
X, y = load_breast_cancer(return_X_y=True)
p = {"objective": "binary:logistic"}
dgbdt.train(p, dgbdt.Dataset(X, y), 5)
ts = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    dgbdt.train(p, dgbdt.Dataset(X, y), 100)
    ts.append(time.perf_counter() - t)
ts.sort()
print(ts[len(ts) // 2], ts[-1], spin_policy())
'''


def _trial(setting: str, repeat: int) -> tuple[float, float, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    out = subprocess.run([sys.executable, "-c", CHILD, setting, str(repeat)], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), out[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--settings", default="default,dgbdt,xgboost",
                    type=lambda s: s.split(","))
    a = ap.parse_args()
    medians: dict = {}
    for load in ("idle", "busy"):
        burners = []
        if load == "busy":
            burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                       for _ in range(os.cpu_count() or 1)]
            time.sleep(1.0)
        try:
            for _ in range(a.trials):
                for setting in a.settings:                  # alternated: drift hits both
                    med, worst, policy = _trial(setting, a.repeat)
                    medians.setdefault((load, setting), []).append(med)
                    print(json.dumps({"bench": "cpu_threads", "load": load, "setting": setting,
                                      "spin_policy": policy, "fit_median_s": round(med, 4),
                                      "fit_worst_s": round(worst, 4), "cores": os.cpu_count()}),
                          flush=True)
        finally:
            for b in burners:
                b.kill()
    summary = {f"{load}_{s}_s": round(statistics.median(v), 4)
               for (load, s), v in medians.items()}
    for load in ("idle", "busy"):
        for other in ("default", "xgboost"):
            if f"{load}_{other}_s" in summary and f"{load}_dgbdt_s" in summary:
                summary[f"dgbdt_over_{other}_{load}"] = round(
                    summary[f"{load}_dgbdt_s"] / summary[f"{load}_{other}_s"], 3)
    print(json.dumps({"bench": "cpu_threads", "summary": summary}))


if __name__ == "__main__":
    main()
