"""The backend contract on a live GPU: the CUDA backend instance is a Backend, with the
capabilities its class declares (tests/test_backend_contract.py checks the class on CI)."""
import pytest

cp = pytest.importorskip("cupy")

from dgbdt.backends.device import get_backend  # noqa: E402
from dgbdt.backends.protocol import CAPABILITY_METHODS, Backend  # noqa: E402


def test_the_cuda_backend_is_a_backend_with_its_declared_capabilities():
    be = get_backend("cuda")
    assert isinstance(be, Backend)
    assert be.xp is cp
    for cap, methods in CAPABILITY_METHODS.items():
        if getattr(be.caps, cap):
            assert all(callable(getattr(be, m)) for m in methods), cap
