"""Where an eval set's cost goes in a Dask fit on GPU workers (the user path's eval set).

``python benchmarks/lab/dask_eval_lab.py [MODE [N]]``: a LocalCUDACluster of N GPU workers
(1), dgbdt.dask.train's MODE ("auto"; "nccl" for the collective path, one rank a worker);
1.8M x 12 training rows and 200k eval rows (bench_gpu's formula) as dask arrays of cupy
chunks (8 each); depth 8, eta 0.1, 200 rounds, auc, no early stopping (every variant trains
200 rounds). Warm fits, alternating, median of 3, of: no eval set; the eval set as the code
stands; and with parts of the per-round evaluation patched out in the workers (the scores
then differ: these only attribute time). One JSON line."""
import json
import statistics
import sys
import time

sys.path.insert(0, "benchmarks")
#: dgbdt.dask.train's mode ("auto" picks "task" for one worker; "nccl": one NCCL rank)
MODE = sys.argv[1] if len(sys.argv) > 1 else "auto"
#: GPU workers (one a GPU); the rows stay 2M in all
WORKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 1


def patch(kind: str) -> None:
    """In the worker: undo earlier patches, then apply ``kind``."""
    from dgbdt.dask import collective, collective_scores, collective_train
    orig = getattr(collective, "_lab_orig", None)
    if orig is None:
        orig = collective._lab_orig = (collective.NcclComm.gather_apply_later,
                                       collective_train._EvalScores.submit_scores)
    collective.NcclComm.gather_apply_later, collective_train._EvalScores.submit_scores = orig
    if kind == "one_rank_gather":       # no all-gather (nor its watched wait) on one rank
        import numpy as np

        def gather_apply_later(self, a, fn, counts=None):
            if self.n_ranks == 1:
                finish = fn(a, np.array([a.shape[0]]))
                return lambda: np.asarray(finish(), dtype=np.float64)
            return orig[0](self, a, fn, counts)
        collective.NcclComm.gather_apply_later = gather_apply_later
    elif kind == "margins_only":        # the eval rows' margins, no metric
        def submit_scores(self, booster, new_trees, objective, metrics):
            if self.X is not None and self.X.shape[0]:
                self.add(self.X, *booster.round_trees(new_trees), self.margin)
            return collective_scores.ScoresLater([lambda: 0.5 for _ in metrics])
        collective_train._EvalScores.submit_scores = submit_scores
    elif kind == "metric_only":         # the metric on unchanged margins
        def submit_scores(self, booster, new_trees, objective, metrics):
            return collective_scores.collective_scores_later(self.comm, self.rows, self.margin,
                                                             objective, metrics)
        collective_train._EvalScores.submit_scores = submit_scores


def main() -> None:
    import dask.array as da
    from dask_cuda import LocalCUDACluster
    from distributed import Client

    import dgbdt.dask as dgd
    from bench_gpu import make_data_gpu

    with LocalCUDACluster(n_workers=WORKERS) as cluster, Client(cluster) as client:
        X, y = make_data_gpu(2_000_000, 12, 0)
        n = 1_800_000
        Xt = da.from_array(X[:n], chunks=(n // 8, -1), asarray=False)
        yt = da.from_array(y[:n], chunks=(n // 8,), asarray=False)
        Xv = da.from_array(X[n:], chunks=(25_000, -1), asarray=False)
        yv = da.from_array(y[n:], chunks=(25_000,), asarray=False)
        dtrain = dgd.DaskDataset(client, Xt, yt)
        dval = dgd.DaskDataset(client, Xv, yv)
        p = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "eval_metric": "auc",
             "device": "cuda"}

        def fit(kind):
            client.run(patch, kind)
            evals = [] if kind == "no_eval" else [(dval, "val")]
            t = time.perf_counter()
            out = dgd.train(client, p, dtrain, 200, evals=evals, verbose_eval=False,
                            mode=MODE)
            return time.perf_counter() - t, out["booster"].timings

        kinds = ["no_eval", "eval", "one_rank_gather", "margins_only", "metric_only"]
        for k in kinds:
            fit(k)
        runs = {k: [] for k in kinds}
        timings = {}
        for _ in range(3):
            for k in kinds:
                s, tm = fit(k)
                runs[k].append(round(s, 3))
                timings[k] = {x: round(v, 3) for x, v in tm.items()
                              if x in ("scores_wait", "evaluation", "boost_loop", "device_wait")}
        out = {"mode": MODE, "workers": WORKERS, **{k: statistics.median(v) for k, v in runs.items()}}
        out.update(runs=runs, timings=timings)
        print(json.dumps(out))


if __name__ == "__main__":
    main()
