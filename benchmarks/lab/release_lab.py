"""What a collective rank's end costs where cuDF made RMM's default resource CuPy's allocator
(issue 46): dgbdt.backends.pool.release_pooled (a full gc.collect, then CuPy's pool given
back) runs inside the rank's task, before the client has the model. Times its two parts on
the workers, then the fit with the release done in a thread after the task returns."""
import gc
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_gpu import TRAIN_SEED, dask_data, split_rows  # noqa: E402


def install(mode):
    import cupy

    from dgbdt.backends import pool
    from dgbdt.dask import worker as w
    pool.__dict__.setdefault("_lab", [])
    pool._lab.clear()
    original = pool.__dict__.setdefault("_lab_original", w.release_pooled)

    def timed():
        t = time.perf_counter()
        gc.collect()
        t1 = time.perf_counter()
        cupy.get_default_memory_pool().free_all_blocks()
        t2 = time.perf_counter()
        pool._lab.append((round(t1 - t, 4), round(t2 - t1, 4)))

    def later():
        threading.Thread(target=timed, daemon=True).start()
    w.release_pooled = {"sync": timed, "thread": later, "none": lambda: None,
                        "original": original}[mode]
    return pool._allocation_syncs(), pool._pooled_used


def seen():
    from dgbdt.backends import pool
    return list(pool._lab)


def main():
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    from dgbdt import dask as dgd
    rows = 35_555_556
    with LocalCUDACluster(n_workers=2, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.run(lambda: __import__("cudf") and None)
        Xd, yd = dask_data(client, split_rows(rows - rows // 10, 8), 28, TRAIN_SEED)
        p = {"objective": "binary:logistic", "max_depth": 8, "device": "cuda"}
        dgd.train(client, p, dgd.DaskDataset(client, Xd, yd), 10, mode="nccl",
                  verbose_eval=False)
        models = set()
        for mode in ("sync", "thread", "none", "sync", "thread", "none"):
            state = client.run(install, mode)
            t = time.perf_counter()
            b = dgd.train(client, p, dgd.DaskDataset(client, Xd, yd), 200, mode="nccl",
                          verbose_eval=False)["booster"]
            s = time.perf_counter() - t
            time.sleep(0.5)
            models.add(b.save_raw())
            print(json.dumps({"release": mode, "fit_s": round(s, 3),
                              "rank_task": round(b.timings["rank_task"], 3),
                              "boost_loop": round(b.timings["boost_loop"], 3),
                              "allocation_syncs_pooled_used": list(state.values()),
                              "gc_free_s": client.run(seen)}), flush=True)
        print(json.dumps({"same_model": len(models) == 1}))


if __name__ == "__main__":
    main()
