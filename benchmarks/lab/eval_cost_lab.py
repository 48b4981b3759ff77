"""What an eval set costs a GPU fit in process (the user path's 32 % at 2M rows, 1 GPU).

    python benchmarks/lab/eval_cost_lab.py [rows] [rounds]

dgbdt.train on cupy arrays (12 features, depth 8, 256 bins, eta 0.1), the eval set a tenth of
the rows: without an eval set, with logloss, with auc, with auc and early stopping (20), and
auc with a callback (which scores every round before the next); the median of 3 fits each,
after a warm-up, and the fit's stage timers (scores_wait, evaluation, device_wait).
"""
import json
import statistics
import sys
import time

import cupy as cp
import numpy as np

import dgbdt


def datasets(rows: int) -> tuple:
    """(training, eval) dgbdt Datasets of cupy arrays: rows x 12, the eval set a tenth."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, 12)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] ** 2 + rng.standard_normal(rows) > 0)
    y = y.astype(np.float32)
    cut = rows * 9 // 10
    return (dgbdt.Dataset(cp.asarray(X[:cut]), label=cp.asarray(y[:cut])),
            dgbdt.Dataset(cp.asarray(X[cut:]), label=cp.asarray(y[cut:])))


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    dtr, dva = datasets(rows)
    base = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "device": "cuda"}

    class Noop(dgbdt.callback.TrainingCallback):
        def after_iteration(self, model, epoch, evals_log):
            return False
    legs = {"no_eval": ({}, [], {}),
            "logloss": ({"eval_metric": "logloss"}, [(dva, "valid")], {}),
            "auc": ({"eval_metric": "auc"}, [(dva, "valid")], {}),
            "auc_early_stop": ({"eval_metric": "auc"}, [(dva, "valid")],
                               {"early_stopping_rounds": 20}),
            "auc_callback": ({"eval_metric": "auc"}, [(dva, "valid")],
                             {"callbacks": [Noop()]})}
    dgbdt.train(base, dtr, 5)
    for name, (extra, evals, kw) in legs.items():
        times, b = [], None
        for _ in range(3):
            cp.cuda.runtime.deviceSynchronize()
            t = time.perf_counter()
            b = dgbdt.train({**base, **extra}, dtr, rounds, evals=evals, verbose_eval=False, **kw)
            times.append(time.perf_counter() - t)
        tm = {k: round(v, 3) for k, v in b.timings.items()
              if k in ("scores_wait", "evaluation", "device_wait")}
        print(json.dumps({"leg": name, "rows": rows, "rounds": rounds,
                          "trained": b.num_boosted_rounds(), "best": b.best_iteration,
                          "fit_s": round(statistics.median(times), 3),
                          "runs": [round(t, 3) for t in times], "timers": tm}))


if __name__ == "__main__":
    main()
