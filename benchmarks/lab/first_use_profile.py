"""cProfile of a fresh GPU process's first call of each dataset step (issue 46): which Python
work a fresh worker pays once (a lazy import, a module load), beside the second call's time.
benchmarks/lab/first_use_lab.py gives the times alone. It found np.unique importing numpy.ma
at its first call under numpy 2.5 (the sketch root's 52 ms).

    python benchmarks/lab/first_use_profile.py
"""
import cProfile
import io
import pstats
import sys
import time

import cupy as cp

import dgbdt  # noqa: F401
import dgbdt.dask  # noqa: F401  (a worker has these imported)
import distributed  # noqa: F401

sys.path.insert(0, "benchmarks")
from bench_gpu import make_data_gpu  # noqa: E402
from dgbdt.dask.pages import PagePlan, make_paged  # noqa: E402
from dgbdt.dask.parts import Part  # noqa: E402
from dgbdt.data.quantize import cuts_from_summaries  # noqa: E402
from dgbdt.data.sketch_device import summarize_blocks_device  # noqa: E402


def sync():
    cp.cuda.Device().synchronize()


def profiled(name, fn):
    """fn() under cProfile (its 14 largest cumulative times printed), then again timed."""
    pr = cProfile.Profile()
    t = time.perf_counter()
    pr.enable()
    r = fn()
    sync()
    pr.disable()
    print(f"== {name} first {time.perf_counter() - t:.4f}s")
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumtime").print_stats(14)
    print("\n".join(line[:150] for line in s.getvalue().splitlines()[6:24]))
    t = time.perf_counter()
    fn()
    sync()
    print(f"== {name} again {time.perf_counter() - t:.4f}s")
    return r


X, y = make_data_gpu(2_000_000, 28, 0)
sync()
s = profiled("summary", lambda: summarize_blocks_device([X], None, None, 4096))
cuts = profiled("cuts", lambda: cuts_from_summaries(s, 256, None))
part = Part(X, y.astype(cp.float64), None, None)
profiled("pages", lambda: make_paged(part, cuts, "cuda", PagePlan("lab", None, 1, 511)))
