"""dgbdt.dask vs xgboost.dask on the same LocalCluster and data, one run; one JSON line.

    python benchmarks/bench_dask_cpu.py                    # 2M x 28, 100 rounds, depth 6
    python benchmarks/bench_dask_cpu.py --rows 200000 --rounds 20 --workers 1

Data are generated on the workers (dask.array, Higgs-shaped). Times cover building the
distributed matrix (sketch, quantize, pack) and training. A warm-up trains on a small sample
first (numba compilation). With several workers graph mode is followed by mode="collective"
(one task per worker, TCP all-reduce; what mode="auto" picks there) on the same data. The scheduling probe
trains ``--probe-rounds`` trees on a tiny dataset with the graph mode forced: with almost no
compute, its time per tree level is the per-level cost of Dask scheduling.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from bench_cpu import make_data  # same generator as the in-process benchmark


def make_block(n: int, seed: int) -> np.ndarray:
    """Features and label of one partition, as bench_cpu.py makes them."""
    X, y = make_data(n, 28, seed)
    return np.column_stack([X, y])


def dask_data(n: int, parts: int, seed: int):
    import dask
    import dask.array as da
    rows = [n // parts + (1 if i < n % parts else 0) for i in range(parts)]
    blocks = [da.from_delayed(dask.delayed(make_block)(r, seed + i), shape=(r, 29),
                              dtype=np.float32) for i, r in enumerate(rows)]
    A = da.concatenate(blocks).persist()
    return A[:, :28], A[:, 28]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="threads per worker")
    ap.add_argument("--parts-per-worker", type=int, default=2)
    ap.add_argument("--probe-rounds", type=int, default=10)
    ap.add_argument("--no-xgboost", action="store_true")
    a = ap.parse_args()

    from distributed import Client, LocalCluster, wait

    from dgbdt import dask as dgd
    from dgbdt.metrics.registry import get_metric

    params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.3,
              "max_bin": 256, "nthread": a.threads}
    out = {"bench": "dask_cpu", "rows": a.rows, "features": 28, "rounds": a.rounds,
           "depth": a.depth, "workers": a.workers, "threads_per_worker": a.threads,
           "machine": f"{platform.machine()} {os.cpu_count()} cores"}
    with LocalCluster(n_workers=a.workers, threads_per_worker=a.threads, dashboard_address=":0",
                      processes=True) as cluster, Client(cluster) as client:
        parts = a.workers * a.parts_per_worker
        X, y = dask_data(a.rows, parts, 0)
        Xt, yt = dask_data(a.rows // 10, a.workers, 10_000)
        wait([X, y, Xt, yt])
        yt_np = yt.compute().astype(np.float64)
        auc = get_metric("auc")

        # warm-up (numba compiles on every worker)
        Xw, yw = dask_data(4000, parts, 99)
        dgd.train(client, params, dgd.DaskDataset(client, Xw, yw), 2, verbose_eval=False)

        mode = "task" if a.workers == 1 else "graph"      # auto picks "collective" on >1
        t0 = time.perf_counter()
        dtrain = dgd.DaskDataset(client, X, y)
        res = dgd.train(client, params, dtrain, a.rounds, verbose_eval=False, mode=mode)
        t_dgbdt = time.perf_counter() - t0
        booster = res["booster"]
        p = dgd.predict(client, booster, Xt).compute()
        out.update({"dgbdt_mode": mode, "dgbdt_s": round(t_dgbdt, 3),
                    "dgbdt_auc": round(auc(yt_np, p), 5),
                    "dgbdt_stages_s_summed_over_shards":
                        {k: round(v, 3) for k, v in booster.timings.items()}})

        if a.workers > 1:    # the collective mode: one task per worker, TCP all-reduce
            t0 = time.perf_counter()
            res = dgd.train(client, params, dgd.DaskDataset(client, X, y), a.rounds,
                            verbose_eval=False, mode="collective")
            t_coll = time.perf_counter() - t0
            same = res["booster"].save_raw() == booster.save_raw()
            out.update({"dgbdt_collective_s": round(t_coll, 3),
                        "dgbdt_collective_same_model": same,
                        "dgbdt_collective_stages_s":
                            {k: round(v, 3) for k, v in res["booster"].timings.items()}})

        # scheduling probe: tiny data, graph mode, so the time is almost all scheduling
        Xs, ys = dask_data(2000, parts, 7)
        ds = dgd.DaskDataset(client, Xs, ys)
        t0 = time.perf_counter()
        dgd.train(client, params, ds, a.probe_rounds, verbose_eval=False, mode="graph")
        levels = a.probe_rounds * a.depth
        out["graph_mode_ms_per_level_tiny_data"] = round(
            (time.perf_counter() - t0) / levels * 1e3, 2)
        out["graph_mode_levels_in_run"] = a.rounds * a.depth

        if not a.no_xgboost:
            import xgboost as xgb
            import xgboost.dask  # noqa: F401  (a submodule, not imported by xgboost itself)
            t0 = time.perf_counter()
            dm = xgb.dask.DaskQuantileDMatrix(client, X, y, max_bin=256)
            bst = xgb.dask.train(client, {**params, "tree_method": "hist"}, dm, a.rounds)
            t_xgb = time.perf_counter() - t0
            px = xgb.dask.predict(client, bst, Xt).compute()
            out.update({"xgboost": xgb.__version__, "xgboost_dask_s": round(t_xgb, 3),
                        "xgboost_auc": round(auc(yt_np, px), 5),
                        "ratio_dgbdt_over_xgboost": round(t_dgbdt / t_xgb, 3)})
            if "dgbdt_collective_s" in out:
                out["ratio_collective_over_xgboost"] = round(out["dgbdt_collective_s"] / t_xgb,
                                                             3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
