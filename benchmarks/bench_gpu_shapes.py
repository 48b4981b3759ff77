"""Issue 13's shape table: bench_gpu.py's in-process legs (dgbdt and XGBoost on one GPU, same
data, same run) over the shapes users train, one JSON line each, then a table.

    python benchmarks/bench_gpu_shapes.py --out benchmarks/results/shapes.jsonl
    python benchmarks/bench_gpu_shapes.py --only small,multiclass

Each shape runs in its own process (bench_gpu.py with --skip dgbdt_host,dask,xgboost_dask and
a short synchronized profile), so one shape's memory or failure does not touch the next.
Targets (issue 13): every shape at most 0.8x XGBoost's time, the headline at most 0.6x, the
small one at most 1.0x; the held-out metric (auc, rmse or accuracy) within 0.001.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

#: name -> (bench_gpu.py arguments, target ratio)
SHAPES = {
    "headline": (["--rows", "10000000", "--rounds", "500", "--depth", "8"], 0.6),
    "regression_deep": (["--rows", "10000000", "--task", "regression", "--depth", "10",
                         "--rounds", "200"], 0.8),
    "missing": (["--rows", "5000000", "--missing", "0.1", "--depth", "8", "--rounds", "500"],
                0.8),
    "wide": (["--rows", "2000000", "--features", "256", "--depth", "8", "--rounds", "100"],
             0.8),
    "multiclass": (["--rows", "2000000", "--task", "multiclass", "--classes", "5",
                    "--depth", "6", "--rounds", "100"], 0.8),
    "small": (["--rows", "200000", "--depth", "6", "--rounds", "500"], 1.0),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help=f"comma list of shapes: {','.join(SHAPES)}")
    ap.add_argument("--profile-rounds", type=int, default=10)
    ap.add_argument("--out", help="also append the JSON lines to this file")
    a = ap.parse_args()
    names = [s.strip() for s in a.only.split(",") if s.strip()] or list(SHAPES)
    unknown = set(names) - set(SHAPES)
    if unknown:
        ap.error(f"--only: unknown shapes {sorted(unknown)}; choose from {list(SHAPES)}")
    rows = []
    for name in names:
        args, target = SHAPES[name]
        cmd = [sys.executable, os.path.join(HERE, "bench_gpu.py"), *args,
               "--skip", "dgbdt_host,dask,xgboost_dask",
               "--profile-rounds", str(a.profile_rounds)]
        print(f"[shapes] {name}: {' '.join(args)}", file=sys.stderr, flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True)
        lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        if r.returncode or not lines:
            sys.stderr.write(r.stderr[-3000:])
            out = {"bench": "gpu_shapes", "shape": name, "error": f"exit {r.returncode}"}
        else:
            out = json.loads(lines[-1]) | {"bench": "gpu_shapes", "shape": name,
                                           "target_ratio": target}
        line = json.dumps(out)
        print(line, flush=True)
        if a.out:
            with open(a.out, "a") as f:
                f.write(line + "\n")
        rows.append(out)
    print("\n| shape | dgbdt s | XGBoost s | ratio | target | metric dgbdt / XGBoost | "
          "predict ratio |", file=sys.stderr)
    print("| --- | --- | --- | --- | --- | --- | --- |", file=sys.stderr)
    for o in rows:
        if "error" in o:
            print(f"| {o['shape']} | {o['error']} | | | | | |", file=sys.stderr)
            continue
        print(f"| {o['shape']} | {o.get('dgbdt_s')} | {o.get('xgboost_s')} | "
              f"{o.get('ratio_dgbdt_over_xgboost')} | {o['target_ratio']} | "
              f"{o.get('metric')} {o.get('dgbdt_auc')} / {o.get('xgboost_auc')} | "
              f"{o.get('ratio_predict_dgbdt_over_xgboost')} |", file=sys.stderr)


if __name__ == "__main__":
    main()
