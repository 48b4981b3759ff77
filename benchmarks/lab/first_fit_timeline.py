"""A user-path fit on fresh GPU workers, then on warm ones, on one clock: where the first
fit's extra seconds go (issue 46's first-fit target, bench_user_path's first-fit ratio).

    python benchmarks/lab/first_fit_timeline.py [rows] [lib] [--cpu]

bench_user_path's flow (cuDF parquet, random_split, the classifier with an eval set and early
stopping; ``lib`` dgbdt or xgboost) on a new LocalCUDACluster: the first fit, then a warm one.
For each: the client's top functions by cumulative time (cProfile, all modules), and the
workers' task stream by task prefix: first start and last end (seconds from the fit's start),
tasks, compute seconds, and the gaps where no task computed. ``--cpu``: pandas frames on a
LocalCluster of 2 one-thread workers (bench_user_path's CPU flow).
"""
import cProfile
import os
import pstats
import sys
import tempfile
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_user_path import estimator, frames, released, start_cluster, write_parquet  # noqa: E402,E501


class Args:
    rounds, depth, eta, early_stopping = 200, 8, 0.1, 20


def timeline(tasks, t0: float) -> None:
    from dask.utils import key_split
    spans, by = [], defaultdict(lambda: [1e9, 0.0, 0, 0.0])
    for t in tasks:
        for s in t.get("startstops", ()):
            if s["action"] != "compute":
                continue
            a, b = s["start"] - t0, s["stop"] - t0
            spans.append((a, b))
            row = by[key_split(t["key"])]
            row[0], row[1] = min(row[0], a), max(row[1], b)
            row[2] += 1
            row[3] += b - a
    print("   task prefix                      first    last   tasks  compute")
    for name, (a, b, n, c) in sorted(by.items(), key=lambda kv: kv[1][0]):
        print(f"   {name[:30]:30s} {a:7.3f} {b:7.3f} {n:6d} {c:8.3f}")
    spans.sort()
    gaps, end = [], 0.0
    for a, b in spans:
        if a > end + 0.05:
            gaps.append((round(end, 3), round(a, 3)))
        end = max(end, b)
    print("   idle gaps over 50 ms (from, to):", gaps)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows = int(args[0]) if len(args) > 0 else 2_000_000
    lib = args[1] if len(args) > 1 else "dgbdt"
    gpu = "--cpu" not in sys.argv
    workers = 1 if gpu else 2
    if not gpu:
        Args.rounds, Args.depth = 150, 6
    from distributed import Client, get_task_stream
    path = tempfile.mkdtemp(prefix="first-fit-")
    write_parquet(path, rows, 12, 8, gpu)
    frames(path, gpu)
    with start_cluster(gpu, workers, False) as cluster, Client(cluster) as client:
        client.wait_for_workers(workers)
        for leg in ("first", "warm"):
            est = None
            released(client)          # the first fit's parts gone: the warm fit reads its own
            X, y, Xv, yv = frames(path, gpu)
            est = estimator(lib, Args, gpu)
            est.client = client
            prof = cProfile.Profile()
            with get_task_stream(client) as ts:
                t0 = time.time()
                t = time.perf_counter()
                prof.enable()
                est.fit(X, y, eval_set=[(Xv, yv)], verbose=False)
                prof.disable()
                fit = time.perf_counter() - t
            print(f"== {lib} {leg} fit: {fit:.3f} s")
            st = pstats.Stats(prof)
            rows_ = sorted(((ct, f"{os.path.basename(fn)}:{ln}:{nm}")
                            for (fn, ln, nm), (_, _, _, ct, _) in st.stats.items()),
                           reverse=True)
            for ct, where in rows_[:30]:
                print(f"   {ct:8.3f} s  {where}")
            timeline(ts.data, t0)


if __name__ == "__main__":
    main()
