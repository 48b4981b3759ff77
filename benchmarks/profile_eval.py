"""Where a round's evaluation goes: each step of auc/logloss on one eval set, synchronized.

    python benchmarks/profile_eval.py --device cuda --rows 200000

Times (median of --repeat, milliseconds) the steps the boosting loop runs per round on an
eval set: the new tree's margins (traversal), the metric input (sigmoid), each metric's
summary, and the value of the merged summary. Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--in-worker", action="store_true",
                    help="also run inside a Dask worker's task (LocalCUDACluster/LocalCluster): "
                         "as the worker set it up, and inside dgbdt's training_task (threads, "
                         "profiler, heap) with CuPy's own memory pool")
    a = ap.parse_args()
    print(json.dumps(profile(a.device, a.rows, a.repeat)), flush=True)
    if a.in_worker:
        from distributed import Client
        if a.device == "cuda":
            from dask_cuda import LocalCUDACluster
            cluster = LocalCUDACluster(n_workers=1, dashboard_address=":0")
        else:
            from distributed import LocalCluster
            cluster = LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0")
        with cluster, Client(cluster) as client:
            for ours in (False, True):
                out = client.submit(_in_task if ours else profile, a.device, a.rows, a.repeat,
                                    ours, pure=False)
                print(json.dumps({"in_worker": True, "training_task": ours, **out.result()}),
                      flush=True)


def _in_task(device: str, n: int, repeat: int, cupy_pool: bool) -> dict:
    from dgbdt.dask.worker import training_task
    with training_task(None):
        return profile(device, n, repeat, cupy_pool)


def profile(device: str, n: int, repeat: int, cupy_pool: bool = False) -> dict:
    """The timings of each evaluation step (see the module docstring)."""

    import dgbdt
    from dgbdt.engine.evaluation import EvalRows, metric_input
    from dgbdt.metrics.registry import get_metric

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 12)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)
    allocator = None
    if device == "cuda":
        import cupy as xp
        if cupy_pool:
            xp.cuda.set_allocator(xp.get_default_memory_pool().malloc)
        alloc = xp.cuda.get_allocator()
        allocator = getattr(alloc, "__qualname__", None) or type(alloc).__name__

        def sync():
            xp.cuda.runtime.deviceSynchronize()
    else:
        xp = np

        def sync():
            pass
    Xd, yd = xp.asarray(X), xp.asarray(y)
    booster = dgbdt.train({"objective": "binary:logistic", "max_depth": 8},
                          dgbdt.Dataset(Xd, label=yd), 2, verbose_eval=False)
    objective = booster.objective
    margin = booster.initial_margin(n, None, like=Xd)
    rows = EvalRows.whole(yd, None)
    auc, ll = get_metric("auc"), get_metric("logloss")
    pred = metric_input(objective, margin + xp.asarray(rng.normal(size=(n, 1))))
    s_auc = auc.summary(yd, pred)
    s_ll = ll.summary(yd, pred)
    steps = {
        "traverse_new_tree": lambda: booster.predict_margin_trees(Xd, [1], margin),
        "metric_input": lambda: metric_input(objective, margin),
        "auc_summary": lambda: auc.summary(yd, pred),
        "auc_value": lambda: auc.value(s_auc),
        "logloss_summary": lambda: ll.summary(yd, pred),
        "logloss_value": lambda: ll.value(s_ll),
        "both_metrics_round": lambda: [m.value(s) for m, s in zip(
            (auc, ll), rows.summaries(objective, (auc, ll), margin))],
    }
    out = {"bench": "profile_eval", "device": device, "rows": n, "cupy_allocator": allocator}
    for name, fn in steps.items():
        fn()
        sync()
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t)
        out[name + "_ms"] = round(float(np.median(times)) * 1e3, 3)
    return out


if __name__ == "__main__":
    main()
