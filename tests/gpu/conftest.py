"""GPU tests: skipped where no CUDA GPU and CuPy are usable (CI); run on the lent GPU machine."""
import pytest

from dgbdt.backend import cuda_available

if not cuda_available():
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def cp():
    import cupy
    return cupy


@pytest.fixture(scope="module")
def cuda_client():
    """A client of a one-worker LocalCUDACluster (per test module)."""
    dask_cuda = pytest.importorskip("dask_cuda")
    from distributed import Client
    with dask_cuda.LocalCUDACluster(n_workers=1, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c
