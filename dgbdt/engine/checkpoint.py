"""Checkpoints: a training killed with its process resumes where it stopped, to the same model.

With ``checkpoint_dir=`` (dgbdt.train, dgbdt.dask.train, the estimators) a training keeps one
file, ``<checkpoint_dir>/dgbdt-checkpoint.json``, rewritten after every ``checkpoint_interval``
completed rounds and once at the end. Run the same call again after a kill (SIGKILL, Ctrl-C, a
lost machine) and the training resumes from that file as continued training: every row's
margins start from the checkpoint's model, round r keeps its index (sampling draws the same
rows and features), the evaluation history, early stopping's state and the next round's
learning rate are restored (dgbdt.engine.progress says why the result is the uninterrupted model, byte
for byte). A finished training's checkpoint is its end state: the same call returns the same
model and history again, without training (``discard`` it to train again).

The file is JSON, never pickle::

    {"format": "dgbdt-checkpoint", "version": 1,
     "rounds": rounds completed by this training (xgb_model's not counted),
     "prior_rounds": the rounds of xgb_model (0 without one),
     "finished": true once the training has ended (its last round, or a stop),
     "next_eta": the learning rate of round ``rounds`` (a LearningRateScheduler's, or eta),
     "history": {eval set: {metric: [value per completed round]}},
     "fingerprint": what must match to resume (``fingerprint``),
     "model": the model so far, dgbdt's model JSON (dgbdt.model.booster)}

It is written atomically: a temporary file in the same directory, flushed and fsync'ed, then
``os.replace``d over the last one, so a kill mid-write leaves the previous checkpoint whole (a
stray ``dgbdt-checkpoint.json.tmp-*`` at most, which ``discard`` removes).

Resuming is refused with a ``CheckpointError`` — never a silent fresh start, never a silent
overwrite — when the file is unreadable, of another format version, or was written by another
training: other model parameters, num_boost_round or early stopping, other data (row and
feature counts, feature names, weights or base margins given or not, the feature quantiles,
the intercept from the labels), other eval sets (names, rows) or metrics, another xgb_model.
The message says what differs. To start afresh, delete the file
(``dgbdt.engine.checkpoint.discard(checkpoint_dir)``) or use another directory. Not compared:
nthread, device, verbosity and device_memory_budget (they do not change the model: a
checkpoint of a CPU run resumes on GPUs, of 8 workers on 2, of a Dask training in-process);
callables only by name (obj, custom_metric), callbacks not at all; the rows' values are not
hashed (that would cost a pass over the data), so other data with the same shape, quantiles
and intercept (e.g. the labels of a few rows changed) goes unnoticed.

Callbacks are code with state, so they are not saved. A resumed training runs the callbacks
of the call that resumes it: ``before_training`` again, then ``after_iteration`` for the
rounds still to come. A callback with a ``resume(model, epoch, evals_log)`` method gets one
call after ``before_training``, with the epoch of the first round to come and the history so
far, to rebuild its state: EarlyStopping replays its best score and round from the history;
LearningRateScheduler needs nothing (its rates are keyed by epoch, and the next rate is in
the checkpoint); EvaluationMonitor prints the rounds still to come; TrainingCheckPoint goes on.

Cost: each tree is encoded to JSON once (trees do not change after their round), but every
checkpoint writes the whole file, so the bytes written grow with the square of the rounds over
the interval; the default interval, 10 rounds (a kill loses at most 10 rounds of work), keeps
that small. Raise ``checkpoint_interval`` for long trainings of fast rounds
(docs/benchmarks-archive.md#figures-behind-code-choices).
"""
from __future__ import annotations

import glob
import hashlib
import json
import logging
import os
import socket
import uuid

import numpy as np

from ..model.booster import Booster
from .progress import Progress
from ..tree.model import ModelFormatError

FORMAT = "dgbdt-checkpoint"
VERSION = 1
FILE = "dgbdt-checkpoint.json"
DEFAULT_INTERVAL = 10
logger = logging.getLogger("dgbdt.engine.checkpoint")

