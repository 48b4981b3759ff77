"""Where a piecewise-linear GPU training spends its time (issue #15): cProfile of the host
side and the stage timers, on bench_linear's pl-reg data.

    python benchmarks/lab/linear_prof.py --rows 1000000 --rounds 100
"""
import argparse
import cProfile
import io
import os
import pstats
import sys
import time


sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_linear import make_data  # noqa: E402

import dgbdt  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--top", type=int, default=45)
    a = ap.parse_args()
    import cupy as cp
    X, y = make_data("pl-reg", a.rows)
    Xd, yd = cp.asarray(X), cp.asarray(y)
    p = {"linear_tree": True, "max_depth": 6, "eta": 0.1, "device": "cuda"}
    dgbdt.train(p, dgbdt.Dataset(Xd[:20000], label=yd[:20000]), 3)   # compile
    dgbdt.train(dict(p, linear_tree=False), dgbdt.Dataset(Xd[:20000], label=yd[:20000]), 3)
    models = {}
    for linear, growth in ((False, "auto"), (True, "host"), (True, "auto")):
        os.environ["DGBDT_GROWTH"] = growth
        q = dict(p, linear_tree=linear)
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        b = dgbdt.train(q, dgbdt.Dataset(Xd, label=yd), a.rounds)
        cp.cuda.Device().synchronize()
        models[(linear, growth)] = b.save_raw()
        print(f"linear={linear} growth={growth}: {time.perf_counter() - t:.3f} s "
              f"{ {k: round(v, 3) for k, v in b.timings.items() if v} }", flush=True)
    print("device-grown == host-grown:", models[(True, "host")] == models[(True, "auto")])
    os.environ["DGBDT_GROWTH"] = "auto"
    pr = cProfile.Profile()
    d = dgbdt.Dataset(Xd, label=yd)
    pr.enable()
    b = dgbdt.train(p, d, a.rounds)
    cp.cuda.Device().synchronize()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(a.top)
    print(s.getvalue())
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumtime").print_stats(a.top)
    print(s.getvalue())


if __name__ == "__main__":
    main()
