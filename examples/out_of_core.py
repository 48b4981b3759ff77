"""Out-of-core training: pages beyond device_memory_budget spill (CPU) or stream (GPU).

    python examples/out_of_core.py                 # CPU: 2M x 28, pages spilled to files
    python examples/out_of_core.py --device cuda   # GPU: pages streamed from pinned memory
    python examples/out_of_core.py --rows 200000 --rounds 5

Trains the same data twice, with every page in memory and with a budget of a quarter of the
pages, checks that the two models are the same bytes, and prints where the pages lived and
what streaming moved (booster.memory). See docs/memory.md.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import dgbdt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--factor", type=float, default=4.0, help="pages / budget")
    a = ap.parse_args()

    rng = np.random.default_rng(0)
    X = rng.standard_normal((a.rows, a.features), dtype=np.float32)
    y = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) - X[:, 3] > 0).astype(np.float32)
    d = dgbdt.Dataset(X, label=y)
    params = {"objective": "binary:logistic", "max_depth": 6, "device": a.device}

    t = time.perf_counter()
    in_memory = dgbdt.train(params, d, a.rounds, verbose_eval=False)
    t_in = time.perf_counter() - t
    pages = in_memory.memory["pages_in_memory_bytes"]
    budget = max(1, int(pages / a.factor))
    t = time.perf_counter()
    limited = dgbdt.train({**params, "device_memory_budget": budget}, d, a.rounds,
                          verbose_eval=False)
    t_out = time.perf_counter() - t

    same = limited.save_raw() == in_memory.save_raw()
    print(f"pages: {pages / 2**20:.1f} MiB; budget: {budget / 2**20:.1f} MiB ({a.device})")
    print(f"in memory: {t_in:.2f} s; within the budget: {t_out:.2f} s; same model: {same}")
    print("where the pages lived:", {k: v for k, v in limited.memory.items() if v})
    if not same:
        raise SystemExit("the models differ: please report this as a bug")


if __name__ == "__main__":
    main()
