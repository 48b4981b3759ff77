"""Where the time between a collective rank's end and the client's result goes (issue 46:
0.1 s more at 1 GPU than at 2). Instruments the client's wait (dgbdt.dask.collective_train)
and the workers' garbage collections; prints one JSON line a fit."""
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_gpu import TRAIN_SEED, dask_data, split_rows  # noqa: E402


def gc_on():
    gc.__dict__.setdefault("_lab", [])

    def cb(phase, info, _t=[0.0]):
        if phase == "start":
            _t[0] = time.time()
        else:
            gc._lab.append((info["generation"], _t[0], time.time() - _t[0]))
    if not any(getattr(c, "_lab", False) for c in gc.callbacks):
        cb._lab = True
        gc.callbacks.append(cb)
    gc._lab.clear()


def gc_seen():
    return [(g, t, round(d, 4)) for g, t, d in gc._lab if d > 0.002]


def main():
    from dask_cuda import LocalCUDACluster
    from distributed import Client, get_task_stream

    from dgbdt import dask as dgd
    from dgbdt.dask import collective_train as ct
    marks = {}
    wait0, outcome0 = ct._wait, ct.outcome

    def wait(client, futures, seconds, return_when):
        wait0(client, futures, seconds, return_when)
        marks.setdefault("client_sees_done", time.time())

    def outcome(f):
        marks.setdefault("result_start", time.time())
        r = outcome0(f)
        marks.setdefault("result_end", time.time())
        return r
    ct._wait, ct.outcome = wait, outcome
    import distributed

    def timed(cls, name):
        f0 = getattr(cls, name)

        def f(*args, **kw):
            t = time.perf_counter()
            try:
                return f0(*args, **kw)
            finally:
                marks[f"{cls.__name__}.{name}"] = round(
                    marks.get(f"{cls.__name__}.{name}", 0) + time.perf_counter() - t, 4)
        setattr(cls, name, f)
    timed(distributed.Client, "cancel")
    timed(distributed.Variable, "delete")
    timed(distributed.Event, "clear")
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 35_555_556
    for n_gpus in [int(x) for x in sys.argv[1].split(",")]:
        with LocalCUDACluster(n_workers=n_gpus, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            Xd, yd = dask_data(client, split_rows(rows - rows // 10, 8), 28, TRAIN_SEED)
            p = {"objective": "binary:logistic", "max_depth": 8, "device": "cuda"}
            for i in range(3):
                client.run(gc_on)
                marks.clear()
                t0 = time.time()
                with get_task_stream(client) as ts:
                    b = dgd.train(client, p, dgd.DaskDataset(client, Xd, yd), 200,
                                  mode="nccl", verbose_eval=False)["booster"]
                t1 = time.time()
                rank_end = max(ss["stop"] for r in ts.data for ss in r["startstops"]
                               if "rank" in r["key"] and ss["action"] == "compute")
                print(json.dumps({
                    "gpus": n_gpus, "fit": i, "fit_s": round(t1 - t0, 3),
                    "rank_task": round(b.timings["rank_task"], 3),
                    "rank_end_to_result": round(marks["result_start"] - rank_end, 4),
                    "result_fetch": round(marks["result_end"] - marks["result_start"], 4),
                    "result_to_return": round(t1 - marks["result_end"], 4),
                    "worker_gc": {w: [(g, round(t - t0, 3), d) for g, t, d in v]
                                  for w, v in client.run(gc_seen).items()},
                    "client_setup": round(b.timings["client_setup"], 3),
                    "client_ranks": round(b.timings["client_ranks"], 3),
                    "cleanup": {k: v for k, v in marks.items() if "." in k}}), flush=True)


if __name__ == "__main__":
    main()