# parameters that do not change the model: not compared on resume
_NOT_MODEL = ("device", "device_memory_budget", "nthread", "verbosity", "validate_parameters")
# gblinear's parameters (a gblinear training keeps no checkpoint, dgbdt.engine.gblinear): left
# out, so a tree training's fingerprint is what it was before they existed
_LINEAR_ONLY = ("updater", "feature_selector", "top_k", "tolerance",
                # process_type="update" keeps no checkpoint either (dgbdt.engine.update_process)
                "process_type", "refresh_leaf")

# why a fingerprint entry may differ, for the error message
_HINTS = {"data.cuts": "the feature quantiles differ: other training rows",
          "data.intercept": "the intercept estimated from the labels differs: other labels",
          "xgb_model.sha256": "another model to continue from"}


class CheckpointError(ValueError):
    """A checkpoint cannot be resumed (unreadable, another version, another training) or
    written (another training's file in the way); the message says why and what to do."""


def check_interval(interval) -> int:
    if isinstance(interval, bool) or not isinstance(interval, (int, np.integer)) \
            or interval < 1:
        raise ValueError(f"checkpoint_interval must be an integer >= 1 (rounds between "
                         f"checkpoints); got {interval!r}")
    return int(interval)


def path_of(directory) -> str:
    """The checkpoint file of a checkpoint_dir (an absolute path: workers may write it)."""
    return os.path.join(os.path.abspath(os.fspath(directory)), FILE)


def discard(directory) -> bool:
    """Delete the checkpoint in ``directory`` (and temporary files a kill left): the next
    training with this checkpoint_dir starts afresh. Returns whether there was one."""
    path = path_of(directory)
    for tmp in glob.glob(glob.escape(path) + ".tmp-*"):
        with _quiet():
            os.remove(tmp)
    try:
        os.remove(path)
        return True
    except FileNotFoundError:
        return False


class _quiet:
    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        return kind is not None and issubclass(kind, OSError)


def _name(fn) -> str | None:
    if fn is None:
        return None
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def cuts_digest(cuts) -> str:
    """A digest of the feature quantiles (the cuts): other training data, other cuts."""
    from ..backends.device import to_host
    h = hashlib.sha256()
    for a, dtype in ((cuts.values, np.float32), (cuts.ptrs, np.int64),
                     (cuts.min_values, np.float32)):
        h.update(np.ascontiguousarray(to_host(a), dtype=dtype).tobytes())
    return h.hexdigest()


def fingerprint(p: dict, num_boost_round: int, early_stopping_rounds, maximize, *, rows: int,
                features: int, feature_names, weighted: bool, base_margin: bool, cuts,
                intercept, evals, metrics, prior: Booster | None, obj=None,
                custom_metric=None) -> dict:
    """What must match for a checkpoint to resume a training: a JSON-safe dict. ``p``: the
    normalized parameters; ``evals``: (name, rows) per eval set; ``metrics``: their names."""
    fp = {
        "params": {k: (_metric_names(v) if k == "eval_metric" else v)
                   for k, v in p.items() if k not in _NOT_MODEL + _LINEAR_ONLY},
        "num_boost_round": int(num_boost_round),
        "early_stopping_rounds": early_stopping_rounds,
        "maximize": maximize,
        "obj": _name(obj), "custom_metric": _name(custom_metric),
        "data": {"rows": int(rows), "features": int(features),
                 "feature_names": None if feature_names is None else list(feature_names),
                 "weighted": bool(weighted), "base_margin": bool(base_margin),
                 "cuts": cuts_digest(cuts),
                 "intercept": [float(v) for v in np.asarray(intercept).ravel()]},
        "evals": [[name, int(n)] for name, n in evals],
        "metrics": list(metrics),
        "xgb_model": None if prior is None else {
            "rounds": prior.num_boosted_rounds(),
            "sha256": hashlib.sha256(prior.save_raw("dgbdt").encode()).hexdigest()},
    }
    return json.loads(json.dumps(fp))      # as it reads back: tuples are lists


def _metric_names(metrics):
    """eval_metric as names (custom Metric instances by name and class)."""
    if not metrics:
        return metrics
    return [m if isinstance(m, str) else f"{m.name} ({type(m).__qualname__})" for m in metrics]


