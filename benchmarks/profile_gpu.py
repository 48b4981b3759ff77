"""Per-kernel GPU time of a few boosting rounds (each launch timed with CUDA events, then
synchronized: slower than a real run, but says which kernel, at which level width, costs what).

    python3 benchmarks/profile_gpu.py [rows]          # default 10M x 28, 10 rounds, depth 8

Prints one line per (kernel, grid.y) and the host time of the seam operations.
"""
import time, sys, os, collections
import numpy as np, cupy as cp
import dgbdt
from dgbdt.backends import cuda as G
from dgbdt.tree import grower
n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
rng = cp.random.default_rng(0)
X = rng.standard_normal((n, 28), dtype=cp.float32)
y = (rng.random(n) < 1 / (1 + cp.exp(-(X[:, 0] * X[:, 1] - X[:, 4] + cp.sin(2 * X[:, 2]))))).astype(cp.float32)
p = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "max_bin": 256}
dgbdt.train(p, dgbdt.Dataset(X[:20000], label=y[:20000]), 2, verbose_eval=False)
stats = collections.defaultdict(lambda: [0, 0.0])
orig = G.kernel
class Timed:
    def __init__(self, k, name): self.k, self.name = k, name
    def __getattr__(self, a): return getattr(self.k, a)
    def __call__(self, grid, block, args, **kw):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(); self.k(grid, block, args, **kw); e.record(); e.synchronize()
        key = (self.name, grid[1] if len(grid) > 1 else 0)
        st = stats[key]; st[0] += 1; st[1] += cp.cuda.get_elapsed_time(s, e) / 1e3
def tk(module, name): return Timed(orig(module, name), name)
G.kernel = tk
host = collections.defaultdict(lambda: [0, 0.0])
def wrap(cls, name):
    f = getattr(cls, name)
    def w(*a, **k):
        cp.cuda.Device().synchronize(); t = time.perf_counter(); r = f(*a, **k)
        cp.cuda.Device().synchronize(); h = host[name]; h[0] += 1; h[1] += time.perf_counter() - t
        return r
    setattr(cls, name, w)
for nm in ("histograms", "apply_splits", "evaluate_splits", "add_leaves", "gradients", "start_tree"):
    wrap(G.CudaBackend, nm)
wrap(grower.Growth, "advance")
from dgbdt.engine.shard import Shard
wrap(Shard, "level_step")
t = time.perf_counter()
b = dgbdt.train(p, dgbdt.Dataset(X, label=y), 10, verbose_eval=False)
print("total 10 rounds (all synced)", round(time.perf_counter() - t, 3))
tot = collections.defaultdict(float)
for k in sorted(stats):
    c, s = stats[k]; tot[k[0]] += s
    print("kernel", k, c, round(s * 1e3 / c, 3), "ms/call")
print({k: round(v * 100, 2) for k, v in tot.items()}, "ms per round (sum/10*1000)")
for k, (c, s) in host.items(): print("host", k, c, round(s * 1e3 / c, 3), "ms/call", round(s * 100, 2), "ms/round")
