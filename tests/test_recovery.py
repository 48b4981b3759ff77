"""A worker killed mid-training costs a restart, not the training: real worker processes.

Each test kills a worker process (os._exit, as a SIGKILL would: no clean-up) at a chosen round
of a training on a LocalCluster whose nanny restarts it; the training must finish within a
bounded time, restarted once per kill, with the model and history of the undisturbed training,
byte for byte (dgbdt.dask.recovery, dgbdt.engine.progress). The scheduler itself is not recoverable
(out of scope, see docs/dask.md).
"""
import os
import time
import uuid

import numpy as np
import pytest
from datagen import binary_with_missing

import dgbdt
from dgbdt.callback import TrainingCallback

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
import dgbdt.dask as dgd  # noqa: E402

pytestmark = pytest.mark.slow  # kills workers of process clusters

PARAMS = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3,
          "eval_metric": ["logloss", "auc"], "subsample": 0.8, "colsample_bynode": 0.8,
          "seed": 3}
ROUNDS = 30
LIMIT = 60.0        # seconds a disturbed training may take here (undisturbed: a few)


@pytest.fixture
def cluster3():
    """A fresh 3-worker cluster per test: after a killed worker's replacement has joined, a
    nanny has been seen to close a little later (2 in about 12 runs of this module; cause not
    found), which left the next test sharing the cluster with 2 workers."""
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(3)
        yield client


@pytest.fixture(scope="module")
def data():
    X, y, _ = binary_with_missing(6000, 6, seed=21)
    Xv, yv, _ = binary_with_missing(1500, 6, seed=22)
    ref: dict = {}
    booster = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y), ROUNDS,
                          evals=[(dgbdt.Dataset(Xv, label=yv), "valid")],
                          early_stopping_rounds=6, evals_result=ref, verbose_eval=False)
    return X, y, Xv, yv, booster.save_raw(), ref


def _datasets(client, X, y, Xv, yv):
    """The training set spread over every worker (the scheduler may put a few small
    partitions on one worker, e.g. one that has just joined: then try again), and an eval set."""
    n = len(client.scheduler_info()["workers"])
    for _ in range(20):
        tag = uuid.uuid4().hex        # new keys: not the partitions of an earlier test
        d = dgd.DaskDataset(client, da.from_array(X, chunks=(1000, X.shape[1]), name=f"X{tag}"),
                            da.from_array(y, chunks=1000, name=f"y{tag}"))
        if len(set(d.workers_of_parts())) == n:
            break
        time.sleep(0.2)
    assert len(set(d.workers_of_parts())) == n
    dv = dgd.DaskDataset(client, da.from_array(Xv, chunks=(500, Xv.shape[1])),
                         da.from_array(yv, chunks=500))
    return d, dv


class KillAt(TrainingCallback):
    """Kills the worker it runs on (once: a file marks it done) after round ``epoch`` when that
    worker is ``victim`` (None: any). Runs inside the task and collective modes' training."""

    def __init__(self, kills):
        self.kills = kills          # [(epoch, victim address or None, marker file)]

    def after_iteration(self, model, epoch, evals_log):
        from distributed import get_worker
        me = get_worker().address
        for at, victim, marker in self.kills:
            if epoch == at and victim in (None, me) and not os.path.exists(marker):
                open(marker, "w").close()
                os._exit(1)
        return False


def _train(client, d, dv, mode, **kw):
    t = time.perf_counter()
    out = dgd.train(client, PARAMS, d, ROUNDS, evals=[(dv, "valid")], early_stopping_rounds=6,
                    verbose_eval=False, mode=mode, **kw)
    return out, time.perf_counter() - t


def _same(out, data):
    *_, raw, ref = data
    assert out["booster"].save_raw() == raw
    assert out["history"] == ref


