"""The collective mode's logic on the CPU: ranks as threads, collectives through a barrier.

dgbdt.dask.collective_train.train_rank is the body of each GPU worker's task in mode="nccl";
here each rank is a thread with a ``ThreadComm`` (the same Communicator interface as NcclComm),
so the whole SPMD training (gradient maxima, level histograms, exact metric sums, gathered auc
rows, early stopping) is checked in CI against in-process training: the same model bytes and the
same history. The NCCL implementation itself runs in tests/gpu/test_gpu_nccl.py (2 GPUs).
"""
import threading
import time

import numpy as np
import pytest
from datagen import binary_with_missing
from log_records import logged

import dgbdt
from dgbdt.model.booster import Booster
from dgbdt.dask.collective import Communicator, CollectiveError, wait_for
from dgbdt.dask.collective_train import train_rank
from dgbdt.dask.parts import make_part
from dgbdt.dask.shards import make_shard as _make_shard
from dgbdt.kernels.fixedpoint import ExactSum
from dgbdt.objectives.registry import get_objective
from dgbdt.params.normalize import normalize_params
from dgbdt.engine.in_process import _base_margin

pytestmark = pytest.mark.slow  # process clusters, every mode


class Group:
    """Shared state of n thread ranks; ``lock`` serializes their compute (any numba layer)."""

    def __init__(self, n):
        self.n = n
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(n)
        self.slots = [None] * n


class ThreadComm(Communicator):
    def __init__(self, group, rank, fail_at=None):
        super().__init__()
        self.g, self.rank, self.n_ranks, self.fail_at = group, rank, group.n, fail_at

    def _meet(self):
        self.g.lock.release()
        try:
            self.g.barrier.wait(timeout=60)
        except threading.BrokenBarrierError:
            raise CollectiveError(f"rank {self.rank}: another rank stopped") from None
        finally:
            self.g.lock.acquire()

    def _exchange(self, x):
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise RuntimeError("injected failure")
        self.g.slots[self.rank] = x.copy()
        self._meet()
        parts = list(self.g.slots)
        self._meet()            # nobody overwrites a slot before every rank has read it
        return parts

    def _allreduce(self, x, op):
        parts = self._exchange(x)
        x[...] = np.sum(parts, axis=0) if op == "sum" else np.max(parts, axis=0)

    def _allgather(self, x):
        return np.stack(self._exchange(x))

    def abort(self):
        self.g.barrier.abort()


def make(n=2400, F=5, seed=0):
    return binary_with_missing(n, F, seed)


