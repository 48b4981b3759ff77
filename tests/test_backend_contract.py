"""The backend contract (dgbdt.backends.protocol): both backends implement every operation of
``Backend`` with the protocol's parameters, and declare their capabilities truthfully — a
capability they claim comes with its methods, one they do not claim has none of them (so no
caller can reach it without asking ``caps``). The CUDA backend is checked as a class here (no
GPU needed); tests/gpu/test_gpu_backend_contract.py checks a live instance."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from dgbdt.backends.cpu import CPU, CpuBackend
from dgbdt.backends.cuda import CudaBackend
from dgbdt.backends.protocol import CAPABILITY_METHODS, Backend, Capabilities

PROTOCOL_METHODS = sorted(
    name for name, v in vars(Backend).items()
    if callable(v) and not name.startswith("_"))


def _params(fn) -> list[str]:
    """Parameter names without self (staticmethods have none)."""
    return [p for p in inspect.signature(fn).parameters if p != "self"]


@pytest.mark.parametrize("cls", [CpuBackend, CudaBackend], ids=["cpu", "cuda"])
def test_every_protocol_operation_is_implemented_with_its_parameters(cls):
    assert len(PROTOCOL_METHODS) >= 25
    for name in PROTOCOL_METHODS:
        impl = inspect.getattr_static(cls, name, None)
        assert impl is not None, f"{cls.__name__} lacks {name}"
        impl = getattr(cls, name)
        want, got = _params(getattr(Backend, name)), _params(impl)
        # the same parameters in the same order; a backend may add optional ones after them
        assert got[:len(want)] == want, (cls.__name__, name, want, got)
        extra = list(inspect.signature(impl).parameters.values())[len(want) + ("self" in
                                                                              inspect.signature(impl).parameters):]
        assert all(p.default is not inspect.Parameter.empty for p in extra), (name, extra)


@pytest.mark.parametrize("cls", [CpuBackend, CudaBackend], ids=["cpu", "cuda"])
def test_capabilities_are_declared_truthfully(cls):
    caps = cls.caps
    assert isinstance(caps, Capabilities)
    assert set(CAPABILITY_METHODS) == {f.name for f in dataclasses.fields(Capabilities)}
    for cap, methods in CAPABILITY_METHODS.items():
        for m in methods:
            has = inspect.getattr_static(cls, m, None) is not None
            assert has == getattr(caps, cap), (
                f"{cls.__name__}.caps.{cap} is {getattr(caps, cap)} but {m} is "
                f"{'present' if has else 'missing'}")


def test_the_cpu_backend_is_a_backend_and_claims_no_device_capability():
    assert isinstance(CPU, Backend)
    assert CPU.caps == Capabilities()
    assert not any(dataclasses.astuple(CPU.caps))


def test_cuda_declares_what_its_growth_and_sampling_need():
    caps = CudaBackend.caps
    assert caps.device_memory and caps.device_growth and caps.graph_capture
    assert caps.row_sample_kernel and caps.row_candidates_kernel


def test_no_caller_probes_a_backend_with_hasattr():
    """Capabilities are asked of ``caps``: no module outside dgbdt/backends probes a backend's
    methods with hasattr/getattr (the probes this contract replaced)."""
    import pathlib
    import re

    import dgbdt
    root = pathlib.Path(dgbdt.__file__).parent
    probe = re.compile(r"(hasattr|getattr)\([^,]*(\bbe\b|backend)")
    found = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py")
             if "backends" not in p.parts
             for i, line in enumerate(p.read_text().splitlines(), 1) if probe.search(line)]
    assert not found, found
