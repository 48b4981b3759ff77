"""mode="nccl" on a two-GPU LocalCUDACluster: the graph mode's model, and failures that end.

Needs two GPUs (skipped otherwise). Each test checks the same model bytes as the task-graph
merge and as in-process training, or that a failing, stuck or killed rank ends the training
with a clear error in bounded time and leaves the cluster usable.
"""
import json
import os
import threading
import time

import numpy as np
import pytest

import cupy as cp

import dgbdt
import dgbdt.dask as dgd
from dgbdt.dask.collective import CollectiveError
from log_records import logged
from rank_faults import KillAt, patch_level_step

dask_cuda = pytest.importorskip("dask_cuda")
da = pytest.importorskip("dask.array")
if cp.cuda.runtime.getDeviceCount() < 2:
    pytest.skip("needs two GPUs", allow_module_level=True)


@pytest.fixture(scope="module")
def client():
    from distributed import Client
    with dask_cuda.LocalCUDACluster(n_workers=2, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        c.wait_for_workers(2)
        yield c


def _json(b):
    return json.dumps(b.to_dict(), sort_keys=True)


def _data(n=20000, nf=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random((n, nf)) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    z = Z[:, 0] - 2 * Z[:, 1] ** 2 + Z[:, 2] * Z[:, 3] + rng.standard_normal(n) * .1
    return X, z


def _dataset(client, X, y, chunks):
    """cupy chunks placed alternately on the two workers."""
    import dask
    workers = sorted(client.scheduler_info()["workers"])
    xs, ys = [], []
    for i, a in enumerate(range(0, len(X), chunks)):
        b = min(a + chunks, len(X))
        w = [workers[i % 2]]
        fx = client.submit(cp.asarray, X[a:b], workers=w, allow_other_workers=True,
                           pure=False)
        fy = client.submit(cp.asarray, y[a:b], workers=w, allow_other_workers=True,
                           pure=False)
        xs.append(da.from_delayed(dask.delayed(fx), (b - a, X.shape[1]), dtype=X.dtype,
                                  meta=cp.empty((0, X.shape[1]), X.dtype)))
        ys.append(da.from_delayed(dask.delayed(fy), (b - a,), dtype=y.dtype,
                                  meta=cp.empty((0,), y.dtype)))
    d = dgd.DaskDataset(client, da.concatenate(xs), da.concatenate(ys))
    assert len(set(d.workers_of_parts())) == 2, "the test needs data on both workers"
    return d


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic"])
def test_nccl_graph_and_in_process_give_one_model(client, objective):
    X, z = _data()
    y = z if objective.startswith("reg") else (z > np.median(z)).astype(np.float64)
    p = {"objective": objective, "max_depth": 6, "max_bin": 128,
         "eval_metric": ["rmse", "mae"] if objective.startswith("reg") else ["logloss", "auc"]}
    d = _dataset(client, X[:15000], y[:15000], 2500)
    dv = _dataset(client, X[15000:], y[15000:], 1000)
    evals = [(d, "train"), (dv, "valid")]
    nccl = dgd.train(client, p, d, 8, evals=evals, mode="nccl", verbose_eval=False)
    graph = dgd.train(client, p, d, 8, evals=evals, mode="graph", verbose_eval=False)
    auto = dgd.train(client, p, d, 8, mode="auto", verbose_eval=False)
    assert _json(nccl["booster"]) == _json(graph["booster"]) == _json(auto["booster"])
    assert nccl["history"] == graph["history"]
    assert "communication" in auto["booster"].timings        # auto chose nccl
    assert nccl["booster"].timings["communication_calls"] > 0
    ref = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X[:15000]), label=cp.asarray(y[:15000])), 8,
                      verbose_eval=False)
    assert _json(nccl["booster"]) == _json(ref)


