"""checkpoint_dir: a training killed with its process resumes from its checkpoint to the model
and history of the uninterrupted training, byte for byte (dgbdt.engine.checkpoint).

A kill is simulated by an exception raised at a chosen round (a callback, or right after a
checkpoint is written), and once by a real SIGKILL of a training subprocess; the resumed
training is the same call again. Incompatible checkpoints must be refused with errors that
say what differs; nothing may be silently restarted or overwritten.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from datagen import binary_with_missing

import dgbdt
from dgbdt.engine import checkpoint
from dgbdt.callback import EarlyStopping, LearningRateScheduler, TrainingCallback
from dgbdt.engine.checkpoint import CheckpointError

# row and column sampling (keyed by the round), a learning-rate schedule, two metrics, early
# stopping that stops the training at round 15 of 30; one thread: tiny data trains in
# milliseconds that way, while parallel kernels on a loaded 2-core machine take seconds
PARAMS = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3, "subsample": 0.8,
          "colsample_bytree": 0.8, "colsample_bynode": 0.7, "seed": 3,
          "eval_metric": ["logloss", "auc"], "nthread": 1}
ROUNDS = 30
STOP = 5
STOPPED = 15


class Killed(Exception):
    """What the simulated kill raises."""


class KillAt(TrainingCallback):
    """Raises Killed after round ``epoch`` (None: never): the training ends there, as if its
    process had been killed (round ``epoch`` is complete but not recorded)."""

    def __init__(self, epoch=None):
        self.epoch = epoch

    def after_iteration(self, model, epoch, evals_log):
        if epoch == self.epoch:
            raise Killed(epoch)
        return False


class Count(TrainingCallback):
    """Counts the rounds it sees and its before_training calls."""

    def __init__(self):
        self.rounds = self.starts = 0

    def before_training(self, model):
        self.starts += 1
        return model

    def after_iteration(self, model, epoch, evals_log):
        self.rounds += 1
        return False


def _schedule(epoch):
    return 0.3 * 0.97 ** epoch


@pytest.fixture(scope="module")
def data():
    X, y, w = binary_with_missing(1500, 6, seed=31)
    Xv, yv, _ = binary_with_missing(500, 6, seed=32)
    return X, y, w, Xv, yv


def _train(data, directory, callbacks=(), params=PARAMS, rounds=ROUNDS, **kw):
    X, y, w, Xv, yv = data
    history: dict = {}
    kw.setdefault("early_stopping_rounds", STOP)
    booster = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w), rounds,
                          evals=[(dgbdt.Dataset(Xv, label=yv), "valid")], evals_result=history,
                          verbose_eval=False, checkpoint_dir=directory,
                          callbacks=[LearningRateScheduler(_schedule), *callbacks], **kw)
    return booster, history


@pytest.fixture(scope="module")
def reference(data):
    booster, history = _train(data, None)
    assert booster.num_boosted_rounds() == STOPPED      # early stopping stopped it
    return booster.save_raw(), history, booster.best_iteration


def _saved(directory) -> dict:
    with open(os.path.join(directory, checkpoint.FILE)) as f:
        return json.load(f)


def _same(out, reference):
    booster, history = out
    raw, ref_history, best = reference
    assert booster.save_raw() == raw
    assert history == ref_history
    assert booster.best_iteration == best


@pytest.mark.parametrize("kill_at,interval", [(0, 1), (6, 4), (11, 5), (STOPPED - 1, 1)])
def test_resume_after_a_kill_gives_the_uninterrupted_model(data, reference, tmp_path,
                                                           kill_at, interval):
    with pytest.raises(Killed):
        _train(data, tmp_path, [KillAt(kill_at)], checkpoint_interval=interval)
    written = kill_at // interval * interval
    if written:
        saved = _saved(tmp_path)
        assert (saved["rounds"], saved["finished"]) == (written, False)
        assert saved["format"] == "dgbdt-checkpoint" and saved["version"] == 1
        # the model inside is a dgbdt model file's JSON
        assert dgbdt.load_model(saved["model"]).num_boosted_rounds() == written
    else:
        assert not os.path.exists(tmp_path / checkpoint.FILE)
    count = Count()
    _same(_train(data, tmp_path, [count], checkpoint_interval=interval), reference)
    assert count.rounds == STOPPED - written and count.starts == 1   # only the rounds left ran
    assert _saved(tmp_path)["finished"] is True


def test_a_finished_checkpoint_gives_the_model_again_without_training(data, reference,
                                                                      tmp_path):
    _same(_train(data, tmp_path), reference)
    count = Count()
    _same(_train(data, tmp_path, [count]), reference)
    assert count.rounds == 0


def test_sigkill_mid_training_then_the_same_call_resumes(data, reference, tmp_path):
    """A real SIGKILL: a training subprocess kills itself after round 9 (checkpoints every 3
    rounds); the same call here resumes from round 9's checkpoint."""
    X, y, w, Xv, yv = data
    np.savez(tmp_path / "data.npz", X=X, y=y, w=w, Xv=Xv, yv=yv)
    ckpt = tmp_path / "ckpt"
    script = textwrap.dedent(f"""
        import os, signal, sys
        import numpy as np
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import dgbdt
        from dgbdt.callback import LearningRateScheduler, TrainingCallback
        from test_checkpoint import PARAMS, ROUNDS, STOP, _schedule

        class SigKill(TrainingCallback):
            def after_iteration(self, model, epoch, evals_log):
                if epoch == 9:
                    os.kill(os.getpid(), signal.SIGKILL)
                return False

        d = np.load({str(tmp_path / "data.npz")!r})
        dgbdt.train(PARAMS, dgbdt.Dataset(d["X"], label=d["y"], weight=d["w"]), ROUNDS,
                    evals=[(dgbdt.Dataset(d["Xv"], label=d["yv"]), "valid")],
                    early_stopping_rounds=STOP, verbose_eval=False,
                    checkpoint_dir={str(ckpt)!r}, checkpoint_interval=3,
                    callbacks=[LearningRateScheduler(_schedule), SigKill()])
        print("not killed")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stdout + proc.stderr
    assert _saved(ckpt)["rounds"] == 9
    count = Count()
    _same(_train(data, ckpt, [count], checkpoint_interval=3), reference)
    assert count.rounds == STOPPED - 9


def test_early_stopping_callback_and_save_best_resume(data, tmp_path):
    """EarlyStopping's state is rebuilt from the history (its resume), so the resumed training
    stops at the same round and keeps the same best model."""
    def train(directory, kill=None):
        return _train(data, directory, [EarlyStopping(4, save_best=True), KillAt(kill)],
                      early_stopping_rounds=None, checkpoint_interval=2)
    raw, history = train(None)
    with pytest.raises(Killed):
        train(tmp_path, kill=12)     # after the best round (9), before the stop (13)
    booster, resumed = train(tmp_path)
    assert booster.save_raw() == raw.save_raw() and resumed == history
    assert booster.best_iteration == raw.best_iteration
    assert booster.num_boosted_rounds() == raw.best_iteration + 1 < 12   # stopped, cut


def test_continued_training_resumes_with_its_prior_model(data, tmp_path):
    X, y, w, *_ = data
    prior = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y, weight=w), 5, verbose_eval=False)
    ref = _train(data, None, xgb_model=prior, early_stopping_rounds=None, rounds=12)
    with pytest.raises(Killed):
        _train(data, tmp_path, [KillAt(5 + 7)], xgb_model=prior, early_stopping_rounds=None,
               rounds=12, checkpoint_interval=3)
    saved = _saved(tmp_path)
    assert (saved["rounds"], saved["prior_rounds"]) == (6, 5)
    booster, history = _train(data, tmp_path, xgb_model=prior, early_stopping_rounds=None,
                              rounds=12, checkpoint_interval=3)
    assert booster.save_raw() == ref[0].save_raw() and history == ref[1]
    other = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y, weight=w), 4, verbose_eval=False)
    with pytest.raises(CheckpointError, match="xgb_model"):
        _train(data, tmp_path, xgb_model=other, early_stopping_rounds=None, rounds=12)


def _interrupted(data, directory, after: int, monkeypatch):
    """A training killed right after its checkpoint of ``after`` rounds was written."""
    original = checkpoint.Checkpointer.recorded

    def recorded(self, progress):
        original(self, progress)
        if progress.rounds == after:
            raise Killed(after)
    with monkeypatch.context() as m:
        m.setattr(checkpoint.Checkpointer, "recorded", recorded)
        with pytest.raises(Killed):
            _train(data, directory, checkpoint_interval=after)
    assert _saved(directory)["rounds"] == after


def _rows(data, n):
    X, y, w, Xv, yv = data
    return X[:n], y[:n], w[:n], Xv, yv


def _labels(data):
    X, y, w, Xv, yv = data
    return X, 1.0 - y, w, Xv, yv


def _features(data):
    X, y, w, Xv, yv = data
    return X * 2, y, w, Xv * 2, yv


@pytest.mark.parametrize("change,expect", [
    (lambda d: dict(params={**PARAMS, "max_depth": 3}), "params.max_depth is 4 there, 3 here"),
    (lambda d: dict(params={**PARAMS, "seed": 4}), "params.seed is 3 there, 4 here"),
    (lambda d: dict(rounds=40), "num_boost_round is 30 there, 40 here"),
    (lambda d: dict(early_stopping_rounds=6), "early_stopping_rounds is 5 there, 6 here"),
    (lambda d: dict(data=_rows(d, 1400)), "data.rows is 1500 there, 1400 here"),
    (lambda d: dict(data=_labels(d)), "data.intercept .* other labels"),
    (lambda d: dict(data=_features(d)), "data.cuts differs .* other training rows"),
])
def test_a_checkpoint_of_another_training_is_refused(data, tmp_path, monkeypatch, change,
                                                     expect):
    _interrupted(data, tmp_path, 4, monkeypatch)
    before = (tmp_path / checkpoint.FILE).read_bytes()
    kw = change(data)
    with pytest.raises(CheckpointError, match=expect) as e:
        _train(kw.pop("data", data), tmp_path, **kw)
    assert "discard" in str(e.value) and "4 rounds done" in str(e.value)
    assert (tmp_path / checkpoint.FILE).read_bytes() == before      # not overwritten


def test_threads_and_device_do_not_matter(data, reference, tmp_path, monkeypatch):
    _interrupted(data, tmp_path, 4, monkeypatch)
    _same(_train(data, tmp_path, params={**PARAMS, "nthread": 2, "device": "cpu"},
                 checkpoint_interval=4), reference)


@pytest.mark.parametrize("damage,expect", [
    (lambda text: text[: len(text) // 2], "is not valid JSON .* damaged"),
    (lambda text: text.replace('"version":1', '"version":2'),
     "format version 2, written by a newer dgbdt; this one reads versions up to 1"),
    (lambda text: text.replace('"format":"dgbdt-checkpoint"', '"format":"x"'),
     "is not a dgbdt checkpoint"),
    (lambda text: text.replace('"rounds":4', '"rounds":5'), "damaged: .*history"),
    (lambda text: text.replace('"next_eta":', '"next_eta":-'), "damaged: .*next_eta"),
    (lambda text: text.replace('"tree_class":[0,', '"tree_class":[1,'), "damaged: .*class"),
])
def test_a_damaged_or_newer_checkpoint_is_refused(data, reference, tmp_path, monkeypatch,
                                                  damage, expect):
    _interrupted(data, tmp_path, 4, monkeypatch)
    path = tmp_path / checkpoint.FILE
    text = path.read_text()
    changed = damage(text)
    assert changed != text
    path.write_text(changed)
    with pytest.raises(CheckpointError, match=expect):
        _train(data, tmp_path)
    assert path.read_text() == changed
    assert checkpoint.discard(tmp_path)        # the documented fresh start
    _same(_train(data, tmp_path), reference)


def test_a_kill_while_writing_leaves_the_last_checkpoint_whole(data, reference, tmp_path,
                                                               monkeypatch):
    """The write is a temporary file and os.replace: stopped before the replace, the previous
    checkpoint is intact and no temporary file is left; a stray one (a SIGKILL there) is
    ignored and discard removes it."""
    _interrupted(data, tmp_path, 4, monkeypatch)
    replace = os.replace

    def killed(src, dst):
        raise Killed("mid-write")
    with monkeypatch.context() as m:
        m.setattr(os, "replace", killed)
        with pytest.raises(Killed, match="mid-write"):
            _train(data, tmp_path, checkpoint_interval=4)
    assert os.replace is replace
    assert os.listdir(tmp_path) == [checkpoint.FILE] and _saved(tmp_path)["rounds"] == 4
    (tmp_path / (checkpoint.FILE + ".tmp-1-dead")).write_text('{"half')
    _same(_train(data, tmp_path, checkpoint_interval=4), reference)
    assert checkpoint.discard(tmp_path) and os.listdir(tmp_path) == []


def test_a_worker_finding_another_trainings_checkpoint_stops(data, tmp_path, monkeypatch):
    """The first write in another process (a Dask worker) checks the file again: with a
    checkpoint_dir that is not shared, the worker's directory may hold another training's."""
    _interrupted(data, tmp_path, 4, monkeypatch)
    sink = checkpoint.Checkpointer(tmp_path, 4, {"other": "training"}, 0)
    sink._checked = ("another-host", 1)
    progress = checkpoint.read(str(tmp_path / checkpoint.FILE))
    from dgbdt.engine.progress import Progress
    with pytest.raises(CheckpointError, match="shared by the client and the workers"):
        sink.recorded(Progress(8, True, progress["model"], {}, None, 0.3))


def test_checkpoint_interval_is_checked(data, tmp_path):
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="checkpoint_interval"):
            _train(data, tmp_path, checkpoint_interval=bad)


def test_the_estimator_resumes(data, tmp_path, monkeypatch):
    X, y, w, Xv, yv = data
    def fit(directory):
        est = dgbdt.GBDTClassifier(n_estimators=12, max_depth=3, subsample=0.8, random_state=2,
                                   n_jobs=1, checkpoint_dir=directory, checkpoint_interval=5)
        return est.fit(X, y, eval_set=[(Xv, yv)])
    ref = fit(None)
    original = checkpoint.Checkpointer.recorded

    def recorded(self, progress):
        original(self, progress)
        if progress.rounds == 5:
            raise Killed()
    with monkeypatch.context() as m:
        m.setattr(checkpoint.Checkpointer, "recorded", recorded)
        with pytest.raises(Killed):
            fit(tmp_path)
    est = fit(tmp_path)
    assert est.get_booster().save_raw() == ref.get_booster().save_raw()
    assert est.evals_result() == ref.evals_result()
    assert "checkpoint_dir" in est.get_params()
