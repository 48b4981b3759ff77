"""Binary auc on a GPU, per round of an eval set split over 2 ranks: RocRuns (sort, runs,
merge sort, value) against SortedScores (sort; the value in one kernel); same value checked.

    python benchmarks/lab/auc_lab.py          # one JSON line per size; needs cupy

Both sides in one process, each rank's half summarized in turn; "value" includes the merge
and the host copies a training round pays. Milliseconds, median of 30 after a warm-up.
"""
import json
import time

import numpy as np


def main():
    import cupy as cp
    from dgbdt.metrics.registry import AUC, RocRuns
    from dgbdt.metrics.sorted_scores import SortedScores
    auc = AUC()
    for n in (100_000, 400_000, 2_000_000):
        rng = cp.random.default_rng(0)
        p = rng.random(n)
        y = (rng.random(n) < p).astype(cp.float64)
        pos = (y == 1).astype(cp.int64)
        halves = [(p[:n // 2], pos[:n // 2]), (p[n // 2:], pos[n // 2:])]
        yh, ph = y[:n // 2], p[:n // 2]

        def old():
            runs = [RocRuns.of(a, b, 1 - b) for a, b in halves]
            return auc.value([runs[0] + runs[1]])

        def new():
            s = [SortedScores.of(a, b, 1 - b) for a, b in halves]
            return auc.value([s[0] + s[1]])

        def summary_only():        # what a round's summary costs now (labels cached)
            return [auc.summary(yh, ph)]

        out = {"rows": n}
        for name, fn in (("runs", old), ("sorted", new), ("summary_now", summary_only)):
            fn()
            cp.cuda.Device().synchronize()
            ts = []
            for _ in range(30):
                t = time.perf_counter()
                v = fn()
                cp.cuda.Device().synchronize()
                ts.append(time.perf_counter() - t)
            out[name + "_ms"] = round(1e3 * float(np.median(ts)), 3)
            if name != "summary_now":
                out[name + "_value"] = v
        out["same"] = out["runs_value"] == out["sorted_value"]
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
