"""Where a round's evaluation goes: each step of auc/logloss on one eval set, synchronized.

    python benchmarks/profile_eval.py --device cuda --rows 200000

Times (median of --repeat, milliseconds) the steps the boosting loop runs per round on an
eval set: the new tree's margins (traversal), the metric input (sigmoid), each metric's
summary, and the value of the merged summary. Prints one JSON line.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()

    import dgbdt
    from dgbdt.evaluation import EvalRows, metric_input
    from dgbdt.metric import get_metric

    rng = np.random.default_rng(0)
    n = a.rows
    X = rng.standard_normal((n, 12)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)
    if a.device == "cuda":
        import cupy as xp

        def sync():
            xp.cuda.runtime.deviceSynchronize()
    else:
        xp = np

        def sync():
            pass
    Xd, yd = xp.asarray(X), xp.asarray(y)
    booster = dgbdt.train({"objective": "binary:logistic", "max_depth": 8},
                          dgbdt.Dataset(Xd, label=yd), 2, verbose_eval=False)
    objective = booster.objective
    margin = booster.initial_margin(n, None, like=Xd)
    rows = EvalRows.whole(yd, None)
    auc, ll = get_metric("auc"), get_metric("logloss")
    pred = metric_input(objective, margin + xp.asarray(rng.normal(size=(n, 1))))
    s_auc = auc.summary(yd, pred)
    s_ll = ll.summary(yd, pred)
    steps = {
        "traverse_new_tree": lambda: booster.predict_margin_trees(Xd, [1], margin),
        "metric_input": lambda: metric_input(objective, margin),
        "auc_summary": lambda: auc.summary(yd, pred),
        "auc_value": lambda: auc.value(s_auc),
        "logloss_summary": lambda: ll.summary(yd, pred),
        "logloss_value": lambda: ll.value(s_ll),
        "both_metrics_round": lambda: [m.value(s) for m, s in zip(
            (auc, ll), rows.summaries(objective, (auc, ll), margin))],
    }
    out = {"bench": "profile_eval", "device": a.device, "rows": n}
    for name, fn in steps.items():
        fn()
        sync()
        times = []
        for _ in range(a.repeat):
            t = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t)
        out[name + "_ms"] = round(float(np.median(times)) * 1e3, 3)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
