"""GPU sketch lab: where a 2M x 28 partition's summary time goes (keys, sort, shifts, buckets, copy),
and the host's k-way merge of such summaries."""
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
def srt():      # each feature's uint32 keys sorted on their own, as sketch_device does
    c = comp.copy().reshape(step, n)
    for f in range(step):
        c[f].sort()
    return c.ravel()
cs, res["sort_ms"] = t(srt)
_, res["copy_only_ms"] = t(lambda: comp.copy())
sh, res["shifts_ms"] = t(lambda: sketch_shifts(cs, n, step, cnt, 4096))
(m, out), res["buckets_ms"] = t(lambda: sketch_buckets(cs, n, step, cnt, sh))
_, res["get_ms"] = t(lambda: out.get())
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
