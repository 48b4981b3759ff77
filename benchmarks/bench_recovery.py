"""What a lost worker costs: dgbdt.dask.train undisturbed, then with a worker process killed
half-way (os._exit, as a SIGKILL; the nanny restarts it), on the same LocalCluster and data,
in the collective and graph modes. One JSON line per mode.

    python benchmarks/bench_recovery.py                      # 600k x 28, 60 rounds, 3 workers
    python benchmarks/bench_recovery.py --rows 100000 --rounds 20

Data are generated on the workers from delayed functions (lineage: Dask recomputes a lost
partition by running its function again). Each line has the undisturbed and disturbed times,
the restarts, and whether the disturbed model is byte-identical to the undisturbed one.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time

from bench_dask_cpu import dask_data

from dgbdt.callback import TrainingCallback


class KillAt(TrainingCallback):
    """A training callback: its worker exits after round ``at``, once (a marker file)."""

    def __init__(self, at: int, victim: str, marker: str):
        self.at, self.victim, self.marker = at, victim, marker

    def after_iteration(self, model, epoch, evals_log):
        from distributed import get_worker
        if (epoch == self.at and get_worker().address == self.victim
                and not os.path.exists(self.marker)):
            open(self.marker, "w").close()
            os._exit(1)
        return False


def _kill_at_level(n: int):
    def patch():
        from dgbdt.engine.seam import LocalSeam
        original, calls = LocalSeam.level, [0]

        def level(self, *args):
            calls[0] += 1
            if calls[0] == n:
                os._exit(1)
            return original(self, *args)
        LocalSeam.level = level
    return patch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=600_000)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--modes", default="collective,graph")
    args = ap.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster

    import dgbdt.dask as dgd
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        X, y = dask_data(args.rows, 2 * args.workers, seed=0)
        Xv, yv = dask_data(args.rows // 10, args.workers, seed=100)
        d = dgd.DaskDataset(client, X, y)
        dv = dgd.DaskDataset(client, Xv, yv)
        p = {"objective": "binary:logistic", "max_depth": args.depth, "eval_metric": "auc"}
        kw = dict(evals=[(dv, "valid")], early_stopping_rounds=10, verbose_eval=False)
        warm = dgd.DaskDataset(client, X[:20000], y[:20000])
        dgd.train(client, p, warm, 2, verbose_eval=False)          # numba compilation
        del warm, da
        for mode in args.modes.split(","):
            t = time.perf_counter()
            ref = dgd.train(client, p, d, args.rounds, mode=mode, **kw)
            undisturbed = time.perf_counter() - t
            victim = sorted(set(d.workers_of_parts()))[-1]
            with tempfile.TemporaryDirectory() as tmp:
                if mode == "graph":      # callbacks run on the client in graph mode
                    client.run(_kill_at_level(args.rounds // 2 * args.depth), workers=[victim])
                    cbs = None
                else:
                    cbs = [KillAt(args.rounds // 2, victim, os.path.join(tmp, "k"))]
                t = time.perf_counter()
                out = dgd.train(client, p, d, args.rounds, mode=mode, callbacks=cbs, **kw)
                disturbed = time.perf_counter() - t
            client.wait_for_workers(args.workers, timeout=120)
            rec = {"bench": "recovery", "mode": mode, "rows": args.rows, "features": 28,
                   "rounds": args.rounds, "depth": args.depth, "workers": args.workers,
                   "threads_per_worker": 1, "undisturbed_s": round(undisturbed, 2),
                   "disturbed_s": round(disturbed, 2), "restarts": out["restarts"],
                   "cost_of_the_loss_s": round(disturbed - undisturbed, 2),
                   "identical_model": out["booster"].save_raw() == ref["booster"].save_raw(),
                   "identical_history": out["history"] == ref["history"],
                   "rounds_trained": out["booster"].num_boosted_rounds(),
                   "host": platform.node(), "cpus": os.cpu_count()}
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