def _flat(d, prefix="") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def differences(saved: dict, now: dict) -> list[str]:
    """'key: X there, Y here' for every entry of two fingerprints that differs."""
    a, b = _flat(saved), _flat(now)
    out = []
    for k in sorted(set(a) | set(b)):
        if a.get(k, "<absent>") != b.get(k, "<absent>"):
            hint = _HINTS.get(k)
            if k in ("data.cuts", "xgb_model.sha256") and k in a and k in b:
                out.append(f"{k} differs ({hint})")
            else:
                out.append(f"{k} is {a.get(k, '<absent>')!r} there, {b.get(k, '<absent>')!r} "
                           f"here" + (f" ({hint})" if hint else ""))
    return out


# -- reading -----------------------------------------------------------------------------------
def read(path: str) -> dict | None:
    """The checkpoint at ``path``, validated: a dict with the file's fields, "model" a Booster;
    None when there is no file. Raises CheckpointError naming what is wrong."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    fix = (f"delete it to start afresh (dgbdt.engine.checkpoint.discard("
           f"{os.path.dirname(path)!r})) or pass another checkpoint_dir")
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"checkpoint {path} is not valid JSON ({e}): the file is damaged "
                              f"(dgbdt writes checkpoints atomically, so something else "
                              f"changed it); {fix}") from None
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a dgbdt checkpoint (no \"format\": \"{FORMAT}\" "
                              f"at the top); {fix}")
    version = d.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckpointError(f"checkpoint {path} has an invalid version {version!r}; {fix}")
    if version > VERSION:
        raise CheckpointError(f"checkpoint {path} has format version {version}, written by a "
                              f"newer dgbdt; this one reads versions up to {VERSION}. Resume "
                              f"with the newer dgbdt, or {fix}")
    # (version 1 is the only one so far; older versions would be upgraded here)
    try:
        return _fields(d)
    except (ModelFormatError, KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"checkpoint {path} is damaged: {e}; {fix}") from None


def _fields(d: dict) -> dict:
    def count(key):
        v = d[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"field {key!r} must be an integer >= 0")
        return v

    rounds, prior_rounds = count("rounds"), count("prior_rounds")
    if not isinstance(d["finished"], bool):
        raise ValueError("field 'finished' must be true or false")
    eta = d["next_eta"]
    if not (isinstance(eta, (int, float)) and not isinstance(eta, bool) and eta >= 0):
        raise ValueError("field 'next_eta' must be a number >= 0")
    history = d["history"]
    if not isinstance(history, dict) or not all(
            isinstance(ms, dict) and all(isinstance(v, list) and len(v) == rounds
                                         and all(isinstance(x, (int, float)) for x in v)
                                         for v in ms.values())
            for ms in history.values()):
        raise ValueError(f"field 'history' must map eval sets to metrics to {rounds} values")
    if not isinstance(d["fingerprint"], dict):
        raise ValueError("field 'fingerprint' must be an object")
    booster = Booster.from_dict(d["model"])
    if len(booster.trees) != (prior_rounds + rounds) * booster.trees_per_round:
        raise ValueError(f"its model has {booster.num_boosted_rounds()} rounds, not the "
                         f"{prior_rounds} + {rounds} it says")
    return {"rounds": rounds, "prior_rounds": prior_rounds, "finished": d["finished"],
            "next_eta": float(eta), "history": history, "fingerprint": d["fingerprint"],
            "model": booster}


# -- the training's side -----------------------------------------------------------------------
class Checkpointer:
    """A training's checkpoints: ``resume`` reads the one to go on from; attached to the
    training's Progress as its ``sink``, ``recorded`` writes one after every ``interval``
    completed rounds and at the end. Sent with the training where its loop runs (the workers
    of dgbdt.dask's task and collective modes; see dgbdt.dask.train)."""

    def __init__(self, directory, interval: int, fingerprint: dict, prior_rounds: int):
        self.path = path_of(directory)
        self.interval, self.fingerprint = check_interval(interval), fingerprint
        self.prior_rounds = int(prior_rounds)
        self.last = (0, False)    # (rounds, finished) of the file written or resumed from
        self.fetch = None         # graph mode: gathers the trees, which are futures
        self._trees: list = []    # the trees fetched so far (graph mode)
        self._checked = None      # (host, pid) where the file was found compatible
        self._texts: list = []    # (tree, its JSON) of the trees written so far

    def _here(self):
        return socket.gethostname(), os.getpid()

    def _compatible(self, where: str) -> dict | None:
        """The file, read and validated (None: none); CheckpointError when it belongs to
        another training."""
        d = read(self.path)
        if d is not None and d["fingerprint"] != self.fingerprint:
            what = "; ".join(differences(d["fingerprint"], self.fingerprint))
            raise CheckpointError(
                f"checkpoint {self.path} ({d['rounds']} rounds done{where}) belongs to another "
                f"training: {what}. Resume it with the same call, or start afresh: delete it "
                f"(dgbdt.engine.checkpoint.discard({os.path.dirname(self.path)!r})) or pass another "
                f"checkpoint_dir")
        self._checked = self._here()
        return d

    def resume(self) -> Progress | None:
        """The progress of this training's checkpoint, to resume from (its ``sink`` is this
        checkpointer); None when there is none. CheckpointError when the file is unreadable
        or belongs to another training."""
        d = self._compatible("")
        if d is None:
            return None
        self.last = (d["rounds"], d["finished"])
        logger.info("dgbdt: resuming from checkpoint %s: %d rounds done%s", self.path,
                    d["rounds"], " (finished)" if d["finished"] else "")
        return Progress(d["rounds"], True, d["model"], d["history"], None, d["next_eta"],
                        sink=self, finished=d["finished"])

    def on_client(self, fetch) -> "Checkpointer":
        """A copy for a loop whose trees are futures that ``fetch`` gathers (graph mode)."""
        c = Checkpointer.__new__(Checkpointer)
        c.__dict__.update(self.__dict__, fetch=fetch, _trees=[], _texts=[])
        return c

    def recorded(self, progress: Progress) -> None:
        """The loop has recorded ``progress``: write it when due (every ``interval`` rounds,
        and when the training has finished)."""
        rounds, finished = progress.rounds, bool(progress.finished)
        due = finished or (rounds > self.last[0] and rounds % self.interval == 0)
        if not due or (rounds, finished) == self.last:
            return
        if self._checked != self._here():     # another process (a worker): check once
            self._compatible(f", found by {socket.gethostname()}: is checkpoint_dir a "
                             f"directory shared by the client and the workers?")
        keep = (self.prior_rounds + rounds) * progress.booster.trees_per_round
        trees = None
        if self.fetch is not None:
            have = len(self._trees)
            if keep > have:
                self._trees.extend(self.fetch(list(progress.booster.trees[have:keep])))
            trees = self._trees[:keep]
        snap = progress.frozen(self.prior_rounds, trees)
        eta = snap.booster.__dict__.get("_next_eta", snap.eta)
        doc = {"format": FORMAT, "version": VERSION, "rounds": snap.rounds,
               "prior_rounds": self.prior_rounds, "finished": finished,
               "next_eta": float(eta),
               "history": {n: {m: [float(x) for x in v] for m, v in ms.items()}
                           for n, ms in snap.history.items()},
               "fingerprint": self.fingerprint}
        text = json.dumps(doc, separators=(",", ":"))
        write_atomically(self.path, f'{text[:-1]},"model":{self._model_json(snap.booster)}}}')
        self.last = (snap.rounds, finished)

    def _model_json(self, booster: Booster) -> str:
        """The model's JSON (Booster.to_dict's fields), each tree encoded once: a tree does
        not change after its round, so a checkpoint costs the encoding of the new trees
        and the writing of the file, not the encoding of the whole model again."""
        texts = self._texts
        i = 0
        while i < min(len(texts), len(booster.trees)) and texts[i][0] is booster.trees[i]:
            i += 1
        del texts[i:]
        texts.extend((t, json.dumps(t.to_dict(), separators=(",", ":")))
                     for t in booster.trees[i:])
        empty = booster.snapshot()
        empty.trees, empty.tree_class = [], []
        d = empty.to_dict()
        del d["trees"], d["tree_class"]
        head = json.dumps(d, separators=(",", ":"))[:-1]
        return (f'{head},"trees":[{",".join(t for _, t in texts)}],'
                f'"tree_class":{json.dumps(list(booster.tree_class))}}}')


def write_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader (or a kill) sees the old file or the new
    one, never a part: a temporary file beside it, fsync'ed, then os.replace."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with _quiet():
            os.remove(tmp)
        raise
