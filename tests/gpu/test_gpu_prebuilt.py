"""The prebuilt CUDA kernels (dgbdt/kernels/cuda/prebuilt) on a GPU: they load, nothing of
dgbdt's is compiled by NVRTC in a first fit, and the model bytes equal NVRTC's.

Each leg runs in a fresh process with an empty CuPy kernel cache, as a fresh install."""
import functools
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import pytest

_SCRIPT = textwrap.dedent("""
    import json, time, traceback
    import numpy as np, cupy as cp
    import cupy_backends.cuda.libs.nvrtc as nvrtc
    import dgbdt
    from dgbdt.kernels import prebuilt
    compiles, watching, real = [], [False], nvrtc.compileProgram
    def watched(*a, **k):       # every NVRTC compile while watching, with its dgbdt call site
        if watching[0]:
            where = [f"{f.filename.split('/dgbdt/')[-1]}:{f.lineno}:{f.name}"
                     for f in traceback.extract_stack()[:-1] if "/dgbdt/" in f.filename]
            compiles.append(" <- ".join(where[::-1][:3]) or "(outside dgbdt)")
        return real(*a, **k)
    nvrtc.compileProgram = watched
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 12)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 > 1).astype(np.float32)
    Xd, yd = cp.asarray(X), cp.asarray(y)
    watching[0] = True
    t = time.perf_counter()
    dtrain = dgbdt.Dataset(Xd, label=yd)
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 6, "eval_metric": "auc",
                     "device": "cuda"},
                    dtrain, 20,
                    evals=[(dgbdt.Dataset(Xd[:5000], label=yd[:5000]), "v")],
                    verbose_eval=False)
    train_compiles = list(compiles)
    p = b.predict(dgbdt.Dataset(Xd[:100]))
    from dgbdt.data.labels import proba_columns
    proba_columns(p)            # a classifier's predict_proba
    predict_compiles = compiles[len(train_compiles):]
    print(json.dumps({"model": json.dumps(b.to_dict(), sort_keys=True),
                      "pred": np.asarray(cp.asnumpy(p)).tolist(),
                      "first_fit_s": time.perf_counter() - t, "train_compiles": train_compiles,
                      "predict_compiles": predict_compiles,
                      **prebuilt.report()}))
""")


@functools.lru_cache(maxsize=None)
def _leg(prebuilt_on: bool) -> dict:
    env = dict(os.environ, CUPY_CACHE_DIR=tempfile.mkdtemp(prefix="cupy-cold-"),
               DGBDT_PREBUILT_KERNELS="1" if prebuilt_on else "0")
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_prebuilt_kernels_load_and_train_nvrtcs_model():
    on, off = _leg(True), _leg(False)
    assert {"tree", "split", "objective"} <= set(on["prebuilt"])
    assert on["nvrtc"] == []                       # nothing of dgbdt's compiled at first use
    # nor any of CuPy's own kernels: the datasets' label casts, the training with its auc
    # eval set (dgbdt.kernels.gpu_arrays, gpu_sort), the prediction and its class columns
    assert on["train_compiles"] == []
    assert on["predict_compiles"] == []
    assert off["prebuilt"] == [] and "tree" in off["nvrtc"]
    assert on["model"] == off["model"]
    assert on["pred"] == off["pred"]
    print(f"first fit, empty caches: prebuilt {on['first_fit_s']:.2f} s, "
          f"NVRTC {off['first_fit_s']:.2f} s")


def test_the_input_checks_kernels_agree_with_numpy():
    """gpu_checks (one kernel each, no CuPy reductions for NVRTC to compile at a first fit)
    against numpy on labels and matrices with infinities, NaN, -0.0 and non-integers."""
    import cupy as cp
    import numpy as np
    from dgbdt.kernels.gpu_checks import first_inf_index, label_scan
    from dgbdt.objectives.base import label_witnesses
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        X = rng.standard_normal((5000, 7)).astype(dtype)
        assert first_inf_index(cp.asarray(X)) is None
        for where in ([12345, 34000], [0], [34999]):
            Z = X.copy().ravel()
            Z[where] = [np.inf, -np.inf][: len(where)]
            assert first_inf_index(cp.asarray(Z.reshape(X.shape))) == min(where)
    cases = [np.array([3.0, -0.0, 7.0, 2.0]), np.array([1.0, np.nan, 2.5, -np.inf, 0.5]),
             np.array([np.nan, np.inf]), np.array([-1e300, 4.0, 1e-300]), np.zeros(0),
             rng.integers(-50, 50, 100000).astype(np.float64)]
    for y in cases:
        got = label_witnesses(cp.asarray(y))
        want = label_witnesses(y)
        assert np.array_equal(got, want, equal_nan=True), (y[:8], got, want)
    bad, nonint, lo, hi = label_scan(cp.asarray(np.array([2.0, 0.5, np.nan, 1.5, -3.0])))
    assert (bad, nonint, lo, hi) == (2, 1, -3.0, 2.0)
