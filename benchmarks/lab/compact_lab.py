"""Where a sampled streamed round's time goes (dgbdt.compact, issue 14): each stage timed
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
    a = ap.parse_args()
    import cupy as cp

    import dgbdt
    from dgbdt import compact, seam, shard
    from dgbdt.kernels import gpu
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

    timed(seam.LocalSeam, "fold", "fold pass")
    timed(gpu.CudaBackend, "fold_tree", "fold_tree kernels")
    timed(compact.Recorded, "replay", "replay calls")
    timed(shard.Shard, "compute_gradients", "shard gradients")
    timed(seam, "sample_rows", "sampling")
    timed(compact, "gather", "gather pass")
    timed(seam.LocalSeam, "_compact_seam", "compact seam")
    timed(compact.Recorded, "walk_table", "walk tables")
    timed(compact, "sampled_rows", "  sampled_rows")
    timed(gpu.CudaBackend, "row_symbols", "  row_symbols")
    timed(gpu.CudaBackend, "pack_symbols", "  pack_symbols")
    timed(shard.Shard, "__init__", "  Shard()")
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
    for name, b in legs:
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
