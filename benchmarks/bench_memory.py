"""Peak host memory of ingest + training on a LocalCluster: dgbdt.dask against xgboost.dask.

    python benchmarks/bench_memory.py                       # 20M x 28 float32, 20 rounds
    python benchmarks/bench_memory.py --rows 400000 --rounds 5 --no-save     # smoke test

One leg per way of training, each in its own subprocess with a fresh LocalCluster (2 worker
processes x 1 thread, 10 GiB memory limit each, so Dask neither spills nor pauses):

* ``dgbdt``        DaskDataset(persist=True) (the default) + dgbdt.dask.train, mode "auto";
* ``dgbdt-stream`` DaskDataset(persist=False) + dgbdt.dask.train;
* ``xgboost``      xgboost.dask.DaskQuantileDMatrix + xgboost.dask.train, tree_method "hist".

The data never pass through the client: each partition of X (float32 [rows, 28]) and of the
label is a delayed function of (rows, seed) run on a worker (``x_block``, ``y_block``; the label
function draws the same features again from the seed), so every leg reads exactly the same
values, lazily, as it would read parquet files. Nothing is persisted by the benchmark: what a
leg holds is what its library keeps.

Memory: a thread polls the resident set size (psutil) of every worker process every 50 ms from
before the dataset is built until the training returns, and records the peak of their sum (the
headline), the largest single worker's peak, the sum before the leg (after a warm-up training
on tiny data: imports, numba compilation) and the client process's peak (it runs the scheduler
and the nannies too). ``peak_over_raw`` divides the peak by the raw feature bytes
(rows x 28 x 4). Seconds are wall time on a shared 2-core machine: indicative only.

Each leg prints one JSON line, appended to --out unless --no-save.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import threading
import time

import numpy as np

F = 28
LEGS = ("dgbdt", "dgbdt-stream", "xgboost")
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "results", "2026-11-23-memory-cpu.jsonl")


def _features(rows: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, F), dtype=np.float32)


def x_block(rows: int, seed: int) -> np.ndarray:
    """One partition's features (Higgs-shaped, as bench_cpu.make_data)."""
    return _features(rows, seed)


def y_block(rows: int, seed: int) -> np.ndarray:
    """One partition's labels: the features drawn again from the seed, then a noisy logit."""
    X = _features(rows, seed)
    logit = (X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * X[:, 3] ** 2 - X[:, 4]
             + 0.3 * X[:, 5:15].sum(axis=1))
    u = np.random.default_rng(seed + 1_000_003).random(rows)
    return (u < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)


def lazy_data(rows: int, parts: int, seed: int):
    """(X, y) dask arrays whose partitions are computed on the workers when needed."""
    import dask
    import dask.array as da
    sizes = [rows // parts + (1 if i < rows % parts else 0) for i in range(parts)]
    X = da.concatenate([da.from_delayed(dask.delayed(x_block, pure=True)(r, seed + i),
                                        (r, F), np.float32) for i, r in enumerate(sizes)])
    y = da.concatenate([da.from_delayed(dask.delayed(y_block, pure=True)(r, seed + i),
                                        (r,), np.float32) for i, r in enumerate(sizes)])
    return X, y


class Poller:
    """Polls the RSS of the worker processes (and of this one) every ``interval`` seconds."""

    def __init__(self, pids, interval: float = 0.05):
        import psutil
        self.procs = [psutil.Process(p) for p in pids]
        self.me = psutil.Process(os.getpid())
        self.interval = interval
        self.peak_sum = self.peak_one = self.peak_client = 0
        self.samples = 0
        self.phase, self.phase_peaks = None, {}     # the peak of the sum in each phase
        self.trace = []                             # (seconds, sum of RSS)
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        rss = []
        for p in self.procs:
            try:
                rss.append(p.memory_info().rss)
            except Exception:  # noqa: BLE001  (a worker restarting: skip it this time)
                rss.append(0)
        return rss, self.me.memory_info().rss

    def _run(self):
        while not self._stop.is_set():
            rss, mine = self.sample()
            self.peak_sum = max(self.peak_sum, sum(rss))
            if self.phase is not None:
                self.phase_peaks[self.phase] = max(self.phase_peaks.get(self.phase, 0), sum(rss))
            self.trace.append((round(time.perf_counter() - self.t0, 2), sum(rss)))
            self.peak_one = max(self.peak_one, max(rss))
            self.peak_client = max(self.peak_client, mine)
            self.samples += 1
            self._stop.wait(self.interval)

    def enter(self, phase: str) -> None:
        """Later samples count to ``phase`` (e.g. "ingest", "train")."""
        self.phase = phase

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        rss, mine = self.sample()       # the last moment counts too
        self.peak_sum = max(self.peak_sum, sum(rss))
        self.peak_client = max(self.peak_client, mine)


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_leg(a) -> dict:
    """One leg in this process: a fresh cluster, a warm-up, then the measured ingest+train."""
    from distributed import Client, LocalCluster

    params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.3,
              "max_bin": 256, "nthread": 1}
    with LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                      memory_limit=a.memory_limit, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        client.wait_for_workers(a.workers)
        pids = list(client.run(os.getpid).values())
        Xw, yw = lazy_data(20_000, 2 * a.workers, 10_000_000)
        train = _leg(a.leg)
        train(client, params, Xw, yw, 2, lambda phase: None)   # warm-up: imports, numba
        client.run(_trim)
        time.sleep(1.0)
        X, y = lazy_data(a.rows, a.parts, 0)
        with Poller(pids) as poll:
            base_sum = sum(poll.sample()[0])
            base_client = poll.sample()[1]
            t0 = time.perf_counter()
            model, ingest_s, mode = train(client, params, X, y, a.rounds, poll.enter)
            total_s = time.perf_counter() - t0
        end_sum = sum(poll.sample()[0])
    if a.trace:
        with open(f"{a.trace}.{a.leg}.json", "w") as f:
            json.dump(poll.trace, f)
    raw = a.rows * F * 4
    out = {"bench": "memory", "leg": a.leg, "label": a.label, "rows": a.rows, "features": F,
           "partitions": a.parts, "workers": a.workers, "threads_per_worker": 1,
           "rounds": a.rounds, "depth": a.depth, "raw_bytes": raw,
           "workers_peak_bytes": poll.peak_sum,
           "peak_over_raw": round(poll.peak_sum / raw, 3),
           "workers_baseline_bytes": base_sum,
           "ingest_peak_bytes": poll.phase_peaks.get("ingest", 0),
           "train_peak_bytes": poll.phase_peaks.get("train", 0),
           "peak_minus_baseline_over_raw": round((poll.peak_sum - base_sum) / raw, 3),
           "largest_worker_peak_bytes": poll.peak_one,
           "workers_after_training_bytes": end_sum,
           "client_peak_bytes": poll.peak_client, "client_baseline_bytes": base_client,
           "polls": poll.samples, "ingest_s": round(ingest_s, 2),
           "train_s": round(total_s - ingest_s, 2), "total_s": round(total_s, 2),
           "mode": mode, "model_sha256": hashlib.sha256(model if isinstance(model, bytes)
                                                          else model.encode()).hexdigest()[:16],
           "commit": _commit(), "machine": f"{platform.machine()} {os.cpu_count()} cores, "
                                           f"{_ram_gib()} GiB, shared"}
    import dgbdt
    out["dgbdt"] = dgbdt.__version__
    try:
        import xgboost
        out["xgboost"] = xgboost.__version__
    except ImportError:
        out["xgboost"] = None
    return out


