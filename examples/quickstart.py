"""dgbdt quickstart: train a boosted-tree classifier, watch a validation metric, save the model.

    python examples/quickstart.py [--rows 200000] [--rounds 100]

Runs in-process on the CPU (the Dask and GPU paths come in later releases). Synthetic data with
the shape of the Higgs benchmark: 28 numeric features, a binary label, 1 % missing values.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

import dgbdt


def make_data(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 28), dtype=np.float32)
    logit = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - X[:, 4]
             + 0.3 * X[:, 5:15].sum(axis=1))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
    X[rng.random(X.shape) < 0.01] = np.nan
    return X, y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=100)
    a = ap.parse_args()

    X, y = make_data(a.rows)
    n_valid = a.rows // 5
    dtrain = dgbdt.Dataset(X[n_valid:], label=y[n_valid:])
    dvalid = dgbdt.Dataset(X[:n_valid], label=y[:n_valid])
    params = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1,
              "eval_metric": ["logloss", "auc"]}

    t0 = time.perf_counter()
    history: dict = {}
    booster = dgbdt.train(params, dtrain, a.rounds, evals=[(dvalid, "valid")],
                          early_stopping_rounds=20, evals_result=history, verbose_eval=25)
    seconds = time.perf_counter() - t0
    print(f"trained {booster.num_boosted_rounds()} rounds on {dtrain.num_row} rows in "
          f"{seconds:.1f} s (first run includes compiling the kernels)")
    print(f"best iteration {booster.best_iteration}: valid auc "
          f"{history['valid']['auc'][booster.best_iteration]:.4f}")
    print("where the time went (s):",
          {k: round(v, 2) for k, v in booster.timings.items()})
    top = sorted(booster.get_score(importance_type="gain").items(), key=lambda kv: -kv[1])[:5]
    print("top features by gain:", [name for name, _ in top])

    path = os.path.join(tempfile.mkdtemp(), "quickstart.dgbdt.json")
    booster.save_model(path)
    loaded = dgbdt.load_model(path)
    same = np.array_equal(loaded.predict(dvalid), booster.predict(dvalid))
    print(f"saved {os.path.getsize(path) / 1024:.0f} KiB to {path}; reloaded model predicts "
          f"{'identically' if same else 'DIFFERENTLY'}")
    if not same:
        raise SystemExit("reloaded model disagrees with the trained one")


if __name__ == "__main__":
    main()
