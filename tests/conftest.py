"""Shared fixtures: in-process Dask clusters, started once per session and only when asked for;
and the markers every test gets from where it is and what it uses (pyproject.toml registers
them): ``gpu`` for tests/gpu, ``dask`` for tests that use a Dask cluster. ``slow`` is set in
the test files themselves, on the few modules and tests that take most of the suite's time:
``pytest -m "not slow" tests`` is the fast core a developer runs before every commit.

The clients are not made the default client (``set_as_default=False``), so several can live at
once without one test's ``default_client()`` picking up another's cluster; tests compute dask
results through the fixture's client explicitly (``client.compute(x).result()``).
"""
import os
from pathlib import Path

import pytest

# distributed's statistical profiler walks every thread's frames a hundred times a second; on
# CPython 3.11 that walk can crash the process (dask/distributed#5972: a segfault in
# profile.process, seen once in a fresh CI run on an in-process cluster). No test reads
# profiles, so it is off for every cluster: in-process ones read the config, worker processes
# inherit the environment.
os.environ.setdefault("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", "False")
try:
    import dask
    dask.config.set({"distributed.worker.profile.enabled": False})
except ImportError:         # dask is an extra: the core tests run without it
    pass


def _local_client(n_workers: int):
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                       processes=False, dashboard_address=":0")
    client = distributed.Client(cluster, set_as_default=False)
    client.wait_for_workers(n_workers)
    return cluster, client


@pytest.fixture(scope="session")
def _clusters():
    made = {}

    def get(n):
        if n not in made:
            made[n] = _local_client(n)
        return made[n][1]

    yield get
    for cluster, client in made.values():
        client.close()
        cluster.close()


@pytest.fixture
def on_async_client():
    """``run(main)``: asyncio.run of ``await main(client)`` with an asynchronous client of a
    fresh in-process 2-worker cluster (dgbdt.dask.worker.off_loop's tests)."""
    def run(main):
        import asyncio

        from distributed import Client, LocalCluster

        async def outer():
            async with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                    asynchronous=True, dashboard_address=":0") as cluster:
                async with Client(cluster, asynchronous=True) as client:
                    return await main(client)
        return asyncio.run(outer())
    return run


@pytest.fixture
def client1(_clusters):
    """A 1-worker in-process cluster's client (the one-task training path)."""
    return _clusters(1)


@pytest.fixture
def client2(_clusters):
    return _clusters(2)


@pytest.fixture
def client4(_clusters):
    return _clusters(4)


@pytest.fixture
def dask_client(_clusters, request):
    """Client of an in-process cluster with ``request.param`` workers (for parametrize)."""
    return _clusters(request.param)


_DASK_FIXTURES = {"client1", "client2", "client4", "dask_client", "_clusters"}


def _uses_dask(item) -> bool:
    """Whether the test starts or uses a Dask cluster: a cluster fixture, or a module that
    imports distributed (its own LocalClusters, process clusters)."""
    if _DASK_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    return module is not None and any(
        getattr(v, "__name__", "").split(".")[0] == "distributed"
        for v in vars(module).values())


def pytest_collection_modifyitems(config, items):
    gpu_dir = Path(__file__).parent / "gpu"
    for item in items:
        if gpu_dir in Path(item.path).parents:
            item.add_marker(pytest.mark.gpu)
        if _uses_dask(item):
            item.add_marker(pytest.mark.dask)
