"""Why a tree is not replayed as a CUDA graph: train a few rounds with dgbdt's DEBUG log on.

    python benchmarks/lab/graph_debug.py [--linear]
"""
import logging
import sys

import cupy as cp
import numpy as np

import dgbdt

logging.basicConfig(level=logging.WARNING)
logging.getLogger("dgbdt").setLevel(logging.DEBUG)
rng = np.random.default_rng(0)
X = cp.asarray(rng.uniform(-1, 1, (20000, 8)).astype(np.float32))
y = X[:, 0] * 2 + X[:, 1]
p = {"max_depth": 4, "linear_tree": "--linear" in sys.argv, "device": "cuda"}
from dgbdt.tree import tree_graph  # noqa: E402
real = tree_graph.TreeGraphs._capture
def capture(self, growth, timers):   # noqa: E302
    out = real(self, growth, timers)
    print("capture:", type(growth).__name__, "ok" if out is not None else "FAILED", flush=True)
    return out
tree_graph.TreeGraphs._capture = capture
dgbdt.train(p, dgbdt.Dataset(X, label=y), 6)
