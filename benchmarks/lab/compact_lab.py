"""Where a sampled streamed round's time goes (dgbdt.engine.sampled_rounds, issue 14): each stage timed
with the device synchronized around it. Lab script, not a benchmark.

    python benchmarks/lab/compact_lab.py --rows 20000000 --rounds 20
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_gpu import make_data_gpu  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--factor", type=float, default=4.0)
    ap.add_argument("--incore-compact", action="store_true",
                    help="also grow in-core sampled rounds from compact shards (a trial)")
    ap.add_argument("--profile", action="store_true",
                    help="each leg twice, the second under cProfile (no synchronized timers)")
    a = ap.parse_args()
    import cupy as cp

    import dgbdt
    from dgbdt.engine import sampled_rounds as compact, seam, shard
    from dgbdt.backends import cuda as gpu
    from dgbdt.data.page_store import packed_bytes

    spent, calls = defaultdict(float), defaultdict(int)

    def timed(owner, name, label):
        fn = getattr(owner, name)

        def wrapper(*args, **kw):
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            out = fn(*args, **kw)
            cp.cuda.Device().synchronize()
            spent[label] += time.perf_counter() - t
            calls[label] += 1
            return out
        setattr(owner, name, wrapper)

    stages = [(seam.LocalSeam, "fold", "fold pass"),
              (gpu.CudaBackend, "fold_tree", "fold_tree kernels"),
              (compact.Recorded, "replay", "replay calls"),
              (shard.Shard, "compute_gradients", "shard gradients"),
              (seam, "sample_rows", "sampling"),
              (compact, "gather", "gather pass"),
              (seam.LocalSeam, "_compact_seam", "compact seam"),
              (compact.Recorded, "walk_table", "walk tables"),
              (compact, "sampled_from", "  sampled_from"),
              (compact, "assemble", "  assemble"),
              (compact, "fold_and_pick", "fold_and_pick pass"),
              (compact, "candidate_rows", "  candidate_rows"),
              (compact, "copy_batch", "  copy_batch"),
              (gpu.CudaBackend, "row_symbols", "  row_symbols"),
              (gpu.CudaBackend, "pack_symbols", "  pack_symbols"),
              (shard.Shard, "__init__", "  Shard()")]
    for owner, name, label in ([] if a.profile else stages):
        timed(owner, name, label)
    Xd, yd = make_data_gpu(a.rows, 28, 0)
    X, y = cp.asnumpy(Xd), cp.asnumpy(yd)
    del Xd, yd
    budget = int(packed_bytes(a.rows, 28, 9) / a.factor)
    p = {"objective": "binary:logistic", "max_depth": 8, "eta": 0.1, "device": "cuda",
         "subsample": 0.2, "sampling_method": "gradient_based"}
    dgbdt.train(p, dgbdt.Dataset(X[:20000], label=y[:20000]), 2, verbose_eval=False)
    legs = [("incore", None), ("streamed", budget)]
    if a.incore_compact:
        def applies(seam_, spec, objective, _orig=compact.applies):
            s_ = spec.sampling
            if seam_.stream is None and s_ is not None and s_.subsample < 1 \
                    and getattr(objective, "leaf_alpha", None) is None:
                return True
            return _orig(seam_, spec, objective)
        models = {}
        for name, on in (("incore-plain", False), ("incore-compact", True)):
            compact.applies = applies if on else applies.__defaults__[0]
            spent.clear(), calls.clear()
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            bst = dgbdt.train(p, dgbdt.Dataset(X, label=y), a.rounds, verbose_eval=False)
            cp.cuda.Device().synchronize()
            print(f"{name}: {time.perf_counter() - t:.3f} s total, quantize "
                  f"{bst.timings['quantize']:.3f}")
            models[name] = bst.save_raw()
        compact.applies = applies.__defaults__[0]
        print("same model:", models["incore-plain"] == models["incore-compact"])
    if a.profile:         # warm legs, no synchronized timers: where the host waits
        import cProfile
        import pstats
        for name, b in legs:
            pb = {**p, "device_memory_budget": b}
            for rep in range(2):
                prof = cProfile.Profile() if rep else None
                cp.cuda.Device().synchronize()
                t = time.perf_counter()
                if prof:
                    prof.enable()
                bst = dgbdt.train(pb, dgbdt.Dataset(X, label=y), a.rounds, verbose_eval=False)
                cp.cuda.Device().synchronize()
                if prof:
                    prof.disable()
                q = bst.timings["quantize"]
                print(f"{name} run {rep}: {time.perf_counter() - t - q:.3f} s training, "
                      f"stages {({k: round(v, 3) for k, v in bst.timings.items()})}")
            st = pstats.Stats(prof).sort_stats("tottime")
            st.print_stats(28)
            st.sort_stats("cumulative").print_stats(r"dgbdt/(seam|compact|sampling|row_block"
                                                    r"|tree/grower|shard)", 30)
            for what in ("from_data.py:59", "method 'get'", "method 'nonzero'"):
                st.print_callers(what)
        return
    for name, b in legs + legs:     # each leg twice: the second is warm (kernels compiled)
        spent.clear(), calls.clear()
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        bst = dgbdt.train({**p, "device_memory_budget": b}, dgbdt.Dataset(X, label=y),
                          a.rounds, verbose_eval=False)
        total = time.perf_counter() - t
        print(f"{name}: {total:.3f} s total, quantize {bst.timings['quantize']:.3f}, "
              f"pages {bst.memory.get('pages')}, passes {bst.memory.get('stream_passes')}, "
              f"copy s {bst.memory.get('stream_copy_seconds')}")
        print("   stages", {k: round(v, 3) for k, v in bst.timings.items()})
        for k in spent:
            print(f"   {k:20s} {spent[k]:8.3f} s  {calls[k]:6d} calls")


if __name__ == "__main__":
    main()