def run_ranks(params, X, y, w, bounds, rounds, eval_bounds=None, Xv=None, yv=None,
              early_stopping_rounds=None, fail=None, as_shards=False):
    """Train with len(bounds) thread ranks; rank r holds rows bounds[r] (list of (a, b)), as
    Parts or (as_shards: what a streamed DaskDataset hands over) as one Shard per part."""
    p = normalize_params(params)
    p["device"] = "cpu"
    obj = get_objective(p["objective"])
    cuts = dgbdt.Dataset(X, label=y, weight=w).cuts(p["max_bin"])
    base = _base_margin(p, obj, y, w, p["num_class"])
    g = Group(len(bounds))
    results, errors = [None] * g.n, [None] * g.n

    def parts(Xs, ys, ws, spans):
        return [make_part(i, Xs[a:b], ys[a:b], None if ws is None else ws[a:b], None,
                          Xs.shape[1]) for i, (a, b) in enumerate(spans)]

    def rank(r):
        comm = ThreadComm(g, r, fail_at=fail[1] if fail and fail[0] == r else None)
        g.lock.acquire()
        try:
            evals = [(None, "train")]
            if eval_bounds is not None:
                evals.append((parts(Xv, yv, None, eval_bounds[r]), "valid"))
            booster = Booster(obj.name, p["num_class"], base, X.shape[1], None)
            mine = parts(X, y, w, bounds[r])
            if as_shards:
                mine = [_make_shard(q, cuts, 2 ** (p["max_depth"] + 1), base) for q in mine]
            results[r] = train_rank(comm, p, cuts, base, booster, rounds, X.shape[0], mine,
                                    evals, early_stopping_rounds, False)
        except BaseException as e:
            errors[r] = e
            comm.abort()
        finally:
            g.lock.release()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(g.n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a rank hung"
    return results, errors


def reference(params, X, y, w, rounds, Xv=None, yv=None, early_stopping_rounds=None):
    d = dgbdt.Dataset(X, label=y, weight=w)
    evals = [(d, "train")] + ([(dgbdt.Dataset(Xv, label=yv), "valid")] if Xv is not None else [])
    hist = {}
    b = dgbdt.train(params, d, rounds, evals=evals, evals_result=hist, verbose_eval=False,
                    early_stopping_rounds=early_stopping_rounds)
    return b, hist


@pytest.mark.parametrize("params", [
    {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["logloss", "auc"]},
    {"objective": "reg:squarederror", "max_depth": 3, "lambda": 2.0,
     "eval_metric": ["rmse", "mae"]},
    {"objective": "multi:softprob", "num_class": 3, "max_depth": 3},
])
def test_thread_ranks_give_the_in_process_model_and_history(params):
    X, y, w = make()
    if params["objective"].startswith("multi"):
        y = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5]).astype(np.float64)
    if params["objective"].startswith("reg"):
        y = y + np.nan_to_num(X[:, 1])
    Xv, yv = X[:700] * 0.9, y[:700]
    # rank 0: two partitions, rank 1: one, rank 2: one (unequal sizes); eval rows on 2 ranks only
    bounds = [[(0, 500), (500, 1300)], [(1300, 1310)], [(1310, 2400)]]
    eval_bounds = [[(0, 300)], [], [(300, 700)]]
    results, errors = run_ranks(params, X, y, w, bounds, 5, eval_bounds, Xv, yv)
    assert errors == [None] * 3
    ref, ref_hist = reference(params, X, y, w, 5, Xv, yv)
    for booster, hist in results:
        assert booster.save_raw() == ref.save_raw()
        assert hist == ref_hist
    assert results[0][0].timings["communication_calls"] > 0


def test_ranks_over_several_shards_each():
    """A streamed dataset gives each rank one shard per partition, not one joined shard."""
    X, y, w = make(seed=5)
    params = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["auc", "logloss"]}
    bounds = [[(0, 700), (700, 1000)], [(1000, 1800), (1800, 1900), (1900, 2400)]]
    results, errors = run_ranks(params, X, y, w, bounds, 4, as_shards=True)
    assert errors == [None, None]
    ref, ref_hist = reference(params, X, y, w, 4)
    for booster, hist in results:
        assert booster.save_raw() == ref.save_raw() and hist == ref_hist


def test_ranks_stream_their_pages_beyond_the_budget(monkeypatch):
    """Each rank cuts its rows into pages and streams those beyond device_memory_budget (the
    GPU's schedule, run on the CPU): the model and history are unchanged."""
    from dgbdt.data import page_store
    monkeypatch.setattr(page_store, "STREAM_ON_CPU", True)
    monkeypatch.setattr(page_store, "MIN_PAGE_BYTES", 1024)
    X, y, w = make(seed=7)
    params = {"objective": "binary:logistic", "max_depth": 4, "eval_metric": ["auc", "logloss"]}
    bounds = [[(0, 1500)], [(1500, 2400)]]
    results, errors = run_ranks({**params, "device_memory_budget": 1}, X, y, w, bounds, 4)
    assert errors == [None, None]
    ref, ref_hist = reference(params, X, y, w, 4)
    for booster, hist in results:
        assert booster.save_raw() == ref.save_raw() and hist == ref_hist
        m = booster.memory
        assert m["pages_streamed"] == m["pages"] >= 3 and m["stream_copies"] > m["pages"]


def test_early_stopping_is_decided_alike_on_every_rank():
    X, y, w = make(seed=3)
    Xv, yv = make(n=500, seed=4)[:2]
    params = {"objective": "binary:logistic", "max_depth": 6, "eta": 1.0, "eval_metric": "logloss"}
    results, errors = run_ranks(params, X, y, w, [[(0, 1200)], [(1200, 2400)]], 40,
                                [[(0, 250)], [(250, 500)]], Xv, yv, early_stopping_rounds=2)
    assert errors == [None, None]
    ref, ref_hist = reference(params, X, y, w, 40, Xv, yv, early_stopping_rounds=2)
    assert ref.num_boosted_rounds() < 40       # it did stop early
    for booster, hist in results:
        assert booster.save_raw() == ref.save_raw() and hist == ref_hist
        assert booster.best_iteration == ref.best_iteration


