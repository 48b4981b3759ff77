"""Plot training time against GPU count from bench_multi_gpu.py JSON lines (one PNG).

    python benchmarks/plot_scaling.py benchmarks/results/2026-11-22-scaling-4xH200.jsonl \
        docs/scaling.png

One panel per data shape (rows x features): dgbdt mode="nccl" and xgboost.dask, seconds against
GPUs, with ideal linear scaling from dgbdt's 1-GPU point dashed. Needs matplotlib (not a
dependency of dgbdt).
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(src: str, dst: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, eager = defaultdict(list), defaultdict(list)
    for line in open(src):
        r = json.loads(line)
        if "nccl_s" in r:       # runs with DGBDT_CUDA_GRAPHS=0 drawn apart, dotted
            (runs if r.get("cuda_graphs", True) else eager)[
                (r["rows"], r["features"], r["rounds"])].append(r)
    fig, axes = plt.subplots(1, len(runs), figsize=(5.5 * len(runs), 4.2), squeeze=False)
    for ax, ((rows, feats, rounds), rs) in zip(axes[0], sorted(runs.items())):
        rs = sorted(rs, key=lambda r: r["gpus"])
        g = [r["gpus"] for r in rs]
        ax.plot(g, [r["nccl_s"] for r in rs], "o-", label='dgbdt.dask mode="nccl"')
        off = sorted(eager.get((rows, feats, rounds), []), key=lambda r: r["gpus"])
        if off:
            ax.plot([r["gpus"] for r in off], [r["nccl_s"] for r in off], "o:", color="C0",
                    alpha=0.6, label='dgbdt "nccl", trees without CUDA graphs')
        if all(r.get("xgboost_dask_s") for r in rs):
            ax.plot(g, [r["xgboost_dask_s"] for r in rs], "s-", label="xgboost.dask")
        one = next((r["nccl_s"] for r in rs if r["gpus"] == 1), None)
        if one:
            ax.plot(g, [one / n for n in g], "k--", lw=0.8, label="ideal (dgbdt 1 GPU / n)")
        ax.set_xticks(g)
        ax.set_xlabel(f"GPUs ({rs[0]['device'].replace('NVIDIA ', '')}, one dask-cuda "
                      "worker each)")
        ax.set_ylabel("training time, s")
        ax.set_title(f"{rows / 1e6:g}M x {feats}, {rounds} rounds, depth {rs[0]['depth']}")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
