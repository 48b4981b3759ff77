"""GPU tests: skipped where no CUDA GPU and CuPy are usable (CI); run on the lent GPU machine."""
import pytest

from dgbdt.backends.device import cuda_available

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


@pytest.fixture
def rmm_default():
    """CuPy allocating through RMM's default resource (cudaMalloc/cudaFree), as importing
    cuDF leaves it; restored after."""
    import cupy
    rmm = pytest.importorskip("rmm")
    from rmm.allocators.cupy import rmm_cupy_allocator
    before_alloc, before_mr = cupy.cuda.get_allocator(), rmm.mr.get_current_device_resource()
    rmm.mr.set_current_device_resource(rmm.mr.CudaMemoryResource())
    cupy.cuda.set_allocator(rmm_cupy_allocator)
    yield rmm
    cupy.cuda.set_allocator(before_alloc)
    rmm.mr.set_current_device_resource(before_mr)


@pytest.fixture(scope="module")
def two_on_one_gpu():
    """Two worker processes on the one GPU: graph mode's hops between units need several
    workers, not several GPUs (NCCL would refuse two ranks on one device)."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as c:
        c.wait_for_workers(2)
        yield c


@pytest.fixture(scope="module")
def two_gpus():
    """A LocalCUDACluster of two GPU workers (skipped with fewer GPUs)."""
    import cupy
    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    dask_cuda = pytest.importorskip("dask_cuda")
    from distributed import Client
    with dask_cuda.LocalCUDACluster(n_workers=2, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        c.wait_for_workers(2)
        yield c