def test_nccl_trees_replay_as_cuda_graphs_with_the_eager_model(client):
    """By default (DGBDT_NCCL_GRAPHS unset or 1) a rank's device-grown trees, all-reduces
    included, are captured once and replayed as CUDA graphs (dgbdt.tree.tree_graph), with the model of
    trees grown level by level; a failed fit ends and the next one trains."""
    X, z = _data(seed=2)
    p = {"objective": "reg:squarederror", "max_depth": 6, "max_bin": 64}
    d = _dataset(client, X, z, 2500)          # several chunks a rank: several shards

    def nccl_graphs(value):
        if value is None:
            os.environ.pop("DGBDT_NCCL_GRAPHS", None)
        else:
            os.environ["DGBDT_NCCL_GRAPHS"] = value

    client.run(nccl_graphs, None)                 # the default
    out = dgd.train(client, p, d, 10, evals=[(d, "train")], mode="nccl", verbose_eval=False)
    # a failed fit with graphs, then the next one: nothing kept hangs (the graphs go before
    # the communicator does)
    patch_level_step(client, _ranks(d)[1], "raise")
    with pytest.raises(RuntimeError, match="injected failure on this rank"):
        dgd.train(client, p, d, 10, mode="nccl", verbose_eval=False)
    again = dgd.train(client, p, d, 10, evals=[(d, "train")], mode="nccl", verbose_eval=False)
    assert _json(again["booster"]) == _json(out["booster"])
    graphs = out["booster"]
    t = graphs.timings
    assert t["communication_graph_calls"] > 0      # trees 3.. replayed (1, 2: eager, capture)
    assert t["communication_graph_calls"] < t["communication_calls"]
    client.run(nccl_graphs, "0")                  # trees level by level
    try:
        out_eager = dgd.train(client, p, d, 10, evals=[(d, "train")], mode="nccl",
                              verbose_eval=False)
    finally:
        client.run(nccl_graphs, None)
    eager = out_eager["booster"]
    assert eager.timings["communication_graph_calls"] == 0
    assert _json(graphs) == _json(eager)
    assert out["history"] == out_eager["history"]


def test_nccl_with_early_stopping(client):
    X, z = _data(seed=1)
    y = (z > np.median(z)).astype(np.float64)
    # the ranks read a round's scores two rounds behind (queued gathers and sums): the stop,
    # the model and the history are graph mode's
    p = {"objective": "binary:logistic", "max_depth": 6, "eta": 1.0,
         "eval_metric": ["auc", "logloss"]}
    d, dv = _dataset(client, X[:15000], y[:15000], 3000), _dataset(client, X[15000:],
                                                                    y[15000:], 2500)
    kw = dict(evals=[(d, "train"), (dv, "valid")], early_stopping_rounds=2, verbose_eval=False)
    nccl = dgd.train(client, p, d, 100, mode="nccl", **kw)
    graph = dgd.train(client, p, d, 100, mode="graph", **kw)
    assert nccl["booster"].num_boosted_rounds() < 100
    assert _json(nccl["booster"]) == _json(graph["booster"])
    assert nccl["booster"].best_iteration == graph["booster"].best_iteration
    assert nccl["history"] == graph["history"]


def test_nccl_ranks_stream_pages_beyond_the_budget(client):
    """Each rank cuts its rows into pages and streams them (device_memory_budget below its
    page set): the model is the in-process one."""
    X, z = _data(n=600_000, nf=10, seed=2)
    y = (z > np.median(z)).astype(np.float64)
    p = {"objective": "binary:logistic", "max_depth": 6, "max_bin": 128}
    d = _dataset(client, X, y, 100_000)
    out = dgd.train(client, {**p, "device_memory_budget": 1_500_000}, d, 6, mode="nccl",
                    verbose_eval=False)
    m = out["booster"].memory
    assert m["pages_streamed"] == m["pages"] >= 3 and m["stream_copies"] > m["pages"]
    ref = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y)), 6,
                      verbose_eval=False)
    assert _json(out["booster"]) == _json(ref)


