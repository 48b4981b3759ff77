"""CPU kernels' threads sleep soon after a launch (issue 44, item 6; dgbdt.kernels.threads):
dgbdt's import sets libgomp's spin count where the user chose no wait policy, before numba
starts its OpenMP pool. Timings: benchmarks/bench_cpu_threads.py (not asserted here)."""
import os
import subprocess
import sys

import pytest

SCRIPT = ("import os, dgbdt, numpy as np; from dgbdt.kernels.threads import spin_policy; "
          "dgbdt.train({}, dgbdt.Dataset(np.random.rand(200, 3), np.random.rand(200)), 2); "
          "print(os.environ.get('GOMP_SPINCOUNT'), os.environ.get('OMP_WAIT_POLICY'), "
          "spin_policy())")


def _run(**env):
    clean = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT",
                                                                "OMP_WAIT_POLICY")}
    r = subprocess.run([sys.executable, "-c", SCRIPT], env={**clean, **env},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout.split()


def test_short_spin_by_default():
    assert _run() == ["1000", "None", "short-spin"]


@pytest.mark.parametrize("env,expected", [
    ({"OMP_WAIT_POLICY": "ACTIVE"}, ["None", "ACTIVE", "user"]),
    ({"GOMP_SPINCOUNT": "50000"}, ["50000", "None", "user"]),
])
def test_the_user_s_choice_is_kept(env, expected):
    assert _run(**env) == expected
