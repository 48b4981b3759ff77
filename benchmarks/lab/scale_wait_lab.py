"""What the round's host wait for the gradient maxima costs a GPU fit (issue 46).

The gradients' maxima (max |g|, max h) set each round's fixed-point scale. With
``DGBDT_DEVICE_SCALES=0`` the host reads them before it launches the round's trees, so the
GPU idles from the maxima's end to the next tree's first kernel; by default a replayed tree's
constants are computed from them on the device (dgbdt.tree.tree_graph.TreeGraphs.grow_scaled)
and the host does not wait inside a round. This lab times the same in-process fit both ways,
alternating, and checks that the models are the same bytes.

    python benchmarks/lab/scale_wait_lab.py [ROWS] [ROUNDS] [REPEAT]

One JSON line: the medians and every run's seconds.
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, "benchmarks")


def main():
    import cupy as cp

    import dgbdt
    from bench_gpu import make_data_gpu

    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 32_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    X, y = make_data_gpu(rows, 28, 0)
    d = dgbdt.Dataset(X, label=y)
    params = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "max_bin": 256,
              "device": "cuda"}

    def fit(on_device: bool):
        os.environ["DGBDT_DEVICE_SCALES"] = "1" if on_device else "0"
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        b = dgbdt.train(params, d, rounds)
        cp.cuda.Device().synchronize()
        return time.perf_counter() - t, b

    fit(False)
    fit(True)
    out = {"rows": rows, "rounds": rounds, "host": [], "device": []}
    models = {}
    for _ in range(repeat):
        for key, on_device in (("host", False), ("device", True)):
            s, b = fit(on_device)
            out[key].append(round(s, 4))
            out[key + "_timers"] = {k: round(v, 3) for k, v in b.timings.items() if v}
            models[key] = b.save_raw()
    for key in ("host", "device"):
        out[key + "_median"] = round(statistics.median(out[key]), 4)
    out["saved_per_round_ms"] = round(
        1000 * (out["host_median"] - out["device_median"]) / rounds, 3)
    out["same_model"] = models["host"] == models["device"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