def test_a_failing_rank_stops_every_rank():
    X, y, w = make()
    t = time.perf_counter()
    results, errors = run_ranks({"max_depth": 3}, X, y, w, [[(0, 800)], [(800, 1600)],
                                                            [(1600, 2400)]], 5, fail=(1, 7))
    assert time.perf_counter() - t < 60
    assert isinstance(errors[1], RuntimeError) and "injected" in str(errors[1])
    assert all(isinstance(errors[r], CollectiveError) for r in (0, 2))


def test_exact_sums_cross_ranks_as_limbs():
    rng = np.random.default_rng(0)
    chunks = [rng.standard_normal(100) * 10.0 ** rng.integers(-300, 300, 100) for _ in range(4)]
    parts = [ExactSum.of(c) for c in chunks]
    limbs = sum(p.limbs() for p in parts)
    assert ExactSum.from_limbs(limbs) == ExactSum.of(np.concatenate(chunks))
    big = ExactSum.of(np.full(10, np.finfo(np.float64).max))
    assert ExactSum.from_limbs(big.limbs() - big.limbs() * 2) == ExactSum(-big.units)


def test_wait_for_returns_raises_on_abort_and_times_out():
    polls = iter(range(1000))
    assert wait_for(lambda: next(polls) >= 50, 5.0, lambda: None, "x") >= 0.0
    t = time.perf_counter()
    with pytest.raises(CollectiveError, match="stopped because rank 3 failed"):
        wait_for(lambda: False, 60.0, lambda: "rank 3 failed", "all-reduce")
    assert time.perf_counter() - t < 2.0
    t = time.perf_counter()
    with pytest.raises(CollectiveError, match=r"within 0.5 s \(collective_timeout\)"):
        wait_for(lambda: False, 0.5, lambda: None, "all-reduce")
    assert time.perf_counter() - t < 3.0


def test_dask_mode_errors(client2):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    X, y, _ = make(n=400)
    d = dgd.DaskDataset(client2, da.from_array(X, chunks=(200, 5)), da.from_array(y, chunks=200))
    with pytest.raises(ValueError, match="mode='nccl' trains on GPU workers"):
        dgd.train(client2, {}, d, 2, mode="nccl", verbose_eval=False)
    with pytest.raises(ValueError, match="mode must be one of 'auto', 'task', 'graph', 'nccl'"):
        dgd.train(client2, {}, d, 2, mode="allreduce", verbose_eval=False)
    for bad in (0, -1.0, True, "10"):
        with pytest.raises(ValueError, match="collective_timeout must be a number of seconds"):
            dgd.train(client2, {}, d, 2, collective_timeout=bad, verbose_eval=False)
    # auto on host data over several workers is the CPU collective (faster than the graph),
    # says so, and gives the graph's model. Where the scheduler puts two tiny partitions is
    # its choice (CI once put both on one worker, where auto rightly trains in one task), so
    # each partition is placed on its own worker here.
    from dgbdt.dask.modes import auto_mode
    workers = sorted(client2.scheduler_info()["workers"])
    assert auto_mode(client2, workers, {"device": "cpu"}) == "collective"
    assert auto_mode(client2, workers[:1] * 2, {"device": "cpu"}) == "task"
    halves = [client2.scatter(a, workers=[w]) for a, w in
              zip((X[:200], X[200:], y[:200], y[200:]), workers * 2)]
    from dask import delayed
    Xd = da.concatenate([da.from_delayed(delayed(h), (200, X.shape[1]), X.dtype)
                         for h in halves[:2]])
    yd = da.concatenate([da.from_delayed(delayed(h), (200,), y.dtype) for h in halves[2:]])
    d = dgd.DaskDataset(client2, Xd, yd)
    placed = len(set(d.workers_of_parts()))
    out = dgd.train(client2, {}, d, 2, mode="auto", verbose_eval=False)
    assert out["mode"] == ("collective" if placed == 2 else "task")
    assert out["booster"].num_boosted_rounds() == 2
    graph = dgd.train(client2, {}, d, 2, mode="graph", verbose_eval=False)
    assert graph["mode"] == "graph"
    assert graph["booster"].save_raw() == out["booster"].save_raw()


