"""checkpoint_dir on a real cluster: a dgbdt.dask training killed with its client resumes from
its checkpoint to the uninterrupted model and history, byte for byte, in every mode.

The checkpoint is written where the boosting loop runs: by the client in graph mode, by rank 0
on its worker in the collective mode, by the task in the one-task mode (a LocalCluster shares
the client's file system). A kill is an exception raised at a chosen round, or a real SIGKILL
of a client subprocess; the collective ranks of a killed client run on and write the same
checkpoints (the same model), which the resumed training must survive.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import numpy as np
import pytest
from datagen import binary_with_missing
from test_checkpoint import PARAMS, ROUNDS, STOP, KillAt, Killed, _schedule

import dgbdt
from dgbdt.engine import checkpoint
from dgbdt.callback import LearningRateScheduler, TrainingCallback

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
import dgbdt.dask as dgd  # noqa: E402

pytestmark = pytest.mark.slow  # kills clients of process clusters

INTERVAL = 3


@pytest.fixture(scope="module")
def cluster2():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2)
        yield client


@pytest.fixture(scope="module")
def data():
    X, y, w = binary_with_missing(2000, 6, seed=41)
    Xv, yv, _ = binary_with_missing(500, 6, seed=42)
    history: dict = {}
    booster = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y, weight=w), ROUNDS,
                          evals=[(dgbdt.Dataset(Xv, label=yv), "valid")],
                          early_stopping_rounds=STOP, evals_result=history, verbose_eval=False,
                          callbacks=[LearningRateScheduler(_schedule)])
    stopped = booster.num_boosted_rounds()
    assert 10 < stopped < ROUNDS        # early stopping ends it
    return (X, y, w, Xv, yv), (booster.save_raw(), history, stopped)


def _datasets(client, X, y, w, Xv, yv):
    """The training rows on both workers, and an eval set."""
    for _ in range(20):
        tag = uuid.uuid4().hex
        d = dgd.DaskDataset(client, da.from_array(X, chunks=(500, 6), name=f"X{tag}"),
                            da.from_array(y, chunks=500, name=f"y{tag}"),
                            da.from_array(w, chunks=500, name=f"w{tag}"))
        if len(set(d.workers_of_parts())) == 2:
            break
        time.sleep(0.2)
    dv = dgd.DaskDataset(client, da.from_array(Xv, chunks=(250, 6)),
                         da.from_array(yv, chunks=250))
    return d, dv


def _train(client, d, dv, mode, directory, callbacks=()):
    return dgd.train(client, PARAMS, d, ROUNDS, evals=[(dv, "valid")],
                     early_stopping_rounds=STOP, verbose_eval=False, mode=mode,
                     checkpoint_dir=directory, checkpoint_interval=INTERVAL,
                     callbacks=[LearningRateScheduler(_schedule), *callbacks])


def _rounds(directory) -> int:
    with open(os.path.join(directory, checkpoint.FILE)) as f:
        return json.load(f)["rounds"]


def _same(out, reference):
    raw, history, _ = reference
    assert out["booster"].save_raw() == raw
    assert out["history"] == history


class NotBefore(TrainingCallback):
    """Fails a training that runs a round before ``epoch``: a resume from a checkpoint of
    ``epoch`` rounds or more passes, a fresh start (the same model, but no resume) fails.
    Works where the callbacks run on the workers (the task and collective modes)."""

    def __init__(self, epoch):
        self.epoch = epoch

    def before_iteration(self, model, epoch, evals_log):
        assert epoch >= self.epoch, f"round {epoch} ran again: the training did not resume"
        return False


class Count(TrainingCallback):
    def __init__(self):
        self.rounds = 0

    def after_iteration(self, model, epoch, evals_log):
        self.rounds += 1
        return False


def test_collective_mode_resumes_after_a_kill(cluster2, data, tmp_path):
    """The ranks fail after round 7 (their callbacks raise); rank 0 wrote round 6's
    checkpoint on its worker, and the same call resumes there. (Graph mode: the SIGKILL test
    below.)"""
    arrays, reference = data
    d, dv = _datasets(cluster2, *arrays)
    with pytest.raises(Killed):
        _train(cluster2, d, dv, "collective", tmp_path, [KillAt(7)])
    assert _rounds(tmp_path) == 6
    out = _train(cluster2, d, dv, "collective", tmp_path, [NotBefore(6)])
    assert out["mode"] == "collective" and out["restarts"] == 0
    _same(out, reference)


def test_one_task_mode_resumes(client1, data, tmp_path):
    """The whole training in one task on the only worker (an in-process cluster): the task
    writes the checkpoint."""
    arrays, reference = data
    X, y, w, Xv, yv = arrays
    d = dgd.DaskDataset(client1, da.from_array(X, chunks=(500, 6)), da.from_array(y, chunks=500),
                        da.from_array(w, chunks=500))
    dv = dgd.DaskDataset(client1, da.from_array(Xv, chunks=(250, 6)),
                         da.from_array(yv, chunks=250))
    with pytest.raises(Killed):
        _train(client1, d, dv, "task", tmp_path, [KillAt(4)])
    assert _rounds(tmp_path) == 3
    _same(_train(client1, d, dv, "task", tmp_path, [NotBefore(3)]), reference)


def test_a_dask_checkpoint_resumes_in_process(cluster2, data, tmp_path):
    """What must match does not name the mode or the workers: a collective training's
    checkpoint resumes in dgbdt.train, to the same model."""
    arrays, reference = data
    X, y, w, Xv, yv = arrays
    d, dv = _datasets(cluster2, *arrays)
    with pytest.raises(Killed):
        _train(cluster2, d, dv, "collective", tmp_path, [KillAt(10)])
    assert _rounds(tmp_path) == 9
    history: dict = {}
    booster = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y, weight=w), ROUNDS,
                          evals=[(dgbdt.Dataset(Xv, label=yv), "valid")],
                          early_stopping_rounds=STOP, evals_result=history, verbose_eval=False,
                          checkpoint_dir=tmp_path,
                          callbacks=[LearningRateScheduler(_schedule), NotBefore(9)])
    _same({"booster": booster, "history": history}, reference)


def test_graph_mode_without_callbacks_resumes(cluster2, data, tmp_path, monkeypatch):
    """Without callbacks graph mode runs a round ahead and its trees stay futures: the client
    gathers those of the completed rounds for each checkpoint. Killed right after writing
    round 6's checkpoint, the same call resumes there."""
    arrays, _ = data
    X, y, w, Xv, yv = arrays
    history: dict = {}
    ref = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y, weight=w), ROUNDS,
                      evals=[(dgbdt.Dataset(Xv, label=yv), "valid")], early_stopping_rounds=STOP,
                      evals_result=history, verbose_eval=False)
    d, dv = _datasets(cluster2, *arrays)
    original = checkpoint.Checkpointer.recorded

    def recorded(self, progress):
        original(self, progress)
        if progress.rounds == 6:
            raise Killed()

    def train():
        return dgd.train(cluster2, PARAMS, d, ROUNDS, evals=[(dv, "valid")],
                         early_stopping_rounds=STOP, verbose_eval=False, mode="graph",
                         checkpoint_dir=tmp_path, checkpoint_interval=INTERVAL)
    with monkeypatch.context() as m:
        m.setattr(checkpoint.Checkpointer, "recorded", recorded)
        with pytest.raises(Killed):
            train()
    assert _rounds(tmp_path) == 6
    seen = []

    def watched(self, progress):
        seen.append(progress.rounds)
        original(self, progress)
    with monkeypatch.context() as m:
        m.setattr(checkpoint.Checkpointer, "recorded", watched)
        _same(train(), (ref.save_raw(), history, None))
    assert min(seen) == 6         # resumed there, not started again


