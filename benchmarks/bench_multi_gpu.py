"""dgbdt on several GPUs: NCCL vs task-graph merging vs xgboost.dask vs one GPU; one JSON line.

    python benchmarks/bench_multi_gpu.py                       # 2 GPUs, 10M x 28, 500 rounds
    python benchmarks/bench_multi_gpu.py --rows 50000000 --out r50.json
    python benchmarks/bench_multi_gpu.py --skip graph,one_gpu --rounds 100
    python benchmarks/bench_multi_gpu.py --gpus 4,2,1 --rows 100000000 --skip graph,one_gpu

Legs (each timed after a 2-round warm-up on 20k rows, so compilation stays outside):
  nccl          dgbdt.dask.train(mode="nccl") on a LocalCUDACluster of --gpus workers (a
                comma list runs one cluster per count, one JSON line each, in one run)
  graph         dgbdt.dask.train(mode="graph") on the same cluster (--graph-rounds, if given,
                trains fewer rounds: the per-round time is what compares)
  xgboost_dask  xgboost.dask.train with DaskQuantileDMatrix on the same cluster
  one_gpu       dgbdt.train in this process on GPU 0, all training rows (the 1-GPU baseline)
  nccl_ooc      mode="nccl" with each rank's device_memory_budget at --ooc-fraction (0.25) of
                the largest rank's page bytes: every rank streams the pages beyond it (issue
                46); ``nccl_ooc_equals_nccl`` says whether the model is the in-core one
--first: also each library's first fit on the full data, before its warm-up (see --help).
--cold-cache: each cluster's workers start with an empty CuPy kernel cache (a fresh machine);
with --first, the NVRTC compiles inside nccl's first fit, each with its call site and seconds
(nccl_first_compiles).
--timeline: the warm (and first) nccl fit's tasks as a timeline (where the time outside the
ranks' training goes: the DaskDataset's checks, sketch, merge, pages, the ranks' start).
Data: bench_gpu.py's Higgs-shaped formula, generated on the workers' GPUs as --chunks-per-gpu
(2) partitions per GPU of the largest count (the same rows for every count); the test set (10 % of --rows) in this
process. Times include quantization / DMatrix construction. For nccl the booster's timings split
each level into compute and communication: ``communication`` is the time of the NCCL kernels on
rank 0 (transfer plus waiting for the slowest rank), bytes are what rank 0 contributed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import (TEST_SEED, TRAIN_SEED, WARM_ROWS, WARM_SEED, dask_data,  # noqa: E402
                       free_gpu_pool, make_data_gpu, run_leg, split_rows, stages)
from bench_cpu import auc  # noqa: E402

LEGS = ("nccl", "graph", "xgboost_dask", "one_gpu", "nccl_ooc")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000, help="train + test rows")
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--graph-rounds", type=int, default=None)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--max-bin", type=int, default=256)
    ap.add_argument("--eta", type=float, default=0.1)
    ap.add_argument("--gpus", default="2", help="GPU workers; a comma list for a scaling run")
    ap.add_argument("--chunks-per-gpu", type=int, default=2,
                    help="partitions per GPU of the largest count (the same rows every count)")
    ap.add_argument("--ooc-fraction", type=float, default=0.25,
                    help="nccl_ooc: each rank's budget as a fraction of the largest rank's pages")
    ap.add_argument("--skip", default="", help=f"comma list of legs to skip: {','.join(LEGS)}")
    ap.add_argument("--first", action="store_true",
                    help="time nccl's and xgboost.dask's first fit on the full data before "
                         "their warm fits (nccl's on the cluster's fresh workers; XGBoost's "
                         "after dgbdt's legs, in worker processes that had not run XGBoost)")
    ap.add_argument("--profile-first", action="store_true",
                    help="with --first: the workers' sampled stacks during nccl's first and "
                         "warm fits (distributed's profiler, 10 ms samples; a rank's training "
                         "thread leaves the pool, so mostly the dataset's tasks), as the "
                         "functions that held the most samples (nccl_first_profile, "
                         "nccl_warm_profile)")
    ap.add_argument("--timeline", action="store_true",
                    help="nccl's warm fit (and first, with --first) as a task timeline: per "
                         "task group its count, first start, last end (seconds after the fit's "
                         "start, the DaskDataset's construction included) and busy seconds, "
                         "from distributed's task stream (nccl_timeline, nccl_first_timeline)")
    ap.add_argument("--cold-cache", action="store_true",
                    help="each cluster's workers start with an empty CuPy kernel cache, as "
                         "on a fresh machine; with --first, every NVRTC compile of nccl's first fit is "
                         "listed with its call site and seconds (nccl_first_compiles)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="nccl's warm fit this many times on the same workers: nccl_s is the "
                         "median, nccl_runs_s every run (a 4-GPU fit of ~1.5 s moves by "
                         "0.1-0.2 s from one run to the next)")
    ap.add_argument("--out", help="also write the JSON line to this file")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error("--repeat must be at least 1")
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    if skip - set(LEGS):
        ap.error(f"--skip: unknown legs {sorted(skip - set(LEGS))}; choose from {LEGS}")

    import cupy as cp

    import dgbdt
    try:
        import xgboost as xgb
        import xgboost.dask  # noqa: F401
    except ImportError:
        xgb = None

    counts = [int(c) for c in a.gpus.split(",")]
    params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": a.eta,
              "max_bin": a.max_bin, "device": "cuda"}
    xparams = params | {"tree_method": "hist"}
    graph_rounds = a.graph_rounds or a.rounds
    common = {"bench": "multi_gpu", "rows": a.rows, "features": a.features,
              "rounds": a.rounds, "graph_rounds": graph_rounds, "depth": a.depth,
              "max_bin": a.max_bin, "chunks_per_gpu": a.chunks_per_gpu,
              # whether the nccl ranks' trees were CUDA graphs (the default; off with
              # DGBDT_NCCL_GRAPHS=0 or DGBDT_CUDA_GRAPHS=0)
              "cuda_graphs": os.environ.get("DGBDT_CUDA_GRAPHS", "1") != "0"
              and os.environ.get("DGBDT_NCCL_GRAPHS", "1") != "0",
              # whether replayed trees took their scales on the device (the default;
              # DGBDT_DEVICE_SCALES=0: the host read the gradient maxima every round)
              "device_scales": os.environ.get("DGBDT_DEVICE_SCALES", "1") != "0",
              "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
              "cold_cache": a.cold_cache,
              "python": platform.python_version(), "dgbdt": dgbdt.__version__,
              "xgboost": xgb.__version__ if xgb else None, "skipped": sorted(skip)}
    n_test = a.rows // 10
    Xte, yte = make_data_gpu(n_test, a.features, TEST_SEED)
    yte_h = cp.asnumpy(yte)
    models: dict = {}

    def score(pred) -> float:
        return round(auc(yte_h, cp.asnumpy(pred).ravel()), 5)

    def per_level(seconds, rounds) -> float:
        return round(1e3 * seconds / (rounds * a.depth), 3)

    def emit(out) -> None:
        def ratio(num, den, scale=1.0):
            n, dd = out.get(num), out.get(den)
            return round(n * scale / dd, 3) if n is not None and dd else None
        out["ratio_nccl_over_xgboost_dask"] = ratio("nccl_s", "xgboost_dask_s")
        out["ratio_graph_over_xgboost_dask"] = ratio("graph_s", "xgboost_dask_s",
                                                     a.rounds / graph_rounds)
        line = json.dumps(out)
        print(line, flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(line + "\n")

    # the same partitions (each made from its own seed) for every GPU count: the same data
    sizes = split_rows(a.rows - n_test, a.chunks_per_gpu * max(counts))
    for n_gpus in counts:
        out = common | {"gpus": n_gpus}
        try:
            run_cluster(a, n_gpus, sizes, params, xparams, graph_rounds, skip, out, models,
                        score, per_level, Xte, xgb)
        except Exception as e:  # noqa: BLE001  (cluster start-up, data generation)
            traceback.print_exc()
            out["cluster_error"] = repr(e)
        if n_gpus in models and counts[0] in models:
            out["nccl_model_equals_first_count"] = models[n_gpus] == models[counts[0]]
        emit(out)
    if "one_gpu" not in skip:
        out = common | {"gpus": 1, "leg": "one_gpu_in_process"}

        def leg_one_gpu():
            Xtr, ytr = (cp.concatenate(v) for v in zip(*(
                make_data_gpu(r, a.features, TRAIN_SEED + i) for i, r in enumerate(sizes))))
            dgbdt.train(params, dgbdt.Dataset(Xtr[:WARM_ROWS], label=ytr[:WARM_ROWS]), 2,
                        verbose_eval=False)
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            b = dgbdt.train(params, dgbdt.Dataset(Xtr, label=ytr), a.rounds, verbose_eval=False)
            s = time.perf_counter() - t
            return {"one_gpu_s": round(s, 3), "one_gpu_auc": score(b.predict(Xte)),
                    "one_gpu_level_ms": per_level(s, a.rounds),
                    "one_gpu_model_equals_nccl": {n: m == b.save_raw()
                                                  for n, m in models.items()}}
        run_leg(out, "one_gpu", leg_one_gpu, free_gpu_pool)
        emit(out)


def top_frames(tree: dict, n: int = 25, sample_s: float = 0.01) -> dict:
    """distributed's profile tree flattened: the n functions with the most samples under them
    (cumulative, each function counted once a stack) and the n with the most at the top of the
    stack (self), in seconds (samples x the sampling interval)."""
    import collections
    cum, own = collections.Counter(), collections.Counter()

    def walk(node, above):
        d = node.get("description", {})
        key = f"{os.path.basename(d.get('filename', '?'))}:{d.get('line_number', '?')}:" \
              f"{d.get('name', '?')}"
        count = node.get("count", 0)
        if key not in above:
            cum[key] += count
        children = node.get("children", {}).values()
        own[key] += count - sum(c.get("count", 0) for c in children)
        for c in children:
            walk(c, above | {key})

    for c in tree.get("children", {}).values():
        walk(c, frozenset())
    return {"sampled_s": round(tree.get("count", 0) * sample_s, 2),
            "cumulative": [(k, round(v * sample_s, 2)) for k, v in cum.most_common(n)],
            "self": [(k, round(v * sample_s, 2)) for k, v in own.most_common(n)]}


def watch_compiles() -> None:
    """On a worker: record every NVRTC compile (call site in dgbdt, seconds) on CuPy's nvrtc
    module (``_watched``), until ``compiles_seen`` takes them."""
    import traceback as tb

    import cupy_backends.cuda.libs.nvrtc as nvrtc
    if getattr(nvrtc, "_watched", None) is not None:
        return
    nvrtc._watched = []
    real = nvrtc.compileProgram

    def watched(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            frames = [f for f in tb.extract_stack()[:-1] if "/dgbdt/" in f.filename]
            where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}:{f.name}"
                                for f in frames[::-1][:3]) or "(outside dgbdt)"
            nvrtc._watched.append([where, round(time.perf_counter() - t, 3)])
    nvrtc.compileProgram = watched


def compiles_seen() -> list:
    """On a worker: the compiles ``watch_compiles`` recorded since the last call."""
    import cupy_backends.cuda.libs.nvrtc as nvrtc
    got = list(getattr(nvrtc, "_watched", None) or [])
    nvrtc._watched = []
    return got


def task_stream(client, on: bool):
    """distributed's task stream recorder when ``on`` (its ``data``: the tasks run), else a
    stand-in with no data."""
    import contextlib
    import types
    if not on:
        return contextlib.nullcontext(types.SimpleNamespace(data=[]))
    from distributed import get_task_stream
    return get_task_stream(client)


def timeline(records: list, t0: float) -> list:
    """[group, tasks, first start, last end, busy seconds] per task group, in order of first
    start; times in seconds after ``t0`` (the fit's start, the client's clock: a local
    cluster's)."""
    from dask.utils import key_split
    groups: dict = {}
    for rec in records:
        for ss in rec.get("startstops", ()):
            if ss.get("action") != "compute":
                continue
            g = groups.setdefault(key_split(rec["key"]), [0, ss["start"], ss["stop"], 0.0])
            g[0] += 1
            g[1], g[2] = min(g[1], ss["start"]), max(g[2], ss["stop"])
            g[3] += ss["stop"] - ss["start"]
    rows = sorted(groups.items(), key=lambda kv: kv[1][1])
    return [[k, n, round(a - t0, 3), round(b - t0, 3), round(busy, 3)]
            for k, (n, a, b, busy) in rows]


def run_cluster(a, n_gpus, sizes, params, xparams, graph_rounds, skip, out, models, score,
                per_level, Xte, xgb) -> None:
    """The Dask legs on one LocalCUDACluster of n_gpus workers; results go into out."""
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    from dgbdt import dask as dgd
    if a.cold_cache:        # each cluster's workers start with an empty cache (they inherit it)
        import tempfile
        os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cupy-cold-")
    with LocalCUDACluster(n_workers=n_gpus, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        def free_all():
            free_gpu_pool()
            client.run(free_gpu_pool)

        Xd, yd = dask_data(client, sizes, a.features, TRAIN_SEED)
        Xw, yw = dask_data(client, split_rows(WARM_ROWS, len(sizes)), a.features, WARM_SEED)
        d, dw = dgd.DaskDataset(client, Xd, yd), dgd.DaskDataset(client, Xw, yw)
        where = d.workers_of_parts()
        out["workers_holding_data"] = len(set(where))
        out["rows_per_worker"] = sorted(sum(r for r, w in zip(sizes, where) if w == x)
                                        for x in set(where))

        def dask_leg(mode, rounds, name=None, leg_params=None):
            name = name or mode
            leg_params = {**params, **(leg_params or {})}

            def leg():
                r = {}
                watch = a.timeline and name == "nccl"
                if a.first and name == "nccl":      # fresh workers: imports, kernels, NCCL
                    if a.cold_cache:
                        client.run(watch_compiles)
                        client.run(compiles_seen)       # the data's generation: not the fit's
                    t, wall = time.perf_counter(), time.time()
                    with task_stream(client, watch) as ts:
                        first = dgd.train(client, leg_params, dgd.DaskDataset(client, Xd, yd),
                                          rounds, mode=mode, verbose_eval=False)["booster"]
                    r[f"{name}_first_s"] = round(time.perf_counter() - t, 3)
                    if watch:
                        r[f"{name}_first_timeline"] = timeline(ts.data, wall)
                    r[f"{name}_first_stages_s"] = stages(first)
                    if a.cold_cache:
                        r[f"{name}_first_compiles"] = client.run(compiles_seen)
                    if a.profile_first:
                        r[f"{name}_first_profile"] = top_frames(
                            client.profile(start=wall, stop=time.time()))
                dgd.train(client, leg_params, dw, 2, mode=mode, verbose_eval=False)
                runs = []
                for _ in range(a.repeat if name == "nccl" else 1):
                    t, wall = time.perf_counter(), time.time()
                    with task_stream(client, watch) as ts:
                        b = dgd.train(client, leg_params, dgd.DaskDataset(client, Xd, yd),
                                      rounds, mode=mode, verbose_eval=False)["booster"]
                    runs.append((time.perf_counter() - t, b, ts, wall))
                # the median run's figures (its booster's timers, its timeline)
                s, b, ts, wall = sorted(runs, key=lambda x: x[0])[len(runs) // 2]
                if len(runs) > 1:
                    r[f"{name}_runs_s"] = [round(x[0], 3) for x in runs]
                if watch:
                    r[f"{name}_timeline"] = timeline(ts.data, wall)
                if a.profile_first and f"{name}_first_profile" in r:      # the same, warm
                    r[f"{name}_warm_profile"] = top_frames(
                        client.profile(start=wall, stop=time.time()))
                r |= {f"{name}_s": round(s, 3), f"{name}_auc": score(b.predict(Xte)),
                      f"{name}_level_ms": per_level(s, rounds), f"{name}_stages_s": stages(b)}
                if f"{name}_first_s" in r:
                    r[f"{name}_first_over_warm"] = round(r[f"{name}_first_s"] / s, 3)
                if "communication" in b.timings:
                    r[f"{name}_level_comm_ms"] = per_level(b.timings["communication"], rounds)
                    r[f"{name}_level_compute_ms"] = round(r[f"{name}_level_ms"]
                                                          - r[f"{name}_level_comm_ms"], 3)
                    r[f"{name}_level_bytes"] = round(b.timings["communication_bytes"]
                                                     / (rounds * a.depth))
                if name == "nccl":
                    models[n_gpus] = b.save_raw()
                if name == "nccl_ooc":
                    r["nccl_ooc_memory"] = b.memory
                    if n_gpus in models:
                        r["nccl_ooc_equals_nccl"] = b.save_raw() == models[n_gpus]
                return r
            return leg

        def leg_xgboost_dask():
            if xgb is None:
                raise ImportError("xgboost is not installed")
            first = {}
            if a.first:
                t = time.perf_counter()
                xgb.dask.train(client, xparams, xgb.dask.DaskQuantileDMatrix(
                    client, Xd, yd, max_bin=a.max_bin), a.rounds)
                first["xgboost_dask_first_s"] = round(time.perf_counter() - t, 3)
            xgb.dask.train(client, xparams, xgb.dask.DaskQuantileDMatrix(
                client, Xw, yw, max_bin=a.max_bin), 2)
            t = time.perf_counter()
            bst = xgb.dask.train(client, xparams, xgb.dask.DaskQuantileDMatrix(
                client, Xd, yd, max_bin=a.max_bin), a.rounds)["booster"]
            s = time.perf_counter() - t
            return first | {"xgboost_dask_s": round(s, 3), "xgboost_dask_auc": score(
                bst.inplace_predict(Xte))}

        if "nccl" not in skip:
            run_leg(out, "nccl", dask_leg("nccl", a.rounds), free_all)
        if "xgboost_dask" not in skip:
            run_leg(out, "xgboost_dask", leg_xgboost_dask, free_all)
        if "graph" not in skip:
            run_leg(out, "graph", dask_leg("graph", graph_rounds), free_all)
        if "nccl_ooc" not in skip:
            from dgbdt.data.page_store import packed_bytes
            rows = max(out["rows_per_worker"])
            budget = int(packed_bytes(rows, a.features, (a.max_bin + 1).bit_length())
                         * a.ooc_fraction)
            out["nccl_ooc_budget_bytes"] = budget
            run_leg(out, "nccl_ooc", dask_leg("nccl", a.rounds, "nccl_ooc",
                                              {"device_memory_budget": budget}), free_all)


if __name__ == "__main__":
    try:
        main()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
