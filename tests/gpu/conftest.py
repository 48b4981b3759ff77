"""GPU tests: skipped where no CUDA GPU and CuPy are usable (CI); run on the lent GPU machine."""
import pytest

from dgbdt.backend import cuda_available

if not cuda_available():
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def cp():
    import cupy
    return cupy
