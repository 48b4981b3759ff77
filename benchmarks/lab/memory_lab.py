"""Peak device memory of the headline job by sketch group size (issue 13, item 5).

For each CHUNK_VALUES (values per feature group of the device sketch), in a fresh pool: the
device-wide peak of Dataset construction + 20 rounds of training (depth 8) on 9M x 28, the
quantize stage time, and the bytes the shard arrays hold. XGBoost's peak for the same job too.
"""
import gc
import json
import os
import sys
import time
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench_gpu import PeakMemory, make_data_gpu  # noqa: E402

import dgbdt  # noqa: E402
from dgbdt.data import sketch_device  # noqa: E402

ROUNDS = int(os.environ.get("LAB_ROUNDS", 20))
PARAMS = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "max_bin": 256,
          "device": "cuda"}


def free():
    gc.collect()
    cp.get_default_memory_pool().free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()


def main():
    X, y = make_data_gpu(10_000_000, 28, 0)
    n = 9_000_000
    Xtr, ytr = X[:n], y[:n]
    # warm-up (compilation)
    dgbdt.train(PARAMS, dgbdt.Dataset(Xtr[:20000], label=ytr[:20000]), 2, verbose_eval=False)
    free()
    rows = []
    for chunk in (1 << 26, 1 << 25, 1 << 24, 1 << 23):
        sketch_device.CHUNK_VALUES = chunk
        free()
        cp.cuda.Device().synchronize()
        with PeakMemory(cp) as mem:
            t0 = time.perf_counter()
            d = dgbdt.Dataset(Xtr, label=ytr)
            b = dgbdt.train(PARAMS, d, ROUNDS, verbose_eval=False)
            cp.cuda.Device().synchronize()
            s = time.perf_counter() - t0
        row = {"chunk_values": chunk, "peak_mib": mem.mib, "seconds": round(s, 3),
               "stages": {k: round(v, 3) for k, v in b.timings.items()}}
        rows.append(row)
        print(json.dumps(row), flush=True)
        del d, b
    free()
    try:
        import xgboost as xgb
        xgb.train({"tree_method": "hist", "device": "cuda", "max_depth": 8,
                   "objective": "binary:logistic"},
                  xgb.QuantileDMatrix(Xtr[:20000], label=ytr[:20000]), 2)
        free()
        with PeakMemory(cp) as mem:
            xgb.train({"tree_method": "hist", "device": "cuda", "max_depth": 8,
                       "objective": "binary:logistic", "eta": 0.1},
                      xgb.QuantileDMatrix(Xtr, label=ytr, max_bin=256), ROUNDS)
            cp.cuda.Device().synchronize()
        rows.append({"xgboost_peak_mib": mem.mib})
        print(json.dumps(rows[-1]))
    except ImportError:
        pass
    with open(os.path.join(os.environ.get("OUT", "/tmp"), "memory_lab.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
