"""Compiling the CUDA kernels ahead of time: ``python -m dgbdt.kernels.prebuild``.

Writes ``cuda/prebuilt/<module>.fatbin`` for every ``cuda/<module>.cu`` (machine code for each
architecture of ``ARCHS``, plus PTX of the newest for the GPUs after it, compressed) and
``cuda/prebuilt/manifest.json``: for each module the SHA-256 of its source with the headers
inlined (``launch.source``, the text NVRTC would compile), the architectures it holds and the
compiler's version. dgbdt.kernels.prebuilt loads a module only while that digest matches the
source beside it, so an edited kernel is compiled by NVRTC until the binaries are rebuilt;
tests/test_prebuilt_kernels.py fails in CI when they are stale.

Needs nvcc (CUDA 13: it compiles for sm_75 and later). A module an architecture cannot build
(``__reduce_add_sync`` needs sm_80) is built for the others; on that architecture NVRTC
compiles it at first use, as before.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .launch import _DIR, NVCC_OPTIONS, source

OUT = _DIR / "prebuilt"
MANIFEST = OUT / "manifest.json"
#: Turing, Ampere (A100; A10/RTX 30), Ada (L4/RTX 40), Hopper, Blackwell (B200; RTX 50)
ARCHS = (75, 80, 86, 89, 90, 100, 120)
#: kernels compiled with template parameters at run time (NVRTC only)
RUNTIME_ONLY = ("shap",)
FORMAT = 1


def digest(text: str) -> str:
    """SHA-256 of a module's source as NVRTC compiles it (headers inlined)."""
    return hashlib.sha256(text.encode()).hexdigest()


def modules() -> list[str]:
    return sorted(p.stem for p in _DIR.glob("*.cu") if p.stem not in RUNTIME_ONLY)


def _gencode(archs, ptx: int | None) -> list[str]:
    out = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    if ptx:
        out.append(f"-gencode=arch=compute_{ptx},code=compute_{ptx}")
    return out


def _nvcc(nvcc: str, src: Path, out: Path, archs, ptx) -> subprocess.CompletedProcess:
    cmd = [nvcc, "-fatbin", *NVCC_OPTIONS, "-Xfatbin=-compress-all", *_gencode(archs, ptx),
           "-o", str(out), str(src)]
    return subprocess.run(cmd, capture_output=True, text=True)


def build_module(nvcc: str, name: str, work: Path) -> dict:
    """One module's fatbin: every architecture at once, or, when one of them cannot build it,
    those that can (each tried alone)."""
    text = source(name)
    src = work / f"{name}.cu"
    src.write_text(text)        # the inlined source: exactly what NVRTC would compile
    out = OUT / f"{name}.fatbin"
    archs, ptx = list(ARCHS), max(ARCHS)
    done = _nvcc(nvcc, src, out, archs, ptx)
    if done.returncode != 0:
        archs = [a for a in ARCHS if _nvcc(nvcc, src, work / f"{name}-{a}.fatbin", [a],
                                           None).returncode == 0]
        if not archs:
            raise RuntimeError(f"nvcc could not build {name}.cu:\n{done.stderr[-2000:]}")
        ptx = max(archs)
        done = _nvcc(nvcc, src, out, archs, ptx)
        if done.returncode != 0:
            raise RuntimeError(f"nvcc could not build {name}.cu:\n{done.stderr[-2000:]}")
    return {"file": out.name, "source_sha256": digest(text), "sass": archs, "ptx": ptx}


def nvcc_version(nvcc: str) -> str:
    text = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"release ([\d.]+), (V[\d.]+)", text)
    return m.group(2) if m else text.strip().splitlines()[-1]


def build(nvcc: str | None = None, jobs: int | None = None, only=None) -> dict:
    """Every module's fatbin and the manifest; ``only``: rebuild just these modules and keep
    the manifest's entries of the others (an edit to one kernel file)."""
    nvcc = nvcc or shutil.which("nvcc")
    if not nvcc:
        raise SystemExit("nvcc not found: install the CUDA toolkit (13) or pass --nvcc")
    OUT.mkdir(exist_ok=True)
    names = modules()
    kept = {}
    if only:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise SystemExit(f"--only: no module {unknown}; modules: {', '.join(names)}")
        if MANIFEST.exists():
            kept = {k: v for k, v in json.loads(MANIFEST.read_text())["modules"].items()
                    if k in names and k not in only}
        names = sorted(only)
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(jobs or os.cpu_count() or 2) as pool:
        built = dict(zip(names, pool.map(lambda n: build_module(nvcc, n, Path(tmp)), names)))
    built = {**kept, **built}
    for stale in OUT.glob("*.fatbin"):
        if stale.stem not in built:
            stale.unlink()
    manifest = {"format": FORMAT, "nvcc": nvcc_version(nvcc), "options": list(NVCC_OPTIONS),
                "modules": built}
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", help="the nvcc to use (default: the one on PATH)")
    ap.add_argument("--jobs", type=int, help="modules compiled at once (default: the cores)")
    ap.add_argument("--only", help="comma list of modules to rebuild (the others' entries kept)")
    a = ap.parse_args(argv)
    m = build(a.nvcc, a.jobs, [s.strip() for s in a.only.split(",")] if a.only else None)
    size = sum((OUT / e["file"]).stat().st_size for e in m["modules"].values())
    print(f"{len(m['modules'])} modules, {size / 1e6:.1f} MB, nvcc {m['nvcc']} -> {OUT}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
