"""dgbdt quickstart: train on a local Dask cluster, watch a validation metric, save the model.

    python examples/quickstart.py [--rows 400000] [--rounds 100] [--workers 2]

Starts a LocalCluster, builds a dask DataFrame (Higgs-shaped synthetic data: 28 numeric
features, a binary label, 1 % missing values), trains with dgbdt.dask.train with a validation
set and early stopping, predicts lazily, and saves and reloads the model. The GPU backend is
not available yet, so this runs on the CPU even where GPUs are present.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pandas as pd


def make_frame(n: int, seed: int) -> pd.DataFrame:
    """One partition of synthetic data (built on a worker, never on the client)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 28), dtype=np.float32)
    logit = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - X[:, 4]
             + 0.3 * X[:, 5:15].sum(axis=1))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
    X[rng.random(X.shape) < 0.01] = np.nan
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(28)])
    df["label"] = y
    return df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import dgbdt
    from dgbdt import dask as dgd

    try:  # say so rather than silently ignoring GPUs
        import cupy  # noqa: F401
        if cupy.cuda.runtime.getDeviceCount() > 0:
            print("note: GPUs found, but dgbdt's GPU backend is not available yet; using CPUs")
    except Exception:
        pass

    with LocalCluster(n_workers=a.workers, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        print(f"cluster: {a.workers} workers, dashboard {client.dashboard_link}")
        n_parts = 2 * a.workers
        train_df = dd.from_map(make_frame, [a.rows // n_parts] * n_parts, range(n_parts))
        valid_df = dd.from_map(make_frame, [a.rows // 4 // a.workers] * a.workers,
                               range(1000, 1000 + a.workers))
        features = [c for c in train_df.columns if c != "label"]
        dtrain = dgd.DaskDataset(client, train_df[features], train_df["label"])
        dvalid = dgd.DaskDataset(client, valid_df[features], valid_df["label"])

        params = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1,
                  "eval_metric": ["logloss", "auc"]}
        t0 = time.perf_counter()
        out = dgd.train(client, params, dtrain, a.rounds, evals=[(dvalid, "valid")],
                        early_stopping_rounds=20, verbose_eval=25)
        seconds = time.perf_counter() - t0
        booster, history = out["booster"], out["history"]
        best = booster.best_iteration
        print(f"trained {booster.num_boosted_rounds()} rounds on {dtrain.num_row} rows in "
              f"{seconds:.1f} s (the first run includes compiling the kernels)")
        print(f"best iteration {best}: valid auc {history['valid']['auc'][best]:.4f}, "
              f"logloss {history['valid']['logloss'][best]:.4f}")
        print("where the time went (s):", {k: round(v, 2) for k, v in booster.timings.items()})

        pred = dgd.predict(client, booster, valid_df[features])   # lazy dask Series
        p = pred.compute().to_numpy()
        y = valid_df["label"].compute().to_numpy()
        accuracy = float(np.mean((p > 0.5) == (y > 0.5)))
        print(f"valid accuracy {accuracy:.4f} on {len(p)} rows predicted by the workers")

        path = os.path.join(tempfile.mkdtemp(), "quickstart.dgbdt.json")
        booster.save_model(path)
        loaded = dgbdt.load_model(path)
        same = np.array_equal(loaded.predict(valid_df[features].compute()), p)
        print(f"saved {os.path.getsize(path) / 1024:.0f} KiB to {path}; reloaded model predicts "
              f"{'identically' if same else 'DIFFERENTLY'}")
        if not same:
            raise SystemExit("reloaded model disagrees with the trained one")


if __name__ == "__main__":
    main()
