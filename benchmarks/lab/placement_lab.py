"""Uneven placement on CPU workers, balanced or kept (dgbdt.dask.placement; issue 46: "balance
the pages across ranks").

The README job's data (examples/quickstart.py: 400k x 28 in 4 partitions, an eval set of 2)
with the training partitions' pages 3:1 on 2 CPU workers (work stealing off, so the page tasks
stay with their parts). A fresh DaskDataset a fit (its pages packed where the parts are), 2
warm-up rounds, then 100 rounds with early stopping, alternately with the placement kept
(BALANCE_SLACK = inf) and balanced (the default); a JSON line a fit, then whether every model
was the same.

    python benchmarks/lab/placement_lab.py [--device cuda --rows-per-part 2000000]

With ``--device cuda``: two dask-cuda workers, the parts cupy arrays made on them (the
generator below), the eval set's two parts one a worker.
"""
import argparse
import json
import os
import sys
import time

import dask
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples"))
from quickstart import make_frame  # noqa: E402
import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from dgbdt import dask as dgd  # noqa: E402
from dgbdt.dask import placement  # noqa: E402


def _gpu_frame(n: int, seed: int):
    """make_frame's columns as a cupy [n, 29] block (label last), made on this worker's GPU."""
    import cupy as cp
    f = make_frame(n, seed)
    return cp.asarray(np.column_stack([f.drop(columns="label").to_numpy(),
                                       f["label"].to_numpy()]).astype(np.float32))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--rows-per-part", type=int, default=100_000)
    args = ap.parse_args()
    n = args.rows_per_part
    dask.config.set({"distributed.scheduler.work-stealing": False})
    if args.device == "cuda":
        from dask_cuda import LocalCUDACluster
        cluster_of = LocalCUDACluster(n_workers=2, dashboard_address=":0")
    else:
        cluster_of = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0")
    with cluster_of as cluster, Client(cluster) as client:
        a, b = sorted(client.scheduler_info()["workers"])
        gpu = args.device == "cuda"

        def placed(frames, where, label, n):
            def column(f, lab):
                if gpu:
                    return f[:, -1].copy() if lab else f[:, :-1].copy()
                return (f["label"] if lab else f.drop(columns="label")).to_numpy()
            fut = [client.submit(column, fr, label, workers=[w], pure=False)
                   for fr, w in zip(frames, where)]
            meta = None
            if gpu:
                import cupy as cp
                meta = cp.empty((0,) if label else (0, 0), dtype=cp.float32)
            return da.concatenate([da.from_delayed(f, (n,) if label else (n, 28),
                                                   dtype=np.float32, meta=meta) for f in fut])
        make = _gpu_frame if gpu else make_frame
        where = [a, a, a, b]
        frames = [client.submit(make, n, i, workers=[w], pure=False)
                  for i, w in enumerate(where)]
        vframes = [client.submit(make, n // 2, 1000 + i, workers=[w], pure=False)
                   for i, w in enumerate([a, b])]
        X, y = placed(frames, where, False, n), placed(frames, where, True, n)
        Xv, yv = placed(vframes, [a, b], False, n // 2), placed(vframes, [a, b], True, n // 2)
        p = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1,
             "eval_metric": ["logloss", "auc"]}
        if gpu:
            p["max_depth"] = 8
        models = set()
        for _ in range(3):
            for slack in (float("inf"), placement.BALANCE_SLACK):
                old, placement.BALANCE_SLACK = placement.BALANCE_SLACK, slack
                d, dv = dgd.DaskDataset(client, X, y), dgd.DaskDataset(client, Xv, yv)
                dgd.train(client, p, d, 2, evals=[(dv, "valid")], verbose_eval=False)
                rows = {}
                for w in d.workers_of_parts():
                    rows[w] = rows.get(w, 0) + n
                t0 = time.perf_counter()
                out = dgd.train(client, p, d, 100, evals=[(dv, "valid")],
                                early_stopping_rounds=20, verbose_eval=False)
                t = time.perf_counter() - t0
                placement.BALANCE_SLACK = old
                tm = out["booster"].timings
                models.add(out["booster"].save_raw())
                print(json.dumps({"bench": "placement", "device": args.device,
                                  "rows_per_part": n, "balanced": slack != float("inf"),
                                  "page_rows_per_worker": sorted(rows.values()),
                                  "fit_s": round(t, 3), "boost_loop": round(tm["boost_loop"], 3),
                                  "collectives": round(tm["collectives"], 3),
                                  "rank0_histograms": round(tm["histograms"], 3)}), flush=True)
        print(json.dumps({"bench": "placement", "models_identical": len(models) == 1}))


if __name__ == "__main__":
    main()
