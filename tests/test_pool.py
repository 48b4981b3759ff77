"""dgbdt.backends.pool.release_pooled's order of work, with a stand-in for CuPy's memory pool
(the GPU tests run it on CuPy's own, tests/gpu/test_gpu_device_growth.py)."""
import sys
import types

import pytest

from dgbdt.backends import pool


class _Pool:
    """CuPy's MemoryPool as release_pooled uses it: blocks in use, cached blocks."""

    def __init__(self, used: int, held_by_cycles: int):
        self.used, self.cached, self.cycles, self.calls = used, 1 << 20, held_by_cycles, []

    def free_all_blocks(self):
        self.calls.append("free")
        self.cached = 0

    def used_bytes(self):
        self.calls.append("used")
        return self.used + self.cycles


@pytest.fixture
def fake_cupy(monkeypatch):
    def make(used, cycles):
        p = _Pool(used, cycles)
        monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(
            get_default_memory_pool=lambda: p))
        monkeypatch.setattr(pool, "_pooled_used", True)

        def collect():          # the cycles' arrays go back to the pool
            p.calls.append("collect")
            p.cached += p.cycles
            p.cycles = 0
        monkeypatch.setattr(pool.gc, "collect", collect)
        return p
    return make


def test_release_skips_the_collection_when_nothing_is_in_use(fake_cupy):
    p = fake_cupy(used=0, cycles=0)
    pool.release_pooled()
    assert p.calls == ["free", "used"]
    assert p.cached == 0


def test_release_collects_then_frees_what_cycles_held(fake_cupy):
    p = fake_cupy(used=0, cycles=4096)
    pool.release_pooled()
    assert p.calls == ["free", "used", "collect", "free"]
    assert p.cached == 0 and p.cycles == 0


def test_release_does_nothing_where_the_pool_was_not_used(fake_cupy, monkeypatch):
    p = fake_cupy(used=0, cycles=4096)
    monkeypatch.setattr(pool, "_pooled_used", False)
    pool.release_pooled()
    assert p.calls == []
