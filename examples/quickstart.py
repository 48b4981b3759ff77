"""dgbdt quickstart: train on a local Dask cluster, watch a validation metric, save the model.

    python examples/quickstart.py [--rows 400000] [--rounds 100] [--workers 2]

Higgs-shaped synthetic data (28 numeric features, a binary label, 1 % missing values) built on
the workers; dgbdt.dask.train with a validation set and early stopping; lazy prediction; the
model saved and reloaded. Where a GPU, CuPy and dask-cuda are present it starts a
LocalCUDACluster (one worker per GPU) and the data are dask arrays of cupy chunks (training on
the GPUs); otherwise a LocalCluster of CPU workers and a dask DataFrame. --device cpu|cuda forces
one.
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


def make_block(n: int, seed: int, with_label: bool):
    """One block of the same data as cupy arrays, made on a GPU worker."""
    import cupy as cp
    df = make_frame(n, seed)
    X = cp.asarray(df.drop(columns="label").to_numpy())
    return cp.asarray(df["label"].to_numpy()) if with_label else X


def gpu_setup() -> bool:
    """Whether this machine can run the GPU version (a GPU, cupy and dask-cuda)."""
    try:
        import dask_cuda  # noqa: F401

        from dgbdt.backends.device import cuda_available
        return cuda_available()
    except ImportError:
        return False


def gpu_collections(a, n_gpus: int):
    """(train X, train y, valid X, valid y) as dask arrays of cupy chunks, built on workers."""
    import cupy as cp
    import dask.array as da
    from dask import delayed

    def arrays(n_parts, rows, seed0):
        xs, ys = [], []
        for i in range(n_parts):
            block = delayed(make_block, pure=True)
            xs.append(da.from_delayed(block(rows, seed0 + i, False), (rows, 28),
                                      dtype=np.float32, meta=cp.empty((0, 0), cp.float32)))
            ys.append(da.from_delayed(block(rows, seed0 + i, True), (rows,),
                                      dtype=np.float32, meta=cp.empty((0,), cp.float32)))
        return da.concatenate(xs), da.concatenate(ys)

    n_parts = 2 * n_gpus
    Xt, yt = arrays(n_parts, a.rows // n_parts, 0)
    Xv, yv = arrays(n_gpus, a.rows // 4 // n_gpus, 1000)
    return Xt, yt, Xv, yv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=400_000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2, help="CPU workers (GPU: one per GPU)")
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    a = ap.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import dgbdt
    from dgbdt import dask as dgd

    use_gpu = a.device == "cuda" or (a.device == "auto" and gpu_setup())
    if use_gpu:
        from dask_cuda import LocalCUDACluster
        cluster = LocalCUDACluster(dashboard_address=":0")
    else:
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, dashboard_address=":0")
    with cluster, Client(cluster) as client:
        n_workers = len(client.scheduler_info()["workers"])
        print(f"cluster: {n_workers} {'GPU' if use_gpu else 'CPU'} workers, dashboard "
              f"{client.dashboard_link}")
        if use_gpu:
            Xt, yt, Xv, yv = gpu_collections(a, n_workers)
            dtrain, dvalid = dgd.DaskDataset(client, Xt, yt), dgd.DaskDataset(client, Xv, yv)
            valid_X = Xv
        else:
            n_parts = 2 * a.workers
            train_df = dd.from_map(make_frame, [a.rows // n_parts] * n_parts, range(n_parts))
            valid_df = dd.from_map(make_frame, [a.rows // 4 // a.workers] * a.workers,
                                   range(1000, 1000 + a.workers))
            features = [c for c in train_df.columns if c != "label"]
            dtrain = dgd.DaskDataset(client, train_df[features], train_df["label"])
            dvalid = dgd.DaskDataset(client, valid_df[features], valid_df["label"])
            valid_X, yv = valid_df[features], valid_df["label"]

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

        pred = dgd.predict(client, booster, valid_X)   # lazy, computed by the workers
        p = _host(pred.compute())
        # the same validation rows, rebuilt here from their seeds, for checks on the client
        n_valid = n_workers if use_gpu else a.workers
        host = pd.concat([make_frame(a.rows // 4 // n_valid, 1000 + i) for i in range(n_valid)])
        y, Xv_host = host["label"].to_numpy(), host.drop(columns="label").to_numpy()
        accuracy = float(np.mean((p > 0.5) == (y > 0.5)))
        print(f"valid accuracy {accuracy:.4f} on {len(p)} rows predicted by the workers")

        path = os.path.join(tempfile.mkdtemp(), "quickstart.dgbdt.json")
        booster.save_model(path)
        loaded = dgbdt.load_model(path)
        if use_gpu:      # the same kernels as the workers' (GPU and CPU exp differ in the last bit)
            import cupy as cp
            again = _host(loaded.predict(cp.asarray(Xv_host)))
        else:
            again = loaded.predict(Xv_host)
        same = np.array_equal(again, p)
        print(f"saved {os.path.getsize(path) / 1024:.0f} KiB to {path}; reloaded model predicts "
              f"{'identically' if same else 'DIFFERENTLY'}")
        if not same:
            raise SystemExit("reloaded model disagrees with the trained one")


def _host(a) -> np.ndarray:
    """numpy values of a numpy/cupy array or pandas object."""
    if hasattr(a, "to_numpy"):
        return a.to_numpy()
    return a.get() if hasattr(a, "__cuda_array_interface__") else np.asarray(a)


if __name__ == "__main__":
    main()
