"""The CUDA sources, checked without a GPU: shipped with the package, every kernel the Python
side launches exists, and each file compiles for Hopper with nvcc (CI has CUDA 13's nvcc), so a
broken kernel fails here before any GPU time is spent."""
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # compiles every CUDA source on the host

CUDA = Path(str(resources.files("dgbdt.kernels") / "cuda"))
MODULES = ["tree", "split", "grow", "data", "predict", "objective", "categorical", "linear",
           "linear_split", "linear_grow", "rank", "sparse"]


def _launched():
    """(module, kernel) pairs named in kernel("module", "name") calls of the GPU side: the
    CUDA backend (dgbdt/backends/cuda*.py) and the kernels' launchers (dgbdt/kernels/gpu_*.py,
    launch.py)."""
    pkg = CUDA.parent.parent
    files = sorted((pkg / "backends").glob("cuda*.py")) + sorted(CUDA.parent.glob("*.py"))
    src = "".join(f.read_text() for f in files)
    return set(re.findall(r'kernel\("(\w+)", "(\w+)"\)', src))


def test_sources_are_installed_with_the_package():
    for m in MODULES:
        assert (CUDA / f"{m}.cu").is_file(), f"{m}.cu missing from the installed package"
    assert (CUDA / "common.cuh").is_file() and (CUDA / "gain.cuh").is_file()


def test_every_launched_kernel_exists():
    pairs = _launched()
    assert len(pairs) >= 10
    for module, name in pairs:
        text = (CUDA / f"{module}.cu").read_text()
        pattern = rf'extern "C" __global__ void\s+(__launch_bounds__\([\w ,]+\)\s+)?{name}\('
        assert re.search(pattern, text), f"{module}.cu: {name}"


def test_cupy_cache_key_sees_the_header():
    """NVRTC gets the header inlined, so editing common.cuh changes CuPy's cache key."""
    from dgbdt.kernels.launch import source
    assert "read_symbol" in source("tree") and '#include "common.cuh"' not in source("tree")
    assert "node_gain" in source("categorical") and '#include' not in source("categorical")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("module", MODULES)
def test_compiles_for_sm90(module, tmp_path):
    out = tmp_path / f"{module}.ptx"
    r = subprocess.run(["nvcc", "-arch=sm_90", "--ptx", "--std=c++17", "-fmad=false",
                        f"-I{CUDA}", "-o", str(out), str(CUDA / f"{module}.cu")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    ptx = out.read_text()
    for m, name in _launched():
        if m == module:
            assert f".entry {name}(" in ptx


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@pytest.mark.parametrize("maxl,has_cat", [(9, 1), (17, 0), (32, 1)])
def test_shap_kernels_compile_and_keep_their_paths_in_registers(maxl, has_cat, tmp_path):
    """cuda/shap.cu as gpu_shap compiles it (MAXL, HAS_CAT): both kernels exist, and up to
    MAXL 17 (trees of depth 16) neither has a stack frame: a per-path array indexed at run
    time would go to local memory (a select over the register arrays can become one)."""
    from dgbdt.kernels import gpu_shap
    src = (CUDA.parent / "gpu_shap.py").read_text()
    assert '"shap_paths"' in src and '"shap_interactions"' in src
    out = tmp_path / "shap.cubin"
    r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "--std=c++17", f"-DMAXL={maxl}",
                        f"-DHAS_CAT={has_cat}", "-Xptxas", "-v", f"-I{CUDA}", "-o", str(out),
                        str(CUDA / "shap.cu")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    frames = dict(re.findall(r"Function properties for (\w+)\n\s+(\d+) bytes stack frame",
                             r.stderr))
    assert set(frames) == {"shap_paths", "shap_interactions"}, r.stderr
    if maxl <= 17:
        assert frames == {"shap_paths": "0", "shap_interactions": "0"}, r.stderr
    assert maxl <= gpu_shap.MAX_LEN


@pytest.mark.parametrize("params", [
    {}, {"scale_pos_weight": 2.0}, {"quantile_alpha": [0.2, 0.8]},
    {"aft_loss_distribution": "logistic"}, {"aft_loss_distribution": "extreme"}])
def test_every_objective_kernel_exists(params):
    """Each objective's gradient kernel (Objective.cuda_kernel, launched by the CUDA backend's
    ``gradients``) is a kernel of objective.cu: written out, or made by one of its macros."""
    from dgbdt.objectives.registry import OBJECTIVES, get_objective
    text = (CUDA / "objective.cu").read_text()
    for name in OBJECTIVES:
        kernel = get_objective(name, params).cuda_kernel
        if not kernel:        # computed over the seam's rows (rank:*, survival:cox)
            continue
        plain = re.search(rf'extern "C" __global__ void {kernel}\(', text)
        one = re.search(rf"(ONE_COLUMN|AFT)_KERNEL\({kernel},", text)
        assert plain or one, f"{name}: {kernel}"