# -- mode="collective" on CPU workers: TCP between real worker processes ----------------------
@pytest.fixture(scope="module")
def proc_client():
    distributed = pytest.importorskip("distributed")
    import dask
    # no work stealing: the tests below count the ranks a training makes, one a worker that
    # holds pages; under load (the suite runs in two processes on two cores) the scheduler
    # moved both partitions' page tasks to one worker, and the training had one rank
    with dask.config.set({"distributed.scheduler.work-stealing": False}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2)
        yield client


def _cpu_dataset(client, X, y, w=None, chunk=1000):
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    return dgd.DaskDataset(client, da.from_array(X, chunks=(chunk, X.shape[1])),
                           da.from_array(y, chunks=chunk),
                           None if w is None else da.from_array(w, chunks=chunk))


def test_cpu_collective_equals_graph_and_in_process(proc_client):
    import dgbdt.dask as dgd
    X, y, w = make(n=6000, seed=7)
    Xv, yv, _ = make(n=1500, seed=8)
    d, dv = _cpu_dataset(proc_client, X, y, w), _cpu_dataset(proc_client, Xv, yv, chunk=500)
    assert len(set(d.workers_of_parts())) == 2
    p = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.5,
         "eval_metric": ["logloss", "auc"]}
    kw = dict(evals=[(d, "train"), (dv, "valid")], early_stopping_rounds=3, verbose_eval=False)
    coll = dgd.train(proc_client, p, d, 30, mode="collective", **kw)
    graph = dgd.train(proc_client, p, d, 30, mode="graph", **kw)
    assert coll["booster"].save_raw() == graph["booster"].save_raw()
    assert coll["history"] == graph["history"]
    assert coll["booster"].timings["communication_calls"] > 0
    ref = dgbdt.train(p, dgbdt.Dataset(X, label=y, weight=w), 30,
                      evals=[(dgbdt.Dataset(Xv, label=yv), "valid")], early_stopping_rounds=3,
                      verbose_eval=False)
    assert coll["booster"].save_raw() == ref.save_raw()


def test_balanced_moves_whole_partitions_to_the_lightest_rank():
    from dgbdt.dask.placement import balanced
    assert balanced([0, 0, 0, 1], [100] * 4, 2) == [1, 0, 0, 1]    # ties: the first
    assert balanced([0, 0, 0, 0, 1], [10, 10, 10, 10, 40], 2) == [0, 0, 0, 0, 1]    # even
    assert balanced([0, 0, 1], [10, 10, 11], 2) == [0, 0, 1]       # within the slack
    assert balanced([0, 1], [90, 10], 2) == [0, 1]      # nothing smaller than the gap
    assert balanced([0, 0, 1], [0, 50, 10], 2) == [0, 0, 1]        # empty parts stay
    assert balanced([0, 0], [1, 1], 1) == [0, 0]
    # the heaviest rank sets a level's time: 10 rows on one of three ranks -> at most 5 (the
    # largest partition), every move from the heaviest to the lightest
    rows = [5, 1, 1, 1, 1, 1]
    owners = balanced([0] * 6, rows, 3)
    load = [sum(n for n, o in zip(rows, owners) if o == r) for r in range(3)]
    assert max(load) == 5 and sorted(load) == [1, 4, 5]
    assert balanced([0] * 6, rows, 3) == owners     # deterministic


def test_placed_balances_movable_partitions_in_memory_only():
    from dgbdt.dask.placement import placed
    cpu = {"device": "cpu", "device_memory_budget": None}
    workers, ranks, rows = ["a", "a", "a", "b"], ["a", "b"], [100] * 4
    assert placed(cpu, rows, workers, ranks, True, "x") == [1, 0, 0, 1]
    assert placed(cpu, rows, workers, ranks, False, "x") == [0, 0, 0, 1]    # streamed
    assert placed({**cpu, "device": "cuda"}, rows, workers, ranks, True, "x") == [1, 0, 0, 1]
    assert placed({**cpu, "device_memory_budget": 10 ** 6}, rows, workers, ranks, True,
                  "x") == [0, 0, 0, 1]
    # an eval set's parts on a worker that is not a rank: round-robin, then balanced
    assert placed(cpu, [5, 5, 5, 5], ["c", "c", "c", "c"], ranks, True, "x") == [0, 1, 0, 1]


