"""Where the device quantize stage goes (issue 13): 9M x 28 Dataset + 1 round, timed; with
``profile`` as argument, under cProfile (run with CUDA_LAUNCH_BLOCKING=1 so each launch's GPU
time is charged to the Python line that enqueued it)."""
import cProfile
import pstats
import sys
import time

import cupy as cp

sys.path.insert(0, "benchmarks")
from bench_gpu import make_data_gpu  # noqa: E402

import dgbdt  # noqa: E402

X, y = make_data_gpu(10_000_000, 28, 0)
Xtr, ytr = X[:9_000_000], y[:9_000_000]
p = {"objective": "binary:logistic", "max_depth": 8, "device": "cuda"}
dgbdt.train(p, dgbdt.Dataset(Xtr[:20000], label=ytr[:20000]), 1, verbose_eval=False)
if sys.argv[1:] == ["profile"]:
    pr = cProfile.Profile()
    pr.enable()
    b = dgbdt.train(p, dgbdt.Dataset(Xtr, label=ytr), 1, verbose_eval=False)
    cp.cuda.Device().synchronize()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(22)
else:
    for i in range(3):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        b = dgbdt.train(p, dgbdt.Dataset(Xtr, label=ytr), 1, verbose_eval=False)
        cp.cuda.Device().synchronize()
        print(f"Dataset + 1 round: {time.perf_counter() - t:.3f} s, quantize stage "
              f"{b.timings['quantize']:.3f} s")