def test_nccl_keeps_its_communicator_between_fits(client):
    """The second nccl fit on the same workers reuses the first's communicator (no NCCL init)
    with the same model; a failed fit keeps nothing and the next makes a new one."""
    from dgbdt.dask import comm_cache
    client.run(comm_cache.drop_all)
    X, z = _data(seed=4)
    d = _dataset(client, X, z, 4000)
    workers = _ranks(d)

    def fit():
        return dgd.train(client, {"max_depth": 5}, d, 5, mode="nccl",
                         verbose_eval=False)["booster"]

    def idents():
        kept = client.run(comm_cache.kept)
        got = [kept[w] for w in workers]
        assert all(len(g) == 1 and g[0][0][0] == "nccl" for g in got), got
        assert got[0][0][1] == got[1][0][1]
        return got[0][0][1]
    first = fit()
    made = idents()
    second = fit()
    assert idents() == made
    assert _json(second) == _json(first)
    assert second.timings["connect"] < first.timings["connect"]
    patch_level_step(client, workers[1], "raise")
    with pytest.raises(RuntimeError, match="injected failure on this rank"):
        fit()
    assert all(not v for v in client.run(comm_cache.kept).values())
    assert _json(fit()) == _json(first)
    assert idents() != made


def test_nccl_balances_uneven_placement_with_the_in_process_model(client):
    """Partitions placed 3:1 (training) and 2:0 (eval set) on the two GPU workers: whole
    partitions go to the other rank's task until the rows are even (dgbdt.dask.placement;
    Dask copies the GPU pages and rows), and the model is the in-process one, byte for byte,
    as it is with the uneven placement kept."""

    from dgbdt.dask import placement
    X, z = _data(n=16000, seed=8)
    Xv, zv = _data(n=4000, seed=9)
    a, b = sorted(client.scheduler_info()["workers"])

    def placed_array(M, chunk, where):
        return _placed_array(client, M, chunk, where)
    d = dgd.DaskDataset(client, placed_array(X, 4000, [a, a, a, b]),
                        placed_array(z, 4000, [a, a, a, b]))
    dv = dgd.DaskDataset(client, placed_array(Xv, 2000, [b, b]),
                         placed_array(zv, 2000, [b, b]))
    assert sorted(d.workers_of_parts()) == [a, a, a, b]
    p = {"max_depth": 5, "eval_metric": "rmse"}
    kw = dict(evals=[(dv, "valid")], verbose_eval=False, mode="nccl")
    with logged() as said:
        out = dgd.train(client, p, d, 6, **kw)
    moves = [m for m in said if "to balance" in m]
    # the eval set's raw parts stay where they were made; the training pages are packed by
    # tasks the scheduler may have placed evenly already (then nothing moves)
    assert any("eval set 'valid': 1 of 2 partitions" in m and "[0, 4000] -> [2000, 2000]" in m
               for m in moves), moves
    assert all("-> [8000, 8000]" in m for m in moves if "the training rows" in m), moves
    ref = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(z)), 6,
                      evals=[(dgbdt.Dataset(cp.asarray(Xv), label=cp.asarray(zv)), "valid")],
                      verbose_eval=False)
    assert _json(out["booster"]) == _json(ref)
    old = placement.BALANCE_SLACK
    placement.BALANCE_SLACK = float("inf")      # the uneven placement kept
    try:
        kept = dgd.train(client, p, d, 6, **kw)
    finally:
        placement.BALANCE_SLACK = old
    assert _json(kept["booster"]) == _json(ref)
    assert kept["history"] == out["history"]


def _placed_array(client, M, chunk, where):
    """A dask array of cupy chunks of M, chunk i made on worker where[i] (and kept there)."""
    import dask
    futs = [client.submit(cp.asarray, M[i:i + chunk], workers=[w], allow_other_workers=False,
                          pure=False)
            for i, w in zip(range(0, len(M), chunk), where)]
    shape = (chunk,) + M.shape[1:]
    return da.concatenate([da.from_delayed(dask.delayed(f), shape, dtype=M.dtype,
                                           meta=cp.empty((0,) * M.ndim, M.dtype))
                           for f in futs])


