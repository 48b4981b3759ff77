"""A training whose rows are all in this process (dgbdt.train, and the one-task mode's worker):
the pages placed within the device budget, one shard a page, the seam over them, then the
boosting loop (dgbdt.engine.boosting)."""
from __future__ import annotations

import time

import numpy as np

from ..backends.device import to_host
from ..data.page_store import bound_route_columns, gpu_memory_errors, move_page, plan_pages
from ..model.booster import Booster
from ..model.margins import MarginStart
from ..objectives.base import model_params
from ..tree.spec import max_nodes as tree_max_nodes
from .boosting import boost
from .checkpoint import Checkpointer, fingerprint
from .batch_eval import dataset_eval
from .evaluation import SeamEval
from .approx import check_raw_rows, needs_raw_rows
from .linear_setup import hold_raw_rows, linear_setup
from .progress import Progress
from .setup import check_exact, training_max_bin
from .seam import LocalSeam
from .shard import Shard


def _base_margin(p, objective, label, weight, num_class) -> np.ndarray:
    if p["base_score"] is not None:
        return objective.base_score_to_margin(p["base_score"], num_class)
    if not objective.stats_on_device():     # device labels stay there when they can
        label, weight = to_host(label), None if weight is None else to_host(weight)
    return objective.base_margin_from_labels(label, weight, num_class)


def train_in_process(p, dtrain, rounds, evals, early_stopping_rounds, evals_result, verbose_eval,
           objective, num_class, K, metrics, backend, prior=None, callbacks=None,
           custom_metric=None, maximize=None, checkpoint=None) -> Booster:
    t = time.perf_counter()
    if prior is not None:     # the data's category codes as the model's, by value (XGBoost's)
        from ..data.dataset import recoded_to_model
        given, dtrain = dtrain, recoded_to_model(dtrain, prior.categories)
        evals = [(dtrain if d is given else d, name) for d, name in evals]
    max_bin = training_max_bin(p, dtrain)
    with gpu_memory_errors(p, "quantizing the training rows"):
        cuts = dtrain.cuts(max_bin, backend)
        check_exact(p, cuts)
        if prior is None:
            base = _base_margin(p, objective, dtrain.label, dtrain.weight, num_class)
            booster = Booster(objective.name, num_class, base, dtrain.num_col,
                              dtrain.feature_names, model_params(objective))
        else:       # continued training: the prior's intercept and trees, new trees after
            booster = prior.snapshot()
            booster.best_iteration = booster.best_score = None
        booster.set_feature_types(dtrain)      # categorical features (dgbdt.data.categorical)
        progress = Progress()
        if checkpoint:      # resume from this training's checkpoint, if there is one
            directory, interval, obj = checkpoint
            sink = Checkpointer(directory, interval, fingerprint(
                p, rounds, early_stopping_rounds,
                None if custom_metric is None else bool(maximize), rows=dtrain.num_row,
                features=dtrain.num_col, feature_names=dtrain.feature_names,
                weighted=dtrain.weight is not None,
                base_margin=dtrain.base_margin is not None, cuts=cuts,
                intercept=booster.base_margin,
                evals=[(name, d.num_row) for d, name in evals],
                metrics=[m.name for m in metrics], prior=prior, obj=obj,
                custom_metric=custom_metric), booster.num_boosted_rounds())
            progress = sink.resume() or Progress(sink=sink)
            if progress.started:    # its model so far is where every margin starts
                prior, booster = progress.booster, progress.booster.snapshot()
        start = MarginStart(booster.base_margin, prior)
        shards, store = _shards(p, dtrain, cuts, max_bin, booster, start, K, backend)
        linear = linear_setup(p, dtrain, cuts, shards)
        check_raw_rows(p, any(s.page.streamed for s in shards))
        if needs_raw_rows(p) and not p["linear_tree"]:   # approx, dart: dgbdt.engine.approx
            hold_raw_rows(dtrain, shards)
    quantize_seconds = time.perf_counter() - t
    seam = LocalSeam(shards, cuts.hist_ptrs(), store.slots)
    if prior is not None:   # lambdarank_unbiased resumes the continued model's estimates
        seam.rank_position_bias_start = getattr(prior, "position_bias", None) or {}
    sources = [(SeamEval(seam, d.label, d.weight, d, d.qid) if d is dtrain
                else dataset_eval(d, booster),
                name) for d, name in evals]
    try:
        with gpu_memory_errors(p, "training"):
            booster = boost(p, seam, cuts, booster, objective, metrics, rounds, sources,
                            early_stopping_rounds, evals_result, verbose_eval, callbacks,
                            custom_metric, maximize, progress=progress, linear=linear)
    finally:        # its tree graphs' capture pool, to the next training (dgbdt.tree.tree_graph)
        seam.release_graphs()
    booster.timings["quantize"] = quantize_seconds
    bias = getattr(seam, "rank_position_bias", None)
    if bias is not None:    # lambdarank_unbiased: the estimates (saved with the model)
        booster.position_bias = bias.as_dict()
    booster.memory = {**store.stats(), **seam.stream_stats()}
    return booster


def _shards(p, dtrain, cuts, max_bin, booster, start, K, backend):
    """The training's shards, one per page, their pages placed by a PageStore (kept, spilled
    or streamed within device_memory_budget); and the store."""
    max_nodes = tree_max_nodes(p, dtrain.num_row)
    # linear trees' kernels read every feature of a row: dense pages for sparse rows too
    dense = bool(p.get("linear_tree"))
    width, bits = dtrain.num_col, None
    if dtrain.sparse:       # pages planned at their layout's size (ELLPACK: far smaller)
        from ..data.sparse import planned_layout
        _, width, bits = planned_layout(dtrain.data, cuts, dense)
    store, ranges = plan_pages(p["device_memory_budget"], backend, dtrain.num_row,
                               width, cuts, max_nodes, K, dtrain.page_rows, bits)
    if ranges is None:
        ranges, pages = dtrain.row_ranges(), dtrain.pages(cuts, max_bin, backend, dense)
    else:   # pages cut to the budget, built, placed (kept, spilled or streamed) one at a time
        pages = (dtrain.build_page(a, b, cuts, backend, dense) for a, b in ranges)
    shards = []
    for (a, b), page in zip(ranges, pages):
        page = move_page(store.place(page), backend)
        if start.prior is None:
            margin = booster.initial_margin(
                b - a, None if dtrain.base_margin is None else dtrain.base_margin[a:b],
                like=backend.xp.empty(0) if backend.caps.device_memory else None)
        else:       # continued training: the prior model's margins of these rows
            margin = start.of(dtrain.rows(a, b), None if dtrain.base_margin is None
                              else dtrain.base_margin[a:b], backend.xp)
        shard = Shard(page, cuts.n_bins(), dtrain.label[a:b],
                      None if dtrain.weight is None else dtrain.weight[a:b],
                      margin, max_nodes, backend)
        shard.id_pieces = [(a, b - a)]        # the rows' dataset order (row sampling)
        if dtrain.qid is not None:
            shard.qid = dtrain.qid[a:b]
        shards.append(shard)
    bound_route_columns(shards, p["device_memory_budget"], backend)
    return shards, store
