"""TreeGraphs.release: a training's tree graphs go before its communicator does.

The NCCL ranks call it in a ``finally`` (dgbdt.dask.collective_train.train_rank); graphs that
recorded all-reduces must not outlive the communicator, so release must drop every graph even
where something else (a traceback's frame) still holds an entry. Runs without a GPU: the
graphs here are stand-ins."""
import gc
import weakref
from types import SimpleNamespace

from dgbdt.tree import tree_graph
from dgbdt.tree.tree_graph import CapturePool, TreeGraphs, _Entry


class _Graph:
    """A stand-in for cupy.cuda.Graph (destroyed when its last reference goes)."""


def test_release_drops_every_graph_even_when_an_entry_is_still_held(monkeypatch):
    monkeypatch.setattr(tree_graph, "_spare_pools", [])
    seam = SimpleNamespace(shards=[SimpleNamespace(be=SimpleNamespace(xp=None))])
    graphs = TreeGraphs(seam)
    g1, g2 = _Graph(), _Graph()
    refs = [weakref.ref(g1), weakref.ref(g2)]
    graphs.entries = {("a",): _Entry(g1, None, [], ()), ("b",): _Entry(g2, None, [], ())}
    graphs.pool = pool = CapturePool(0, object(), object())
    held = graphs.entries[("a",)]         # as a traceback's frame would hold it
    del g1, g2
    graphs.release()
    gc.collect()
    assert graphs.entries == {} and graphs.pool is None
    assert [r() for r in refs] == [None, None]
    assert held.graph is None
    assert tree_graph._spare_pools == [pool]       # the next training captures with it


class _Device:
    def __init__(self, i=1):
        self.id = i

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_spare_capture_pools_are_bounded_last_given_first_taken(monkeypatch):
    monkeypatch.setattr(tree_graph, "_spare_pools", [])
    monkeypatch.setattr(tree_graph, "_retired", [])
    freed = []
    pools = [CapturePool(d, SimpleNamespace(free_all_blocks=lambda i=i: freed.append(i)),
                         object()) for i, d in enumerate((0, 1, 1, 0, 0))]
    for p in pools:
        tree_graph.give_pool(p)
    kept = tree_graph._SPARE_POOLS_MAX
    assert tree_graph._spare_pools == pools[:kept] and tree_graph._retired == pools[kept:]
    assert freed == []                   # nothing freed when given (a free waits for the GPU)
    cp = SimpleNamespace(cuda=SimpleNamespace(Device=_Device))
    assert tree_graph.take_pool(cp) is pools[1]          # device 1's last given
    assert freed == list(range(kept, len(pools))) and tree_graph._retired == []
    tree_graph.give_pool(pools[1])
    assert tree_graph.take_pool(cp) is pools[1]          # a loop of fits: the same pool


def test_the_seam_releases_its_graphs_once():
    from dgbdt.engine.seam import LocalSeam
    calls = []
    seam = LocalSeam.__new__(LocalSeam)
    seam._graphs = SimpleNamespace(release=lambda: calls.append(1))
    seam.release_graphs()
    seam.release_graphs()                  # the second finds none
    assert calls == [1] and seam._graphs is None
