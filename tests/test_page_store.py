"""device_memory_budget on the CPU backend: pages beyond the budget live in memory-mapped spill
files, and the model is byte-identical to in-memory training for every budget."""
import os

import numpy as np
import pytest

import dgbdt
from dgbdt.data import page_store
from dgbdt.data.page_store import PageStore, budget_bytes, page_rows_for, spill
from dgbdt.data.page_stream import HostMover, PageStream
from dgbdt.kernels.pages import Page, pack
from dgbdt.backends.cpu import CPU
from dgbdt.backends.protocol import Capabilities
from dgbdt.params.normalize import ParameterError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40_000, 12)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 > 0.8).astype(np.float64)
    return X, y


@pytest.fixture
def small_pages(monkeypatch):
    """Pages of ~64 KiB, so a small budget cuts the 40k rows into several."""
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1 << 16)


PARAMS = {"objective": "binary:logistic", "max_depth": 5, "max_bin": 64, "eval_metric": "auc"}


def _train(X, y, **extra):
    res = {}
    d = dgbdt.Dataset(X, label=y)
    b = dgbdt.train({**PARAMS, **extra}, d, 6, evals=[(d, "train")], evals_result=res,
                    verbose_eval=False)
    return b, res


def _memory_if_same_model(X, y, budget) -> dict:
    """Train with the budget; assert model and history are in-memory training's; booster.memory."""
    ref, ref_res = _train(X, y)
    b, res = _train(X, y, device_memory_budget=budget)
    assert b.save_raw() == ref.save_raw()
    assert res == ref_res
    return b.memory


@pytest.mark.parametrize("budget", [1, 100_000, 200_000, 0.5, 10**12])
def test_model_identical_for_any_budget(data, small_pages, budget, tmp_path, monkeypatch):
    monkeypatch.setenv("DGBDT_SPILL_DIR", str(tmp_path))
    m = _memory_if_same_model(*data, budget)
    total = m["pages_in_memory_bytes"] + m["pages_spilled_bytes"]
    if isinstance(budget, int) and budget < total:
        assert m["pages_spilled"] >= 1 and m["pages_in_memory_bytes"] <= budget
    if budget == 10**12:
        assert m["pages_spilled"] == 0
    assert os.listdir(tmp_path) == []        # spill files are unlinked once mapped


def test_spilled_pages_are_memory_maps_and_budget_is_kept(data, small_pages, tmp_path):
    X, _ = data
    from dgbdt.data.dataset import Dataset
    d = Dataset(X)
    cuts = d.cuts(64)
    store = PageStore(150_000, CPU, spill_dir=str(tmp_path))
    step = page_rows_for(150_000, X.shape[1], 7)
    placed = [store.place(d.build_page(a, min(a + step, len(X)), cuts))
              for a in range(0, len(X), step)]
    kinds = [isinstance(p.words, np.memmap) for p in placed]
    assert kinds[0] is False and any(kinds)
    assert store.in_memory_bytes <= 150_000
    assert store.spilled_pages == sum(kinds)
    for p in placed:        # the same symbols as the in-memory pages
        if isinstance(p.words, np.memmap):
            assert not p.words.flags.writeable


def test_spill_roundtrip(tmp_path):
    words = np.arange(1000, dtype=np.uint32)
    m = spill(words, str(tmp_path))
    np.testing.assert_array_equal(m, words)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("budget", [1, 150_000, 300_000])
