"""dgbdt.tree.node_table: a device-grown tree's fields as views of one buffer, read by the
host in one copy (here on numpy; tests/gpu reads cupy tables through HostCopy)."""
import numpy as np

from dgbdt.tree import device_grower
from dgbdt.tree.node_table import FIELDS, NodeTable, layout


def test_fields_are_aligned_views_of_one_buffer():
    fields, nbytes = layout(64)
    assert [f[0] for f in fields] == [f[0] for f in FIELDS]
    ends = [o + int(np.prod(shape)) * np.dtype(dt).itemsize for _, dt, shape, o in fields]
    assert all(o % 8 == 0 for _, _, _, o in fields)
    assert all(e <= o for e, (_, _, _, o) in zip(ends, fields[1:]))     # no overlap
    assert nbytes >= ends[-1]
    t = NodeTable(64, np)
    assert t.totals.shape == (64, 2) and t.left.shape == (64,) and t.n_nodes.shape == (1,)
    assert all(np.shares_memory(getattr(t, f[0]), t.buffer) for f in FIELDS)


def test_reset_and_read_give_the_tree_cut_to_its_nodes():
    t = NodeTable(16, np)
    t.reset()
    assert int(t.n_nodes[0]) == 1 and (t.left == -1).all() and (t.parent == -1).all()
    assert (t.feature == 0).all() and not t.default_left.any() and (t.totals == 0).all()
    t.n_nodes[0] = 3
    t.left[0], t.right[0], t.parent[1:3] = 1, 2, 0
    t.feature[0], t.threshold[0], t.default_left[0] = 5, 0.25, True
    t.totals[:3] = [[10, 4], [6, 3], [4, 1]]
    t.left[5] = 99          # beyond the node count: not read
    sent = t.send()
    t.left[0] = 7           # a later write (the next tree) does not reach what was sent
    got = t.read(sent.wait()[0])
    assert got["left"].tolist() == [1, -1, -1] and got["right"].tolist() == [2, -1, -1]
    assert got["parent"].tolist() == [-1, 0, 0] and got["feature"].tolist() == [5, 0, 0]
    assert got["threshold"].dtype == np.float32 and got["threshold"][0] == np.float32(0.25)
    assert got["default_left"].tolist() == [True, False, False]
    assert got["totals"].tolist() == [[10, 4], [6, 3], [4, 1]]


def test_round_scales_read_from_bytes_that_came_with_the_table():
    mx = np.array([[0.75, 3.0], [0.25, 0.5]]).view(np.uint64)
    t = NodeTable(4, np)
    sent = t.send((mx,))
    bits = sent.wait()[1]
    for k in range(2):
        scales = device_grower.RoundScales(mx, k, 999)
        assert scales.host(bits) == scales.host()
