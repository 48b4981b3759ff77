"""What a fresh GPU worker process pays the first time it runs each of a fit's dataset steps.

In a new process on GPU 0, each step twice (after a device synchronize, wall seconds): the
imports, CuPy's first array, a 2M x 28 partition's label statistics (binary:logistic), its
sketch summary (dgbdt.data.sketch_device.summarize_blocks_device), the cuts from it, and its
pages (dgbdt.dask.pages.make_paged). The first fit on fresh workers pays the first column, a
warm fit the second (issue 46: the first fit at 4 GPUs is 1.32-1.41x the warm one). One JSON
line."""
import json
import sys
import time

t0 = time.perf_counter()
import cupy as cp  # noqa: E402

import dgbdt  # noqa: E402,F401
import dgbdt.dask  # noqa: E402,F401
import distributed  # noqa: E402,F401  (a worker has it imported)
out = {"imports_s": round(time.perf_counter() - t0, 3)}
sys.path.insert(0, "benchmarks")


def timed(name, fn):
    for i in (1, 2):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        r = fn()
        cp.cuda.Device().synchronize()
        out[f"{name}_{'first' if i == 1 else 'again'}_s"] = round(time.perf_counter() - t, 4)
    return r


def f64(a):
    """a as float64 (a copy; CuPy's astype, compiled once per process at most)."""
    return a.astype(cp.float64)


timed("cupy_first_array", lambda: cp.zeros(1))
from bench_gpu import make_data_gpu  # noqa: E402
X, y = timed("data", lambda: make_data_gpu(2_000_000, 28, 0))

from dgbdt.dask.pages import PagePlan, make_paged  # noqa: E402
from dgbdt.dask.parts import Part  # noqa: E402
from dgbdt.data.quantize import cuts_from_summaries  # noqa: E402
from dgbdt.data.sketch_device import summarize_blocks_device  # noqa: E402
from dgbdt.objectives.registry import get_objective  # noqa: E402

obj = get_objective("binary:logistic", {})
y64 = timed("astype", lambda: f64(y))
timed("label_stats", lambda: obj.label_stats(y64, None, 0))
s = timed("summary", lambda: summarize_blocks_device([X], None, None, 4096))
cuts = timed("cuts", lambda: cuts_from_summaries(s, 256, None))
part = Part(X, y64, None, None)
plan = PagePlan("lab", None, 1, 511)
timed("pages", lambda: make_paged(part, cuts, "cuda", plan))
from dgbdt.kernels import prebuilt  # noqa: E402
out["modules"] = prebuilt.report()
print(json.dumps(out))
