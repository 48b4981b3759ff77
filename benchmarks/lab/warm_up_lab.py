"""Does warming a fresh GPU worker at the start of a fit shorten the first fit? (the user
path's first fit: bench_user_path's flow on a new LocalCUDACluster each time)

    python benchmarks/lab/warm_up_lab.py [rows] [repeats]

Legs, alternating, each on fresh workers: ``plain`` (the fit as it is); ``task`` (a
fire-and-forget task of high priority at the fit's start, on the task thread: it imports the
worker's dgbdt modules and trains 2 rounds on 4,096 random rows on the GPU, which loads the
kernel modules a fit uses); ``thread`` (client.run starts the same in a daemon thread of the
worker and returns). One line per fit: its seconds.
"""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_user_path import estimator, frames, start_cluster, write_parquet  # noqa: E402


class Args:
    rounds, depth, eta, early_stopping = 200, 8, 0.1, 20


def warm() -> float:
    t = time.perf_counter()
    import cupy as cp
    import numpy as np

    import dgbdt
    import dgbdt.dask.parts  # noqa: F401
    import dgbdt.dask.train  # noqa: F401
    rng = np.random.default_rng(0)
    X = cp.asarray(rng.standard_normal((4096, 12), dtype=np.float32))
    y = cp.asarray((rng.random(4096) < 0.5).astype(np.float32))
    d = dgbdt.Dataset(X, label=y)
    dgbdt.train({"objective": "binary:logistic", "max_depth": 8, "device": "cuda",
                 "eval_metric": "auc"}, d, 2, evals=[(d, "t")], verbose_eval=False)
    return time.perf_counter() - t


def in_thread() -> None:
    import threading
    threading.Thread(target=warm, daemon=True).start()


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    from distributed import Client, fire_and_forget
    path = tempfile.mkdtemp(prefix="warm-up-")
    write_parquet(path, rows, 12, 8, True)
    frames(path, True)
    for rep in range(reps):
        for leg in ("plain", "task", "thread"):
            with start_cluster(True, 1, False) as cluster, Client(cluster) as client:
                client.wait_for_workers(1)
                X, y, Xv, yv = frames(path, True)
                est = estimator("dgbdt", Args, True)
                est.client = client
                t = time.perf_counter()
                if leg == "task":
                    fire_and_forget(client.submit(warm, pure=False, priority=100))
                elif leg == "thread":
                    client.run(in_thread)
                est.fit(X, y, eval_set=[(Xv, yv)], verbose=False)
                fit = time.perf_counter() - t
                print(json.dumps({"leg": leg, "rep": rep, "first_fit_s": round(fit, 3)}),
                      flush=True)


if __name__ == "__main__":
    main()
