"""Graph mode's gradient-based row sampling (``sampling_method="gradient_based"``).

A round's sample needs a threshold over every unit's rows (dgbdt.engine.gradient_sampling): a radix
descent of 3 steps a class, each step merging every holder's [2, 256] integer bucket sums. The
collective ranks all-reduce them; here each step is a task hop: every unit receives every
unit's sums of the step, merges them (exact integers, any order) and takes the same step, so
every unit finds the same threshold, the one in-process training finds over the same rows,
and draws its own rows (the draws depend on the row's global index only). The model is then
the in-process one's bytes.

    sample_start_w(grad_*)      every unit's gradient maxima merged; class 0's first step's
                                bucket sums of w's rows
    sample_step_w(sample_*)     a step merged and taken; the next step's sums (the next
                                class's first after a class's last), or after the last class
                                (None, the sampled gradients' maxima), shaped as the
                                gradient tasks' results the roots read

So a sampled round costs 3 K + 1 hops more (K classes).
"""
from __future__ import annotations

import time

import numpy as np

from ..engine.exchange import hop
from ..engine.gradient_sampling import _STEPS, RoundSample
from .graph_unit import WorkerUnit, on


def sample_start(unit: WorkerUnit, nthread, sampling, epoch: int, n_rows: int, *results):
    """``results``: every unit's (tree or None, (max |g|, max h)) of round ``epoch``'s
    gradients; returns this unit's bucket sums of the descent's first step."""
    with on(unit, nthread):
        t = time.perf_counter()
        maxima = [r[1] for r in results]
        max_g = np.max([m[0] for m in maxima], axis=0)
        max_h = np.max([m[1] for m in maxima], axis=0)
        unit.sample = RoundSample(unit.seam.shards, sampling, epoch, n_rows, max_g, max_h)
        out = unit.sample.local()
        unit.timers["gradients"] += time.perf_counter() - t
        return out


def sample_step(unit: WorkerUnit, nthread, *answers):
    """Every unit's sums of the last step merged and the step taken (an exchange's hop,
    dgbdt.engine.exchange); returns this unit's sums of the next step, or when the sample is
    drawn (None, (max |g|, max h)) of the sampled gradients (the same bounds on every unit)."""
    with on(unit, nthread):
        t = time.perf_counter()
        rs = unit.sample
        out = hop(rs, answers)
        if rs.done:
            unit.sample, out = None, (None, rs.maxima)
        unit.timers["gradients"] += time.perf_counter() - t
        return out


def hops(n_classes: int) -> int:
    """sample_step hops after sample_start: one per descent step of every class."""
    return _STEPS * n_classes
