"""Where a GPU worker's sketch of 32M x 28 rows goes (issue 46: 0.13 s of the 1-GPU fit).

With 32M rows a feature group holds one feature (CHUNK_VALUES / rows), so the worker's summary
is 28 groups of: the keys kernel, the sort of the group's keys, the shifts, the buckets and
the copy to the host. This lab times the
whole summary and each step of one group, and the sort on each feature's 32-bit keys beside
the one flat sort of uint64 ``f << 32 | key`` it replaced.

    python benchmarks/lab/sketch_sort_lab.py [ROWS] [BLOCKS]
"""
import json
import sys
import time

import cupy as cp

sys.path.insert(0, "benchmarks")
from bench_gpu import make_data_gpu  # noqa: E402
from dgbdt.data import sketch_device as sd  # noqa: E402
from dgbdt.kernels.gpu_sketch import sketch_buckets, sketch_keys, sketch_shifts  # noqa: E402


def sync():
    cp.cuda.Device().synchronize()


def timed(fn, rep=5):
    out, r = [], None
    for _ in range(rep):
        sync()
        a = time.perf_counter()
        r = fn()
        sync()
        out.append(round(1e3 * (time.perf_counter() - a), 2))
    return r, out


rows = int(sys.argv[1]) if len(sys.argv) > 1 else 32_000_000
nblocks = int(sys.argv[2]) if len(sys.argv) > 2 else 4
res = {"rows": rows, "blocks": nblocks}
per = rows // nblocks
blocks = [make_data_gpu(per, 28, i)[0] for i in range(nblocks)]
n = per * nblocks
sd.summarize_blocks_device(blocks, None, None, 4096)
_, res["summary_ms"] = timed(lambda: sd.summarize_blocks_device(blocks, None, None, 4096), 3)
step = max(1, sd.CHUNK_VALUES // n)
res["step"] = step
group = [X[:, :step] for X in blocks]
(comp, cnt, infs), res["keys_ms"] = timed(lambda: sketch_keys(group, 0, step))
rows_of = comp.reshape(step, n)


def sort32():
    c = rows_of.copy()
    for f in range(step):
        c[f].sort()
    return c.ravel()


_, res["copy32_ms"] = timed(lambda: rows_of.copy())
cs, res["sort32_ms"] = timed(sort32)
sh, res["shifts_ms"] = timed(lambda: sketch_shifts(cs, n, step, cnt, 4096))
(m, out), res["buckets_ms"] = timed(lambda: sketch_buckets(cs, n, step, cnt, sh))
_, res["get_ms"] = timed(lambda: out.get())
# what the sketch sorted before: one flat sort of f << 32 | key (uint64)
wide = comp.astype(cp.uint64) | (cp.arange(step, dtype=cp.uint64) << 32).repeat(n)


def sort64():
    c = wide.copy()
    c.sort()
    return c


_, res["copy64_ms"] = timed(lambda: wide.copy())
c64, res["sort64_ms"] = timed(sort64)
assert bool(((c64 & cp.uint64(0xFFFFFFFF)).astype(cp.uint32) == cs).all())
print(json.dumps(res))
