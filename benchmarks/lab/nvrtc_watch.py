"""Report every CuPy kernel compiled after a small warm-up fit.

Why: a fresh machine has an empty CuPy kernel cache, and a kernel used only
above some size (a chunked path, a weighted path) compiles inside the user's
first big fit — NVRTC costs 0.1-0.5 s a kernel. After the warm-up fits on
20k rows (unweighted and weighted) nothing should compile; this script prints the call site of any
kernel that does.

    python3 benchmarks/lab/nvrtc_watch.py [--rows 10000000] [--features 28]
"""
import argparse
import os
import sys
import tempfile
import traceback

os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp()  # an empty cache: a fresh machine

import cupy as cp  # noqa: E402
import cupy_backends.cuda.libs.nvrtc as nvrtc  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_gpu import make_data_gpu  # noqa: E402

import dgbdt  # noqa: E402

_stage = ["warm-up"]
_compiles = []
_compile = nvrtc.compileProgram


def _watched(*args, **kwargs):
    if _stage[0] != "warm-up":
        frames = [f for f in traceback.extract_stack()[:-1] if "/dgbdt/" in f.filename]
        where = " <- ".join(f"{os.path.basename(f.filename)}:{f.lineno}:{f.name}"
                            for f in frames[::-1][:4])
        _compiles.append((_stage[0], where))
        print("COMPILE during", _stage[0], "at", where or "(outside dgbdt)")
    return _compile(*args, **kwargs)


nvrtc.compileProgram = _watched


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--features", type=int, default=28)
    args = ap.parse_args()
    X, y = make_data_gpu(args.rows, args.features, 0)
    params = {"objective": "binary:logistic", "max_depth": 8, "device": "cuda"}
    small, ys = X[:20000], y[:20000]
    dgbdt.train(params, dgbdt.Dataset(small, label=ys), 2, verbose_eval=False)
    dgbdt.train(params, dgbdt.Dataset(small, label=ys, weight=cp.ones(len(ys))), 2,
                verbose_eval=False)
    _stage[0] = f"{args.rows} rows"
    dgbdt.train(params, dgbdt.Dataset(X, label=y), 2, verbose_eval=False)
    _stage[0] = f"{args.rows} rows, weighted"
    dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=cp.ones(len(y))), 2,
                verbose_eval=False)
    print(f"{len(_compiles)} kernel(s) compiled after the warm-up")


if __name__ == "__main__":
    main()