def test_cpu_collective_balances_uneven_placement(proc_client):
    """Partitions placed 3:1 (training) and 2:0 (eval set) on two workers: whole partitions
    go to the other rank's task until the rows are even, and the model is the in-process one,
    byte for byte, as it is with the uneven placement kept."""

    import dask.array as da
    import dgbdt.dask as dgd
    from dgbdt.dask import placement
    X, y, _ = make(n=8000, seed=11)
    Xv, yv, _ = make(n=2000, seed=12)
    a, b = sorted(proc_client.scheduler_info()["workers"])

    def placed_array(M, chunk, where):
        blocks = [proc_client.scatter(M[i:i + chunk], workers=[w], broadcast=False)
                  for i, w in zip(range(0, len(M), chunk), where)]
        shape = (chunk,) + M.shape[1:]
        return da.concatenate([da.from_delayed(f, shape, dtype=M.dtype) for f in blocks])

    d = dgd.DaskDataset(proc_client, placed_array(X, 2000, [a, a, a, b]),
                        placed_array(y, 2000, [a, a, a, b]))
    dv = dgd.DaskDataset(proc_client, placed_array(Xv, 1000, [b, b]),
                         placed_array(yv, 1000, [b, b]))
    assert sorted(d.workers_of_parts()) == [a, a, a, b]
    p = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3, "eval_metric": "logloss"}
    kw = dict(evals=[(dv, "valid")], verbose_eval=False, mode="collective")
    with logged() as said:
        out = dgd.train(proc_client, p, d, 10, **kw)
    moves = [m for m in said if "to balance" in m]
    # the eval set's raw parts stay where they were scattered; the training pages are packed
    # by tasks the scheduler may have placed evenly already (then nothing moves)
    assert any("eval set 'valid': 1 of 2 partitions" in m and "[0, 2000] -> [1000, 1000]" in m
               for m in moves), moves
    assert all("-> [4000, 4000]" in m for m in moves if "the training rows" in m), moves
    assert out["booster"].timings["communication_calls"] > 0
    ref = dgbdt.train(p, dgbdt.Dataset(X, label=y), 10,
                      evals=[(dgbdt.Dataset(Xv, label=yv), "valid")], verbose_eval=False)
    assert out["booster"].save_raw() == ref.save_raw()
    old = placement.BALANCE_SLACK
    placement.BALANCE_SLACK = float("inf")      # the uneven placement kept
    try:
        kept = dgd.train(proc_client, p, d, 10, **kw)
    finally:
        placement.BALANCE_SLACK = old
    assert kept["booster"].save_raw() == ref.save_raw()
    assert kept["history"] == out["history"]


def test_used_ranks_drops_ranks_without_a_partition():
    from dgbdt.dask.placement import used_ranks
    assert used_ranks(["a", "b", "c"], [0, 2, 2]) == (["a", "c"], [0, 1, 1])
    assert used_ranks(["a", "b"], [1, 0]) == (["a", "b"], [1, 0])


def test_rank_workers_adds_idle_workers_where_partitions_may_move(proc_client):
    from dgbdt.dask.placement import rank_workers
    a, b = sorted(proc_client.scheduler_info()["workers"])
    cpu = {"device": "cpu", "device_memory_budget": None}
    assert rank_workers(proc_client, cpu, [a, a], True) == [a, b]
    assert rank_workers(proc_client, cpu, [b], False) == [b]               # streamed
    assert rank_workers(proc_client, {**cpu, "device_memory_budget": 10 ** 6}, [b],
                        True) == [b]
    # GPU pages go only to workers with NCCL on a GPU (none here)
    assert rank_workers(proc_client, {**cpu, "device": "cuda"}, [a], True) == [a]


