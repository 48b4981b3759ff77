"""Memory follows the nodes that exist (issue 44, item 3): max_depth=30 on 300 rows trains.

Before, a tree's node table and each shard's per-node row segments were preallocated for the
2^(max_depth + 1) nodes a tree of that depth could have: 16 GiB an array at depth 30, and the
kernel's OOM killer ended the process (on a cluster, the workers). Now the table grows with
the nodes grown and the segments are bounded by the rows (a split needs a row on each side:
at most 2 n - 1 nodes over n rows). XGBoost trains the same trees.
"""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dgbdt


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    # at most max_bin distinct values a feature: both libraries' cuts are those values
    X = rng.integers(0, 200, (n, 5)).astype(np.float32)
    return X, rng.standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("policy", ["depthwise", "lossguide"])
def test_depth_30_grows_xgboost_s_trees(policy):
    xgb = pytest.importorskip("xgboost")
    X, y = _data()
    p = {"max_depth": 30, "eta": 0.3, "grow_policy": policy, "min_child_weight": 0.01}
    b = dgbdt.train(p, dgbdt.Dataset(X, y), 5)
    bx = xgb.train({**p, "tree_method": "hist"}, xgb.DMatrix(X, y), 5)
    # deeper than any preallocation could hold at depth 8, within 2 n - 1 nodes
    assert all(t.n_nodes <= 2 * len(y) - 1 for t in b.trees)
    assert [t.n_nodes for t in b.trees] == [len(d.splitlines()) for d in bx.get_dump()]
    np.testing.assert_allclose(b.predict(dgbdt.Dataset(X)), bx.predict(xgb.DMatrix(X)),
                               rtol=0, atol=1e-5)


def test_depth_30_stays_small():
    """The process's peak memory: a few hundred MB (it was killed at 23.7 GB)."""
    script = textwrap.dedent('''
        import resource, numpy as np, dgbdt
        rng = np.random.default_rng(0)
        X, y = rng.standard_normal((300, 5)), rng.standard_normal(300)
        for policy in ("depthwise", "lossguide"):
            dgbdt.train({"max_depth": 30, "grow_policy": policy, "min_child_weight": 0},
                        dgbdt.Dataset(X, y), 3)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    ''')
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stdout.split()[-1]) < 1500, r.stdout


@pytest.mark.parametrize("mode", ["task", "graph", "collective"])
def test_depth_30_on_dask_is_the_in_process_model(client2, mode):
    from dgbdt import dask as dgd
    import dask.array as da
    X, y = _data(600, 1)
    p = {"max_depth": 30, "eta": 0.3, "min_child_weight": 0.01}
    ref = dgbdt.train(p, dgbdt.Dataset(X, y), 3).save_raw()
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(200, 5)),
                        da.from_array(y, chunks=200))
    if mode == "task":
        d = dgd.DaskDataset(client2, da.from_array(X, chunks=(600, 5)),
                            da.from_array(y, chunks=600))
    out = dgd.train(client2, p, d, 3, mode=mode)
    assert out["booster"].save_raw() == ref
