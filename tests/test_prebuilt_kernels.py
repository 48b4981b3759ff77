"""The CUDA kernels compiled ahead of time (dgbdt/kernels/cuda/prebuilt): present for every
module, built from the sources beside them, and never used when they are not.

A kernel edited without ``python -m dgbdt.kernels.prebuild`` fails the first test (the
loader would fall back to NVRTC, so nothing wrong would run, but the first fit would compile
again). tests/gpu/test_gpu_prebuilt.py checks on a GPU that they load and train the same
model bytes as NVRTC's."""
import json
import shutil
import subprocess

from pathlib import Path

import pytest

from dgbdt.kernels import prebuild, prebuilt
from dgbdt.kernels.launch import source

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_is_prebuilt_from_its_current_source():
    shipped = prebuilt.manifest()
    stale = [m for m in prebuild.modules()
             if shipped.get(m, {}).get("source_sha256") != prebuild.digest(source(m))]
    assert not stale, (f"cuda/prebuilt is stale for {stale}: run "
                       "`python -m dgbdt.kernels.prebuild` (needs nvcc) and commit the result")
    assert set(shipped) == set(prebuild.modules())


def test_the_fatbins_hold_the_common_architectures():
    for name, entry in prebuilt.manifest().items():
        path = prebuilt._DIR / entry["file"]
        assert path.stat().st_size > 1000, name
        assert {80, 86, 89, 90, 100, 120} <= set(entry["sass"]), name
        assert entry["ptx"] == max(entry["sass"])     # later GPUs JIT the newest PTX


def test_they_ship_in_the_package():
    tomllib = pytest.importorskip("tomllib")       # Python 3.11+
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["dgbdt"]
    assert "kernels/cuda/prebuilt/*.fatbin" in globs
    assert "kernels/cuda/prebuilt/manifest.json" in globs


def test_a_module_whose_source_changed_is_not_loaded(monkeypatch):
    monkeypatch.setattr(prebuilt, "manifest",
                        lambda: {"tree": {"file": "tree.fatbin", "source_sha256": "0" * 64}})
    # the digest differs: NVRTC's turn (None), and cupy is never imported to find that out
    assert prebuilt.kernel("tree", "build_hist", source("tree")) is None
    monkeypatch.setattr(prebuilt, "manifest", lambda: {})
    assert prebuilt.kernel("tree", "build_hist", source("tree")) is None


def test_turned_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("DGBDT_PREBUILT_KERNELS", "0")
    assert not prebuilt.enabled()
    assert prebuilt.kernel("tree", "build_hist", source("tree")) is None


def test_an_unreadable_manifest_means_none(tmp_path, monkeypatch):
    (tmp_path / "manifest.json").write_text("{not json")
    monkeypatch.setattr(prebuilt, "_DIR", tmp_path)
    prebuilt.manifest.cache_clear()
    try:
        assert prebuilt.manifest() == {}
        (tmp_path / "manifest.json").write_text(json.dumps({"format": 99, "modules": {"x": 1}}))
        prebuilt.manifest.cache_clear()
        assert prebuilt.manifest() == {}            # a format this version does not know
    finally:
        monkeypatch.undo()
        prebuilt.manifest.cache_clear()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (CI and dev machines)")
def test_nvcc_builds_a_module_with_the_options_nvrtc_uses(tmp_path):
    """The build's command line compiles (the options as nvcc spells them), one arch."""
    src = tmp_path / "metric.cu"
    src.write_text(source("metric"))
    done = prebuild._nvcc(shutil.which("nvcc"), src, tmp_path / "m.fatbin", [90], None)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "m.fatbin").stat().st_size > 1000
    assert subprocess.run(["nvcc", "--version"], capture_output=True).returncode == 0
