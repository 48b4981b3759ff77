"""What an eval set costs the collective ranks' rounds (mode="nccl", several GPUs), and where.

    python benchmarks/lab/rank_eval_lab.py [gpus] [train_rows] [rounds] [--cprofile]

On a LocalCUDACluster of ``gpus`` workers (bench_gpu.py's Higgs-shaped rows, generated on the
workers' GPUs, 4 partitions a worker; an eval set of a tenth of the rows, 2 partitions a
worker), the same training three ways, each after a warm-up: no eval set; auc on the eval set
(the sorted rows gathered); logloss (exact sums all-reduced). For the eval fits, host timers
installed on every worker (client.run) around each step of a rank's scores: the tree's copy to
the host, the margins' update, the local summaries, the gather (its wait included), the merged
value, and the ``grow_round`` call that enqueues a round's trees. One JSON line a fit with
rank 0's stage timers and the steps' milliseconds a round. ``--cprofile``: rank 0's host time
by function in the auc fit (its training thread, wrapped through ``train_rank``).
"""
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_gpu import dask_data, split_rows  # noqa: E402



def _state() -> dict:
    """The lab's timers in the worker's process (on a module: the functions that client.run
    sends are copied with their globals, so plain globals would not be shared between them)."""
    import dgbdt
    if not hasattr(dgbdt, "_rank_eval_lab"):
        dgbdt._rank_eval_lab = {"T": collections.defaultdict(float),
                                "N": collections.Counter(), "profile": {}}
    return dgbdt._rank_eval_lab


def install(cprofile: bool) -> None:
    """On a worker: host timers around a rank's scoring steps (module attributes replaced)."""
    import dgbdt.dask.collective as co
    import dgbdt.dask.collective_scores as cs
    import dgbdt.dask.collective_train as ct
    import dgbdt.engine.evaluation as ev
    import dgbdt.model.margins as mg
    from dgbdt.tree.device_grower import PendingTree
    st = _state()
    T, N, PROFILE = st["T"], st["N"], st["profile"]

    def timed(owner, name, key):
        fn = getattr(owner, name, None)
        if fn is None or getattr(fn, "_lab", False):     # (not in this commit's code)
            return

        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                T[key] += time.perf_counter() - t
                N[key] += 1
        wrapper._lab = True
        setattr(owner, name, wrapper)

    timed(PendingTree, "result", "tree_to_host")
    timed(mg, "add_tree_margins", "add_tree_margins")
    timed(ev.EvalRows, "summaries", "summaries")
    timed(co.Communicator, "allgather_rows", "gather")
    timed(co.Communicator, "sum_exact", "sum_exact")
    timed(cs, "_sorted_value", "merged_value")
    timed(ct, "collective_scores", "collective_scores")
    # since the scores' collectives are queued (read two rounds behind): submit, then read
    timed(co.NcclComm, "gather_apply_later", "gather_queue")
    timed(co.NcclComm, "sum_exact_later", "sum_exact_queue")
    timed(cs, "_sorted_later", "merged_value_queue")
    timed(ct, "collective_scores_later", "collective_scores_queue")
    timed(cs.ScoresLater if hasattr(cs, "ScoresLater") else None, "result", "scores_read")
    timed(ct.CollectiveSeam, "grow_round", "grow_round")
    if cprofile and not getattr(ct.train_rank, "_lab", False):
        inner = ct.train_rank

        def profiled(comm, *a, **k):
            if comm.rank != 0 or not PROFILE.get("on"):
                return inner(comm, *a, **k)
            import cProfile
            import io
            import pstats
            prof = cProfile.Profile()
            prof.enable()
            try:
                return inner(comm, *a, **k)
            finally:
                prof.disable()
                s = io.StringIO()
                pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(30)
                PROFILE["text"] = s.getvalue()
        profiled._lab = True
        ct.train_rank = profiled


def reset(profile_on: bool = False) -> None:
    st = _state()
    st["T"].clear(), st["N"].clear()
    st["profile"].clear()
    st["profile"]["on"] = profile_on


def collect() -> dict:
    st = _state()
    return {"ms": {k: round(v * 1e3, 2) for k, v in st["T"].items()}, "calls": dict(st["N"]),
            "profile": st["profile"].get("text")}


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    gpus = int(args[0]) if args else 2
    rows = int(args[1]) if len(args) > 1 else 8_000_000
    rounds = int(args[2]) if len(args) > 2 else 200
    cprofile = "--cprofile" in sys.argv
    cpu = "--cpu" in sys.argv       # a check of the lab itself on CPU workers (mode="collective")
    from distributed import Client, LocalCluster

    from dgbdt import dask as dgd
    if cpu:
        cluster = LocalCluster(n_workers=gpus, threads_per_worker=1, dashboard_address=":0")
    else:
        from dask_cuda import LocalCUDACluster
        cluster = LocalCUDACluster(n_workers=gpus, dashboard_address=":0")
    with cluster, Client(cluster) as client:
        if cpu:
            import dask.array as da
            X = da.random.random((rows, 28), chunks=rows // (4 * gpus)).astype("float32")
            y = (X[:, 0] > 0.5).astype("float32")
            Xe = da.random.random((rows // 10, 28), chunks=rows // (20 * gpus)).astype("float32")
            ye = (Xe[:, 0] > 0.5).astype("float32")
            X, y, Xe, ye = client.persist([X, y, Xe, ye])
        else:
            X, y = dask_data(client, split_rows(rows, 4 * gpus), 28, 11)
            Xe, ye = dask_data(client, split_rows(rows // 10, 2 * gpus), 28, 99)
        base = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1,
                "device": "cpu" if cpu else "cuda"}
        mode = "collective" if cpu else "nccl"
        legs = [("none", None), ("auc", "auc"), ("logloss", "logloss")]
        for name, metric in legs:                     # warm-up: kernels, communicators
            p = dict(base, **({"eval_metric": metric} if metric else {}))
            dgd.train(client, p, dgd.DaskDataset(client, X, y), 3,
                      evals=[(dgd.DaskDataset(client, Xe, ye), "v")] if metric else (), mode=mode,
                      verbose_eval=False)
        client.run(install, cprofile)
        for name, metric in legs + [("auc_again", "auc"), ("none_again", None)]:
            p = dict(base, **({"eval_metric": metric} if metric else {}))
            client.run(reset, cprofile and name == "auc")
            d = dgd.DaskDataset(client, X, y)
            ev = [(dgd.DaskDataset(client, Xe, ye), "v")] if metric else ()
            t = time.perf_counter()
            out = dgd.train(client, p, d, rounds, evals=ev, mode=mode, verbose_eval=False)
            fit = time.perf_counter() - t
            b = out["booster"]
            seen = client.run(collect)
            line = {"lab": "rank_eval", "gpus": gpus, "rows": rows, "rounds": rounds,
                    "leg": name, "fit_s": round(fit, 3),
                    "timers": {k: round(v, 3) for k, v in b.timings.items()},
                    "ms_per_round": {w: {k: round(v / rounds, 3) for k, v in s["ms"].items()}
                                     for w, s in seen.items()}}
            print(json.dumps(line), flush=True)
            for w, s in seen.items():
                if s["profile"]:
                    print(f"--- cProfile of rank 0 ({w}), leg {name}\n{s['profile']}", flush=True)


if __name__ == "__main__":
    main()
