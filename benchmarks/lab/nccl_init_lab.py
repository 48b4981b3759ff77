"""What NCCL's set-up costs a fresh process, and which of its settings change it.

Why: a collective fit on fresh GPU workers spends 0.5-0.6 s in ``NcclCommunicator`` (the
rank task's ``connect``) where a kept communicator costs 0.002 s; the 2-GPU first fit was
1.34x the warm one with that in it (target 1.3x). cupy's ``NcclCommunicator`` holds the GIL
while NCCL initialises, so the set-up cannot hide behind the dataset's tasks on the same
worker: it has to get shorter. Each variant runs ``--ranks`` fresh processes, one a GPU, which
time, after CUDA's context: two communicators one after another (the second shows what is
once a process), and the first and second 1.6 MB all-reduce of each. With NCCL_DEBUG=INFO,
NCCL's own ``Init timings`` line of rank 0 is printed too.

    python3 benchmarks/lab/nccl_init_lab.py [--ranks 2]
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import time

VARIANTS = {
    "default": {},
    "runtime_connect=0": {"NCCL_RUNTIME_CONNECT": "0"},
    "cumem=0": {"NCCL_CUMEM_ENABLE": "0"},
    "ib_disable": {"NCCL_IB_DISABLE": "1"},
    "mnnvl=0": {"NCCL_MNNVL_ENABLE": "0"},
    "proto=Simple": {"NCCL_PROTO": "Simple"},
    "nchannels=8": {"NCCL_MAX_NCHANNELS": "8"},
    "all_cheap": {"NCCL_IB_DISABLE": "1", "NCCL_MNNVL_ENABLE": "0", "NCCL_CUMEM_ENABLE": "0"},
    # the "kernels" phase asks each NCCL kernel's attributes, which loads it under CUDA's lazy
    # module loading: eager loading makes it 0.00 s in this bare process (docs/benchmarks.md:
    # not on a dask-cuda worker)
    "eager_modules": {"CUDA_MODULE_LOADING": "EAGER", "NCCL_CUMEM_ENABLE": "0"},
    "lazy_modules": {"CUDA_MODULE_LOADING": "LAZY", "NCCL_CUMEM_ENABLE": "0"},
}


def rank_main(rank: int, n: int, base: str, reps: int) -> None:
    t0 = time.perf_counter()
    import cupy
    from cupy.cuda import nccl
    cupy.cuda.Device(rank).use()
    cupy.zeros(1)
    out = {"rank": rank, "import_ctx": time.perf_counter() - t0, "reps": []}
    x = cupy.ones(200_000, dtype=cupy.int64)
    for rep in range(reps):
        path = f"{base}.{rep}"
        if rank == 0:
            with open(path + ".tmp", "wb") as f:      # bytes (CuPy 14) or a tuple
                pickle.dump(nccl.get_unique_id(), f)
            os.rename(path + ".tmp", path)
        while not os.path.exists(path):
            time.sleep(0.001)
        with open(path, "rb") as f:
            uid = pickle.load(f)
        t = time.perf_counter()
        comm = nccl.NcclCommunicator(n, uid, rank)
        init = time.perf_counter() - t
        times = []
        for _ in range(2):
            t = time.perf_counter()
            comm.allReduce(x.data.ptr, x.data.ptr, x.size, nccl.NCCL_INT64, nccl.NCCL_SUM,
                           cupy.cuda.get_current_stream().ptr)
            cupy.cuda.get_current_stream().synchronize()
            times.append(time.perf_counter() - t)
        out["reps"].append({"init": init, "allreduce_1": times[0], "allreduce_2": times[1]})
        comm.destroy()
    print("RESULT " + json.dumps(out), flush=True)


def run_variant(name: str, env_extra: dict, n: int, reps: int) -> dict:
    base = os.path.join(tempfile.mkdtemp(), "uid")
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", NCCL_DEBUG="INFO",
               NCCL_DEBUG_SUBSYS="INIT", **env_extra)
    procs = [subprocess.Popen([sys.executable, __file__, "--rank", str(r), "--ranks", str(n),
                               "--base", base, "--reps", str(reps)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(n)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    got = [json.loads(line[7:]) for o in outs for line in o.splitlines()
           if line.startswith("RESULT ")]
    timings = [line.split("Init timings", 1)[1].strip() for line in outs[0].splitlines()
               if "Init timings" in line]
    if len(got) != n:
        print(f"{name}: failed\n" + outs[0][-3000:])
        return {"variant": name, "failed": True}
    r0 = got[0]
    row = {"variant": name, "env": env_extra, "import_ctx": round(r0["import_ctx"], 3),
           "init": [round(max(g["reps"][k]["init"] for g in got), 3) for k in range(reps)],
           "allreduce_1": [round(max(g["reps"][k]["allreduce_1"] for g in got), 4)
                           for k in range(reps)],
           "allreduce_2": [round(max(g["reps"][k]["allreduce_2"] for g in got), 5)
                           for k in range(reps)],
           "nccl_init_timings": [re.sub(r"\s+", " ", t) for t in timings]}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--rank", type=int, default=None)
    ap.add_argument("--base", default=None)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.rank is not None:
        rank_main(a.rank, a.ranks, a.base, a.reps)
        return
    rows = []
    for name in a.variants.split(","):
        row = run_variant(name, VARIANTS[name], a.ranks, a.reps)
        print(json.dumps(row), flush=True)
        rows.append(row)
    if a.out:
        with open(a.out, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
