"""Where gradient-based sampling's time goes on one device: 20M rows, one class, per piece
(CUDA events after a warm-up; median of 5). python benchmarks/lab/sampling_lab.py [rows]"""
import sys
import time

import cupy as cp
import numpy as np

from dgbdt.engine import gradient_sampling as sg
from dgbdt.engine.sampling import uniform

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000_000
rng = cp.random.default_rng(0)
g = rng.standard_normal((n, 1))
h = rng.random((n, 1)) * 0.25


def clock(f, reps=5):
    out = []
    for _ in range(reps + 1):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        f()
        cp.cuda.Device().synchronize()
        out.append(time.perf_counter() - t)
    return round(1e3 * float(np.median(out[1:])), 2)


vmax = float(cp.sqrt(cp.abs(g).max() ** 2 + 0.1 * h.max() ** 2))
q = sg.magnitudes(g[:, 0], h[:, 0], vmax, cp)
hold = sg.Holder(q, cp)
print("magnitudes ms", clock(lambda: sg.magnitudes(g[:, 0], h[:, 0], vmax, cp)))
print("holder (sort + cumsum) ms", clock(lambda: sg.Holder(q, cp)))
print("threshold (3 steps) ms", clock(lambda: sg.threshold(n // 5, hold.sums)))
t = sg.threshold(n // 5, hold.sums)
print("probabilities ms", clock(lambda: sg.probabilities(q, *t, n // 5, cp)))
ids = cp.arange(n, dtype=cp.int64)
print("uniform draws ms", clock(lambda: uniform(cp, 1, 2, 3, ids)))


class S:
    pass


s = S()
s.g, s.h, s.n_rows = g.copy(), h.copy(), n
s.be = type("B", (), {"xp": cp})()
smp = type("Smp", (), {"subsample": 0.2, "seed": 1})()
print("sample() whole ms", clock(lambda: sg.sample([s], smp, 3, n, np.array([3.0]),
                                                   np.array([0.25]), lambda a, op: a)))
