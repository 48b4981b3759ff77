"""Out-of-core on the GPU: pages beyond device_memory_budget stream from pinned host memory
through two staging buffers, and the model is byte-identical to in-core training."""
import gc

import numpy as np
import pytest

import cupy as cp

import dgbdt
from dgbdt.data import page_store


def _data(n=60_000, nf=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, nf)).astype(np.float32)
    X[rng.random(X.shape) < 0.03] = np.nan
    Z = np.nan_to_num(X)
    y = (rng.random(n) < 1 / (1 + np.exp(-(Z[:, 0] * Z[:, 1] - Z[:, 2] + Z[:, 3] ** 2)))) * 1.0
    return X, y


P = {"objective": "binary:logistic", "max_depth": 6, "max_bin": 128,
     "eval_metric": ["logloss", "auc"]}


def _fit(X, y, rounds=6, **extra):
    res = {}
    d = dgbdt.Dataset(X, label=y)
    b = dgbdt.train({**P, **extra}, d, rounds, evals=[(d, "train")], evals_result=res,
                    verbose_eval=False)
    return b, res


@pytest.fixture
def small_pages(monkeypatch):
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 14)


@pytest.mark.parametrize("on_device", [False, True])
@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.01])
def test_streamed_pages_give_the_in_core_model(small_pages, fraction, on_device):
    X, y = _data()
    ref, ref_res = _fit(X, y, device="cuda")
    cpu, _ = _fit(X, y, device="cpu")
    pages = ref.memory["pages_in_memory_bytes"]
    budget = max(1, int(pages * fraction))
    Xd, yd = (cp.asarray(X), cp.asarray(y)) if on_device else (X, y)
    b, res = _fit(Xd, yd, device="cuda", device_memory_budget=budget)
    assert b.save_raw() == ref.save_raw() == cpu.save_raw()
    assert res == ref_res
    m = b.memory
    assert m["pages_host"] == m["pages"] >= 3 and m["pages_in_memory_bytes"] == 0
    assert m["pages_host_bytes"] >= pages
    assert m["stream_slots"] * (m["pages_host_bytes"] // m["pages"]) <= max(budget, 2 << 14)
    # one pass per level and per tree's end; the slots keep their pages from pass to pass
    n, passes, slots = m["pages"], m["stream_passes"], m["stream_slots"]
    assert passes == 6 * 7
    assert m["stream_copies"] == n + (passes - 1) * (n - slots)
    assert m["stream_copy_seconds"] > 0


def test_pages_are_pinned_host_memory(small_pages):
    X, y = _data(n=20_000)
    b, _ = _fit(X, y, rounds=1, device="cuda", device_memory_budget=1)
    assert b.memory["pages_host"] >= 1 and b.memory["pages_in_memory_bytes"] == 0
    store = page_store.PageStore(1, dgbdt.backends.device.get_backend("cuda"), total=10 ** 9)
    page = store.place(dgbdt.kernels.pages.pack(np.ones((1000, 3), np.uint16)))
    assert page.streamed and isinstance(page.words, np.ndarray)
    assert cp.cuda.runtime.pointerGetAttributes(page.words.ctypes.data).type == \
        cp.cuda.runtime.memoryTypeHost


def test_dask_gpu_worker_streams_its_pages(small_pages):
    """task mode on a one-GPU LocalCUDACluster: the worker cuts its rows into pages and streams
    those beyond the budget (threads, so the small page size reaches the worker)."""
    pytest.importorskip("dask_cuda")
    import dask.array as da
    from distributed import Client, LocalCluster

    import dgbdt.dask as dgd
    X, y = _data(seed=3)
    ref, _ = _fit(X, y, device="cuda")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        d = dgd.DaskDataset(client, da.from_array(cp.asarray(X), chunks=(15_000, -1)),
                            da.from_array(cp.asarray(y), chunks=15_000))
        for mode in ("task", "graph"):
            out = dgd.train(client, {**P, "device_memory_budget": 20_000}, d, 6, mode=mode,
                            verbose_eval=False)
            assert out["booster"].save_raw() == ref.save_raw()
            if mode == "task":
                m = out["booster"].memory
                assert m["pages_streamed"] >= 2 and m["stream_copies"] > m["pages_streamed"]


def test_gpu_out_of_memory_names_the_budget():
    """A GPU already full: training fails with a MemoryError naming device_memory_budget, and
    the next training (memory freed) works."""
    X, y = _data(n=200_000, nf=20)
    pool = cp.get_default_memory_pool()
    gc.collect()        # device arrays only a dead training's reference cycles hold
    pool.free_all_blocks()
    free = cp.cuda.runtime.memGetInfo()[0]
    hog = cp.cuda.runtime.malloc(free - (8 << 20))     # outside CuPy's pool: really taken
    try:
        with pytest.raises(MemoryError, match="device_memory_budget"):
            _fit(X, y, rounds=2, device="cuda", device_memory_budget=1 << 30)
    finally:
        cp.cuda.runtime.free(hog)
    pool.free_all_blocks()
    b, _ = _fit(X, y, rounds=2, device="cuda")
    assert len(b.trees) == 2
    Xd = cp.asarray(np.tile(X, (10, 1)))          # margins: 16 MB
    gc.collect()        # the failed training's traceback held its arrays in a cycle
    pool.free_all_blocks()
    free = cp.cuda.runtime.memGetInfo()[0]
    hog = cp.cuda.runtime.malloc(free - (8 << 20))
    try:
        with pytest.raises(MemoryError, match="predicting 2000000 rows.*row batches"):
            b.predict(Xd)
    finally:
        cp.cuda.runtime.free(hog)


def test_pages_spill_to_files_when_host_memory_is_short(small_pages, monkeypatch, tmp_path):
    """Pages that pinned host memory cannot take go to spill files and stream from there."""
    monkeypatch.setattr(page_store, "host_free_memory", lambda: 0)
    monkeypatch.setenv("DGBDT_SPILL_DIR", str(tmp_path))
    X, y = _data(n=30_000)
    ref, ref_res = _fit(X, y, device="cuda")
    b, res = _fit(X, y, device="cuda", device_memory_budget=40_000)
    assert b.save_raw() == ref.save_raw() and res == ref_res
    m = b.memory
    assert m["pages_spilled"] == m["pages"] >= 3 and m["pages_host"] == 0
    assert m["stream_copies"] > m["pages"]


def test_host_rows_are_quantized_on_the_gpu_in_chunks(monkeypatch):
    """Host rows for GPU training are sketched and packed on the GPU, ~50 kB at a time: the
    same page words as packing them there at once, and the same model as the CPU's."""
    from dgbdt.backends.device import get_backend
    from dgbdt.data import dataset as ds
    monkeypatch.setattr(ds, "UPLOAD_BYTES", 50_000)
    X, y = _data(seed=4)
    host, _ = _fit(X, y, device="cuda")
    cpu, _ = _fit(X, y, device="cpu")
    dev, _ = _fit(cp.asarray(X), cp.asarray(y), device="cuda")
    assert host.save_raw() == cpu.save_raw() == dev.save_raw()
    be = get_backend("cuda")
    d = ds.Dataset(X)
    cuts = d.cuts(128, be)
    chunked = d.build_page(0, len(X), cuts, be)
    whole = be.quantize_pack(cp.asarray(X), cuts)
    assert chunked.bits == whole.bits
    assert bool((chunked.words == whole.words).all())


@pytest.mark.parametrize("growth", ["device", "host"])
@pytest.mark.parametrize("sampling", [{"subsample": 0.3},
                                      {"subsample": 0.2, "sampling_method": "gradient_based"}])
def test_sampled_streamed_rounds_grow_from_compact_pages(small_pages, monkeypatch, growth,
                                                         sampling):
    """With row sampling a streamed round reads the pages twice (dgbdt.engine.sampled_rounds: the fold of
    the last trees, the gather of the sampled rows with take_rows_pack), not once a level;
    the model is in-core training's (and the CPU's) with the same sampling."""
    monkeypatch.setenv("DGBDT_GROWTH", growth)
    X, y = _data(seed=3)
    ref, ref_res = _fit(X, y, device="cuda", **sampling)
    cpu, _ = _fit(X, y, device="cpu", **sampling)
    budget = max(1, ref.memory["pages_in_memory_bytes"] // 4)
    b, res = _fit(X, y, device="cuda", device_memory_budget=budget, **sampling)
    assert b.save_raw() == ref.save_raw() == cpu.save_raw()
    assert res == ref_res
    m = b.memory
    assert m["pages_host"] == m["pages"] >= 3
    assert m["stream_passes"] <= 3 * 6          # fold, gather, and the eval's fold: not 7


def test_take_rows_gathers_the_packed_rows():
    from dgbdt.backends.device import get_backend
    from dgbdt.kernels.pages import pack, unpack
    from dgbdt.backends.cpu import CPU
    rng = np.random.default_rng(1)
    for bits, nf in ((3, 7), (8, 28), (13, 5), (32, 3)):
        sym = rng.integers(0, 2 ** bits, (5000, nf), dtype=np.uint64).astype(np.uint32)
        page = pack(sym, bits=bits)
        rows = np.sort(rng.choice(5000, 1234, replace=False))
        gpu = get_backend("cuda")
        dpage = type(page)(words=cp.asarray(page.words), n_rows=page.n_rows,
                           n_features=nf, bits=bits)
        got = gpu.take_rows(dpage, cp.asarray(rows))
        host = type(page)(words=cp.asnumpy(got.words), n_rows=got.n_rows, n_features=nf,
                          bits=bits)
        np.testing.assert_array_equal(unpack(host), sym[rows])
        np.testing.assert_array_equal(cp.asnumpy(got.words), CPU.take_rows(page, rows).words)


def test_fold_tree_walks_as_the_cpu():
    """The GPU's fold walk (cuda/tree.cu fold_tree, dgbdt.engine.sampled_rounds) adds the CPU walk's leaf
    value to every row, bit for bit: missing symbols the default way, multi-output margins."""
    from dgbdt.backends.device import get_backend
    from dgbdt.kernels.pages import pack
    from dgbdt.backends.cpu import CPU
    from dgbdt.engine.shard import Shard
    rng = np.random.default_rng(4)
    n, nf, depth = 50_000, 9, 5
    n_bins = rng.integers(3, 200, nf).astype(np.int64)
    sym = (rng.random((n, nf)) * n_bins).astype(np.uint32)
    missing = rng.random((n, nf)) < 0.1
    sym[missing] = np.broadcast_to(n_bins, (n, nf))[missing]
    page = pack(sym, bits=8)
    nodes = 2 ** (depth + 1) - 1
    table = np.full((nodes + 3, 5), -1, dtype=np.int64)     # 3 unreachable rows at the end
    for node in range(2 ** depth - 1):
        f = rng.integers(0, nf)
        table[node] = (f, rng.integers(0, n_bins[f]), rng.integers(0, 2), 2 * node + 1,
                       2 * node + 2)
    values = rng.standard_normal(nodes + 3)
    margin = rng.standard_normal((n, 3))
    out = {}
    for be in (CPU, get_backend("cuda")):
        xp = be.xp
        p = page if be is CPU else type(page)(words=cp.asarray(page.words), n_rows=n,
                                              n_features=nf, bits=page.bits)
        s = Shard(p, n_bins, np.zeros(n), None, margin.copy(), nodes + 3, be)
        be.fold_tree(s, xp.asarray(table), xp.asarray(values), 1, depth + 1)
        out[be.name] = cp.asnumpy(s.margin) if be is not CPU else s.margin
    np.testing.assert_array_equal(out["cuda"], out["cpu"])
    assert not np.array_equal(out["cpu"][:, 1], margin[:, 1])
    np.testing.assert_array_equal(out["cpu"][:, [0, 2]], margin[:, [0, 2]])
