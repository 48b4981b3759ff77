"""dgbdt.dask.reduce.tree_reduce: the tree's shape, and first-level groups that stay on the
worker computing their inputs."""
import pytest

from dgbdt.dask.reduce import _by_worker, tree_reduce


def _where(x):
    """An input: its value and the worker that made it."""
    from distributed import get_worker
    return {"x": x, "at": get_worker().address}


def _combine(*kids):
    """A node of the tree as it ran: its task's key, its worker and its inputs."""
    from distributed import get_worker
    w = get_worker()
    return {"key": str(w.get_current_task()), "at": w.address, "kids": list(kids)}


def _final(tag, *kids):
    return tag, _combine(*kids)


def _nodes(n):
    if "kids" in n:
        yield n
        for k in n["kids"]:
            yield from _nodes(k)


def _leaves(n):
    return [n] if "kids" not in n else [x for k in n["kids"] for x in _leaves(k)]


def test_by_worker_keeps_order_and_fan_in():
    got = _by_worker(list("abcdefg"), ["w1", "w2", "w1", "w1", "w2", "w1", "w1"], 3)
    assert got == [("w1", list("acd")), ("w1", list("fg")), ("w2", list("be"))]


@pytest.mark.parametrize("fan_in", [2, 3, 8])
def test_first_level_groups_are_one_workers_inputs_combined_there(client2, fan_in):
    workers = sorted(client2.scheduler_info()["workers"])
    where = [workers[i % 2] for i in range(7)]
    futs = [client2.submit(_where, i, workers=[w], pure=False) for i, w in enumerate(where)]
    tag, root = tree_reduce(client2, futs, _combine, fan_in, "t", final=_final,
                            final_args=("root",), workers=where).result()
    assert tag == "root"
    assert sorted(x["x"] for x in _leaves(root)) == list(range(7))
    assert all(x["at"] == where[x["x"]] for x in _leaves(root))
    local = [n for n in _nodes(root) if "-w" in n["key"]]
    assert len(local) == sum(len(g) > 1 for _, g in _by_worker(futs, where, fan_in))
    for n in local:     # a first-level group: one worker's inputs, combined on that worker
        assert all("kids" not in k and k["at"] == n["at"] for k in n["kids"]), n


def test_one_group_on_one_worker_needs_no_level_more(client2):
    w = sorted(client2.scheduler_info()["workers"])[0]
    futs = [client2.submit(_where, i, workers=[w], pure=False) for i in range(4)]
    tag, root = tree_reduce(client2, futs, _combine, 8, "t", final=_final,
                            final_args=("root",), workers=[w] * 4).result()
    assert [k["x"] for k in root["kids"]] == [0, 1, 2, 3]       # the root combined them
    assert "-root-" in root["key"]


def test_without_workers_groups_follow_the_input_order(client2):
    futs = [client2.submit(_where, i, pure=False) for i in range(5)]
    root = tree_reduce(client2, futs, _combine, 2, "t").result()
    assert [x["x"] for x in _leaves(root)] == list(range(5))
    assert len(list(_nodes(root))) == 4                 # 5 inputs in pairs: 4 combines
    assert not any("-w" in n["key"] for n in _nodes(root))
