"""A persisted DaskDataset keeps pages, not raw rows, once its first training has packed them.

Its raw parts (checked float32 features) live from construction until their pages exist, then
go, one by one (dgbdt.dask.pages); later trainings with the same settings reuse the pages, and
passes that need raw rows again read them from lineage. The model is the in-process one, byte
for byte, throughout. (A lost worker's pages are recomputed from lineage: tests/test_recovery.py.)
"""
import uuid

import numpy as np
import pytest

pytest.importorskip("distributed")
import dask.array as da  # noqa: E402

import dgbdt  # noqa: E402
import dgbdt.dask as dgd  # noqa: E402
from datagen import binary_with_missing  # noqa: E402
from dgbdt.callback import TrainingCallback  # noqa: E402
from raw_parts import keys_of, parts_on_workers, watch  # noqa: E402

F = 6
PARAMS = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["logloss", "auc"]}
CHUNK = 500


def dataset(client, X, y, w=None, persist=True):
    """Partitions of CHUNK rows, under new keys (not those of another test's equal data)."""
    c, tag = (CHUNK,), uuid.uuid4().hex

    def arr(a, what):
        return da.from_array(a, chunks=c + a.shape[1:], name=f"{what}-{tag}")
    return dgd.DaskDataset(client, arr(X, "X"), arr(y, "y"), None if w is None else arr(w, "w"),
                           persist=persist)


def in_process(params, X, y, w, rounds, Xv=None, yv=None):
    hist: dict = {}
    evals = [] if Xv is None else [(dgbdt.Dataset(Xv, label=yv), "valid")]
    b = dgbdt.train(params, dgbdt.Dataset(X, label=y, weight=w), rounds, evals=evals,
                    evals_result=hist, verbose_eval=False)
    return b.save_raw(), hist


class RawPartsAt(TrainingCallback):
    """Records, after each round, how many of the given raw parts the scheduler holds (graph
    mode runs the callbacks on the client)."""

    def __init__(self, plugin, keys):
        self.plugin, self.keys, self.seen = plugin, keys, []

    def after_iteration(self, model, epoch, evals_log):
        self.seen.append(self.plugin.held(self.keys))
        return False