def test_cpu_collective_trains_on_a_worker_that_holds_no_partition(proc_client):
    """Every partition on one of two workers (Dask's scheduler leaves a worker without any
    at times): in mode "collective" the other worker is a rank too, half the rows go to its
    task, and the model is the in-process one, byte for byte."""
    import dask.array as da
    import dgbdt.dask as dgd
    X, y, _ = make(n=8000, seed=13)
    a, _ = sorted(proc_client.scheduler_info()["workers"])

    def on_a(M):
        blocks = [proc_client.scatter(M[i:i + 2000], workers=[a], broadcast=False)
                  for i in range(0, len(M), 2000)]
        return da.concatenate([da.from_delayed(f, (2000,) + M.shape[1:], dtype=M.dtype)
                               for f in blocks])
    d = dgd.DaskDataset(proc_client, on_a(X), on_a(y))
    assert set(d.workers_of_parts()) == {a}
    p = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3}
    with logged() as said:
        out = dgd.train(proc_client, p, d, 8, mode="collective", verbose_eval=False)
    moves = [m for m in said if "the training rows" in m]
    assert moves and "[8000, 0] -> [4000, 4000]" in moves[0], said
    assert out["booster"].save_raw() == dgbdt.train(p, dgbdt.Dataset(X, label=y),
                                                    8).save_raw()


def _failing_level_step(at: int):
    """For proc_client.run on one worker: that rank's ``at``-th level step raises, once."""
    def patch():
        from dgbdt.engine.shard import Shard
        original, calls = Shard.level_step, [0]

        def level_step(self, req, hist_ptrs):
            calls[0] += 1
            if calls[0] == at:
                Shard.level_step = original
                raise RuntimeError("injected failure on this rank")
            return original(self, req, hist_ptrs)
        Shard.level_step = level_step
    return patch


def test_cpu_collective_rank_failure_and_killed_worker(proc_client):
    import dgbdt.dask as dgd
    X, y, _ = make(n=6000, seed=9)
    d = _cpu_dataset(proc_client, X, y)
    victim = sorted(set(d.workers_of_parts()))[1]

    proc_client.run(_failing_level_step(5), workers=[victim])
    t = time.perf_counter()
    with pytest.raises(RuntimeError, match="injected failure on this rank"):
        dgd.train(proc_client, {"max_depth": 4}, d, 20, mode="collective", verbose_eval=False)
    assert time.perf_counter() - t < 30
    # a worker killed mid-training is recovered from (tests/test_recovery.py); with
    # max_restarts=0 it ends within seconds with an error naming it, then the cluster trains
    result = _kill_mid_training(proc_client, d, victim, "collective", "rank1", settle=1.0,
                                max_restarts=0)
    err = result.get("error")
    assert isinstance(err, dgd.RecoveryError), result
    assert "left the cluster" in str(err) and "max_restarts=0" in str(err)
    proc_client.wait_for_workers(2, timeout=60)
    ok = dgd.train(proc_client, {"max_depth": 4}, d, 3, mode="graph", verbose_eval=False)
    assert ok["booster"].num_boosted_rounds() == 3


def _kept(client):
    from dgbdt.dask import comm_cache
    return {w: v for w, v in client.run(comm_cache.kept).items()}


def test_cpu_collective_keeps_its_communicator_between_fits(proc_client):
    """A rank keeps its communicator after a successful training; the next training on the
    same workers reuses it when every rank kept the same one, and makes a new one when any
    rank did not (a failure, a restart): the models are the same bytes every time."""
    import dgbdt.dask as dgd
    from dgbdt.dask import comm_cache
    proc_client.run(comm_cache.drop_all)
    X, y, _ = make(n=4000, seed=11)
    d = _cpu_dataset(proc_client, X, y)
    workers = sorted(set(d.workers_of_parts()))
    p = {"objective": "binary:logistic", "max_depth": 4}

    def fit():
        out = dgd.train(proc_client, p, d, 4, mode="collective", verbose_eval=False)
        return out["booster"]

    def idents():
        kept = _kept(proc_client)
        assert all(len(kept[w]) == 1 for w in workers), kept
        (key0, a), (key1, b) = kept[workers[0]][0], kept[workers[1]][0]
        assert key0[:2] == key1[:2] == ("tcp", tuple(workers)) and (key0[2], key1[2]) == (0, 1)
        assert a == b
        return a
    first = fit()
    made = idents()
    second = fit()
    assert idents() == made                       # reused
    assert second.save_raw() == first.save_raw()
    assert second.timings["connect"] >= 0
    # one rank without it (a restarted worker): a new one for both, the old one aborted
    proc_client.run(comm_cache.drop_all, workers=[workers[1]])
    assert fit().save_raw() == first.save_raw()
    remade = idents()
    assert remade != made
    # a failed training keeps nothing; the next makes a new one
    proc_client.run(_failing_level_step(3), workers=[workers[0]])
    with pytest.raises(RuntimeError, match="injected failure on this rank"):
        fit()
    assert all(not v for v in _kept(proc_client).values())
    assert fit().save_raw() == first.save_raw()
    assert idents() not in (made, remade)


