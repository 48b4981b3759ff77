"""Why a first fit on four fresh GPU workers sketches slowly: NCCL's kernel load beside it?

    python benchmarks/lab/first_fit_preload_lab.py [gpus] [train_rows]

On 4x H200 (2026-11-29, docs/benchmarks.md "Four GPUs at 3.09x one") the first fit's sketch
took 0.27-0.28 s a worker more than the warm one (one worker: 0.03 s more), its samples in the
key buffer's allocation and the keys' launch. On two or more workers NCCL's kernels start
loading beside the dataset's tasks (dgbdt.dask.nccl_preload, 0.35-0.54 s a worker); on one,
only at the rank's start. Two measures, each on fresh workers (a new LocalCUDACluster):

* ``probe``: on every worker at once, the first 1 GB allocation and a prebuilt kernel's first
  launch, each synchronized, alone and then (on a second fresh cluster) with
  ``nccl_preload.start()`` called just before;
* ``fit``: the first and the warm fit of bench_multi_gpu's data (``gpus`` x 4 partitions,
  ``train_rows`` rows, 200 rounds, depth 8) with the preload as it is, and with no preload (the
  client's ``nccl_preload.submit`` replaced: NCCL then loads inside the ranks' connect): the
  fit, its dataset tasks' timeline and the ranks' ``connect``.

One JSON line a measure. Needs dask-cuda and several GPUs.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_gpu import dask_data, split_rows  # noqa: E402
from bench_multi_gpu import task_stream, timeline  # noqa: E402


def first_allocation(preload: bool) -> dict:
    """On a fresh worker: seconds of its first 1 GB allocation plus a kernel over it,
    synchronized, with NCCL's load begun just before when ``preload``."""
    import cupy as cp

    from dgbdt.backends.array_ops import fill
    from dgbdt.dask import nccl_preload
    small = cp.empty(1, dtype=cp.float32)     # the context and CuPy's basics, outside the timing
    small.data.memset_async(0, 4)
    cp.cuda.runtime.deviceSynchronize()
    if preload:
        nccl_preload.start()
    t = time.perf_counter()
    a = cp.empty(1 << 28, dtype=cp.float32)   # (memset: no kernel module, no compile)
    a.data.memset_async(0, a.nbytes)
    cp.cuda.runtime.deviceSynchronize()
    alloc = time.perf_counter() - t
    t = time.perf_counter()
    fill(a, 1.0)                              # a prebuilt kernel's first load and launch
    cp.cuda.runtime.deviceSynchronize()
    launch = time.perf_counter() - t
    waited = nccl_preload.wait(int(cp.cuda.runtime.getDevice())) if preload else {}
    return {"first_alloc_s": round(alloc, 4), "first_launch_s": round(launch, 4),
            **{k: round(v, 4) for k, v in waited.items()}}


def cluster(gpus: int):
    from dask_cuda import LocalCUDACluster
    from distributed import Client
    c = LocalCUDACluster(n_workers=gpus, dashboard_address=":0")
    return c, Client(c)


def probe(gpus: int) -> None:
    for preload in (False, True):
        c, client = cluster(gpus)
        with c, client:
            client.wait_for_workers(gpus)
            got = client.run(first_allocation, preload)
        print(json.dumps({"lab": "first_fit_preload", "measure": "probe", "gpus": gpus,
                          "preload": preload, "workers": list(got.values())}), flush=True)


def fit(gpus: int, rows: int) -> None:
    from dgbdt import dask as dgd
    from dgbdt.dask import nccl_preload
    real = nccl_preload.submit
    p = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "device": "cuda"}
    for variant in ("as_is", "none"):
        nccl_preload.submit = real if variant == "as_is" else (lambda client, workers: None)
        c, client = cluster(gpus)
        try:
            with c, client:
                X, y = dask_data(client, split_rows(rows, 4 * gpus), 28, 7)
                out = {"lab": "first_fit_preload", "measure": "fit", "gpus": gpus,
                       "rows": rows, "variant": variant}
                for which in ("first", "warm"):
                    if which == "warm":          # as bench_multi_gpu: a short fit between
                        dgd.train(client, p, dgd.DaskDataset(client, X, y), 2, mode="nccl",
                                  verbose_eval=False)
                    t, wall = time.perf_counter(), time.time()
                    with task_stream(client, True) as ts:
                        b = dgd.train(client, p, dgd.DaskDataset(client, X, y), 200,
                                      mode="nccl", verbose_eval=False)["booster"]
                    out[f"{which}_s"] = round(time.perf_counter() - t, 3)
                    out[f"{which}_timeline"] = timeline(ts.data, wall)
                    out[f"{which}_stages"] = {k: round(v, 3) for k, v in b.timings.items()
                                              if k in ("connect", "nccl_preload",
                                                       "nccl_preload_wait", "client_setup",
                                                       "rank_task", "boost_loop")}
                out["first_over_warm"] = round(out["first_s"] / out["warm_s"], 3)
                print(json.dumps(out), flush=True)
        finally:
            nccl_preload.submit = real


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    gpus = int(args[0]) if args else 4
    rows = int(args[1]) if len(args) > 1 else 32_000_000
    probe(gpus)
    fit(gpus, rows)


if __name__ == "__main__":
    main()
