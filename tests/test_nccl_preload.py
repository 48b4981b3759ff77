"""dgbdt.dask.nccl_preload's CPU-side rules: which fits ask the workers to load NCCL's
kernels ahead (collective fits on GPU workers), which workers are asked (those holding the
training's rows now, as the scheduler knows them: DaskDataset.holders_now, and the workers
that will be ranks without holding any: dgbdt.dask.placement.rank_workers), and that a worker
without CuPy or NCCL does nothing. The load itself runs on GPUs (tests/gpu/test_gpu_nccl.py)."""
import sys

import numpy as np
import pytest

from dgbdt.dask import nccl_preload
from dgbdt.dask.train import _preload_nccl

train_module = sys.modules["dgbdt.dask.train"]     # (dgbdt.dask.train is also the function)


class _Data:
    def __init__(self, holders, persisted=True):
        self.persisted, self._holders = persisted, holders

    def holders_now(self):
        return set(self._holders)


@pytest.fixture
def asked(monkeypatch):
    calls = []
    monkeypatch.setattr(nccl_preload, "submit", lambda client, workers: calls.append(
        sorted(workers)))
    # the cluster's workers as the client would see them: the holders, and ``idle``
    monkeypatch.setattr(train_module, "rank_workers", lambda client, p, holders, movable:
                        sorted(set(holders) | set(p.get("idle", ()))))
    return calls


@pytest.mark.parametrize("device,mode,holders,persisted,want", [
    ("cuda", "nccl", ["a", "b"], True, [["a", "b"]]),
    ("cuda", "collective", ["a", "b"], True, [["a", "b"]]),
    ("cuda", "auto", ["a", "b"], True, [["a", "b"]]),
    ("cuda", "nccl", ["a"], True, [["a"]]),          # one rank still makes a communicator
    ("cuda", "auto", ["a"], True, []),               # one worker: the one-task mode
    ("cuda", "graph", ["a", "b"], True, []),
    ("cuda", "task", ["a", "b"], True, []),
    ("cuda", "nccl", ["a", "b"], False, []),         # streamed: its shards are built later
    ("cpu", "collective", ["a", "b"], True, []),     # TCP between CPU workers
])
def test_which_fits_preload(asked, device, mode, holders, persisted, want):
    _preload_nccl(None, {"device": device}, mode, _Data(holders, persisted))
    assert asked == want


def test_a_worker_that_will_be_a_rank_without_partitions_preloads_too(asked):
    _preload_nccl(None, {"device": "cuda", "idle": ["c"]}, "nccl", _Data(["a", "b"]))
    assert asked == [["a", "b", "c"]]


def test_holders_now_are_the_workers_holding_the_rows(client2):
    import dask.array as da

    import dgbdt.dask as dgd
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    workers = sorted(client2.scheduler_info()["workers"])
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=1000), da.from_array(y, chunks=1000))
    assert d.holders_now() == set(d.workers_of_parts()) and d.holders_now() <= set(workers)
    dgd.train(client2, {"max_depth": 2}, d, 2, verbose_eval=False)   # pages made, raw parts go
    assert d.holders_now() == set(d.workers_of_parts())


def test_a_worker_without_nccl_does_nothing(monkeypatch):
    from dgbdt.dask import collective
    monkeypatch.setattr(collective, "nccl_status", lambda: "no NCCL here")
    before = dict(nccl_preload._loads)
    nccl_preload.start()                 # no cupy import, no thread
    assert nccl_preload._loads == before
    assert nccl_preload.wait(0) == {} or 0 in before


def test_a_gpu_dataset_on_two_workers_starts_the_preload(client2, client1, monkeypatch):
    """for_dataset (a GPU DaskDataset's construction) submits the preload to every worker of
    a cluster of two or more, none on a one-worker cluster (which trains in one task)."""
    from dgbdt.dask import nccl_preload
    seen = []
    monkeypatch.setattr(nccl_preload, "submit", lambda client, workers: seen.append(
        sorted(workers)))
    nccl_preload.for_dataset(client2)
    nccl_preload.for_dataset(client1)
    assert seen == [sorted(client2.scheduler_info()["workers"])]
