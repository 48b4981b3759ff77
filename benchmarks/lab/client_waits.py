"""Where a Dask fit's fixed part goes: the client's blocking calls and the workers' tasks.

    python benchmarks/lab/client_waits.py --device cpu --rows 20000 --rounds 10
    python benchmarks/lab/client_waits.py --device cuda --rows 8000000 --rounds 200 --chunks 4 --mode nccl

Trains ``dgbdt.dask.train`` (binary:logistic, depth 8 on GPU, 4 on CPU) on a local cluster
(--workers one-thread CPU workers, or a LocalCUDACluster) a few times on the same data and, for
the last fit, prints on one clock (seconds after the fit's start): every blocking client call
(distributed's ``sync``: its dgbdt call site, start and duration) and every task (start, end,
worker). What lies between a task's end and the next task's start is the client or the
scheduler. A JSON line with the same to --out.
"""
from __future__ import annotations

import argparse
import json
import time
import traceback


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--chunks", type=int, default=4, help="partitions")
    ap.add_argument("--workers", type=int, default=2, help="CPU workers (GPU: every GPU)")
    ap.add_argument("--mode", default="auto")
    ap.add_argument("--fits", type=int, default=4)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    import distributed.client as dc
    import distributed.utils as du
    calls: list = []
    orig = du.sync

    def sync(loop, func, *args, **kw):
        t = time.perf_counter()
        try:
            return orig(loop, func, *args, **kw)
        finally:
            st = [f for f in traceback.extract_stack()[:-1] if "/dgbdt/" in f.filename]
            site = (f"{st[-1].filename.split('/dgbdt/')[-1]}:{st[-1].lineno} {st[-1].name}"
                    if st else "?")
            calls.append((t, time.perf_counter() - t, getattr(func, "__name__", "?"), site))
    du.sync = dc.sync = sync

    import dask
    import numpy as np
    from distributed import Client, LocalCluster, get_task_stream

    import dgbdt.dask as dd
    if a.device == "cuda":
        import cupy as cp
        import dask.array as da
        from dask_cuda import LocalCUDACluster
        cluster = LocalCUDACluster(dashboard_address=":0")
    else:
        import dask.array as da
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1,
                               dashboard_address=":0")
    with cluster, Client(cluster) as client:
        # generated on the workers (a host array would travel inside the graph)
        step = -(-a.rows // a.chunks)
        rs = da.random.RandomState(0)
        Xd = rs.standard_normal((a.rows, a.features), chunks=(step, a.features)).astype(
            np.float32)
        noise = rs.standard_normal(a.rows, chunks=(step,))
        yd = ((Xd[:, 0] + Xd[:, 1] * Xd[:, 2] + noise) > 0).astype(np.float32)
        if a.device == "cuda":
            Xd, yd = Xd.map_blocks(cp.asarray), yd.map_blocks(cp.asarray)
        Xd, yd = dask.persist(Xd, yd)
        params = {"objective": "binary:logistic", "max_depth": 8 if a.device == "cuda" else 4,
                  "device": a.device}
        fits = []
        for _ in range(a.fits):
            calls.clear()
            t, wall = time.perf_counter(), time.time()
            with get_task_stream(client=client) as ts:
                dd.train(client, params, dd.DaskDataset(client, Xd, yd), a.rounds,
                         mode=a.mode, verbose_eval=False)
            fits.append(time.perf_counter() - t)
        tasks = sorted((ss["start"] - wall, ss["stop"] - wall, str(rec["key"]), rec["worker"])
                       for rec in ts.data for ss in rec.get("startstops", ())
                       if ss.get("action") == "compute")
        waits = [(s - t, d, f, site) for s, d, f, site in calls]
        print(f"fits {[round(f, 3) for f in fits]} s; the last one:")
        events = [(s, f"  client {d * 1e3:7.1f} ms  {f:26s} {site}") for s, d, f, site in waits]
        events += [(s, f"  task   {(e - s) * 1e3:7.1f} ms  {w[-6:]} {k[:70]}")
                   for s, e, k, w in tasks]
        for s, line in sorted(events):
            print(f"{s * 1e3:8.1f}{line}")
        if a.out:
            with open(a.out, "a") as fh:
                fh.write(json.dumps({"lab": "client_waits", **vars(a), "fits_s": fits,
                                     "client": waits, "tasks": tasks}) + "\n")


if __name__ == "__main__":
    main()