class SigKill(TrainingCallback):
    """SIGKILLs process ``pid`` after round ``epoch`` (graph mode: the client itself; in the
    collective mode the ranks kill the client and run on, as orphans)."""

    def __init__(self, epoch, pid):
        self.epoch, self.pid = epoch, pid

    def after_iteration(self, model, epoch, evals_log):
        if epoch == self.epoch:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:      # the other rank was first
                pass
            time.sleep(0.5)         # the rank goes on when the kill has landed
        return False


@pytest.mark.parametrize("mode", ["graph", "collective"])
def test_a_sigkilled_client_resumes(cluster2, data, tmp_path, mode):
    """A client in another process trains on the cluster and is SIGKILLed after round 7; the
    same call from this client resumes from the checkpoint."""
    arrays, reference = data
    np.savez(tmp_path / "data.npz", **dict(zip(["X", "y", "w", "Xv", "yv"], arrays)))
    ckpt = tmp_path / "ckpt"
    script = textwrap.dedent(f"""
        import os, sys
        import numpy as np
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import distributed
        import test_checkpoint_dask as T

        arrays = np.load({str(tmp_path / "data.npz")!r})
        with distributed.Client({cluster2.scheduler.address!r}, set_as_default=False) as c:
            d, dv = T._datasets(c, *(arrays[k] for k in ("X", "y", "w", "Xv", "yv")))
            T._train(c, d, dv, {mode!r}, {str(ckpt)!r}, [T.SigKill(7, os.getpid())])
        print("not killed")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr[-3000:]
    assert _rounds(ckpt) >= 6
    d, dv = _datasets(cluster2, *arrays)
    count = Count()
    out = _train(cluster2, d, dv, mode, ckpt, [count, NotBefore(6)])
    _same(out, reference)
    if mode == "graph":     # the client wrote round 6's checkpoint and died after round 7
        assert count.rounds == reference[2] - 6


def test_the_dask_estimator_passes_checkpoint_dir(client2, data, tmp_path):
    arrays, _ = data
    X, y, *_ = arrays
    est = dgd.DaskGBDTClassifier(n_estimators=4, max_depth=3, n_jobs=1, checkpoint_dir=tmp_path)
    est.client = client2
    est.fit(da.from_array(X, chunks=(500, 6)), da.from_array(y, chunks=500))
    with open(tmp_path / checkpoint.FILE) as f:
        saved = json.load(f)
    assert saved["finished"] and saved["rounds"] == 4
    assert dgbdt.load_model(saved["model"]).save_raw() == est.get_booster().save_raw()