@pytest.mark.parametrize("mode", ["graph", "collective"])
def test_persisted_dataset_keeps_pages_only_once_they_exist(client2, mode):
    X, y, w = binary_with_missing(4000, F, seed=11)
    Xv, yv, _ = binary_with_missing(1000, F, seed=12)
    plugin = watch(client2)
    d, dv = dataset(client2, X, y, w), dataset(client2, Xv, yv)
    train_keys, eval_keys = keys_of(d), keys_of(dv)
    assert plugin.held(train_keys) == 8 and plugin.held(eval_keys) == 2       # all held
    assert parts_on_workers(client2, train_keys) == 8
    seen = RawPartsAt(plugin, train_keys)
    out = dgd.train(client2, PARAMS, d, 5, evals=[(d, "train"), (dv, "valid")], mode=mode,
                    verbose_eval=False, callbacks=[seen] if mode == "graph" else None)
    if mode == "graph":
        assert seen.seen == [0] * 5
    assert plugin.held(train_keys) == 0 and parts_on_workers(client2, train_keys) == 0
    # the eval set keeps its raw parts (scored on raw rows every round); nothing read twice
    assert plugin.held(eval_keys) == 2 and parts_on_workers(client2, eval_keys) == 2
    assert plugin.computed_of(train_keys + eval_keys) == 10
    ref = dgbdt.train(PARAMS, dgbdt.Dataset(X, label=y, weight=w), 5,
                      evals=[(dgbdt.Dataset(X, label=y, weight=w), "train"),
                             (dgbdt.Dataset(Xv, label=yv), "valid")],
                      evals_result=(hist := {}), verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw() and out["history"] == hist
    streamed = dgd.train(client2, PARAMS, dataset(client2, X, y, w, persist=False), 5,
                         mode=mode, verbose_eval=False)
    assert streamed["booster"].save_raw() == ref.save_raw()


def test_later_trainings_reuse_the_pages_or_read_again(client2):
    """The same settings train on the kept pages (no part read again); another max_bin reads
    the parts from lineage once more (sketch and pages) and keeps the new pages only; a model
    continued from another reads the raw rows for its starting margins. Every model is the
    in-process one."""
    X, y, w = binary_with_missing(3000, F, seed=13)
    d = dataset(client2, X, y, w)
    keys = keys_of(d)
    plugin = watch(client2)
    first = dgd.train(client2, PARAMS, d, 4, verbose_eval=False)["booster"]
    assert first.save_raw() == in_process(PARAMS, X, y, w, 4)[0]
    # the parts were held since construction (the plugin came after), and are gone now
    assert plugin.computed_of(keys) == 0 and parts_on_workers(client2, keys) == 0
    again = dgd.train(client2, PARAMS, d, 4, mode="graph", verbose_eval=False)["booster"]
    assert again.save_raw() == first.save_raw() and plugin.computed_of(keys) == 0
    p64 = {**PARAMS, "max_bin": 64}
    b64 = dgd.train(client2, p64, d, 4, verbose_eval=False)["booster"]
    assert b64.save_raw() == in_process(p64, X, y, w, 4)[0]
    # read for the sketch and the pages (Dask may reuse a part still in memory between the
    # two passes), then released
    assert 6 <= plugin.computed_of(keys) <= 2 * 6 and plugin.held(keys) == 0
    cont = dgd.train(client2, PARAMS, d, 3, xgb_model=first, verbose_eval=False)["booster"]
    assert cont.save_raw() == in_process(PARAMS, X, y, w, 7)[0]
    assert plugin.held(keys) == 0 and parts_on_workers(client2, keys) == 0
    # prediction reads the rows from lineage
    np.testing.assert_array_equal(client2.compute(dgd.predict(client2, first, d)).result(),
                                  first.predict(X))


@pytest.mark.parametrize("mode", ["task", "collective", "graph"])
def test_pages_beyond_the_budget_stream_per_worker(request, monkeypatch, mode):
    """device_memory_budget holds per worker for a persisted dataset's pages, as when a worker
    cut its joined rows into pages: partitions are cut into pages of the budget's page size and
    those beyond it stream through the slots (the GPU's schedule, run on the CPU)."""
    from dgbdt.data import page_store
    client = request.getfixturevalue("client1" if mode == "task" else "client2")
    monkeypatch.setattr(page_store, "STREAM_ON_CPU", True)
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1024)
    X, y, w = binary_with_missing(3000, F, seed=14)
    d = dataset(client, X, y, w)
    out = dgd.train(client, {**PARAMS, "device_memory_budget": 4096}, d, 4, mode=mode,
                    verbose_eval=False)
    assert out["booster"].save_raw() == in_process(PARAMS, X, y, w, 4)[0]
    if mode != "graph":      # booster.memory comes from the ranks' (or the one task's) seam
        m = out["booster"].memory
        assert m["pages_streamed"] == m["pages"] >= 6
        assert m["stream_copies"] > m["pages"]


@pytest.mark.parametrize("extra", [{}, {"subsample": 0.6, "colsample_bynode": 0.7}])
def test_a_workers_pages_train_as_one_shard_with_the_same_model(client2, monkeypatch, extra):
    """Each rank joins its partitions' pages into one shard (fewer launches and passes a
    level); rows keep their order and their global ids (the sampling draws), so the model is
    the one of a shard a page and the in-process one."""
    from dgbdt.dask import shards
    X, y, w = binary_with_missing(4000, F, seed=21)
    params = dict(PARAMS, **extra)
    joined_rows, real = [], shards.joined_shard

    def counting(units, *args):
        out = real(units, *args)
        joined_rows.append(out.n_rows)
        return out
    monkeypatch.setattr(shards, "joined_shard", counting)
    joined = dgd.train(client2, params, dataset(client2, X, y, w), 5, mode="collective",
                       verbose_eval=False)["booster"].save_raw()
    assert sorted(joined_rows) and sum(joined_rows) == 4000     # every row in a joined shard
    monkeypatch.setattr(shards, "JOIN_PAGES", False)
    joined_rows.clear()
    apart = dgd.train(client2, params, dataset(client2, X, y, w), 5, mode="collective",
                      verbose_eval=False)["booster"].save_raw()
    assert joined_rows == []
    assert joined == apart
    assert joined == in_process(params, X, y, w, 5)[0]