def test_collective_survives_a_killed_rank(cluster3, data, tmp_path):
    """A rank killed late in the training (round 12; rounds 3 to 5 and 11 are the other
    tests' kills), the middle rank of three."""
    X, y, Xv, yv, *_ = data
    d, dv = _datasets(cluster3, X, y, Xv, yv)
    ranks = sorted(set(d.workers_of_parts()))
    assert len(ranks) >= 2
    at, victim = 12, ranks[1]
    out, seconds = _train(cluster3, d, dv, "collective",
                          callbacks=[KillAt([(at, victim, str(tmp_path / "k"))])])
    assert os.path.exists(tmp_path / "k"), "the kill did not happen"
    assert out["restarts"] == 1 and seconds < LIMIT
    _same(out, data)
    cluster3.wait_for_workers(3, timeout=60)


def test_collective_survives_two_kills_one_after_another(cluster3, data, tmp_path):
    X, y, Xv, yv, *_ = data
    d, dv = _datasets(cluster3, X, y, Xv, yv)
    ranks = sorted(set(d.workers_of_parts()))
    kills = [(4, ranks[0], str(tmp_path / "a")), (11, ranks[-1], str(tmp_path / "b"))]
    out, seconds = _train(cluster3, d, dv, "auto", callbacks=[KillAt(kills)])
    assert os.path.exists(tmp_path / "a") and os.path.exists(tmp_path / "b")
    assert out["restarts"] == 2 and seconds < LIMIT
    _same(out, data)
    cluster3.wait_for_workers(3, timeout=60)


def _kill_at_call(client, worker: str, method: str, n: int, once: str | None = None) -> None:
    """The worker's process exits (os._exit: no clean-up) in its n-th call of
    ``LocalSeam.<method>`` (graph mode: "level" in a level task, "finish" in a tree's last).
    ``once``: a path; of the workers given this kill, only the first to reach it exits (it
    creates the file)."""
    def patch():
        from dgbdt.engine.seam import LocalSeam
        original, calls = getattr(LocalSeam, method), [0]

        def counted(self, *args):
            calls[0] += 1
            if calls[0] == n:
                try:
                    if once is not None:
                        os.close(os.open(once, os.O_CREAT | os.O_EXCL))
                    os._exit(1)
                except FileExistsError:
                    pass
            return original(self, *args)
        setattr(LocalSeam, method, counted)
    client.run(patch, workers=[worker])


@pytest.mark.parametrize("method,n,unit", [("level", 30, 1), ("finish", 12, 0)])
def test_graph_mode_survives_a_killed_worker(cluster3, data, method, n, unit):
    """Mid-tree, and at a tree's end on unit 0's worker (whose finish tasks return the trees):
    the survivors hold the trees of the completed rounds, and the training resumes there."""
    X, y, Xv, yv, *_ = data
    d, dv = _datasets(cluster3, X, y, Xv, yv)
    victim = list(dict.fromkeys(d.workers_of_parts()))[unit]
    _kill_at_call(cluster3, victim, method, n)
    out, seconds = _train(cluster3, d, dv, "graph")
    assert victim not in cluster3.scheduler_info()["workers"], "the kill did not happen"
    assert out["restarts"] == 1 and seconds < LIMIT
    _same(out, data)
    cluster3.wait_for_workers(3, timeout=60)


def test_graph_mode_without_eval_sets_survives(cluster3, data):
    """Without eval sets every round is submitted at once; the trees stay futures until the
    end, and a loss shows only then: the survivors' trees still give the completed rounds."""
    X, y, *_ = data
    d, _ = _datasets(cluster3, X, y, X[:10], y[:10])
    p = {k: v for k, v in PARAMS.items() if k != "eval_metric"}
    ref = dgbdt.train(p, dgbdt.Dataset(X, label=y), ROUNDS, verbose_eval=False)
    victim = sorted(set(d.workers_of_parts()))[2]
    _kill_at_call(cluster3, victim, "level", 50)
    out = dgd.train(cluster3, p, d, ROUNDS, verbose_eval=False, mode="graph")
    assert victim not in cluster3.scheduler_info()["workers"], "the kill did not happen"
    assert out["restarts"] == 1
    assert out["booster"].save_raw() == ref.save_raw()
    cluster3.wait_for_workers(3, timeout=60)


