"""Row sampling's one-kernel draws on the GPU (cuda/sampling.cu, dgbdt.backends.cuda_sampling)
against the array code they replace (the same rows, the same reweighted bytes).
tests/test_sampling_kernel_host.py runs the same source on the CPU in CI; whole streamed
trainings with them (and dgbdt.engine.row_block) are in test_gpu_ooc.py."""
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from dgbdt.engine import sampled_rounds as compact
from dgbdt.backends.device import get_backend
from dgbdt.engine.sampling import Sampling, uniform
from dgbdt.engine.gradient_sampling import LAMBDA, sample_class


def _gradients(cp, seed, n=200_000, K=2):
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n, K)) * rng.choice([1e-3, 1.0, 30.0], (n, K))
    h = rng.random((n, K)) * 0.25
    g[rng.random(n) < 0.1] = 0.0
    h[rng.random(n) < 0.05] = 0.0
    return cp.asarray(g), cp.asarray(h)


class _ArrayBackend:
    """The CUDA backend without its sampling kernels: the array code on cupy arrays."""

    def __init__(self, be):
        self.xp, self.name = be.xp, be.name
        self.caps = dataclasses.replace(be.caps, row_sample_kernel=False,
                                        row_candidates_kernel=False)


def _shard(be, g, h, id0):
    return SimpleNamespace(g=g, h=h, be=be, n_rows=int(g.shape[0]),
                           id_pieces=[(id0, int(g.shape[0]))])


@pytest.mark.parametrize("method", ["uniform", "gradient_based"])
def test_candidate_kernel_picks_the_array_codes_rows(cp, method):
    be = get_backend("cuda")
    g, h = _gradients(cp, 1)
    sampling = Sampling(seed=4, subsample=0.25, method=method)
    guess = [(0.8, 1e-3, 2.5), (1.7, 2e-4, 0.9)]
    fast = compact.candidate_rows(_shard(be, g, h, 1000), sampling, 6, guess)
    slow = compact.candidate_rows(_shard(_ArrayBackend(be), g, h, 1000), sampling, 6, guess)
    assert 0 < fast.shape[0] < g.shape[0]
    cp.testing.assert_array_equal(fast, slow)


def test_uniform_kernel_is_apply_rows(cp):
    be = get_backend("cuda")
    g, h = _gradients(cp, 2)
    fast, slow = _shard(be, g.copy(), h.copy(), 7), _shard(_ArrayBackend(be), g, h, 7)
    s = Sampling(seed=8, subsample=0.3)
    s.apply_rows(fast, 3)
    s.apply_rows(slow, 3)
    keep = cp.asnumpy(uniform(cp, 8, 0, 3, cp.arange(7, 7 + g.shape[0])) < 0.3)
    assert cp.asnumpy(fast.g).tobytes() == cp.asnumpy(slow.g).tobytes()
    assert cp.asnumpy(fast.h).tobytes() == cp.asnumpy(slow.h).tobytes()
    assert (cp.asnumpy(fast.h[:, 0])[~keep] == 0).all()


@pytest.mark.parametrize("frac", [0.05, 0.3, 2.0])
def test_gradient_kernel_is_sample_class(cp, frac):
    be = get_backend("cuda")
    g, h = _gradients(cp, 3)
    n = int(g.shape[0])
    vmax = float(np.sqrt(float(cp.abs(g[:, 1]).max()) ** 2 + LAMBDA * float(h[:, 1].max()) ** 2))
    fast, slow = _shard(be, g.copy(), h.copy(), 11), _shard(_ArrayBackend(be), g, h, 11)
    a = sample_class([fast], 1, vmax, int(n * frac), 5, 9, lambda x, op: x)
    b = sample_class([slow], 1, vmax, int(n * frac), 5, 9, lambda x, op: x)
    assert a == b
    assert cp.asnumpy(fast.g).tobytes() == cp.asnumpy(slow.g).tobytes()
    assert cp.asnumpy(fast.h).tobytes() == cp.asnumpy(slow.h).tobytes()
