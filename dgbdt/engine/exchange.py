"""A reduction of several steps over every holder of rows, written once and driven by every seam.

Some of a round's numbers need more than one reduction over all the rows, each step's request
depending on the last step's merged answer: the quantile losses' leaf values (a radix descent,
dgbdt.objectives.leaf_quantiles.QuantileDescent) and gradient-based sampling's threshold
(dgbdt.engine.gradient_sampling.RoundSample). Each is an *exchange*: an object on every holder
of rows that

* ``local()``: answers the pending request from this holder's rows, as pieces
  ``(array, op)`` whose merge over the holders is exact in any order (``"sum"`` of integers
  below 2**53, ``"max"``);
* ``advance(merged)``: takes the pieces merged over every holder and moves to the next request;
* ``done``: says when it has its result.

Every holder runs the same steps on the same merged answers, so every holder finds the same
result, the one a single holder of all the rows finds. The seams only move answers:

* in-process and between collective ranks, ``run`` (the all-reduce of each piece; in-process
  none, the one holder's answer is the merged one);
* in graph mode, one task hop a step, ``hop`` (every unit's answers in, the next ones out).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np


class Exchange(Protocol):
    """A multi-step reduction on one holder of rows (module docstring)."""

    @property
    def done(self) -> bool: ...

    def local(self) -> list: ...

    def advance(self, merged: list) -> None: ...


def merge(answers) -> list:
    """Every holder's answers to one request (lists of ``(array, op)``), merged piece by piece;
    holders whose exchange has ended answer None and are passed over."""
    answers = [a for a in answers if a is not None]
    out = []
    for i, (_, op) in enumerate(answers[0]):
        parts = np.stack([np.asarray(a[i][0]) for a in answers])
        if op == "sum":
            out.append(parts.sum(axis=0))
        elif op == "max":
            out.append(parts.max(axis=0))
        else:
            raise ValueError(f"unknown merge {op!r} (sum or max)")
    return out


def run(ex: Exchange, allreduce=None) -> Exchange:
    """Drive ``ex`` to its end: ``allreduce(array, op)`` merges a piece over the other holders
    (collective ranks); None: this holder holds every row (in-process)."""
    while not ex.done:
        pieces = ex.local()
        ex.advance([a if allreduce is None else allreduce(a, op) for a, op in pieces])
    return ex


def hop(ex: Exchange, answers):
    """One step as a task hop (graph mode): every holder's answers merged and the step taken;
    returns this holder's answers to the next request, None once done (an exchange that ends
    before the hops submitted for it lets the rest pass through)."""
    if not ex.done:
        ex.advance(merge(answers))
    return None if ex.done else ex.local()