def test_streamed_pages_give_the_identical_model(data, small_pages, budget, monkeypatch):
    """The GPU's streaming schedule (a ring of device slots), run on the CPU with numpy
    copies: a page set beyond the budget is visited through the slots, and the model and
    history are those of in-memory training."""
    monkeypatch.setattr(page_store, "STREAM_ON_CPU", True)
    m = _memory_if_same_model(*data, budget)
    assert m["pages_spilled"] == 0 and m["pages_in_memory_bytes"] == 0
    assert m["pages_host"] == m["pages"] >= 3
    # the slots hold as many of the largest page as the budget does (at least two)
    assert 2 <= m["stream_slots"] <= max(2, budget // (m["pages_host_bytes"] // m["pages_host"]))
    # one pass per level and one per tree's end; a pass copies every page but those its
    # slots kept from the pass before (the first pass copies all)
    passes, pages, slots = m["stream_passes"], m["pages_host"], m["stream_slots"]
    assert passes == 6 * (5 + 1)
    assert m["stream_copies"] == pages + (passes - 1) * (pages - slots)


class _FakeShard:
    def __init__(self, i, n):
        words = np.full(n, i, dtype=np.uint32)
        self.page = Page(words=words, n_rows=n, n_features=1, bits=32, streamed=True)
        self.i = i


@pytest.mark.parametrize("m, slots", [(1, 2), (2, 2), (3, 2), (7, 2), (7, 3), (7, 9)])
def test_page_stream_visits_every_page_with_its_own_words(m, slots):
    shards = [_FakeShard(i, 10 + i) for i in range(m)] + [_FakeShard(99, 5)]
    shards[-1].page.streamed = False
    stream = PageStream(HostMover(), slots)
    for _ in range(5):
        seen = []
        for s in stream.visit(shards):
            assert not s.page.streamed and s.page.words.size == (5 if s.i == 99 else 10 + s.i)
            assert (s.page.words == s.i).all()
            seen.append(s.i)
        assert sorted(seen) == sorted(s.i for s in shards) and seen[0] == 99
        assert all(s.page.streamed for s in shards[:-1])       # host pages restored
    s = min(slots, m)
    assert stream.n_slots == max(1, s) and len(stream.buffers) == s
    assert stream.copies == m + 4 * (m - s)


@pytest.mark.parametrize("slots", [2, 3])
def test_page_stream_carries_raw_rows_with_their_pages(slots):
    """Shards with raw_stream (linear trees' raw rows on a GPU): for a visit ``raw`` is the
    slot's copy of the shard's own rows (its shape), None again after; bytes counted."""
    shards = [_FakeShard(i, 6 + i) for i in range(5)]
    for s in shards:
        s.raw = None
        s.raw_stream = np.full((6 + s.i, 3), s.i, dtype=np.float32) + \
            np.arange(3, dtype=np.float32)
    shards[1].raw_stream = None                 # a shard without rows keeps raw None
    stream = PageStream(HostMover(), slots)
    for _ in range(3):
        for s in stream.visit(shards):
            if s.raw_stream is None:
                assert s.raw is None
                continue
            assert s.raw.shape == s.raw_stream.shape and (s.raw == s.raw_stream).all()
            assert not np.shares_memory(s.raw, s.raw_stream)     # the slot's copy
        assert all(s.raw is None for s in shards)
    words = sum(s.page.words.nbytes for s in shards)
    rows = sum(s.raw_stream.nbytes for s in shards if s.raw_stream is not None)
    assert stream.bytes_moved > words and stream.bytes_moved >= words + rows


def test_page_stream_restores_the_host_page_when_a_visit_fails():
    shards = [_FakeShard(i, 4) for i in range(3)]
    with pytest.raises(RuntimeError):
        for s in PageStream(HostMover()).visit(shards):
            raise RuntimeError("kernel failed")
    assert all(s.page.streamed and s.page.words.base is None for s in shards)


def test_auto_budget_leaves_room_for_the_rows_and_a_reserve():
    free = 10 << 30
    b = page_store.auto_budget(free, 10_000_000, 1, 1 << 20)
    assert b == free - 10_000_000 * page_store.ROW_STATE_BYTES - (1 << 20) \
        - page_store.RESERVE_BYTES
    assert page_store.auto_budget(1 << 20, 10**9, 3, 0) == page_store.MIN_PAGE_BYTES
    assert budget_bytes(None, CPU, 10**9) is None          # unlimited on the CPU


def test_gpu_out_of_memory_becomes_an_error_naming_the_budget():
    OutOfMemoryError = type("OutOfMemoryError", (Exception,), {"__module__": "cupy.cuda.memory"})
    with pytest.raises(MemoryError, match="device_memory_budget=0.5.*smaller device_memory_budget"):
        with page_store.gpu_memory_errors({"device_memory_budget": 0.5}, "training"):
            raise OutOfMemoryError("Out of memory allocating 1,024 bytes")
    with pytest.raises(MemoryError, match="predicting 5 rows.*row batches"):
        with page_store.gpu_memory_errors({}, "predicting 5 rows", "predict in row batches"):
            raise OutOfMemoryError("Out of memory allocating 1,024 bytes")
    with pytest.raises(KeyError):     # other errors pass through unchanged
        with page_store.gpu_memory_errors({}, "training"):
            raise KeyError("x")


@pytest.mark.parametrize("bad", [0, -5, 1.5, 0.0, "1GB", True])
def test_bad_budget_values(bad):
    with pytest.raises(ParameterError, match="device_memory_budget must be"):
        dgbdt.train({"device_memory_budget": bad}, dgbdt.Dataset(np.zeros((4, 1)), label=[0, 1, 0, 1]), 1)


@pytest.mark.filterwarnings("ignore::dgbdt.data.page_store.BudgetWarning")
@pytest.mark.parametrize("streaming", [False, True])
def test_dask_task_and_graph_mode_with_budget(data, small_pages, tmp_path, monkeypatch,
                                              streaming):
    """Spilled (CPU) or streamed (the GPU's schedule, emulated) pages on Dask workers: graph
    mode brings each partition's page in per task, task mode streams the worker's pages."""
    dd = pytest.importorskip("dask.array")
    monkeypatch.setattr(page_store, "STREAM_ON_CPU", streaming)
    from distributed import Client, LocalCluster

    import dgbdt.dask as dgd
    monkeypatch.setenv("DGBDT_SPILL_DIR", str(tmp_path))
    X, y = data
    ref, _ = _train(X, y)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        d = dgd.DaskDataset(client, dd.from_array(X, chunks=(10_000, -1)),
                            dd.from_array(y, chunks=10_000))
        for mode in ("graph", "task"):
            out = dgd.train(client, {**PARAMS, "device_memory_budget": 1}, d, 6, mode=mode,
                            verbose_eval=False)
            assert out["booster"].save_raw() == ref.save_raw()
            if mode == "task":      # the worker's rows cut into pages, all beyond the budget
                m = out["booster"].memory
                assert m["pages"] > 2
                assert m["pages_streamed"] == (m["pages"] if streaming else 0)


def test_streamed_partition_larger_than_the_budget_is_named(data, monkeypatch):
    """A partition's page cannot be cut: beyond the budget it streams whole, with a warning
    that names its size and the budget (spilled pages on the CPU need none)."""
    from dgbdt.dask.parts import make_part
    from dgbdt.dask.shards import make_shard as _make_shard
    X, y = data
    part = make_part(0, X[:5000], y[:5000], None, None, X.shape[1])
    cuts = dgbdt.Dataset(X, label=y).cuts(64)
    base = np.zeros(1)
    monkeypatch.setattr(page_store, "STREAM_ON_CPU", True)
    with pytest.warns(page_store.BudgetWarning, match=r"5000 rows packs into \d+ bytes, more "
                      r"than device_memory_budget=1000 bytes.*smaller partitions"):
        shard = _make_shard(part, cuts, 64, base, "cpu", 1000)
    assert shard.page.streamed
    monkeypatch.setattr(page_store, "STREAM_ON_CPU", False)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _make_shard(part, cuts, 64, base, "cpu", 1000).page.streamed


class _NumpyCuda:
    """The CUDA backend's upload path with numpy as the device (CI has no GPU)."""
    name = "cuda"
    xp = np
    ordinal = 0
    caps = Capabilities(device_memory=True)

    def __init__(self):
        import contextlib
        self.device = contextlib.nullcontext()

    def quantize_pack(self, X, cuts, bits=None):
        from dgbdt.data.quantize import quantize
        return pack(quantize(X, cuts), bits=bits)      # bits None: the largest symbol's


@pytest.mark.parametrize("weighted", [False, True])
def test_host_rows_sketched_and_packed_in_upload_chunks(data, monkeypatch, weighted):
    """Host rows for GPU training go up in chunks of a multiple of 32 rows: the merged chunk
    sketches give the same cuts and the chunks' words concatenate into the same symbols."""
    from dgbdt.data import dataset as ds
    from dgbdt.kernels.pages import unpack
    from dgbdt.data.quantize import quantize
    monkeypatch.setattr(ds, "UPLOAD_BYTES", 7_000)      # 7000 // 48 // 32 * 32 = 128 rows
    X, y = data
    w = np.random.default_rng(1).uniform(0, 2, len(y)) if weighted else None
    host, dev = ds.Dataset(X, label=y, weight=w), ds.Dataset(X, label=y, weight=w)
    assert ds.upload_rows(X.shape[1]) == 128
    cuts = host.cuts(64)
    fake = _NumpyCuda()
    assert len(dev._sketch_ranges(fake)) == -(-len(X) // 128)
    got = dev.cuts(64, fake)
    np.testing.assert_array_equal(got.values, cuts.values)
    np.testing.assert_array_equal(got.ptrs, cuts.ptrs)
    page = dev.build_page(1000, 31_337, got, fake)
    assert page.n_rows == 30_337
    np.testing.assert_array_equal(unpack(page), quantize(X[1000:31_337], cuts))
    # pages are cached per place they were built: the GPU's are not handed to a CPU training
    on_gpu, on_cpu = dev.pages(got, 64, fake), dev.pages(got, 64, None)
    assert on_gpu is dev.pages(got, 64, fake) and on_cpu is not on_gpu
    assert sorted(dev._pages) == [(64, "cpu"), (64, "cuda:0")]


@pytest.mark.slow  # runs examples/out_of_core.py
def test_out_of_core_example_runs(tmp_path):
    """examples/out_of_core.py: spilled pages, the same model (it exits non-zero otherwise)."""
    import pathlib
    import subprocess
    import sys
    script = pathlib.Path(__file__).resolve().parent.parent / "examples" / "out_of_core.py"
    r = subprocess.run([sys.executable, str(script), "--rows", "60000", "--rounds", "3"],
                       capture_output=True, text=True, timeout=600,
                       env={**os.environ, "DGBDT_SPILL_DIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert "same model: True" in r.stdout and "pages_spilled" in r.stdout


def test_route_columns_are_kept_only_where_a_given_budget_holds_the_pages_twice():
    """A GPU's feature-major copies of its pages (dgbdt.backends.cuda_routes) count against a
    device_memory_budget the user gave; with none given, the backend decides."""
    from types import SimpleNamespace

    from dgbdt.data.page_store import bound_route_columns

    gpu = SimpleNamespace(caps=Capabilities(device_memory=True), free_bytes=lambda: 10_000)
    cpu = SimpleNamespace(caps=Capabilities())

    def shards(*sizes, streamed=()):
        return [SimpleNamespace(route_columns=True,
                                page=SimpleNamespace(nbytes=n, streamed=i in streamed,
                                                     words=np.zeros(1, np.uint32)))
                for i, n in enumerate(sizes)]

    def kept(budget, backend=gpu, room=None, **kw):
        ss = shards(1000, 500, **kw)
        bound_route_columns(ss, budget, backend, room)
        return [s.route_columns for s in ss]
    assert kept(None) == [True, True]             # a GPU decides at the first tree
    assert kept(3000) == [True, True]             # 2 x 1500 bytes fit
    assert kept(2999) == [False, False]
    assert kept(0.3) == [True, True]              # a fraction of the free 10,000 bytes
    assert kept(0.29) == [False, False]
    assert kept(2000, streamed=(1,)) == [True, True]   # only in-memory pages are copied
    # the CPU: a given budget as on a GPU; without one a quarter of the room
    assert kept(3000, backend=cpu) == [True, True]
    assert kept(2999, backend=cpu) == [False, False]
    assert kept(None, backend=cpu, room=6000) == [True, True]
    assert kept(None, backend=cpu, room=5999) == [False, False]


def test_route_columns_take_a_share_of_the_free_gpu_memory_and_leave_a_reserve():
    from dgbdt.backends.cuda_routes import COLUMNS_RESERVE, columns_fit
    free = 8 * COLUMNS_RESERVE
    assert columns_fit(free // 4, free)
    assert not columns_fit(free // 4 + 1, free)
    # a share of little free memory would eat the levels' reserve
    assert not columns_fit(COLUMNS_RESERVE // 4, COLUMNS_RESERVE)
    assert columns_fit(1 << 20, COLUMNS_RESERVE + (4 << 20))
