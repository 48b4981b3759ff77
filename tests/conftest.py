"""Shared fixtures: in-process Dask clusters, started once per session and only when asked for.

The clients are not made the default client (``set_as_default=False``), so several can live at
once without one test's ``default_client()`` picking up another's cluster; tests compute dask
results through the fixture's client explicitly (``client.compute(x).result()``).
"""
import pytest

# Modules whose tests run real worker processes and kill them or bound a failure's wall-clock
# time: under pytest-xdist (README's test command: -n 2 --dist loadgroup) they share one xdist
# worker, one test at a time, so no two of their multi-process clusters compete for the cores
# at once (the other xdist worker runs in-process tests beside them).
_SERIAL_GROUP = {"test_recovery.py", "test_bad_inputs_dask.py", "test_checkpoint_dask.py",
                 "test_collective.py"}


def pytest_configure(config):
    # pytest-xdist registers it too; this keeps a run without xdist free of unknown-mark warnings
    config.addinivalue_line("markers", "xdist_group(name): run in one pytest-xdist worker")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in _SERIAL_GROUP:
            item.add_marker(pytest.mark.xdist_group("worker-processes"))


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
