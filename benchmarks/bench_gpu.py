"""dgbdt vs XGBoost on one GPU, in-process and on Dask, same data, one run; one JSON line.

    python benchmarks/bench_gpu.py                      # 10M x 28, 500 rounds, depth 8
    python benchmarks/bench_gpu.py --rows 1000000 --rounds 50 --skip dask,xgboost_dask
    python benchmarks/bench_gpu.py --out result.json    # also write the line to a file

Legs: dgbdt (in-process), dgbdt_host (the same with DGBDT_GROWTH=host: the host-driven level
loop of 0.6, for the gain of device-resident growth), dask (dgbdt.dask on a one-worker
LocalCUDACluster), xgboost (QuantileDMatrix + train) and xgboost_dask. Data are bench_cpu.py's Higgs-shaped formula, made
on the GPU with cupy (a different random stream than numpy's): the training set as --parts
partitions, each from its own seed, so the Dask worker regenerates exactly the same rows on its
GPU; the held-out test set (10 % of --rows) comes from another seed. Times start after a device
synchronize and include quantization / DMatrix construction, not data generation; each leg
first trains 2 rounds on 20k rows so JIT/NVRTC compilation stays outside. Peak memory is
device-wide (it sees XGBoost and the worker process too), minus what was in use before the leg.
A failing leg records "<leg>_error" and the run goes on (traceback on stderr).
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import sys
import threading
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import auc  # noqa: E402  (same metric as the CPU benchmarks)

LEGS = ("dgbdt", "dgbdt_host", "dask", "xgboost", "xgboost_dask")
WARM_ROWS = 20_000
TRAIN_SEED, TEST_SEED, WARM_SEED = 0, 10_000, 20_000


TASKS = {   # --task: (objective, the held-out score)
    "binary": ("binary:logistic", "auc"),
    "regression": ("reg:squarederror", "rmse"),
    "multiclass": ("multi:softprob", "accuracy"),
}


def make_data_gpu(n: int, n_features: int, seed: int, task: str = "binary", classes: int = 5,
                  missing: float = 0.0):
    """bench_cpu.make_data's formula on the GPU: float32 cupy X (n, n_features) and y (n,).
    The task picks the label from the same score: a Bernoulli draw (binary), the score plus
    noise (regression), or its quantile bucket after noise, one of ``classes`` (multiclass).
    ``missing``: the fraction of X's entries set to NaN after the label is drawn."""
    import cupy as cp
    rng = cp.random.default_rng(seed)
    X = rng.standard_normal((n, n_features), dtype=cp.float32)
    logit = (X[:, 0] * X[:, 1] + cp.sin(2 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - X[:, 4]
             + 0.3 * X[:, 5:15].sum(axis=1))
    if task == "regression":
        y = (logit + 0.5 * rng.standard_normal(n, dtype=cp.float32)).astype(cp.float32)
    elif task == "multiclass":
        noisy = logit + 0.5 * rng.standard_normal(n, dtype=cp.float32)
        # fixed edges (quantiles of the noisy score of a large sample), the same on any block
        edges = cp.asarray(np.linspace(-2.2, 2.8, classes + 1)[1:-1], dtype=cp.float32)
        y = cp.searchsorted(edges, noisy).astype(cp.float32)
    else:
        y = (rng.random(n, dtype=cp.float32) < 1.0 / (1.0 + cp.exp(-logit))).astype(cp.float32)
    if missing > 0:
        X[rng.random((n, n_features), dtype=cp.float32) < missing] = cp.nan
    return X, y


def split_rows(n: int, parts: int) -> list[int]:
    return [n // parts + (1 if i < n % parts else 0) for i in range(parts)]


def dask_data(client, sizes: list[int], n_features: int, seed: int, data_kw: dict | None = None):
    """Cupy-backed dask X, y whose partitions are generated (and stay) on the workers' GPUs,
    partition i on worker i mod n (sorted addresses): every worker holds an equal share (the
    scheduler alone may place 5 and 3 of 8, and ranks then wait for the busiest)."""
    import operator

    import cupy as cp
    import dask
    import dask.array as da
    from distributed import wait
    workers = sorted(client.scheduler_info()["workers"])
    xs, ys = [], []
    for i, r in enumerate(sizes):
        w = [workers[i % len(workers)]]
        both = client.submit(make_data_gpu, r, n_features, seed + i, **(data_kw or {}),
                             workers=w, allow_other_workers=False, pure=False)
        fx, fy = (client.submit(operator.getitem, both, j, workers=w,
                                allow_other_workers=False, pure=False) for j in (0, 1))
        xs.append(da.from_delayed(dask.delayed(fx), (r, n_features), dtype=np.float32,
                                  meta=cp.empty((0, n_features), cp.float32)))
        ys.append(da.from_delayed(dask.delayed(fy), (r,), dtype=np.float32,
                                  meta=cp.empty((0,), cp.float32)))
    X, y = client.persist([da.concatenate(xs), da.concatenate(ys)])
    wait([X, y])
    return X, y


def free_gpu_pool() -> None:
    """Run in this process and (via client.run) on the worker between legs."""
    import cupy as cp
    gc.collect()
    cp.get_default_memory_pool().free_all_blocks()


class PeakMemory:
    """Device-wide peak of used GPU memory (total - free), polled every 5 ms, above entry's."""

    def __init__(self, cp, interval: float = 0.005):
        self.cp, self.interval, self.device = cp, interval, cp.cuda.Device().id

    def _used(self) -> int:
        free, total = self.cp.cuda.runtime.memGetInfo()
        return total - free

    def _poll(self) -> None:
        self.cp.cuda.runtime.setDevice(self.device)
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._used())

    def __enter__(self):
        self.base = self.peak = self._used()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._used())

    @property
    def mib(self) -> float:
        return round((self.peak - self.base) / 2**20, 1)


