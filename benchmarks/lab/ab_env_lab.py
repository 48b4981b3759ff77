"""An in-process GPU fit with a switch off and on, alternating (issue 46): ``NAME=0`` against
``NAME=1`` on the issue's data (ROWS x 28, binary:logistic, depth 8, 256 bins), and whether
the two give the same model bytes. For switches read at a fit's start or a shard's first tree
(``DGBDT_ROUTE_COLUMNS``, ``DGBDT_DEVICE_SCALES``, ``DGBDT_CUDA_GRAPHS``).

    python benchmarks/lab/ab_env_lab.py NAME [ROWS] [ROUNDS] [REPEAT]

One JSON line: each side's seconds, medians and stage timers, and the per-round difference.
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, "benchmarks")


def issue_fit(rows: int):
    """The issue's in-process GPU fit: (Dataset of rows x 28 on the GPU, params)."""
    import dgbdt
    from bench_gpu import make_data_gpu
    X, y = make_data_gpu(rows, 28, 0)
    return dgbdt.Dataset(X, label=y), {"objective": "binary:logistic", "max_depth": 8,
                                       "eta": 0.1, "max_bin": 256, "device": "cuda"}


def main():
    import cupy as cp

    import dgbdt

    name = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 32_000_000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    repeat = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    d, params = issue_fit(rows)

    def fit(value: str):
        os.environ[name] = value
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        b = dgbdt.train(params, d, rounds)
        cp.cuda.Device().synchronize()
        return time.perf_counter() - t, b

    fit("0")
    fit("1")
    out = {"switch": name, "rows": rows, "rounds": rounds, "0": [], "1": []}
    models = {}
    for _ in range(repeat):
        for value in ("0", "1"):
            s, b = fit(value)
            out[value].append(round(s, 4))
            out[value + "_timers"] = {k: round(v, 3) for k, v in b.timings.items() if v}
            models[value] = b.save_raw()
    for value in ("0", "1"):
        out[value + "_median"] = round(statistics.median(out[value]), 4)
    out["on_minus_off_ms_a_round"] = round(1000 * (out["1_median"] - out["0_median"]) / rounds, 3)
    out["same_model"] = models["0"] == models["1"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