def _ram_gib() -> int:
    import psutil
    return round(psutil.virtual_memory().total / 2**30)


def _trim():
    """Give freed heap memory back to the OS on a worker before the measured leg."""
    import ctypes
    import gc
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def _leg(leg: str):
    """The leg's ingest + training: returns (model bytes, ingest seconds, mode)."""
    if leg in ("dgbdt", "dgbdt-stream"):
        def train(client, params, X, y, rounds, enter):
            import dgbdt.dask as dgd
            enter("ingest")
            t0 = time.perf_counter()
            d = dgd.DaskDataset(client, X, y, persist=leg == "dgbdt")
            ingest = time.perf_counter() - t0
            enter("train")      # the sketch and the pages are built here, in train
            out = dgd.train(client, params, d, rounds, verbose_eval=False)
            return out["booster"].save_raw(), ingest, out["mode"]
        return train

    def train(client, params, X, y, rounds, enter):
        import xgboost as xgb
        import xgboost.dask  # noqa: F401  (a submodule, not imported by xgboost itself)
        enter("ingest")
        t0 = time.perf_counter()
        dm = xgb.dask.DaskQuantileDMatrix(client, X, y, max_bin=params["max_bin"])
        ingest = time.perf_counter() - t0
        enter("train")      # the quantile matrix itself is built on the workers in train
        bst = xgb.dask.train(client, {**params, "tree_method": "hist"}, dm, rounds)["booster"]
        return bytes(bst.save_raw(raw_format="ubj")), ingest, "hist"
    return train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--parts", type=int, default=40, help="partitions of the data")
    ap.add_argument("--memory-limit", default="10GiB", help="per worker")
    ap.add_argument("--legs", default=",".join(LEGS), help=f"a comma list of {LEGS}")
    ap.add_argument("--label", default="", help="a tag for the lines, e.g. before/after")
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--trace", help="write each leg's (seconds, sum of worker RSS) samples to "
                                    "TRACE.<leg>.json")
    ap.add_argument("--leg", help=argparse.SUPPRESS)     # internal: run one leg here
    a = ap.parse_args()
    if a.leg:
        print(json.dumps(run_leg(a)), flush=True)
        return
    for leg in a.legs.split(","):
        if leg not in LEGS:
            raise SystemExit(f"unknown leg {leg!r}; choose from {LEGS}")
        cmd = [sys.executable, os.path.abspath(__file__), "--leg", leg] + sys.argv[1:]
        done = subprocess.run(cmd, capture_output=True, text=True)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode != 0 or not lines:
            sys.stderr.write(done.stderr[-4000:])
            raise SystemExit(f"leg {leg} failed (exit {done.returncode})")
        print(lines[-1], flush=True)
        if not a.no_save:
            with open(a.out, "a") as f:
                f.write(lines[-1] + "\n")


if __name__ == "__main__":
    main()
