"""Is dgbdt's held-out metric gap to XGBoost on a shape the sketch, or noise? (issue 13, item 7)

For several data seeds of one shape (bench_cpu.make_data's formula, CPU, hist trees), train
dgbdt and XGBoost on the same rows and report held-out AUC for: dgbdt with its own cuts,
XGBoost, and dgbdt given XGBoost's cut points (``QuantileDMatrix.get_quantile_cut``; both
libraries bin a value x into ``#{cuts <= x}``). If the last agrees with XGBoost, the cut points
are the only difference between the two models; the spread over seeds says how large a
single-seed gap can be by chance.

    python benchmarks/lab/sketch_gap.py --rows 200000 --depth 6 --rounds 500 --seeds 10
    python benchmarks/lab/sketch_gap.py --rows 400000 --features 256 --depth 8 --rounds 100 --seeds 5
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_cpu import auc, make_data  # noqa: E402

import dgbdt  # noqa: E402
from dgbdt.data.quantize import Cuts  # noqa: E402


def run(args, seed):
    import xgboost as xgb
    n_test = args.rows // 10
    X, y = make_data(args.rows - n_test, args.features, seed)
    Xt, yt = make_data(n_test, args.features, seed + 10_000)
    params = {"objective": "binary:logistic", "max_depth": args.depth, "eta": 0.1,
              "max_bin": args.max_bin, "tree_method": "hist", "nthread": args.threads}
    ours = dgbdt.Dataset(X, y)
    own = auc(yt, dgbdt.train(params, ours, args.rounds).predict(Xt))
    qdm = xgb.QuantileDMatrix(X, y, max_bin=args.max_bin)
    theirs = auc(yt, xgb.train(params, qdm, args.rounds).predict(xgb.DMatrix(Xt)))
    ptrs, values = qdm.get_quantile_cut()
    borrowed = dgbdt.Dataset(X, y)
    mine = borrowed.cuts(args.max_bin)
    # min_values only name the lowest bin's lower edge in the model file; training reads the cuts
    borrowed._cuts[args.max_bin] = Cuts(values=np.asarray(values, np.float32),
                                        ptrs=np.asarray(ptrs, np.int64),
                                        min_values=mine.min_values)
    with_xgb_cuts = auc(yt, dgbdt.train(params, borrowed, args.rounds).predict(Xt))
    return {"seed": seed, "dgbdt_auc": round(own, 6), "xgboost_auc": round(theirs, 6),
            "dgbdt_with_xgboost_cuts_auc": round(with_xgb_cuts, 6),
            "diff": round(own - theirs, 6), "diff_same_cuts": round(with_xgb_cuts - theirs, 6)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=500)
    ap.add_argument("--max-bin", type=int, default=256)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    diffs = []
    for seed in range(args.seeds):
        line = run(args, seed)
        diffs.append(line["diff"])
        print(json.dumps(line), flush=True)
    d = np.asarray(diffs)
    print(json.dumps({"summary": "dgbdt - xgboost auc", "mean": round(float(d.mean()), 6),
                      "std": round(float(d.std(ddof=1)) if d.size > 1 else 0.0, 6),
                      "dgbdt_higher": int((d > 0).sum()), "seeds": int(d.size)}))


if __name__ == "__main__":
    main()