def test_nccl_trains_on_a_gpu_worker_that_holds_no_partition(client):
    """Every partition on one of the two GPU workers (Dask's scheduler leaves one without
    any at times): the other is a rank too, half the pages go to its task, and the model is
    the in-process one, byte for byte."""
    X, z = _data(n=16000, seed=10)
    a, _ = sorted(client.scheduler_info()["workers"])
    d = dgd.DaskDataset(client, _placed_array(client, X, 4000, [a] * 4),
                        _placed_array(client, z, 4000, [a] * 4))
    assert set(d.workers_of_parts()) == {a}
    p = {"max_depth": 5}
    with logged() as said:
        out = dgd.train(client, p, d, 6, mode="nccl", verbose_eval=False)
    moves = [m for m in said if "the training rows" in m]
    assert moves and "[16000, 0] -> [8000, 8000]" in moves[0], said
    ref = dgbdt.train(p, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(z)), 6)
    assert _json(out["booster"]) == _json(ref)


def test_nccl_kernels_are_preloaded_on_the_ranks_workers(client):
    """A collective fit starts loading NCCL's kernels on each rank's worker before its
    dataset's tasks (dgbdt.dask.nccl_preload): after the fit each rank's process has one
    finished preload of its GPU, and a second fit starts no other."""
    from dgbdt.dask import nccl_preload

    def loads():
        return {d: t.is_alive() for d, t in nccl_preload._loads.items()}
    X, z = _data(seed=6)
    d = _dataset(client, X, z, 4000)
    first = dgd.train(client, {"max_depth": 4}, d, 3, mode="nccl", verbose_eval=False)
    got = client.run(loads)
    assert all(got[w] == {0: False} for w in _ranks(d)), got
    threads = client.run(lambda: [id(t) for t in nccl_preload._loads.values()])
    second = dgd.train(client, {"max_depth": 4}, d, 3, mode="nccl", verbose_eval=False)
    assert client.run(lambda: [id(t) for t in nccl_preload._loads.values()]) == threads
    assert _json(second["booster"]) == _json(first["booster"])


def test_nccl_preload_in_process_then_a_communicator():
    """start() loads on this process's GPU once (a second call starts nothing); a one-rank
    communicator made after it sums."""
    from dgbdt.dask import nccl_preload
    from dgbdt.dask.collective import NcclComm, unique_id
    nccl_preload.start()
    dev = cp.cuda.runtime.getDevice()
    t = nccl_preload._loads[dev]
    nccl_preload.start()
    assert nccl_preload._loads[dev] is t
    nccl_preload.wait(dev)
    assert not t.is_alive()
    comm = NcclComm(1, unique_id(), 0, 30.0, lambda: None)
    x = cp.arange(10, dtype=cp.int64)
    comm.allreduce(x)
    assert cp.asnumpy(x).tolist() == list(range(10))
    comm.abort()


def _ranks(d):
    return sorted(set(d.workers_of_parts()))


def test_a_raising_rank_ends_every_rank(client):
    X, z = _data(seed=2)
    d = _dataset(client, X, z, 4000)
    patch_level_step(client, _ranks(d)[1], "raise")
    t = time.perf_counter()
    with pytest.raises(RuntimeError, match="injected failure on this rank"):
        dgd.train(client, {"max_depth": 5}, d, 20, mode="nccl", verbose_eval=False)
    assert time.perf_counter() - t < 30
    # the cluster and both GPUs still work, in either mode
    ok = dgd.train(client, {"max_depth": 5}, d, 3, mode="nccl", verbose_eval=False)
    assert ok["booster"].num_boosted_rounds() == 3


