"""Repeated fits give their device memory back (a notebook fits in a loop).

Measured on 2x H200 on 2026-11-28 (a script of these steps): with tree graphs on, each fit of
200k x 20 at depth 6 left 6.29 MB of device memory behind, after ``gc.collect()`` and
``free_all_blocks()``; with ``DGBDT_CUDA_GRAPHS=0`` nothing. Memory a capture allocates stays
on the device after its pool is gone, so trainings now hand their capture pool on
(dgbdt.tree.tree_graph.take_pool): the second fit's captures allocate nothing new."""
import gc

import numpy as np

import cupy as cp

import dgbdt


def _growth_per_fit(monkeypatch, graphs: bool) -> float:
    if not graphs:
        monkeypatch.setenv("DGBDT_CUDA_GRAPHS", "0")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200_000, 20)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float32)
    d = dgbdt.Dataset(cp.asarray(X), label=cp.asarray(y))
    p = {"device": "cuda", "max_depth": 6}
    pool = cp.get_default_memory_pool()

    def used() -> float:
        gc.collect()
        pool.free_all_blocks()
        free, total = cp.cuda.runtime.memGetInfo()
        return float(total - free)
    dgbdt.train(p, d, 3)
    before = used()
    for _ in range(3):
        dgbdt.train(p, d, 5)
    return (used() - before) / 3


def test_fits_without_graphs_leave_no_device_memory(monkeypatch):
    assert _growth_per_fit(monkeypatch, graphs=False) < 1 << 20


def test_fits_with_graphs_leave_no_device_memory(monkeypatch):
    assert _growth_per_fit(monkeypatch, graphs=True) < 1 << 20
