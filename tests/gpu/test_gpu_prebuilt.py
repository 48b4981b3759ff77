"""The prebuilt CUDA kernels (dgbdt/kernels/cuda/prebuilt) on a GPU: they load, nothing of
dgbdt's is compiled by NVRTC in a first fit, and the model bytes equal NVRTC's.

Each leg runs in a fresh process with an empty CuPy kernel cache, as a fresh install."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap

_SCRIPT = textwrap.dedent("""
    import json, time
    import numpy as np, cupy as cp
    import dgbdt
    from dgbdt.kernels import prebuilt
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 12)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 > 1).astype(np.float32)
    t = time.perf_counter()
    b = dgbdt.train({"objective": "binary:logistic", "max_depth": 6, "eval_metric": "auc",
                     "device": "cuda"},
                    dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 20,
                    evals=[(dgbdt.Dataset(cp.asarray(X[:5000]), label=cp.asarray(y[:5000])),
                            "v")], verbose_eval=False)
    p = b.predict(dgbdt.Dataset(cp.asarray(X[:100])))
    print(json.dumps({"model": json.dumps(b.to_dict(), sort_keys=True),
                      "pred": np.asarray(cp.asnumpy(p)).tolist(),
                      "first_fit_s": time.perf_counter() - t, **prebuilt.report()}))
""")


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
    assert off["prebuilt"] == [] and "tree" in off["nvrtc"]
    assert on["model"] == off["model"]
    assert on["pred"] == off["pred"]
    print(f"first fit, empty caches: prebuilt {on['first_fit_s']:.2f} s, "
          f"NVRTC {off['first_fit_s']:.2f} s")
