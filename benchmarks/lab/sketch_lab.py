"""GPU sketch lab: where a 2M x 28 partition's summary time goes (keys, sort, shifts, buckets, copy),
a 32-bit sort beside the 64-bit one, and the host's k-way merge of such summaries."""
import time, sys, json, os

import cupy as cp
sys.path.insert(0, "benchmarks")
from bench_gpu import make_data_gpu
from dgbdt.data import sketch_device as sd
from dgbdt.data.sketch_device import summarize_device
from dgbdt.kernels.gpu_sketch import sketch_keys, sketch_shifts, sketch_buckets
from dgbdt.data.sketch_merge import merge_buckets

def sync(): cp.cuda.Device().synchronize()
def t(fn, rep=5):
    out=[]; r=None
    for _ in range(rep):
        sync(); a=time.perf_counter(); r=fn(); sync(); out.append(time.perf_counter()-a)
    return r, [round(1e3*x,2) for x in out]

res = {}
t0=time.perf_counter()
X, y = make_data_gpu(2_000_000, 28, 0)
sync()
a=time.perf_counter(); s=summarize_device(X, None, 4096); sync(); res["first_summarize_ms"]=round(1e3*(time.perf_counter()-a),1)
_, res["summarize_ms"] = t(lambda: summarize_device(X, None, 4096))
n, nf = X.shape
step = max(1, sd.CHUNK_VALUES // n); res["step"]=step
Xb = X[:, :step]
(comp, cnt, infs), res["keys_ms"] = t(lambda: sketch_keys([Xb], 0, step))
def srt():
    c = comp.copy(); c.sort(); return c
cs, res["sort64_ms"] = t(srt)
_, res["copy_only_ms"] = t(lambda: comp.copy())
sh, res["shifts_ms"] = t(lambda: sketch_shifts(cs, n, step, cnt, 4096))
(m, out), res["buckets_ms"] = t(lambda: sketch_buckets(cs, n, step, cnt, sh))
_, res["get_ms"] = t(lambda: out.get())
# 32-bit alternative: each feature's keys sorted as uint32
k32 = (comp & cp.uint64(0xFFFFFFFF)).astype(cp.uint32).reshape(step, n)
def srt32():
    c = k32.copy()
    for f in range(step):
        c[f].sort()
    return c
c32, res["sort32_rows_ms"] = t(srt32)
assert bool((c32.ravel().astype(cp.uint64) == (cs & cp.uint64(0xFFFFFFFF))).all())
def srt32_flat():
    c = k32.ravel().copy(); c.sort(); return c
_, res["sort32_flat_all_ms"] = t(srt32_flat)
# whole-partition uint32 all features
k32all = cp.random.randint(0, 2**31, size=(28, n), dtype=cp.int64).astype(cp.uint32)
def srt32all():
    c = k32all.copy()
    for f in range(28): c[f].sort()
    return c
_, res["sort32_rows_28f_ms"] = t(srt32all)
# 16 partitions' summaries: host merge speed here
parts=[]
for i in range(8):
    Xi,_ = make_data_gpu(2_000_000, 28, i+1); parts.append(summarize_device(Xi, None, 4096)); del Xi
res["entries_per_part"] = int(parts[0].keys.shape[0])
for k in (4, 8):
    ts=[]
    for _ in range(5):
        a=time.perf_counter(); merge_buckets(parts[:k], 4096); ts.append(round(1e3*(time.perf_counter()-a),1))
    res[f"merge{k}_ms"]=ts
res["cpus"]=os.cpu_count()
print(json.dumps(res))