def test_graph_mode_losing_its_only_unit_starts_again(cluster3, data, tmp_path):
    """All the training rows on one worker (one unit): nothing survives its loss, so the
    training starts again from round 0 on the recomputed partitions, with the same model."""
    X, y, Xv, yv, *_ = data
    tag = uuid.uuid4().hex
    d = dgd.DaskDataset(cluster3, da.from_array(X, chunks=X.shape, name=f"X{tag}"),
                        da.from_array(y, chunks=len(y), name=f"y{tag}"))
    dv = dgd.DaskDataset(cluster3, da.from_array(Xv, chunks=(500, Xv.shape[1])),
                         da.from_array(yv, chunks=500))
    # every worker gets the kill, once: the one the unit is built on is the one whose levels
    # run (the partition may have a copy on a second worker, and the unit be made there)
    before = set(cluster3.scheduler_info()["workers"])
    for w in before:
        _kill_at_call(cluster3, w, "level", 10, once=str(tmp_path / "killed"))
    out, seconds = _train(cluster3, d, dv, "graph")
    assert len(before - set(cluster3.scheduler_info()["workers"])) == 1, \
        "the kill did not happen"
    assert out["restarts"] == 1 and seconds < LIMIT
    _same(out, data)
    cluster3.wait_for_workers(3, timeout=60)


def test_one_task_mode_restarts_on_the_replacement_worker(data, tmp_path):
    """One worker holds everything: its loss loses the progress too, so the training starts
    again on the worker the nanny brings back (from round 0) and gives the same model."""
    X, y, Xv, yv, *_ = data
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        d, dv = _datasets(client, X, y, Xv, yv)
        out, seconds = _train(client, d, dv, "auto",
                              callbacks=[KillAt([(5, None, str(tmp_path / "k"))])])
    assert os.path.exists(tmp_path / "k")
    assert out["mode"] == "task" and out["restarts"] == 1 and seconds < LIMIT
    _same(out, data)


def test_max_restarts_ends_with_a_clear_error(cluster3, data, tmp_path):
    X, y, Xv, yv, *_ = data
    d, dv = _datasets(cluster3, X, y, Xv, yv)
    victim = sorted(set(d.workers_of_parts()))[0]
    t = time.perf_counter()
    with pytest.raises(dgd.RecoveryError, match=r"left the cluster.*max_restarts=0"):
        _train(cluster3, d, dv, "collective", max_restarts=0,
               callbacks=[KillAt([(3, victim, str(tmp_path / "k"))])])
    assert time.perf_counter() - t < LIMIT
    cluster3.wait_for_workers(3, timeout=60)
    out, _ = _train(cluster3, d, dv, "collective")     # the cluster trains again
    _same(out, data)


def test_data_without_lineage_ends_with_a_clear_error(cluster3, data, tmp_path):
    """Partitions scattered from the client cannot be recomputed: the error says so (and what
    to build the dataset from) instead of waiting."""
    from dask import delayed
    X, y, Xv, yv, *_ = data
    workers = sorted(cluster3.scheduler_info()["workers"])
    blocks = [cluster3.scatter(a, workers=[workers[i % 3]]) for i, a in
              enumerate(np.array_split(X, 3))]
    labels = [cluster3.scatter(a, workers=[workers[i % 3]]) for i, a in
              enumerate(np.array_split(y, 3))]
    Xd = da.concatenate([da.from_delayed(delayed(b), (2000, X.shape[1]), X.dtype)
                         for b in blocks])
    yd = da.concatenate([da.from_delayed(delayed(b), (2000,), y.dtype) for b in labels])
    d = dgd.DaskDataset(cluster3, Xd, yd)
    victim = sorted(set(d.workers_of_parts()))[1]
    t = time.perf_counter()
    with pytest.raises(dgd.RecoveryError, match="no lineage"):
        dgd.train(cluster3, PARAMS, d, ROUNDS, verbose_eval=False, mode="collective",
                  callbacks=[KillAt([(3, victim, str(tmp_path / "k"))])])
    assert time.perf_counter() - t < LIMIT
    cluster3.wait_for_workers(3, timeout=60)