def timed(cp, fn):
    """(fn(), seconds, peak MiB): synchronized start and end, memory polled throughout."""
    cp.cuda.Device().synchronize()
    with PeakMemory(cp) as mem:
        t0 = time.perf_counter()
        result = fn()
        cp.cuda.Device().synchronize()
        seconds = time.perf_counter() - t0
    return result, seconds, mem.mib


def copy_gb_per_s(cp, nbytes: int = 2**30, repeats: int = 10) -> float:
    """Device-to-device copy rate, counting read + write: 2 * bytes / time."""
    src = cp.ones(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    dst.data.copy_from_device(src.data, nbytes)            # warm-up
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        dst.data.copy_from_device_async(src.data, nbytes)
    stop.record()
    stop.synchronize()
    seconds = cp.cuda.get_elapsed_time(start, stop) / 1e3
    return round(2 * nbytes * repeats / seconds / 1e9, 1)


def stages(booster) -> dict:
    return {k: round(v, 3) for k, v in booster.timings.items()}


def run_leg(out: dict, name: str, fn, free) -> None:
    """out.update(fn()); a failure becomes out[name + '_error'] and a traceback on stderr."""
    print(f"[bench_gpu] {name} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        out.update(fn())
        print(f"[bench_gpu] {name} done ({time.perf_counter() - t0:.1f} s)",
              file=sys.stderr, flush=True)
    except Exception as e:  # noqa: BLE001  (a benchmark leg must not stop the others)
        traceback.print_exc()
        out[f"{name}_error"] = repr(e)
    finally:
        try:
            free()
        except Exception:  # noqa: BLE001
            traceback.print_exc()


def histogram_bandwidth(X, max_bin: int = 256, repeats: int = 20) -> dict:
    """Time the histogram kernel over every row of X (the root node of a tree) and report the
    bytes it must read (packed page + row indices + int64 gradient pairs) per second."""
    import cupy as cp

    from dgbdt.data.dataset import Dataset
    from dgbdt.backends.cuda import CudaBackend
    from dgbdt.engine.shard import Shard

    d = Dataset(X)
    cuts = d.cuts(max_bin)
    page = d.pages(cuts, max_bin)[0]
    be = CudaBackend.for_ordinal(cp.cuda.runtime.getDevice())
    n = page.n_rows
    s = Shard(page, cuts.n_bins(), cp.zeros(n), None, cp.zeros((n, 1)), 4, be)
    s.g = cp.random.standard_normal((n, 1))
    s.h = cp.random.random((n, 1))
    s.start_tree(0, 2.0 ** 30, 2.0 ** 30)
    hp = cuts.hist_ptrs()
    root = np.array([0])
    s.histograms(root, hp)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        s.histograms(root, hp)
    stop.record()
    stop.synchronize()
    seconds = cp.cuda.get_elapsed_time(start, stop) / 1e3 / repeats
    nbytes = page.words.nbytes + 4 * n + 16 * n
    return {"seconds": seconds, "bytes": int(nbytes), "gb_per_s": nbytes / seconds / 1e9,
            "rows": n, "bits": page.bits, "groups": s._cuda_static["n_groups"],
            "shared_bytes": s._cuda_static["smem"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="train + test rows")
    ap.add_argument("--features", type=int, default=28, help="at least 15")
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--max-bin", type=int, default=256)
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--parts", type=int, default=4, help="Dask partitions of the training set")
    ap.add_argument("--skip", default="", help=f"comma list of legs to skip: {','.join(LEGS)}")
    ap.add_argument("--profile-rounds", type=int, default=20,
                    help="rerun dgbdt for N rounds with DGBDT_SYNC_TIMERS=1 (0: no profile)")
    ap.add_argument("--task", choices=sorted(TASKS), default="binary",
                    help="binary (auc), regression (rmse) or multiclass (accuracy)")
    ap.add_argument("--classes", type=int, default=5, help="classes of --task multiclass")
    ap.add_argument("--missing", type=float, default=0.0, help="fraction of NaN entries in X")
    ap.add_argument("--out", help="also write the JSON line to this file")
    a = ap.parse_args()
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    if skip - set(LEGS):
        ap.error(f"--skip: unknown legs {sorted(skip - set(LEGS))}; choose from {LEGS}")
    if a.features < 15:
        ap.error("--features must be at least 15 (the label formula uses features 0-14)")

    import cupy as cp

    import dgbdt
    try:
        import xgboost as xgb
    except ImportError:
        xgb = None

    objective, metric_name = TASKS[a.task]
    params = {"objective": objective, "max_depth": a.depth, "eta": a.eta, "max_bin": a.max_bin}
    if a.task == "multiclass":
        params["num_class"] = a.classes
    data_kw = {"task": a.task, "classes": a.classes, "missing": a.missing}
    gpu = params | {"device": "cuda"}
    xparams = params | {"tree_method": "hist", "device": "cuda"}
    out = {"bench": "gpu", "rows": a.rows, "features": a.features, "rounds": a.rounds,
           "depth": a.depth, "max_bin": a.max_bin, "eta": a.eta,
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "python": platform.python_version(), "cupy": cp.__version__,
           "dgbdt": dgbdt.__version__, "xgboost": xgb.__version__ if xgb else None,
           "skipped": sorted(skip), "task": a.task, "metric": metric_name,
           "classes": a.classes if a.task == "multiclass" else None, "missing": a.missing}
    for leg in ("dgbdt", "dgbdt_host", "dgbdt_dask", "xgboost", "xgboost_dask"):
        out[f"{leg}_s"] = out[f"{leg}_auc"] = None
    peak = out["peak_mib"] = {}

    print("[bench_gpu] generating data on the GPU ...", file=sys.stderr, flush=True)
    n_test = a.rows // 10
    sizes = split_rows(a.rows - n_test, a.parts)
    blocks = [make_data_gpu(r, a.features, TRAIN_SEED + i, **data_kw)
              for i, r in enumerate(sizes)]
    Xtr = cp.concatenate([b[0] for b in blocks])
    ytr = cp.concatenate([b[1] for b in blocks])
    del blocks
    Xte, yte = make_data_gpu(n_test, a.features, TEST_SEED, **data_kw)
    yte_h = cp.asnumpy(yte)
    check = (float(ytr.sum(dtype=cp.float64)), float(Xtr[:, 0].sum(dtype=cp.float64)))
    free_gpu_pool()

    def score(pred) -> float:
        """The held-out metric of the task (auc, rmse or accuracy)."""
        p = cp.asnumpy(pred)
        if a.task == "regression":
            return round(float(np.sqrt(np.mean((p.ravel() - yte_h) ** 2))), 5)
        if a.task == "multiclass":
            return round(float(np.mean(p.reshape(len(yte_h), -1).argmax(axis=1) == yte_h)), 5)
        return round(auc(yte_h, p.ravel()), 5)

    def predict_seconds(fn) -> float:
        """Seconds of predicting the held-out rows (after one warm-up call)."""
        fn()
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        return round(time.perf_counter() - t0, 4)

    def leg_dgbdt():
        dgbdt.train(gpu, dgbdt.Dataset(Xtr[:WARM_ROWS], label=ytr[:WARM_ROWS]), 2,
                    verbose_eval=False)
        booster, s, peak["dgbdt"] = timed(cp, lambda: dgbdt.train(
            gpu, dgbdt.Dataset(Xtr, label=ytr), a.rounds, verbose_eval=False))
        return {"dgbdt_s": round(s, 3), "dgbdt_auc": score(booster.predict(Xte)),
                "dgbdt_stages_s": stages(booster),
                "dgbdt_predict_s": predict_seconds(lambda: booster.predict(Xte))}

    def leg_dgbdt_host():
        os.environ["DGBDT_GROWTH"] = "host"
        try:
            booster, s, peak["dgbdt_host"] = timed(cp, lambda: dgbdt.train(
                gpu, dgbdt.Dataset(Xtr, label=ytr), a.rounds, verbose_eval=False))
        finally:
            os.environ.pop("DGBDT_GROWTH", None)
        return {"dgbdt_host_s": round(s, 3), "dgbdt_host_auc": score(booster.predict(Xte)),
                "dgbdt_host_stages_s": stages(booster)}

    def leg_hist():
        r = histogram_bandwidth(Xtr, a.max_bin)
        return {"hist_gb_per_s": round(r["gb_per_s"], 1), "hist_bytes": r["bytes"],
                "hist_seconds": round(r["seconds"], 4)}

    def leg_profile():
        os.environ["DGBDT_SYNC_TIMERS"] = "1"   # the backend syncs around each stage
        try:
            b = dgbdt.train(gpu, dgbdt.Dataset(Xtr, label=ytr), a.profile_rounds,
                            verbose_eval=False)
        finally:
            os.environ.pop("DGBDT_SYNC_TIMERS", None)
        return {"dgbdt_profile_stages_s": stages(b),
                "dgbdt_profile_note": f"DGBDT_SYNC_TIMERS=1 stage times for "
                                      f"{a.profile_rounds} rounds (not {a.rounds})"}

    def need_xgboost() -> None:
        if xgb is None:
            raise ImportError("xgboost is not installed")

    def leg_xgboost():
        need_xgboost()
        w = xgb.QuantileDMatrix(Xtr[:WARM_ROWS], label=ytr[:WARM_ROWS], max_bin=a.max_bin)
        xgb.train(xparams, w, 2)
        del w
        bst, s, peak["xgboost"] = timed(cp, lambda: xgb.train(
            xparams, xgb.QuantileDMatrix(Xtr, label=ytr, max_bin=a.max_bin), a.rounds))
        return {"xgboost_s": round(s, 3), "xgboost_auc": score(bst.inplace_predict(Xte)),
                "xgboost_predict_s": predict_seconds(lambda: bst.inplace_predict(Xte))}

    # in-process legs
    if "dgbdt" not in skip:
        run_leg(out, "dgbdt", leg_dgbdt, free_gpu_pool)
        if "dgbdt_host" not in skip:
            run_leg(out, "dgbdt_host", leg_dgbdt_host, free_gpu_pool)
        run_leg(out, "hist", leg_hist, free_gpu_pool)
        if a.profile_rounds > 0:
            run_leg(out, "dgbdt_profile", leg_profile, free_gpu_pool)
    run_leg(out, "copy", lambda: {"copy_gb_per_s": copy_gb_per_s(cp)}, free_gpu_pool)
    if "xgboost" not in skip:
        run_leg(out, "xgboost", leg_xgboost, free_gpu_pool)
    Xtr = ytr = None   # the worker regenerates its own copy of the training set
    free_gpu_pool()

    # Dask legs: one LocalCUDACluster worker on the same GPU
    if {"dask", "xgboost_dask"} - skip:
        try:
            from dask_cuda import LocalCUDACluster
            from distributed import Client
            with LocalCUDACluster(n_workers=1, dashboard_address=":0") as cluster, \
                    Client(cluster) as client:
                def free_both():
                    free_gpu_pool()
                    client.run(free_gpu_pool)

                Xd, yd = dask_data(client, sizes, a.features, TRAIN_SEED, data_kw)
                Xw, yw = dask_data(client, split_rows(WARM_ROWS, a.parts), a.features,
                                   WARM_SEED, data_kw)
                got = (float(yd.sum(dtype="f8").compute()),
                       float(Xd[:, 0].sum(dtype="f8").compute()))
                out["dask_data_matches"] = all(math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-6)
                                               for u, v in zip(check, got))

                def leg_dask():
                    from dgbdt import dask as dgd
                    dgd.train(client, gpu, dgd.DaskDataset(client, Xw, label=yw), 2,
                              verbose_eval=False)
                    booster, s, peak["dgbdt_dask"] = timed(cp, lambda: dgd.train(
                        client, gpu, dgd.DaskDataset(client, Xd, label=yd), a.rounds,
                        verbose_eval=False)["booster"])
                    return {"dgbdt_dask_s": round(s, 3),
                            "dgbdt_dask_auc": score(booster.predict(Xte)),
                            "dgbdt_dask_stages_s": stages(booster)}

                def leg_xgboost_dask():
                    need_xgboost()
                    import xgboost.dask  # noqa: F401  (a submodule, not imported by xgboost)
                    xgb.dask.train(client, xparams, xgb.dask.DaskQuantileDMatrix(
                        client, Xw, yw, max_bin=a.max_bin), 2)
                    bst, s, peak["xgboost_dask"] = timed(cp, lambda: xgb.dask.train(
                        client, xparams, xgb.dask.DaskQuantileDMatrix(
                            client, Xd, yd, max_bin=a.max_bin), a.rounds)["booster"])
                    return {"xgboost_dask_s": round(s, 3),
                            "xgboost_dask_auc": score(bst.inplace_predict(Xte))}

                if "dask" not in skip:
                    run_leg(out, "dgbdt_dask", leg_dask, free_both)
                if "xgboost_dask" not in skip:
                    run_leg(out, "xgboost_dask", leg_xgboost_dask, free_both)
        except Exception as e:  # noqa: BLE001  (cluster start-up or data generation)
            traceback.print_exc()
            out["cluster_error"] = repr(e)

    def ratio(num: str, den: str):
        n, d = out.get(num), out.get(den)
        return round(n / d, 3) if n is not None and d else None

    out["ratio_dgbdt_over_xgboost"] = ratio("dgbdt_s", "xgboost_s")
    out["ratio_host_growth_over_xgboost"] = ratio("dgbdt_host_s", "xgboost_s")
    out["ratio_dask_over_xgboost"] = ratio("dgbdt_dask_s", "xgboost_s")   # the target metric
    out["ratio_dask_over_xgboost_dask"] = ratio("dgbdt_dask_s", "xgboost_dask_s")
    # "*_auc" keys hold the task's held-out metric (out["metric"]: auc, rmse or accuracy)
    out["auc_diff"] = (round(out["dgbdt_auc"] - out["xgboost_auc"], 5)
                       if out["dgbdt_auc"] is not None and out["xgboost_auc"] is not None
                       else None)
    out["ratio_predict_dgbdt_over_xgboost"] = ratio("dgbdt_predict_s", "xgboost_predict_s")
    out["hist_over_copy"] = ratio("hist_gb_per_s", "copy_gb_per_s")
    emit_line(out, a.out, "w")


def checkout_commit() -> str:
    """The benchmarks' checkout's commit, for a result line, with a "+" when the tracked files
    differ from it (``git describe --dirty``): a copy of the tree whose .git is older than its
    files, as on the lent GPU machines, is marked rather than named as that commit. BENCH_COMMIT
    overrides it."""
    if os.environ.get("BENCH_COMMIT"):
        return os.environ["BENCH_COMMIT"]
    import subprocess
    try:
        return subprocess.run(["git", "describe", "--always", "--abbrev=7", "--dirty=+",
                               "--match=NO-TAGS"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))
                              ).stdout.strip() or "?"
    except OSError:
        return "?"


def emit_line(out: dict, path: str | None, mode: str = "a") -> None:
    """Print the result as one JSON line; also write it to ``path`` (mode "w" or "a")."""
    line = json.dumps(out)
    print(line, flush=True)
    if path:
        with open(path, mode) as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
