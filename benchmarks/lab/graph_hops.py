"""Where graph mode's time per tree level goes (issue 24): three probes, one CPU LocalCluster each.

- ``hop W``: the floor Dask itself sets. A chain of all-gather steps, one task per worker a step,
  each taking every worker's previous result (as a level's histogram task takes every worker's
  partials): milliseconds per step with 8-byte and 2 MB payloads, with distributed's default
  batched-send intervals and with them set to 0.
- ``probe W``: graph vs collective mode on tiny data (4,000 rows, depth 6, 10 rounds), so the
  time is all per-level overhead: milliseconds per level at 256 and 16 bins.
- ``stream W``: graph mode's task stream on the same tiny data: compute and transfer time per key
  prefix, and the gap between the last input of a level task finishing and the task starting.

    python benchmarks/lab/graph_hops.py hop 2
    python benchmarks/lab/graph_hops.py probe 4
"""
import collections
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_dask_cpu import dask_data  # noqa: E402
from distributed import Client, LocalCluster, get_task_stream, wait  # noqa: E402

from dgbdt import dask as dgd  # noqa: E402

ROUNDS, DEPTH = 10, 6


def _step(*xs):
    return xs[0] if xs else 0


def _chain(client, W, steps, nbytes):
    workers = sorted(client.scheduler_info()["workers"])[:W]
    prev = [client.submit(np.zeros, nbytes // 8, workers=[w], pure=False) for w in workers]
    wait(prev)
    t = time.perf_counter()
    for _ in range(steps):
        prev = [client.submit(_step, *prev, workers=[w], allow_other_workers=False, pure=False)
                for w in workers]
    wait(prev)
    return 1000 * (time.perf_counter() - t) / steps


def _set_intervals(client, seconds):
    def on_scheduler(dask_scheduler):
        for comm in dask_scheduler.stream_comms.values():
            comm.interval = seconds

    def on_worker(dask_worker):
        dask_worker.batched_stream.interval = seconds

    client.run_on_scheduler(on_scheduler)
    client.run(on_worker)


def hop(client, W):
    _chain(client, W, 20, 8)
    for label, interval in (("default", None), ("interval 0", 0.0)):
        if interval is not None:
            _set_intervals(client, interval)
        for nbytes in (8, 2_000_000):
            print(json.dumps({"probe": "hop", "workers": W, "payload_bytes": nbytes,
                              "intervals": label,
                              "ms_per_step": round(_chain(client, W, 100, nbytes), 2)}), flush=True)


def _params(max_bin):
    return {"objective": "binary:logistic", "max_depth": DEPTH, "max_bin": max_bin, "nthread": 1}


def probe(client, W):
    X, y = dask_data(4000, 2 * W, 0)
    wait([X, y])
    for mode in ("graph", "collective"):
        for max_bin in (256, 16):
            dgd.train(client, _params(max_bin), dgd.DaskDataset(client, X, y), 2, mode=mode)
            data = dgd.DaskDataset(client, X, y)
            t = time.perf_counter()
            dgd.train(client, _params(max_bin), data, ROUNDS, mode=mode)
            s = time.perf_counter() - t
            print(json.dumps({"probe": "levels", "workers": W, "mode": mode, "max_bin": max_bin,
                              "s": round(s, 3),
                              "ms_per_level": round(1000 * s / (ROUNDS * DEPTH), 2)}), flush=True)


def stream(client, W):
    X, y = dask_data(4000, 2 * W, 0)
    wait([X, y])
    dgd.train(client, _params(256), dgd.DaskDataset(client, X, y), 2, mode="graph")
    data = dgd.DaskDataset(client, X, y)
    with get_task_stream(client) as ts:
        t = time.perf_counter()
        dgd.train(client, _params(256), data, ROUNDS, mode="graph")
        s = time.perf_counter() - t
    print("workers", W, "ms per level", round(1000 * s / ROUNDS / DEPTH, 2))
    spans = collections.defaultdict(list)
    computed = {}
    for record in ts.data:
        key = str(record["key"])
        prefix = key.split("-t")[0] if key.startswith("dgbdt-") else key.rsplit("-", 1)[0][:30]
        for ss in record["startstops"]:
            spans[(prefix, ss["action"])].append(1000 * (ss["stop"] - ss["start"]))
            if ss["action"] == "compute":
                computed[key] = (ss["start"], ss["stop"])
    for (prefix, action), ms in sorted(spans.items()):
        print(f"{action:>14} {prefix:<32} n={len(ms):<5} mean {np.mean(ms):7.3f} ms"
              f"  total {sum(ms) / 1000:6.3f} s")
    gaps = []
    for key, (start, _) in computed.items():
        parts = key.split("-")
        if not key.startswith("dgbdt-hist-t") or len(parts) < 4 or not parts[3][1:].isdigit():
            continue
        tree, level = parts[2], int(parts[3][1:])
        if level == 0:
            continue
        before = [v[1] for k, v in computed.items() if k.startswith(f"dgbdt-hist-{tree}-L{level - 1}-")]
        if before:
            gaps.append(1000 * (start - max(before)))
    if gaps:
        print(f"gap from a level's last input to its task's start: median {np.median(gaps):.2f} ms,"
              f" mean {np.mean(gaps):.2f} ms")


def main():
    what, W = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2
    with LocalCluster(n_workers=W, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        {"hop": hop, "probe": probe, "stream": stream}[what](client, W)


if __name__ == "__main__":
    main()
