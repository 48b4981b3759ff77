"""The CUDA kernels compiled ahead of time, shipped in the package (``cuda/prebuilt/``).

A fresh install's first GPU fit used to wait for NVRTC to compile every kernel module (about
25 s on an H100 machine; XGBoost ships machine code). ``python -m dgbdt.kernels.prebuild``
compiles each module with nvcc for the architectures CuPy's CUDA 13 wheels run on (machine code
for each, PTX of the newest for later GPUs) and records the SHA-256 of the source it compiled.

A module is loaded from its fatbin when

* ``DGBDT_PREBUILT_KERNELS`` is not ``0``,
* the manifest's digest equals the digest of the source beside it (an edited kernel is never
  run from stale machine code: NVRTC compiles it), and
* the driver loads it (it picks the machine code of the GPU's architecture, or JIT-compiles
  the PTX for a newer GPU; an older driver or another architecture fails the load).

Anything else falls back to NVRTC, as before, for that module. ``report()`` says which modules
came from where (the benchmarks record it).
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
from pathlib import Path

logger = logging.getLogger("dgbdt")

_DIR = Path(__file__).parent / "cuda" / "prebuilt"
#: modules compiled by NVRTC in this process (launch.kernel adds them)
COMPILED: set = set()
#: modules loaded from their fatbin in this process
LOADED: set = set()
_lock = threading.Lock()


def enabled() -> bool:
    return os.environ.get("DGBDT_PREBUILT_KERNELS", "1") != "0"


@functools.lru_cache(maxsize=1)
def manifest() -> dict:
    """The manifest's modules ({} when none is shipped or it cannot be read)."""
    try:
        m = json.loads((_DIR / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    return m.get("modules", {}) if m.get("format") == 1 else {}


@functools.lru_cache(maxsize=None)
def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def _module(name: str):
    import cupy
    return cupy.RawModule(path=str(_DIR / manifest()[name]["file"]))


def kernel(module: str, name: str, text: str):
    """The kernel ``name`` of ``cuda/<module>.cu`` from its fatbin (a cupy.RawKernel), or
    None when NVRTC must compile it (see the module's docstring)."""
    entry = manifest().get(module) if enabled() else None
    if entry is None or entry.get("source_sha256") != _digest(text):
        return None
    try:
        with _lock:
            fn = _module(module).get_function(name)
            fn.attributes          # loads the module on this device now, not at the launch
    except Exception as e:        # noqa: BLE001 - a driver or architecture that cannot load it
        logger.debug("dgbdt: the prebuilt kernels of %s.cu did not load (%s: %s); NVRTC "
                     "compiles them", module, type(e).__name__, e)
        return None
    LOADED.add(module)
    return fn


def report() -> dict:
    """Which kernel modules this process loaded prebuilt and which NVRTC compiled."""
    return {"prebuilt": sorted(LOADED), "nvrtc": sorted(COMPILED)}


__all__ = ["kernel", "report", "enabled", "manifest"]