def test_graph_mode_killed_worker_ends_with_an_error_not_a_hang(proc_client):
    """With no restart allowed, a worker killed during graph-mode training (its unit's state
    gone, its pinned tasks unrunnable) ends the training within seconds with an error naming
    it; the same DaskDataset then trains again once the nanny has restarted the worker."""
    import dgbdt.dask as dgd
    X, y, _ = make(n=6000, seed=11)
    d = _cpu_dataset(proc_client, X, y)
    victim = sorted(set(d.workers_of_parts()))[1]
    result = _kill_mid_training(proc_client, d, victim, "graph", "dgbdt-hist-t3",
                                evals=[(d, "train")], max_restarts=0)
    err = result.get("error")
    assert isinstance(err, dgd.RecoveryError), result
    assert victim in str(err) and "left the cluster" in str(err)
    proc_client.wait_for_workers(2, timeout=60)
    ok = dgd.train(proc_client, {"max_depth": 4}, d, 3, mode="graph", verbose_eval=False)
    assert ok["booster"].num_boosted_rounds() == 3


def _kill_mid_training(client, d, victim, mode, marker, settle=0.0, **kw):
    """Train in a thread, kill the victim worker's process once a task whose key holds marker
    runs there; the training must end within 30 s. Returns {"error": ...} or {"out": ...}."""
    import os
    import threading

    import dgbdt.dask as dgd
    result = {}

    def run():
        try:
            result["out"] = dgd.train(client, {"max_depth": 6}, d, 100000, mode=mode,
                                      verbose_eval=False, **kw)
        except Exception as e:  # noqa: BLE001
            result["error"] = e
    th = threading.Thread(target=run, daemon=True)
    th.start()
    deadline = time.time() + 60
    while time.time() < deadline and not any(
            marker in str(k) for k in client.processing().get(victim, ())):
        time.sleep(0.05)
    time.sleep(settle)
    t = time.perf_counter()
    try:
        client.run(os._exit, 1, workers=[victim])
    except Exception:  # noqa: BLE001  (the worker dies before it answers)
        pass
    th.join(timeout=60)
    assert not th.is_alive(), f"the {mode} training hung after a worker died"
    assert time.perf_counter() - t < 30
    return result


