"""The user's path, end to end, dgbdt beside xgboost.dask on the same frames; JSON lines.

    python benchmarks/bench_user_path.py --device cuda --rows 2000000      # RAPIDS notebook flow
    python benchmarks/bench_user_path.py --device cpu --rows 600000        # its CPU twin

The flow a user runs, not generated arrays: ETL in cuDF (GPU) or pandas (CPU) writes a frame
of ``--features`` float columns (one with 5 % nulls, two derived in the ETL) and a binary label
to ``--files`` parquet files; ``dd.read_parquet`` (cuDF-backed on the GPU) and
``random_split([0.9, 0.1])`` give train and validation frames; the estimator fits with
``eval_set`` and early stopping on auc, in the default mode; ``predict_proba`` on the
validation frame is computed and scored with scikit-learn.

Each library runs on fresh workers (a new LocalCUDACluster / LocalCluster): a **first** fit
(what a notebook's first cell pays: imports, kernel loading, communicator set-up) and then a
**warm** fit on the same workers. ``--cold`` also gives each cluster empty kernel caches
(NUMBA_CACHE_DIR, CUPY_CACHE_DIR), as on a fresh install. One JSON line per (library, fit)
with the fit and end-to-end seconds, rounds trained, the evaluation share (dgbdt: the boosting
loop's "evaluation" and "scores_wait" stages over the fit) and the AUC; then a third fit on the warm workers
without the eval set, as many rounds as the warm fit trained: ``evaluation_cost_share`` =
1 - its time / the warm fit's, what the eval set costs (also where evaluation overlaps the
training, which a stage timer cannot see); a last line with dgbdt / xgboost ratios.
``--repeat K`` runs the warm pair K times, alternating, and the last line uses medians (the
share is a difference of two fits of a few seconds: one pair moves by 0.2-0.3 s).

``--libs`` may also name ``dgbdt-linear``: the dgbdt classifier with piecewise-linear leaves
(``linear_tree=True``, issue #15) on the same path; the ratio lines then also give
dgbdt-linear / dgbdt (constant leaves) and dgbdt-linear / xgboost.

    python benchmarks/bench_user_path.py --device cuda --libs dgbdt,dgbdt-linear,xgboost
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import datetime
import os
import platform
import pstats
import shutil
import tempfile
import time

import numpy as np


def gpu_frames() -> bool:
    """Whether the GPU flow has cuDF (else: ``--gpu-input arrays``, see frames)."""
    try:
        import cudf  # noqa: F401
        import dask_cudf  # noqa: F401
    except ImportError:
        return False
    return True


def write_parquet(path: str, rows: int, features: int, files: int, gpu: bool) -> float:
    """ETL: build the frame in cuDF or pandas, derive two columns, write ``files`` parquet
    files. Returns seconds."""
    t = time.perf_counter()
    rng = np.random.default_rng(0)
    base = features - 2
    X = rng.standard_normal((rows, base), dtype=np.float32)
    logit = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - X[:, 4]
    y = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(np.int32)
    cols = {f"f{i}": X[:, i] for i in range(base)}
    if gpu and gpu_frames():
        import cudf as lib
    else:
        import pandas as lib
    df = lib.DataFrame(cols)
    df["f3"] = df["f3"].where(lib.Series(rng.random(rows) >= 0.05))   # 5 % nulls
    df["ratio"] = df["f0"] / (df["f1"].abs() + 1.0)                    # derived in the ETL
    df["prod"] = df["f2"] * df["f5"]
    df["label"] = y
    step = -(-rows // files)
    for i in range(files):
        df.iloc[i * step:(i + 1) * step].to_parquet(os.path.join(path, f"part{i:03d}.parquet"))
    return time.perf_counter() - t


def start_cluster(gpu: bool, workers: int, cold: bool):
    """Fresh workers; with ``cold`` fresh (empty) kernel caches for them."""
    if cold:
        cache = tempfile.mkdtemp(prefix="bench-cold-")
        os.environ["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
        os.environ["CUPY_CACHE_DIR"] = os.path.join(cache, "cupy")
    if gpu:
        from dask_cuda import LocalCUDACluster
        return LocalCUDACluster(n_workers=workers, dashboard_address=":0")
    from distributed import LocalCluster
    return LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0")


def frames(path: str, gpu: bool):
    """Train and validation X, y from the parquet files: cuDF-backed frames on the GPU, or,
    where cuDF is not installed, the pandas frames' partitions as dask arrays of cupy chunks
    (the same rows and split; the JSON's ``input`` says which)."""
    import dask.dataframe as dd
    if gpu and gpu_frames():
        import dask_cudf
        ddf = dask_cudf.read_parquet(path)
    else:
        ddf = dd.read_parquet(path)
    train, valid = ddf.random_split([0.9, 0.1], random_state=0)
    features = [c for c in ddf.columns if c != "label"]
    out = train[features], train["label"], valid[features], valid["label"]
    if gpu and not gpu_frames():
        import cupy
        out = tuple(f.to_dask_array(lengths=True).astype(np.float32).map_blocks(cupy.asarray)
                    for f in out)
    return out


def estimator(lib: str, a, gpu: bool, rounds: int | None = None):
    """The classifier; with ``rounds`` one without evaluation that trains that many rounds."""
    common = dict(n_estimators=rounds or a.rounds, max_depth=a.depth, learning_rate=a.eta,
                  max_bin=256)
    if rounds is None:
        common.update(eval_metric="auc", early_stopping_rounds=a.early_stopping)
    if lib.startswith("dgbdt"):
        from dgbdt.dask import DaskGBDTClassifier
        return DaskGBDTClassifier(**common, linear_tree=lib == "dgbdt-linear")
    from xgboost.dask import DaskXGBClassifier
    return DaskXGBClassifier(tree_method="hist", device="cuda" if gpu else "cpu", **common)


def host(a) -> np.ndarray:
    if hasattr(a, "to_numpy"):
        a = a.to_numpy()
    return a.get() if hasattr(a, "__cuda_array_interface__") else np.asarray(a)


def print_profile(prof, title: str, top: int = 18) -> None:
    """Where the client's time went in a fit (``--profile``): dgbdt's functions by cumulative
    seconds (the client waits inside them for the cluster's work)."""
    stats = pstats.Stats(prof)
    rows = [(ct, f"{os.path.basename(fn)}:{line}:{name}")
            for (fn, line, name), (_, _, _, ct, _) in stats.stats.items()
            if "dgbdt" in fn and "benchmarks" not in fn]
    print(f"-- {title}; dgbdt functions by cumulative time:")
    for ct, where in sorted(rows, reverse=True)[:top]:
        print(f"   {ct:8.3f} s  {where}")


def print_tasks(tasks, title: str, top: int = 8) -> None:
    """Where the workers' time went (``--profile``): seconds of compute per task prefix, from
    distributed's task stream."""
    from collections import defaultdict
    from dask.utils import key_split
    by = defaultdict(float)
    for t in tasks:
        for s in t.get("startstops", ()):
            if s["action"] == "compute":
                by[key_split(t["key"])] += s["stop"] - s["start"]
    print(f"-- {title}; worker compute seconds by task:")
    for name, sec in sorted(by.items(), key=lambda kv: -kv[1])[:top]:
        print(f"   {sec:8.3f} s  {name}")


def report(prof, tasks, title: str) -> None:
    """``--profile``'s output for a block: the client's profile (stopped here) and the
    workers' task stream."""
    if prof is not None:
        prof.disable()
        print_profile(prof, title)
    if tasks is not None:
        print_tasks(tasks.data, title)


def released(client, limit: float = 10.0) -> None:
    """Wait until the previous fit's futures are gone from the scheduler: a future is let go
    asynchronously, and a fit submitted meanwhile finds the earlier fit's partitions (the
    same keys) still in memory and skips reading them (first_fit_timeline showed it)."""
    end = time.perf_counter() + limit
    while time.perf_counter() < end and (client.futures or client.run_on_scheduler(
            lambda dask_scheduler: len(dask_scheduler.tasks))):
        time.sleep(0.02)


def one_fit(client, lib: str, a, gpu: bool, path: str, rounds: int | None = None,
            profile: bool = False) -> dict:
    """One fit with the eval set and early stopping; with ``rounds``, that many rounds
    without an eval set (what the evaluation costs is the difference)."""
    from distributed import get_task_stream
    from sklearn.metrics import roc_auc_score
    t0 = time.perf_counter()
    X, y, Xv, yv = frames(path, gpu)
    est = estimator(lib, a, gpu, rounds)
    est.client = client
    stream = get_task_stream(client) if profile else contextlib.nullcontext()
    t1 = time.perf_counter()
    prof = cProfile.Profile() if profile and lib.startswith("dgbdt") else None
    if prof is not None:
        prof.enable()
    with stream as tasks:
        if rounds is None:
            est.fit(X, y, eval_set=[(Xv, yv)], verbose=False)
        else:
            est.fit(X, y)
    fit = time.perf_counter() - t1
    title = f"{lib} {'no eval' if rounds else 'eval set'}: fit {fit:.3f} s"
    report(prof, tasks, title)
    t2 = time.perf_counter()
    if prof is not None:
        prof = cProfile.Profile()
        prof.enable()
    stream = get_task_stream(client) if profile else contextlib.nullcontext()
    with stream as tasks:
        proba = client.compute(est.predict_proba(Xv)).result()
    title = f"{lib} predict_proba: {time.perf_counter() - t2:.3f} s"
    report(prof, tasks, title)
    labels = client.compute(yv).result()
    auc = float(roc_auc_score(host(labels), host(proba)[:, 1]))
    total = time.perf_counter() - t0
    booster = est.get_booster()
    out = {"fit_s": round(fit, 3), "end_to_end_s": round(total, 3), "auc": round(auc, 6),
           "best_iteration": getattr(est, "best_iteration", None) if rounds is None else None}
    if lib.startswith("dgbdt"):
        timings = booster.timings
        out["rounds"] = booster.num_boosted_rounds()
        # a GPU fit scores a round while the next one grows: its wait is "scores_wait"
        ev = timings.get("evaluation", 0.0) + timings.get("scores_wait", 0.0)
        out["evaluation_s"] = round(ev, 3)
        out["evaluation_share"] = round(ev / fit, 4)
        out["timings"] = {k: round(v, 3) for k, v in timings.items()}
        if gpu:     # which kernel modules the workers loaded prebuilt / compiled with NVRTC
            from dgbdt.kernels import prebuilt
            out["kernels"] = {w: {k: len(v) for k, v in r.items()}
                              for w, r in client.run(prebuilt.report).items()}
    else:
        out["rounds"] = booster.num_boosted_rounds()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--rows", type=int, default=600_000)
    ap.add_argument("--features", type=int, default=12, help="feature columns (>= 8)")
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--workers", type=int, default=None, help="default: 1 GPU, or 2 CPU")
    ap.add_argument("--rounds", type=int, default=None, help="default: 200 GPU, 150 CPU")
    ap.add_argument("--depth", type=int, default=None, help="default: 8 GPU, 6 CPU")
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--early-stopping", type=int, default=20)
    ap.add_argument("--libs", default="dgbdt,xgboost")
    ap.add_argument("--cold", action="store_true",
                    help="empty kernel caches for each cluster (a fresh install's first fit)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="warm fits with and without the eval set, each this many times "
                         "(alternating); the ratio line uses their medians")
    ap.add_argument("--profile", action="store_true",
                    help="print where the time goes: the client's in dgbdt's functions (cProfile), the "
                         "workers' by task (both libraries)")
    ap.add_argument("--out", default=None, help="also append the JSON lines to this file")
    a = ap.parse_args()
    unknown = set(a.libs.split(",")) - {"dgbdt", "dgbdt-linear", "xgboost"}
    if unknown:
        ap.error(f"--libs: unknown {sorted(unknown)}; choose from dgbdt, dgbdt-linear, xgboost")

    from distributed import Client

    from bench_gpu import checkout_commit, emit_line

    gpu = a.device == "cuda"
    a.workers = a.workers or (1 if gpu else 2)
    a.rounds = a.rounds or (200 if gpu else 150)
    a.depth = a.depth or (8 if gpu else 6)
    path = tempfile.mkdtemp(prefix="bench-user-path-")
    try:
        etl = write_parquet(path, a.rows, a.features, a.files, gpu)
        # the client's own imports (dask_cudf's reader, scikit-learn's metrics) once, before
        # any clock: else the first library's first end to end pays them (1-4 s on a GPU)
        frames(path, gpu)
        import sklearn.metrics  # noqa: F401
        common = {"bench": "user_path", "commit": checkout_commit(),
                  "date": datetime.date.today().isoformat(), "device": a.device, "rows": a.rows,
                  "features": a.features, "files": a.files, "workers": a.workers,
                  "rounds_max": a.rounds, "depth": a.depth, "early_stopping": a.early_stopping,
                  "cold": a.cold, "host": platform.node(), "etl_s": round(etl, 3),
                  "input": ("cudf frames" if gpu_frames() else "cupy arrays from pandas")
                  if gpu else "pandas frames"}
        results: dict = {}
        for lib in a.libs.split(","):
            with start_cluster(gpu, a.workers, a.cold) as cluster, Client(cluster) as client:
                client.wait_for_workers(a.workers)
                runs: dict = {}
                for i, leg in enumerate(["first"] + ["warm", "warm_no_eval"] * a.repeat):
                    rounds = runs["warm"][-1]["rounds"] if leg == "warm_no_eval" else None
                    released(client)
                    r = one_fit(client, lib, a, gpu, path, rounds,
                                profile=a.profile)
                    if rounds is not None:
                        # what the eval set costs this library: the warm fit beside the same
                        # rounds without one (a stage timer misses evaluation that overlaps)
                        r["evaluation_cost_share"] = round(
                            1 - r["fit_s"] / runs["warm"][-1]["fit_s"], 4)
                    runs.setdefault(leg, []).append(r)
                    emit_line({**common, "lib": lib, "fit": leg, "run": (i - 1) // 2 if i else 0,
                               **r}, a.out)
                for leg, rs in runs.items():      # the run of median fit time stands for it
                    results[(lib, leg)] = dict(sorted(rs, key=lambda r: r["fit_s"])[len(rs) // 2])
                warm, bare = (float(np.median([r["fit_s"] for r in runs[k]]))
                              for k in ("warm", "warm_no_eval"))
                results[(lib, "warm_no_eval")]["evaluation_cost_share"] = round(1 - bare / warm, 4)
        for num, den in (("dgbdt", "xgboost"), ("dgbdt-linear", "dgbdt"),
                         ("dgbdt-linear", "xgboost")):
            if (num, "first") not in results or (den, "first") not in results:
                continue
            ratio = {f"{leg}_{k}": round(results[(num, leg)][k] / results[(den, leg)][k], 3)
                     for leg in ("first", "warm") for k in ("fit_s", "end_to_end_s")}
            per_round = {leg: round((results[(num, leg)]["fit_s"]
                                     / results[(num, leg)]["rounds"])
                                    / (results[(den, leg)]["fit_s"]
                                       / results[(den, leg)]["rounds"]), 3)
                         for leg in ("first", "warm")}
            emit_line({**common, "lib": f"ratio {num}/{den}", "warm_medians_of": a.repeat,
                       **ratio,
                       "fit_per_round_ratio": per_round,
                       "evaluation_cost_share": {
                           lib: results[(lib, "warm_no_eval")]["evaluation_cost_share"]
                           for lib in (num, den)},
                       "auc_diff": round(results[(num, "warm")]["auc"]
                                         - results[(den, "warm")]["auc"], 6)}, a.out)
    finally:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
