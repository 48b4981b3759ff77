"""What a GPU training pays before its first tree: dgbdt's Dataset quantization vs XGBoost's
QuantileDMatrix, from the same rows (host numpy or device cupy), same run; one JSON line each.

    python benchmarks/bench_quantize.py                       # 20M x 28 host, 10M x 28 device
    python benchmarks/bench_quantize.py --cases host:20000000x28,device:2000000x256
    python benchmarks/bench_quantize.py --profile host:20000000x28   # cProfile of dgbdt's leg

Issue 13 item 6 asks that quantizing host rows for GPU training cost at most XGBoost's
QuantileDMatrix time from the same host array. Each case times, after a warm-up on 20k rows
(NVRTC/JIT outside the clocks):

* ``dgbdt_s``: ``dgbdt.Dataset(X, label=y)`` and a one-round training on the GPU (the sketch,
  the cuts and the bit-packed pages are built inside ``train``; ``dgbdt_quantize_s`` is its
  quantize stage), minus nothing;
* ``xgboost_s``: ``xgboost.QuantileDMatrix(X, label=y, max_bin)`` and a one-round training
  with ``device="cuda"`` (XGBoost sketches host rows on the CPU and builds its GPU pages in the
  first round: the one-round training is what makes the two comparable);
* ``dgbdt_round_s`` / ``xgboost_round_s``: one more round on the built data, the part of the
  clocks above that is not data preparation (subtract it for the preparation alone).

Times start after a device synchronize and end after one. The data are bench_gpu.py's
Higgs-shaped rows, made on the GPU and copied to the host for host cases (not timed).
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import emit_line, make_data_gpu  # noqa: E402

WARM_ROWS = 20_000


def parse_cases(text: str) -> list[tuple[str, int, int]]:
    """"host:20000000x28,device:10000000x28" -> [("host", 20000000, 28), ...]."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        where, _, shape = item.partition(":")
        rows, _, feats = shape.partition("x")
        if where not in ("host", "device") or not rows.isdigit() or not feats.isdigit():
            raise SystemExit(f"bad case {item!r}: write host:ROWSxFEATURES or "
                             "device:ROWSxFEATURES")
        out.append((where, int(rows), int(feats)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="host:20000000x28,device:10000000x28")
    ap.add_argument("--max-bin", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=2, help="timed runs per leg (the minimum)")
    ap.add_argument("--profile", help="one case: cProfile dgbdt's leg (CUDA_LAUNCH_BLOCKING=1 "
                    "is set, so each launch's GPU time lands on the line that enqueued it)")
    ap.add_argument("--out", help="also append the JSON lines to this file")
    a = ap.parse_args()
    if a.profile:
        os.environ["CUDA_LAUNCH_BLOCKING"] = "1"

    import cupy as cp
    import xgboost as xgb

    import dgbdt

    params = {"objective": "binary:logistic", "max_depth": 8, "max_bin": a.max_bin}
    gpu = params | {"device": "cuda"}
    xparams = params | {"tree_method": "hist", "device": "cuda"}

    def sync():
        cp.cuda.Device().synchronize()

    def clock(fn):
        sync()
        t0 = time.perf_counter()
        result = fn()
        sync()
        return result, time.perf_counter() - t0

    def free():
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()

    def dgbdt_leg(X, y):
        return dgbdt.train(gpu, dgbdt.Dataset(X, label=y), 1, verbose_eval=False)

    def xgb_leg(X, y):
        return xgb.train(xparams, xgb.QuantileDMatrix(X, label=y, max_bin=a.max_bin), 1)

    for where, rows, feats in parse_cases(a.profile or a.cases):
        X, y = make_data_gpu(rows, feats, 0)
        if where == "host":
            X, y = cp.asnumpy(X), cp.asnumpy(y)
        free()
        dgbdt_leg(X[:WARM_ROWS], y[:WARM_ROWS])
        xgb_leg(X[:WARM_ROWS], y[:WARM_ROWS])
        if a.profile:
            pr = cProfile.Profile()
            pr.enable()
            clock(lambda: dgbdt_leg(X, y))
            pr.disable()
            st = pstats.Stats(pr)
            st.sort_stats("tottime").print_stats(30)
            st.print_callers("compileProgram")     # kernels first compiled at this size
            return
        out = {"bench": "quantize", "input": where, "rows": rows, "features": feats,
               "max_bin": a.max_bin,
               "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
               "dgbdt": dgbdt.__version__, "xgboost": xgb.__version__}
        best = {}
        for name, leg in (("dgbdt", dgbdt_leg), ("xgboost", xgb_leg)):
            times = []
            for _ in range(a.repeat):
                model, s = clock(lambda: leg(X, y))
                times.append(s)
                if name == "dgbdt":
                    out["dgbdt_quantize_s"] = round(model.timings["quantize"], 3)
                del model
                free()
            best[name] = min(times)
            out[f"{name}_s"] = round(best[name], 3)
        # one round on data already built: what of the clocks above is not preparation
        ds = dgbdt.Dataset(X, label=y)
        dgbdt.train(gpu, ds, 1, verbose_eval=False)
        out["dgbdt_round_s"] = round(clock(lambda: dgbdt.train(gpu, ds, 1,
                                                                verbose_eval=False))[1], 3)
        ds = None
        free()
        dm = xgb.QuantileDMatrix(X, label=y, max_bin=a.max_bin)
        xgb.train(xparams, dm, 1)
        out["xgboost_round_s"] = round(clock(lambda: xgb.train(xparams, dm, 1))[1], 3)
        dm = None
        free()
        out["dgbdt_over_xgboost"] = round(best["dgbdt"] / best["xgboost"], 3)
        emit_line(out, a.out)
        X = y = None
        free()


if __name__ == "__main__":
    main()
