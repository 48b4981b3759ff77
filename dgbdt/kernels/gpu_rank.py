"""The rank:* objectives' LambdaMART gradients on the GPU (cuda/rank.cu ``lambda_gradients``):
the CPU kernel's algorithm (dgbdt.kernels.cpu_rank), one thread per query group, each group
computed whole in the CPU's pair order by its thread (so each row's float32 sums are the CPU's:
no atomics, the same result for any launch shape).

Equal to the CPU's bit for bit except where CUDA's and libm's transcendental functions differ
in a last bit: the pair sigmoid's exp (exp in double rounded to float32 here, the CPU's expf)
and the topk normalization's log2; a row's gradient then differs by an ulp or so of float32.
The position discounts come from the CPU's own table (cpu_rank.discount_table)."""
from __future__ import annotations

import numpy as np

from .arrays import array_module
from .cpu_rank import discount_table
from .launch import kernel

BLOCK = 128     # threads (query groups) a block


def device_discounts(longest: int, xp):
    """The CPU's NDCG discount table (cpu_rank.discount_table) on the device (``xp``: cupy)."""
    return xp.asarray(discount_table(max(int(longest), 1)))


def lambda_gradients(loss: int, method: int, k: int, exp_gain: bool, normalize: bool,
                     score_norm: bool, seed: int, epoch: int, gptr, qids, pred, label, qw,
                     w_norm: float, discount):
    """float32 (g, h) [n] device arrays of every group: group ``q`` is rows
    ``gptr[q]:gptr[q + 1]`` (int64, device) with query id ``qids[q]`` (uint64, device) and
    weight ``qw[q]`` (float32, device); ``pred``, ``label``: float32 [n] device arrays;
    ``discount``: ``device_discounts`` of at least the longest group's row count."""
    cp = array_module(pred)     # cupy (numpy where tests launch a host build of the kernel)
    n = int(pred.shape[0])
    n_groups = int(gptr.shape[0]) - 1
    g = cp.empty(n, dtype=cp.float32)
    h = cp.empty(n, dtype=cp.float32)
    if n_groups <= 0 or n == 0:
        return g, h
    ints = cp.empty((3, n), dtype=cp.int32)
    ranked_y = cp.empty(n, dtype=cp.float32)
    dbl = cp.empty((2, n), dtype=cp.float64) if loss == 2 else cp.empty((2, 1), cp.float64)
    grid = (max(1, min(65535, -(-n_groups // BLOCK))),)
    kernel("rank", "lambda_gradients")(
        grid, (BLOCK,),
        (np.int32(loss), np.int32(method), np.int32(k), np.int32(bool(exp_gain)),
         np.int32(bool(normalize)), np.int32(bool(score_norm)), np.uint64(seed),
         np.uint64(epoch), gptr, qids, np.int64(n_groups), pred, label, qw,
         np.float64(w_norm), discount, ints[0], ints[1], ints[2], ranked_y, dbl[0], dbl[1],
         g, h))
    return g, h