def test_a_worker_near_its_memory_limit_keeps_a_shard_a_page(client2, monkeypatch):
    """The join's copy must fit under the worker's memory_limit (its nanny kills a worker
    over it), not only the machine's memory: with too little room the rank keeps a shard a
    page, and the model is the same."""
    from dgbdt.dask import shards
    X, y, w = binary_with_missing(3000, F, seed=23)
    ref = dgd.train(client2, PARAMS, dataset(client2, X, y, w), 4, mode="collective",
                    verbose_eval=False)["booster"].save_raw()
    monkeypatch.setattr(shards, "_room", lambda be: 0)
    calls = []
    monkeypatch.setattr(shards, "joined_shard", lambda *a: calls.append(a))
    apart = dgd.train(client2, PARAMS, dataset(client2, X, y, w), 4, mode="collective",
                      verbose_eval=False)["booster"].save_raw()
    assert calls == [] and apart == ref


def test_the_join_room_inside_a_worker_is_under_its_memory_limit(client2):
    """Inside a worker with a memory_limit the room is at most the pause fraction of it less
    the process's memory; outside one, the available memory."""
    from dgbdt.backends.cpu import CPU
    from dgbdt.dask import shards
    from dgbdt.data.page_store import host_free_memory

    def room(_):
        from distributed import get_worker
        return shards._room(CPU), get_worker().memory_manager.memory_limit
    got, limit = client2.submit(room, 0, pure=False).result()     # in a task, as a rank's
    assert got <= host_free_memory() + (1 << 30)
    if limit:
        assert got < 0.8 * limit
    assert shards._room(CPU) <= host_free_memory() + (1 << 30)


def test_pages_pack_while_the_client_waits_for_the_label_statistics(client2, monkeypatch):
    """A first training submits its pages before it waits for the label statistics (they
    need no intercept), and still trains the in-process model; a page's error is raised by
    the wait that follows."""
    import sys
    dtrain_mod = sys.modules["dgbdt.dask.train"]     # (the package's ``train`` is the function)
    X, y, _ = binary_with_missing(1500, F, seed=31)
    d = dataset(client2, X, y)
    seen = []
    original = dtrain_mod.results_in_order

    def spy(futures, rows_before):
        seen.append(d._pages is not None)      # the label statistics' gather
        return original(futures, rows_before)
    monkeypatch.setattr(dtrain_mod, "results_in_order", spy)
    b = dgd.train(client2, PARAMS, d, 3, verbose_eval=False)["booster"]
    assert seen == [True]
    assert b.save_raw() == in_process(PARAMS, X, y, None, 3)[0]


def test_parts_are_placed_by_where_their_stats_ran(client2, monkeypatch):
    """The workers of a dataset's parts come from its stats tasks, without asking the
    scheduler again, and are the workers the scheduler says hold them."""
    from distributed import Client
    X, y, _ = binary_with_missing(2000, F, seed=32)
    d = dataset(client2, X, y)
    truth = [sorted(w)[0] for w in (client2.who_has(d._held)[f.key] for f in d._held)]

    def no_question(self, *a, **k):
        raise AssertionError("asked the scheduler")
    monkeypatch.setattr(Client, "who_has", no_question)
    assert d.holders() == truth
    assert d.holders_now() == set(truth)