def test_socket_gather_apply_computes_once_on_rank_0_in_rank_order():
    """SocketComm.gather_apply over real sockets (3 ranks in threads): rows of any count (none
    on one rank) reach rank 0 in rank order, fn runs there only, every rank gets its result;
    the same value as the default all-gather path."""
    from dgbdt.dask.collective_tcp import SocketComm
    box, calls, out, errors = {}, [], {}, {}
    rows = {0: np.arange(6, dtype=np.int64).reshape(3, 2), 1: np.zeros((0, 2), np.int64),
            2: np.arange(10, 14, dtype=np.int64).reshape(2, 2)}

    def fn(a, counts):
        calls.append(threading.current_thread().name)
        assert list(counts) == [3, 0, 2]
        return np.array([float(a.shape[0]), float((a[:, 0] * np.arange(1, 6)).sum())])

    def rank(r):
        try:
            comm = SocketComm(3, r, 10.0, lambda: None, "127.0.0.1",
                              lambda address: box.__setitem__("root", address),
                              lambda: box.get("root"))
            out[r] = comm.gather_apply(rows[r], fn)
            comm.close()
        except Exception as e:  # noqa: BLE001
            errors[r] = e

    threads = [threading.Thread(target=rank, args=(r,), name=f"rank{r}") for r in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    want = fn(np.concatenate([rows[0], rows[1], rows[2]]), np.array([3, 0, 2]))
    assert calls == ["rank0", "MainThread"]        # rank 0's, then the check's own
    for r in range(3):
        np.testing.assert_array_equal(out[r], want)


def test_a_rank_that_does_not_stop_is_named(client2, monkeypatch):
    """One rank fails while another is deaf to the stop signal (asleep outside any
    collective) for longer than the client waits for it: the training ends with the failing
    rank's error, and a warning names the rank still running (its worker's only thread is
    taken until it ends: a next training waits there)."""
    import logging

    import dask
    da = pytest.importorskip("dask.array")
    import dgbdt.dask as dgd
    from distributed import get_worker
    from dgbdt.engine.shard import Shard
    X, y, _ = make(n=1200)
    workers = sorted(client2.scheduler_info()["workers"])
    halves = [client2.scatter(a, workers=[w]) for a, w in
              zip((X[:600], X[600:], y[:600], y[600:]), workers * 2)]
    d = dgd.DaskDataset(
        client2, da.concatenate([da.from_delayed(dask.delayed(h), (600, X.shape[1]), X.dtype)
                                 for h in halves[:2]]),
        da.concatenate([da.from_delayed(dask.delayed(h), (600,), y.dtype) for h in halves[2:]]))
    assert sorted(set(d.workers_of_parts())) == workers
    original, calls, asleep = Shard.level_step, {}, threading.Event()

    def level_step(self, req, hist_ptrs):      # in-process workers: one patch, two behaviours
        me = get_worker().address
        calls[me] = calls.get(me, 0) + 1
        if calls[me] == 3:
            if me == workers[0]:
                raise RuntimeError("injected failure on this rank")
            asleep.set()
            time.sleep(6.0)
        return original(self, req, hist_ptrs)
    monkeypatch.setattr(Shard, "level_step", level_step)
    t = time.perf_counter()
    with logged(level=logging.WARNING) as messages, \
            pytest.raises(RuntimeError, match="injected failure on this rank"):
        dgd.train(client2, {"max_depth": 3}, d, 5, mode="collective",
                  collective_timeout=1, verbose_eval=False)
    assert asleep.is_set()
    said = [m for m in messages if "had not stopped" in m]
    assert len(said) == 1 and f"rank(s) [1] ({workers[1]})" in said[0], said
    time.sleep(max(0.0, 7.0 - (time.perf_counter() - t)))   # the sleeper ends its task


def test_a_new_nccl_communicator_is_made_from_rank_0s_id(client1, monkeypatch):
    """dgbdt.dask.rank_connect.connect's NCCL branch, run in a worker's task with NCCL stood
    in for (no GPU here): the kernels' preload is waited for, rank 0 makes the unique id, and
    the communicator gets the ranks, the id and the training's token; its key is not kept."""
    from dgbdt.dask import comm_cache, rank_connect
    made, waited = {}, []

    class FakeNccl:
        def __init__(self, n_ranks, uid, rank, timeout, stop_reason):
            made.update(n_ranks=n_ranks, uid=uid, rank=rank, timeout=timeout)

    monkeypatch.setattr(rank_connect.nccl_preload, "wait",
                        lambda device: waited.append(device) or {"nccl_preload_wait": 0.0})
    monkeypatch.setattr(rank_connect, "unique_id", lambda: b"uid-of-rank-0")
    monkeypatch.setattr(rank_connect, "NcclComm", FakeNccl)
    key = ("nccl", ("worker-a",), 0, 3)

    def task():
        preload = {}
        return rank_connect.connect({"device": "cuda"}, 0, 1, "tok-nccl-test", 5.0, key,
                                    lambda: None, preload) + (preload,)

    comm, ident, preload = client1.submit(task, pure=False).result()
    assert isinstance(comm, FakeNccl) and ident == "tok-nccl-test"
    assert made == {"n_ranks": 1, "uid": b"uid-of-rank-0", "rank": 0, "timeout": 5.0}
    assert waited == [3] and preload == {"nccl_preload_wait": 0.0}
    assert comm_cache.claim(key) is None
