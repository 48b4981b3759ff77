"""Which kernels a warm GPU round spends its time in (issue 46): an in-process fit on the issue's
data (32M x 28 by default, binary:logistic, depth 8, 256 bins), warmed up, then a second fit
of ROUNDS rounds runs between cudaProfilerStart and Stop, for ncu to time every launch
(CUDA-graph nodes included; no callback, which would make the fit read each round's trees):

    ncu --profile-from-start off --clock-control none --csv \
        --metrics gpu__time_duration.sum,launch__grid_size \
        python benchmarks/lab/round_profile.py [ROWS] [ROUNDS] > k.csv
    python benchmarks/lab/ncu_sum.py k.csv

Without ncu it prints the warm fit's seconds a round (the wall time the kernels sum against).
"""
import json
import sys
import time

sys.path.insert(0, "benchmarks")
sys.path.insert(0, "benchmarks/lab")


def main():
    import cupy as cp

    import dgbdt
    from ab_env_lab import issue_fit

    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 32_000_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    d, params = issue_fit(rows)
    dgbdt.train(params, d, rounds)  # warm: kernels loaded, graphs' shapes seen
    cp.cuda.Device().synchronize()
    cp.cuda.profiler.start()
    t = time.perf_counter()
    dgbdt.train(params, d, rounds)
    cp.cuda.Device().synchronize()
    sec = time.perf_counter() - t
    cp.cuda.profiler.stop()
    print(json.dumps({"rows": rows, "rounds": rounds,
                      "fit_s": round(sec, 4), "ms_a_round": round(1000 * sec / rounds, 3)}),
          file=sys.stderr)


if __name__ == "__main__":
    main()
