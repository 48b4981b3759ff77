"""Out-of-core on one GPU: pages streamed at 4x the device budget vs in-core, and XGBoost's
external memory on the same rows, in one run; one JSON line.

    python benchmarks/bench_ooc.py                       # 20M x 28, 100 rounds, depth 8
    python benchmarks/bench_ooc.py --rows 2000000 --rounds 20 --out results.jsonl
    python benchmarks/bench_ooc.py --subsample 0.2 --sampling-method gradient_based

Legs (all from the same host float32 rows, the out-of-core setting: the raw data is not on the
GPU):
* dgbdt_incore: dgbdt.train(device="cuda"), every page on the GPU;
* dgbdt_ooc: the same with device_memory_budget = in-core page bytes / --factor: pages beyond
  it live in pinned host memory and stream through the GPU once per pass (level, tree end);
* xgboost_incore: QuantileDMatrix built from the rows copied to the GPU;
* xgboost_extmem_<r>: ExtMemQuantileDMatrix over --batches host batches with
  cache_host_ratio r (1.0: every page on the host; 0.75: a quarter on the GPU, as dgbdt's
  budget at factor 4) and min_cache_page_bytes=1, so XGBoost keeps one cache page per batch
  and streams them (by default it joins pages up to 1/16 of the GPU's memory and a cache of
  one page stays on the GPU: not external memory at this size).
With --subsample < 1 every leg samples rows alike (XGBoost too) and dgbdt's streamed rounds
read the pages once a tree (dgbdt.engine.sampled_rounds) instead of once a level; the leg
dgbdt_incore_unsampled (in core, no sampling) gives the accuracy the sampling costs.
Times: "<leg>_s" the whole call (page / DMatrix building included), "<leg>_train_s" the
training alone (dgbdt: less its page building; XGBoost: xgb.train). Throughput ratios use
the training alone. dgbdt_ooc also reports bytes moved per pass and the host-to-device rate its
copies achieved (CUDA events around each copy). "ooc_identical" says whether the streamed model
is byte-identical to the in-core one.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cpu import auc  # noqa: E402
from bench_gpu import emit_line, make_data_gpu, run_leg, stages  # noqa: E402


def h2d_gb_per_s(cp, nbytes: int = 1 << 29) -> float:
    """Pinned host-to-device copy rate (the link's ceiling for streamed pages)."""
    h = np.frombuffer(cp.cuda.alloc_pinned_memory(nbytes), np.uint8, nbytes)
    h[:] = 1
    d = cp.empty(nbytes, cp.uint8)
    d.set(h)
    best = float("inf")
    for _ in range(3):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        d.set(h)
        cp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t)
    return round(nbytes / best / 1e9, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000_000, help="training rows")
    ap.add_argument("--features", type=int, default=28, help="at least 15")
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--max-bin", type=int, default=256)
    ap.add_argument("--factor", type=float, default=4.0, help="pages / device budget")
    ap.add_argument("--batches", type=int, default=16, help="XGBoost iterator batches")
    ap.add_argument("--xgb-ratios", default="1.0,0.75", help="cache_host_ratio values")
    ap.add_argument("--subsample", type=float, default=1.0)
    ap.add_argument("--sampling-method", default="uniform", choices=("uniform", "gradient_based"))
    ap.add_argument("--skip", default="", help="comma list of legs to skip")
    ap.add_argument("--out", help="append the JSON line to this file")
    a = ap.parse_args()
    skip = {s for s in a.skip.split(",") if s}

    import cupy as cp

    import dgbdt
    try:
        import xgboost as xgb
    except ImportError:
        xgb = None

    params = {"objective": "binary:logistic", "max_depth": a.depth, "eta": 0.1,
              "max_bin": a.max_bin}
    unsampled = dict(params)
    if a.subsample < 1:
        params |= {"subsample": a.subsample, "sampling_method": a.sampling_method}
    out = {"bench": "ooc", "rows": a.rows, "features": a.features, "rounds": a.rounds,
           "depth": a.depth, "max_bin": a.max_bin, "factor": a.factor,
           "subsample": a.subsample, "sampling_method": a.sampling_method,
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "python": platform.python_version(), "dgbdt": dgbdt.__version__,
           "xgboost": xgb.__version__ if xgb else None,
           "h2d_pinned_gb_per_s": h2d_gb_per_s(cp)}
    Xd, yd = make_data_gpu(a.rows, a.features, 0)
    X, y = cp.asnumpy(Xd), cp.asnumpy(yd)
    Xt, yt = (cp.asnumpy(v) for v in make_data_gpu(max(a.rows // 10, 1000), a.features, 10_000))
    del Xd, yd

    def free():
        import gc
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()

    w = dgbdt.train(params | {"device": "cuda"}, dgbdt.Dataset(X[:20000], label=y[:20000]), 2,
                    verbose_eval=False)     # compile the kernels outside the timings
    from dgbdt.data.page_store import packed_bytes
    nw = min(a.rows, 2_000_000)             # and the streamed rounds' (a fresh machine has
    dgbdt.train(params | {"device": "cuda",  # no CuPy kernel cache: seconds of compiles)
                          "device_memory_budget": packed_bytes(nw, a.features, 9) // 4},
                dgbdt.Dataset(X[:nw], label=y[:nw]), 3, verbose_eval=False)
    models = {}

    def dgbdt_leg(name, budget, leg_params=None):
        def leg():
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            b = dgbdt.train((leg_params or params) | {"device": "cuda",
                                                      "device_memory_budget": budget},
                            dgbdt.Dataset(X, label=y), a.rounds, verbose_eval=False)
            cp.cuda.Device().synchronize()
            total = time.perf_counter() - t
            models[name] = b.save_raw()
            r = {f"{name}_s": round(total, 3),
                 f"{name}_train_s": round(total - b.timings["quantize"], 3),
                 f"{name}_auc": round(auc(yt, b.predict(dgbdt.Dataset(Xt))), 6),
                 f"{name}_stages": stages(b), f"{name}_memory": b.memory}
            m = b.memory
            if m.get("stream_passes"):
                r["ooc_bytes_per_pass"] = m["stream_bytes"] // m["stream_passes"]
                r["ooc_h2d_gb_per_s"] = round(m["stream_bytes"] / m["stream_copy_seconds"]
                                              / 1e9, 1)
                r["ooc_pages_bytes"] = m["pages_in_memory_bytes"] + m["pages_host_bytes"]
            return r
        return leg

    if "dgbdt_incore" not in skip:
        run_leg(out, "dgbdt_incore", dgbdt_leg("dgbdt_incore", None), free)
    pages = (out.get("dgbdt_incore_memory") or {}).get("pages_in_memory_bytes")
    if pages is None:   # the in-core leg was skipped or failed: the same size, computed
        pages = packed_bytes(a.rows, a.features, (a.max_bin + 1).bit_length())
    out["budget_bytes"] = budget = int(pages / a.factor)
    if "dgbdt_ooc" not in skip:
        run_leg(out, "dgbdt_ooc", dgbdt_leg("dgbdt_ooc", budget), free)
    if len(models) == 2:
        out["ooc_identical"] = models["dgbdt_ooc"] == models["dgbdt_incore"]
    if a.subsample < 1 and "dgbdt_incore_unsampled" not in skip:
        run_leg(out, "dgbdt_incore_unsampled",
                dgbdt_leg("dgbdt_incore_unsampled", None, unsampled), free)
        for leg in ("dgbdt_incore", "dgbdt_ooc"):
            if f"{leg}_auc" in out and "dgbdt_incore_unsampled_auc" in out:
                out[f"{leg}_auc_minus_unsampled"] = round(
                    out[f"{leg}_auc"] - out["dgbdt_incore_unsampled_auc"], 6)

    xparams = params | {"tree_method": "hist", "device": "cuda"}

    def xgb_incore():
        t = time.perf_counter()
        dm = xgb.QuantileDMatrix(cp.asarray(X), cp.asarray(y), max_bin=a.max_bin)
        t1 = time.perf_counter()
        b = xgb.train(xparams, dm, a.rounds)
        t2 = time.perf_counter()
        p = b.inplace_predict(cp.asarray(Xt))
        return {"xgboost_incore_s": round(t2 - t, 3), "xgboost_incore_train_s": round(t2 - t1, 3),
                "xgboost_incore_auc": round(auc(yt, cp.asnumpy(p)), 6)}

    class Batches(xgb.DataIter if xgb else object):
        def __init__(self):
            self.i = 0
            super().__init__(cache_prefix=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                       "dgbdt-bench-xgb"),
                             on_host=True, min_cache_page_bytes=1)

        def next(self, input_data):
            if self.i == a.batches:
                return 0
            lo, hi = a.rows * self.i // a.batches, a.rows * (self.i + 1) // a.batches
            input_data(data=cp.asarray(X[lo:hi]), label=cp.asarray(y[lo:hi]))
            self.i += 1
            return 1

        def reset(self):
            self.i = 0

    def xgb_extmem(ratio):
        name = f"xgboost_extmem_{ratio:g}"

        def leg():
            t = time.perf_counter()
            dm = xgb.ExtMemQuantileDMatrix(Batches(), max_bin=a.max_bin,
                                           cache_host_ratio=ratio)
            t1 = time.perf_counter()
            b = xgb.train(xparams, dm, a.rounds)
            t2 = time.perf_counter()
            p = b.inplace_predict(cp.asarray(Xt))
            return {f"{name}_s": round(t2 - t, 3), f"{name}_train_s": round(t2 - t1, 3),
                    f"{name}_auc": round(auc(yt, cp.asnumpy(p)), 6)}
        return name, leg

    if xgb is not None:
        xgb.train(xparams, xgb.QuantileDMatrix(cp.asarray(X[:20000]), cp.asarray(y[:20000])), 2)
        if "xgboost_incore" not in skip:
            run_leg(out, "xgboost_incore", xgb_incore, free)
        for ratio in (float(r) for r in a.xgb_ratios.split(",") if r):
            name, leg = xgb_extmem(ratio)
            if name not in skip:
                run_leg(out, name, leg, free)

    def ratio(num, den):
        n, d = out.get(num), out.get(den)
        return round(n / d, 3) if n and d else None

    out["ooc_throughput_vs_incore"] = ratio("dgbdt_incore_train_s", "dgbdt_ooc_train_s")
    for r in (float(r) for r in a.xgb_ratios.split(",") if r):
        n = f"xgboost_extmem_{r:g}"
        out[f"{n}_throughput_vs_incore"] = ratio("xgboost_incore_train_s", f"{n}_train_s")
        out[f"ooc_train_vs_{n}"] = ratio("dgbdt_ooc_train_s", f"{n}_train_s")
    out["incore_train_vs_xgboost"] = ratio("dgbdt_incore_train_s", "xgboost_incore_train_s")
    del w
    emit_line(out, a.out)


if __name__ == "__main__":
    main()
