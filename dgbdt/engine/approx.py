"""``tree_method="approx"``: XGBoost's approximate method, a new sketch for every tree.

Before each tree of output k the rows' raw feature values are sketched again with each row
weighted by its hessian h_ik (after the round's row sample: a row outside it weighs 0 and is
left out, as in XGBoost), so a feature's cuts split the hessian mass, not the row count, into
``max_bin`` parts: bins are finer where the loss is curved. Every holder of rows summarizes its
own (dgbdt.data.sketch: the weights in fixed point at one scale from the global max hessian,
so the merge is exact), the summaries are merged over the seam (in-process: here; collective
ranks: an all-gather of their bytes), and every shard's page is quantized again with the new
cuts before the tree grows on it. The model is thus the same for any partitioning and mode,
as for ``hist``.

The shards keep their raw rows for it (``Shard.raw``, as linear trees do); pages are rebuilt
in device memory, so streamed pages (``device_memory_budget`` below the pages) are refused.
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np

from ..backends.device import to_host
from ..data.quantize import cuts_from_summaries, quantize
from ..data.sketch import Summaries, default_max_keys, summarize_weighted, weight_scale
from ..data.sketch_device import summarize_weighted_device
from ..kernels.pages import pack


def needs_raw_rows(p: dict) -> bool:
    """Whether a training's shards keep their raw rows: linear leaves regress on them, the
    approximate method sketches them again for every tree, dart's dropped trees are taken
    out of their margins and put back at new weights by traversal (dgbdt.engine.dart)."""
    return bool(p.get("linear_tree")) or p.get("tree_method") == "approx" or \
        p.get("booster") == "dart"


def spec_params(spec) -> dict:
    """The parameters check_raw_rows reads, from a growth spec."""
    return {"tree_method": "approx" if spec.approx_bins else "hist",
            "linear_tree": spec.linear is not None}


def check_raw_rows(p: dict, streamed: bool) -> None:
    """Refuse what the approximate method and dart do not do (yet), naming the way that
    works."""
    if p.get("booster") == "dart":
        check_dart(p, streamed)
    if p.get("tree_method") != "approx":
        return
    if p.get("linear_tree"):
        raise NotImplementedError('tree_method="approx" with linear_tree is not built: linear '
                                  'trees split on the training\'s cuts. Fix: tree_method="hist"')
    if streamed:
        raise NotImplementedError(
            'tree_method="approx" re-quantizes every page for every tree, in device memory: '
            "pages streamed from host memory (device_memory_budget below the pages' size) "
            'are not. Fix: tree_method="hist" (streams), or a larger device_memory_budget')


def check_dart(p: dict, streamed: bool) -> None:
    """Refuse what dart does not do (yet), naming the way that works."""
    if p.get("linear_tree"):
        raise NotImplementedError('booster="dart" with linear_tree is not built (dropped '
                                  'trees are re-weighed by their constant leaves). Fix: '
                                  'booster="gbtree"')
    if streamed:
        raise NotImplementedError(
            'booster="dart" traverses the training rows for every dropped tree, from their '
            "raw values in device memory: pages streamed from host memory (device_memory_"
            "budget below the pages' size) are not. Fix: booster=\"gbtree\", or a larger "
            "device_memory_budget")


def resketch(seam, spec, k: int, max_h: float, max_bin: int):
    """The spec of output k's next tree: cuts from the shards' raw rows weighted by their
    hessians of output k (``max_h``: the global max, which sets the fixed-point scale), every
    shard's page quantized with them, ``seam.hist_ptrs`` set to their layout."""
    shards = seam.shards
    be = shards[0].be
    check_raw_rows(spec_params(spec), any(s.page.streamed for s in shards))
    max_keys = default_max_keys(max_bin)
    scale = weight_scale(max_h, seam.n_rows)
    local: Summaries | None = None
    for s in shards:
        h = s.h[:, k]
        part = (summarize_weighted_device(s.raw, h, scale, max_keys) if be.caps.device_memory
                else summarize_weighted(s.raw, h, scale, max_keys))
        local = part if local is None else local.merge(part, max_keys)
    merged = seam.merge_summaries(local, max_keys)
    cuts = cuts_from_summaries(merged, max_bin, getattr(spec.cuts, "categorical", None))
    hist_ptrs = cuts.hist_ptrs()
    for s in shards:
        page = (be.quantize_pack(s.raw, cuts) if be.caps.device_memory
                else pack(quantize(s.raw, cuts)))
        s.requantized(page, cuts.n_bins(), hist_ptrs)
    seam.hist_ptrs = np.ascontiguousarray(hist_ptrs, dtype=np.int64)
    return dataclasses.replace(spec, cuts=cuts, hist_ptrs=hist_ptrs)


def summaries_bytes(s: Summaries) -> np.ndarray:
    """A summary as int64 words to all-gather between ranks (NCCL moves 4- and 8-byte
    types): its JSON's length in bytes, then the bytes, zero-padded to whole words."""
    data = json.dumps(s.to_dict()).encode()
    padded = data + b"\0" * (-len(data) % 8)
    return np.concatenate([np.array([len(data)], np.int64),
                           np.frombuffer(padded, dtype=np.int64)])


def merged_bytes(gathered, counts, max_keys: int) -> Summaries:
    """Every rank's summary words (summaries_bytes; concatenated in rank order, ``counts``
    words each) merged."""
    words, out, at = np.ascontiguousarray(to_host(gathered), dtype=np.int64), None, 0
    for n in (int(c) for c in counts):
        size = int(words[at])
        data = words[at + 1:at + n].tobytes()[:size]
        s = Summaries.from_dict(json.loads(data.decode()))
        at += n
        out = s if out is None else out.merge(s, max_keys)
    return out