def test_a_stuck_rank_times_out(client):
    X, z = _data(seed=3)
    d = _dataset(client, X, z, 4000)
    patch_level_step(client, _ranks(d)[1], "12")
    t = time.perf_counter()
    with pytest.raises(CollectiveError, match="collective_timeout"):
        dgd.train(client, {"max_depth": 5}, d, 20, mode="nccl", collective_timeout=2,
                  verbose_eval=False)
    assert time.perf_counter() - t < 12
    time.sleep(max(0.0, 14 - (time.perf_counter() - t)))   # the stuck task wakes up and ends
    ok = dgd.train(client, {"max_depth": 5}, d, 3, mode="nccl", verbose_eval=False)
    assert ok["booster"].num_boosted_rounds() == 3


def test_nccl_survives_a_killed_rank_with_the_same_model(client, tmp_path):
    """#19 on two GPUs: a rank's worker dies mid-training; the nanny brings it back, the lost
    cupy partitions are recomputed from lineage, and the training resumes (continued training
    from the survivors' progress) to the undisturbed model and history, byte for byte."""
    X, z = _data(n=40_000, seed=5)
    Xv, zv = _data(n=8_000, seed=6)
    params = {"max_depth": 6, "eval_metric": ["rmse", "mae"], "subsample": 0.8, "seed": 3}
    ref: dict = {}
    booster = dgbdt.train(params, dgbdt.Dataset(cp.asarray(X), label=cp.asarray(z)), 40,
                          evals=[(dgbdt.Dataset(cp.asarray(Xv), label=cp.asarray(zv)), "v")],
                          early_stopping_rounds=8, evals_result=ref, verbose_eval=False)
    d = _dataset(client, X, z, 5000)
    dv = _dataset(client, Xv, zv, 2000)
    victim = _ranks(d)[1]
    t = time.perf_counter()
    out = dgd.train(client, params, d, 40, mode="nccl", evals=[(dv, "v")],
                    early_stopping_rounds=8, verbose_eval=False,
                    callbacks=[KillAt(12, victim, str(tmp_path / "k"))])
    assert os.path.exists(tmp_path / "k"), "the kill did not happen"
    assert out["restarts"] == 1
    assert time.perf_counter() - t < 120
    assert _json(out["booster"]) == _json(booster)
    assert out["history"] == ref
    client.wait_for_workers(2, timeout=120)


def test_a_killed_worker_ends_the_training_and_graph_mode_recovers(client):
    X, z = _data(n=400_000, seed=4)
    d = _dataset(client, X, z, 50_000)
    victim = _ranks(d)[1]
    result = {}

    def run():
        try:
            result["out"] = dgd.train(client, {"max_depth": 8}, d, 3000, mode="nccl",
                                      verbose_eval=False, max_restarts=0)
        except Exception as e:  # noqa: BLE001
            result["error"] = e

    th = threading.Thread(target=run)
    th.start()
    deadline = time.time() + 60
    while time.time() < deadline and not any(
            "rank1" in str(k) for k in client.processing().get(victim, [])):
        time.sleep(0.2)
    time.sleep(2.0)                                   # well inside the training
    t = time.perf_counter()
    try:
        client.run(os._exit, 1, workers=[victim])
    except Exception:  # noqa: BLE001  (the worker dies before it answers)
        pass
    th.join(timeout=60)
    assert not th.is_alive(), "the training hung after a worker died"
    assert time.perf_counter() - t < 30
    assert "out" not in result, "the training finished before the worker was killed"
    err = result["error"]
    assert isinstance(err, dgd.RecoveryError) and "left the cluster" in str(err)
    assert "max_restarts=0" in str(err)
    client.wait_for_workers(2, timeout=120)            # the nanny restarts the worker
    # graph mode on the same DaskDataset recomputes the lost partitions from lineage
    ok = dgd.train(client, {"max_depth": 5}, d, 3, mode="graph", verbose_eval=False)
    assert ok["booster"].num_boosted_rounds() == 3
