"""Where a GPU fit's per-round evaluation goes (in process, one GPU): host timers around each
step of a deferred round's scores, and the same steps run alone, serially, on a fixed model.

    python benchmarks/lab/eval_round_profile.py [rows] [rounds] [metric] [--cprofile]

Part 1 trains with an eval set (a tenth of the rows) and reports, per round, the host time in:
the tree's copy to the host (PendingTree.result), the margins' update (add_tree_margins: the
trees' arrays concatenated, packed, uploaded, the traversal launched), the metric summaries
and the metric values (the host's wait for the scalar). Part 2 times each step alone with a
device synchronize after it, on the trees of a model already trained (the serial cost of
scoring one round, with nothing beside it).
"""
import collections
import json
import os
import statistics
import sys
import time

import cupy as cp

import dgbdt
import dgbdt.engine.evaluation as ev
import dgbdt.model.margins as mg
from dgbdt.tree.device_grower import PendingTree

sys.path.insert(0, os.path.dirname(__file__))
from eval_cost_lab import datasets  # noqa: E402

T = collections.defaultdict(float)
N = collections.Counter()


def timed(owner, name, key):
    fn = getattr(owner, name)

    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            T[key] += time.perf_counter() - t
            N[key] += 1
    setattr(owner, name, wrapper)
    return fn


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows = int(args[0]) if len(args) > 0 else 2_000_000
    rounds = int(args[1]) if len(args) > 1 else 200
    metric = args[2] if len(args) > 2 else "auc"
    dtr, dva = datasets(rows)
    p = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "device": "cuda",
         "eval_metric": metric}
    dgbdt.train(p, dtr, 5, evals=[(dva, "v")], verbose_eval=False)
    for _ in range(2):
        cp.cuda.runtime.deviceSynchronize()
        t = time.perf_counter()
        b0 = dgbdt.train(p, dtr, rounds, verbose_eval=False)
        cp.cuda.runtime.deviceSynchronize()
        no_eval = time.perf_counter() - t
    timed(PendingTree, "result", "tree_to_host")
    timed(mg, "add_tree_margins", "add_tree_margins")
    timed(mg, "_concatenated", "concatenate")
    timed(ev.EvalRows, "summaries", "summaries")
    timed(ev, "values", "values")
    import dgbdt.engine.seam as seam
    timed(seam.LocalSeam, "grow_round", "grow_round")
    for rep in range(2):
        T.clear(), N.clear()
        cp.cuda.runtime.deviceSynchronize()
        t = time.perf_counter()
        b = dgbdt.train(p, dtr, rounds, evals=[(dva, "v")], verbose_eval=False)
        cp.cuda.runtime.deviceSynchronize()
        fit = time.perf_counter() - t
    if "--cprofile" in sys.argv:      # the host's own time by function, one more fit
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        dgbdt.train(p, dtr, rounds, evals=[(dva, "v")], verbose_eval=False)
        cp.cuda.runtime.deviceSynchronize()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(28)
    tm = {k: round(v, 3) for k, v in b.timings.items()}
    print(json.dumps({"part": "fit", "rows": rows, "rounds": rounds, "metric": metric,
                      "fit_no_eval_s": round(no_eval, 3), "fit_eval_s": round(fit, 3),
                      "host_ms_per_round": {k: round(1e3 * v / rounds, 3) for k, v in T.items()},
                      "calls": dict(N), "timers": tm}))
    # part 2: the steps alone, serially, on b0's trees
    booster = b0
    src = ev.DatasetEval(dva, booster)
    from dgbdt.backends.cuda import _device_model
    from dgbdt.metrics.registry import get_metric
    from dgbdt.objectives.registry import get_objective
    obj, metrics = get_objective("binary:logistic"), [get_metric(metric)]
    steps = collections.defaultdict(list)
    sync = cp.cuda.runtime.deviceSynchronize
    trees = booster.trees
    for i in range(len(trees)):
        t0 = time.perf_counter()
        tr, cl = booster.round_trees([i])
        cat = mg._concatenated(tr, cl)
        _device_model(cat[0], cat[1], cat[2], 0)
        sync()
        t1 = time.perf_counter()
        mg.add_tree_margins(src.X, tr, cl, src.margin)
        sync()
        t2 = time.perf_counter()
        s = src.rows.summaries(obj, metrics, src.margin)
        sync()
        t3 = time.perf_counter()
        ev.values(metrics, s)
        t4 = time.perf_counter()
        steps["pack_upload"].append(t1 - t0)
        steps["traverse"].append(t2 - t1)
        steps["summaries"].append(t3 - t2)
        steps["values"].append(t4 - t3)
        steps["all"].append(t4 - t0)
    print(json.dumps({"part": "serial_margins", "ms": {k: round(1e3 * statistics.median(v), 3)
                                                        for k, v in steps.items()}}))


if __name__ == "__main__":
    main()