def test_prediction_survives_a_killed_worker(cluster3, data):
    """dgbdt.dask.predict is a plain lazy graph: a worker that dies running a block's
    prediction has the block recomputed elsewhere (lineage), and the result is the same."""
    X, y, *_ = data
    booster = dgbdt.load_model(data[4])
    Xd = da.from_array(X, chunks=(500, X.shape[1]), name=f"X{uuid.uuid4().hex}")
    expected = booster.predict(X)
    victim = sorted(cluster3.scheduler_info()["workers"])[1]

    def patch():
        from dgbdt.model.booster import Booster
        original = Booster.predict

        def predict(self, *args, **kwargs):
            os._exit(1)
        Booster.predict = predict
        Booster._original_predict = original
    cluster3.run(patch, workers=[victim])
    out = cluster3.compute(dgd.predict(cluster3, booster, Xd)).result(timeout=LIMIT)
    assert victim not in cluster3.scheduler_info()["workers"], "the kill did not happen"
    np.testing.assert_array_equal(out, expected)
    cluster3.wait_for_workers(3, timeout=60)


def _load(a, b, seed):
    """A loading function (as a file reader would be): rows [a, b) of the test data."""
    X, y, _ = binary_with_missing(6000, 6, seed=21)
    return X[a:b], y[a:b]


@pytest.mark.parametrize("source", ["loaded", "persisted"])
def test_lost_pages_are_rebuilt_from_lineage(cluster3, data, tmp_path, source):
    """A persisted DaskDataset keeps pages only once training starts (its raw parts released):
    a killed rank's pages are rebuilt from the source's graph, whether the source is read
    lazily (a loading function per partition) or was persisted by the user (its lost chunks
    recomputed first), and the training resumes to the undisturbed model."""
    from dask import delayed
    from raw_parts import keys_of, parts_on_workers
    X, y, Xv, yv, *_ = data
    tag = uuid.uuid4().hex
    blocks = [delayed(_load, pure=True, nout=2)(a, a + 1000, tag) for a in range(0, 6000, 1000)]
    Xd = da.concatenate([da.from_delayed(b[0], (1000, 6), np.float32) for b in blocks])
    yd = da.concatenate([da.from_delayed(b[1], (1000,), np.float64) for b in blocks])
    if source == "persisted":
        Xd, yd = cluster3.persist([Xd, yd])
    d = dgd.DaskDataset(cluster3, Xd, yd)
    dv = dgd.DaskDataset(cluster3, da.from_array(Xv, chunks=(500, 6)), da.from_array(yv, 500))
    victim = sorted(set(d.workers_of_parts()))[1]
    out, seconds = _train(cluster3, d, dv, "collective",
                          callbacks=[KillAt([(5, victim, str(tmp_path / "k"))])])
    assert os.path.exists(tmp_path / "k"), "the kill did not happen"
    assert out["restarts"] == 1 and seconds < LIMIT
    _same(out, data)
    cluster3.wait_for_workers(3, timeout=60)
    # the training set holds pages only; a part read again for the restart's margins may
    # take a moment to go
    deadline = time.monotonic() + 10
    while parts_on_workers(cluster3, keys_of(d)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert parts_on_workers(cluster3, keys_of(d)) == 0
    assert len(d.held()) == 6 and all(f.status == "finished" for _, f in d.held())
