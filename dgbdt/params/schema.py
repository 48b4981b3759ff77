"""The schema of dgbdt's training parameters: every parameter's name, default, aliases,
kind, bounds and documentation (XGBoost's names), and the objectives and metrics they name.
dgbdt.params.normalize validates against it and renders it as docs/parameters.md."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

OBJECTIVES: tuple[str, ...] = (
    "reg:squarederror",
    "reg:logistic",
    "binary:logistic",
    "binary:logitraw",
    "multi:softprob",
    "multi:softmax",
    "reg:squaredlogerror",
    "reg:pseudohubererror",
    "count:poisson",
    "reg:gamma",
    "reg:tweedie",
    "binary:hinge",
    "reg:absoluteerror",
    "reg:quantileerror",
    "survival:cox",
    "survival:aft",
    "rank:ndcg",
    "rank:pairwise",
    "rank:map",
)
MULTI_OBJECTIVES = frozenset({"multi:softprob", "multi:softmax"})
#: objectives whose base_score is a probability, so it must lie strictly in (0, 1)
PROBABILITY_BASE_SCORE = frozenset({"reg:logistic", "binary:logistic"})

METRICS: tuple[str, ...] = ("rmse", "mae", "logloss", "error", "auc", "aucpr", "mlogloss",
                            "merror", "rmsle", "mape", "mphe", "poisson-nloglik", "gamma-nloglik",
                            "gamma-deviance", "tweedie-nloglik", "quantile", "cox-nloglik",
                            "aft-nloglik", "interval-regression-accuracy", "ndcg", "map", "pre")


@dataclass(frozen=True)
class ParamSpec:
    """Schema entry for one training parameter.

    ``kind`` selects the coercion: ``"float"``, ``"int"``, ``"bool"``, ``"choice"``
    (a str from ``choices``), ``"metrics"`` (str or list of str from ``choices``) or
    ``"device"``.  Numeric bounds are ``low``/``high``; ``low_open``/``high_open`` make
    them exclusive.  ``value_map`` rewrites accepted spellings after coercion
    (``"auto"`` -> ``"hist"``, ``-1`` -> ``None``).  ``rejected`` maps values that are
    recognised but unsupported to a tailored explanation.  ``allowed`` overrides the
    generated description of the valid values, used in errors and in the docs.
    """

    name: str
    default: object
    doc: str
    aliases: tuple[str, ...] = ()
    kind: str = "float"
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()
    value_map: Mapping[object, object] = field(default_factory=dict)
    rejected: Mapping[object, str] = field(default_factory=dict)
    allowed: str = ""

    def describe_allowed(self) -> str:
        """Human description of the accepted values (used in messages and docs)."""
        if self.allowed:
            return self.allowed
        if self.kind in ("float", "int"):
            noun = "a float" if self.kind == "float" else "an int"
            parts = []
            if self.low is not None:
                parts.append(f"{'>' if self.low_open else '>='} {_num(self.low)}")
            if self.high is not None:
                parts.append(f"{'<' if self.high_open else '<='} {_num(self.high)}")
            if self.low is not None and self.high is not None and not (self.low_open or self.high_open):
                return f"{noun} in [{_num(self.low)}, {_num(self.high)}]"
            return f"{noun} {' and '.join(parts)}" if parts else noun
        if self.kind == "bool":
            return "a bool (True/False, or 1/0)"
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        return "see the docs"


def _num(x: float) -> str:
    """Format a bound without a useless '.0'."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


_SPECS = [
    ParamSpec("objective", "reg:squarederror",
              "Learning task and loss to minimize.",
              kind="choice", choices=OBJECTIVES),
    ParamSpec("eta", 0.3,
              "Shrinkage applied to each new tree's leaf values (0: the trees add nothing, "
              "as XGBoost allows, e.g. a learning-rate schedule's pause).",
              aliases=("learning_rate",), low=0.0),
    ParamSpec("max_depth", 6,
              "Maximum depth of a tree (the root is depth 0); 0: no limit, with "
              'grow_policy="lossguide" and max_leaves > 0 only.',
              kind="int", low=0),
    ParamSpec("max_leaves", 0,
              "Maximum leaves of a tree (0: no limit): loss-guided trees split their best "
              "leaves until the cap; depth-wise ones split a level's nodes in order until it "
              "(XGBoost's rule).",
              kind="int", low=0),
    ParamSpec("num_parallel_tree", 1,
              "Trees grown a round for each output, from the same gradients, each with its own "
              "row and column sample and 1/num_parallel_tree of the learning rate: a boosted "
              "random forest (XGBoost's; one round with subsample < 1 and colsample_bynode < 1 "
              "is a random forest, as XGBRFClassifier trains).",
              kind="int", low=1),
    ParamSpec("max_bin", 256,
              "Maximum number of histogram bins per feature.",
              kind="int", low=2, high=65535),
    ParamSpec("gamma", 0.0,
              "Minimum loss reduction required to make a split.",
              aliases=("min_split_loss",), low=0.0),
    ParamSpec("min_child_weight", 1.0,
              "Minimum sum of hessians needed in each child of a split.",
              low=0.0),
    ParamSpec("max_delta_step", 0.0,
              "Largest absolute leaf value before shrinkage (0 = no constraint; 0.7 with "
              "count:poisson, where it is also in the hessian, as in XGBoost).",
              low=0.0),
    ParamSpec("scale_pos_weight", 1.0,
              "Weight factor of rows labelled 1 in the logistic objectives (gradients and "
              "intercept); sum(negatives) / sum(positives) balances the classes.",
              low=0.0, low_open=True),
    ParamSpec("huber_slope", 1.0,
              "The delta of reg:pseudohubererror (and of the mphe metric).",
              low=0.0, low_open=True),
    ParamSpec("tweedie_variance_power", 1.5,
              "The variance power of reg:tweedie, between 1 (Poisson) and 2 (gamma).",
              low=1.0, high=2.0, low_open=True, high_open=True),
    ParamSpec("quantile_alpha", 0.5,
              "The quantile reg:quantileerror fits, or a list of quantiles: one model output "
              "each (XGBoost's: the trees of each round, one per quantile; predictions [n, K]); "
              "the quantile metric averages the pinball losses over them.",
              kind="alphas", low=0.0, high=1.0, low_open=True, high_open=True,
              allowed="a float in (0, 1), or a non-empty list of them"),
    ParamSpec("aft_loss_distribution", "normal",
              "The noise distribution Z of survival:aft (log T = margin + scale Z) and of the "
              "aft-nloglik metric.",
              kind="choice", choices=("normal", "logistic", "extreme")),
    ParamSpec("aft_loss_distribution_scale", 1.0,
              "The scale of survival:aft's noise (kept as a float32, as XGBoost does).",
              low=0.0, low_open=True),
    ParamSpec("lambdarank_pair_method", "topk",
              "How the rank:* objectives pair a query's rows: 'topk', every pair with one of "
              "the model's top lambdarank_num_pair_per_sample rows (deterministic, XGBoost's "
              "gradients); 'mean', that many random partners per row, drawn from (seed, round, "
              "query id) (not XGBoost's draws).",
              kind="choice", choices=("topk", "mean")),
    ParamSpec("lambdarank_num_pair_per_sample", None,
              "The k of lambdarank_pair_method: the truncation level with 'topk' (None: 32), "
              "the pairs per row with 'mean' (None: 1).",
              kind="int", low=1, allowed="None, or an int >= 1"),
    ParamSpec("lambdarank_normalization", True,
              "Scale each query's rank:* gradients (topk: by log2(1 + L) / L, L the sum of "
              "its pairs' |lambda| times 2; mean: by 1 / k).",
              kind="bool"),
    ParamSpec("lambdarank_score_normalization", True,
              "Divide a pair's delta metric by the difference of its two scores plus 0.01.",
              kind="bool"),
    ParamSpec("lambdarank_unbiased", False,
              "Position-debiased LambdaMART (XGBoost's Unbiased LambdaMART, dgbdt.objectives.rank_bias): "
              "a query's row order is its display order; the bias ratios t+ / t- of the first "
              "lambdarank_num_pair_per_sample positions (mean pairs: min(longest query, 32)) "
              "are estimated each round and divide the pairs' gradients. CPU, in-process and "
              "Dask collective / task modes; not with xgb_model=, checkpoint_dir or graph "
              "mode yet.",
              kind="bool"),
    ParamSpec("lambdarank_bias_norm", 1.0,
              "The p of lambdarank_unbiased's Lp regularization: t = (L_i / L_0) ** (1 / (1 + "
              "p)) (XGBoost's code default 1; its documentation says 2).",
              low=0.0),
    ParamSpec("ndcg_exp_gain", True,
              "The NDCG gain of relevance y (rank:ndcg and the ndcg metric): 2^y - 1 (labels "
              "integers in [0, 31]), or y when False.",
              kind="bool"),
    ParamSpec("monotone_constraints", None,
              "Per-feature monotone constraints: -1, 0, 1 by position (a tuple, a list or the "
              "string '(1,0,-1)'), or a dict by feature name (dgbdt.tree.constraints).",
              kind="monotone", allowed="None, a tuple/list of -1/0/1, '(1,0,-1)', or a dict "
              "by feature name"),
    ParamSpec("interaction_constraints", None,
              "Groups of features allowed to interact (a list of lists of indices or names, or "
              "its string '[[0, 1], [2, 3]]'; dgbdt.tree.constraints).",
              kind="interactions", allowed="None, or a list of lists of feature indices or "
              "names"),
    ParamSpec("max_cat_to_onehot", 4,
              "Categorical features (dgbdt.Dataset enable_categorical / feature_types) with "
              "fewer categories than this split one category against the rest (one-hot); "
              "the others split by a partition of their categories (sorted by gradient "
              "statistics). As XGBoost (n_categories < max_cat_to_onehot).",
              kind="int", low=1),
    ParamSpec("max_cat_threshold", 64,
              "Most categories a partition-based categorical split puts on the side it "
              "enumerates (XGBoost's max_cat_threshold).",
              kind="int", low=1),
    ParamSpec("lambda", 1.0,
              "L2 regularization on leaf weights.",
              aliases=("reg_lambda",), low=0.0),
    ParamSpec("alpha", 0.0,
              "L1 regularization on leaf weights.",
              aliases=("reg_alpha",), low=0.0),
    ParamSpec("base_score", None,
              "Initial prediction of every row; None estimates it from the labels "
              "(as XGBoost 2+ does). A list gives one per model output (targets of a "
              "multi-target label, quantiles of quantile_alpha), as XGBoost 3's vector "
              "base_score.",
              kind="scores",
              allowed="None, a finite float, or a list of them (one per output); strictly "
                      "inside (0, 1) for 'reg:logistic' and 'binary:logistic'"),
    ParamSpec("num_target", None,
              "Number of targets (columns of the label); None reads it from the label. "
              "XGBoost's: needed with a custom objective on a multi-target label, whose "
              "gradients are then [n, num_target].",
              kind="int", low=1),
    ParamSpec("multi_strategy", "one_output_per_tree",
              "How a model of several outputs (a multi-target label, or multi:* classes) "
              "grows trees: 'one_output_per_tree' (XGBoost's default: each round one tree "
              "per output) or 'multi_output_tree' (XGBoost's vector-leaf trees: each round "
              "one tree for all T outputs, each leaf holding T values; a split's gain is the "
              "sum of the outputs' gains). multi_output_tree trains on the CPU (in-process "
              "or Dask) with tree_method 'hist', depth-wise; it refuses 'approx'/'exact', "
              "dart, monotone and interaction constraints (as XGBoost does), lossguide, "
              "categorical features, linear trees and the GPU (not built); SHAP values and "
              "dumps with statistics are refused (as in XGBoost). Its model files are "
              "XGBoost's multi-target trees (size_leaf_vector) or dgbdt's format version 8; "
              "with one output it changes nothing.",
              kind="choice", choices=("one_output_per_tree", "multi_output_tree"),
              allowed="'one_output_per_tree', 'multi_output_tree'"),
    ParamSpec("num_class", None,
              "Number of classes; required by the multi:* objectives.",
              kind="int", low=1,  # 1 is tolerated (as None) for non-multi objectives
              allowed="an int >= 2 with a multi:* objective (required there); "
                      "None (or 1) otherwise"),
    ParamSpec("eval_metric", None,
              "Metric(s) reported on evaluation sets; None uses the objective's default.",
              kind="metrics", choices=METRICS,
              allowed="None, or a metric name or list of names from: "
                      + ", ".join(repr(m) for m in METRICS)),
    ParamSpec("disable_default_eval_metric", False,
              "Do not report the objective's default metric.",
              kind="bool"),
    ParamSpec("tree_method", "hist",
              "Tree construction algorithm: 'hist' bins every feature once from a sketch of "
              "the training rows; 'approx' sketches the rows again for every tree, each row "
              "weighted by its hessian (XGBoost's approximate method; slower: a sketch and a "
              "quantization a tree); 'exact' evaluates the split between every two "
              "consecutive distinct values of a feature (XGBoost's exact greedy method: a "
              "bin a distinct value, up to 65535 a feature; a split's threshold is XGBoost's: "
              "the float32 midpoint of the node's two values either side).",
              kind="choice", choices=("hist", "approx", "exact", "auto"),
              value_map={"auto": "hist"},
              allowed="'hist', 'approx' (a new sketch of the rows weighted by their hessians "
                      "for every tree, as XGBoost's), 'exact' (every split value); 'auto' "
                      "is accepted and means 'hist'",
              rejected={
                  "gpu_hist": '"gpu_hist" was deprecated in XGBoost 2 and removed in XGBoost 3 (GPU '
                              'training is chosen with device="cuda"). Fix: use device="cuda" '
                              'with tree_method="hist".',
              }),
    ParamSpec("booster", "gbtree",
              "The model: boosted trees ('gbtree'), trees with dropouts ('dart', XGBoost's "
              "DART: each round drops some trees before the gradients and weighs the new and "
              "dropped trees after; see rate_drop), or a linear model ('gblinear', XGBoost's: "
              "margin = bias + X W, W fitted by elastic-net coordinate descent on the raw "
              "feature values; eta defaults to 0.5 and lambda to 0 for it; see updater).",
              kind="choice", choices=("gbtree", "dart", "gblinear")),
    ParamSpec("updater", "shotgun",
              "booster='gblinear': the coordinate-descent updater. XGBoost's 'shotgun' "
              "updates the features in parallel threads that race; dgbdt runs them one "
              "after another in the feature_selector's order, so 'shotgun' is deterministic "
              "and the same as 'coord_descent' (and as XGBoost's with nthread=1). With "
              "process_type='update': what is done to each tree of xgb_model, in order: "
              "'refresh' (the nodes' statistics, and the leaves with refresh_leaf, from "
              "dtrain's gradients), 'prune' (splits gaining less than min_split_loss, or "
              "deeper than max_depth, cut away) or both. Tree growth is not chosen by name "
              "in dgbdt (tree_method picks it).",
              kind="choice", choices=("shotgun", "coord_descent", "refresh", "prune",
                                      "refresh,prune", "prune,refresh"),
              rejected={
                  "gpu_coord_descent": '"gpu_coord_descent" was removed in XGBoost 2 (GPU '
                                       'training is chosen with device="cuda"); dgbdt trains '
                                       'gblinear on the CPU. Fix: updater="coord_descent".',
              }),
    ParamSpec("process_type", "default",
              "'default': train new trees. 'update' (XGBoost's): train no new tree but go "
              "through xgb_model's first num_boost_round rounds and apply the updater to "
              "each of their trees (dgbdt.tree.tree_updates), each round's at the gradients "
              "of the model updated so far; the result has those rounds only.",
              kind="choice", choices=("default", "update")),
    ParamSpec("refresh_leaf", True,
              "updater='refresh': also set each leaf's value to eta * w* of its rows' "
              "gradients (False: the nodes' statistics only).",
              kind="bool"),
    ParamSpec("feature_selector", "cyclic",
              "booster='gblinear': the order of the features a round: 'cyclic' (0..F-1), "
              "'shuffle' (a permutation a round, from seed), 'random' (F draws with "
              "replacement, from seed), 'greedy' (the largest step first, each step; "
              "coord_descent only), 'thrifty' (sorted by their step once a round; "
              "coord_descent only).",
              kind="choice", choices=("cyclic", "shuffle", "random", "greedy", "thrifty")),
    ParamSpec("top_k", 0,
              "booster='gblinear' with feature_selector 'greedy' or 'thrifty': the features "
              "updated a round for each output (0: all but one, XGBoost's bound).",
              kind="int", low=0),
    ParamSpec("tolerance", 0.0,
              "booster='gblinear': once a round changes no weight by more than this, the "
              "next rounds update nothing (0: never stop).",
              low=0.0),
    ParamSpec("rate_drop", 0.0,
              "booster='dart': the probability that each tree is dropped in a round.",
              low=0.0, high=1.0),
    ParamSpec("skip_drop", 0.0,
              "booster='dart': the probability that a round drops no tree (a gbtree round).",
              low=0.0, high=1.0),
    ParamSpec("one_drop", False,
              "booster='dart': drop at least one tree a round (unless the round skips).",
              kind="bool"),
    ParamSpec("sample_type", "uniform",
              "booster='dart': 'uniform' drops every tree with probability rate_drop; "
              "'weighted' in proportion to its weight.",
              kind="choice", choices=("uniform", "weighted")),
    ParamSpec("normalize_type", "tree",
              "booster='dart': the new trees' weight after a drop of k trees: 1 / (k + lr) "
              "('tree', the dropped trees times k / (k + lr)) or 1 / (1 + lr) ('forest', the "
              "dropped trees times the same), lr = learning_rate / the round's new trees.",
              kind="choice", choices=("tree", "forest")),
    ParamSpec("grow_policy", "depthwise",
              "Order in which nodes are expanded: level by level, or the leaf with the "
              "largest loss change first (lossguide).",
              kind="choice", choices=("depthwise", "lossguide")),
    ParamSpec("linear_tree", False,
              "Piecewise-linear trees (GBDT-PL): each leaf predicts a ridge regression on up to "
              "max_linear_features raw feature values of the features split on along its path; "
              "splits are chosen by the linear gain (docs/linear-trees.md). CPU training for "
              "now (in-process, or Dask CPU workers in the task, graph and collective modes).",
              kind="bool"),
    ParamSpec("max_linear_features", 5,
              "With linear_tree: most regressors of a leaf (a child inherits its parent's and "
              "adds the split feature while fewer).",
              kind="int", low=1, high=32),
    ParamSpec("linear_lambda", 1.0,
              "With linear_tree: L2 (ridge) regularization of the leaves' coefficients on "
              "features normalized to [-1, 1] (lambda still regularizes their constant); it "
              "tames leaves whose rows span a narrow range of a regressor.",
              low=0.0),
    ParamSpec("device", None,
              "Where training runs; None: where the data lives (the GPU for cupy/cuDF input, "
              "else the CPU).",
              kind="device",
              allowed="'cpu', 'cuda', 'cuda:N' (N >= 0); 'gpu'/'gpu:N' mean 'cuda'/'cuda:N'"),
    ParamSpec("device_memory_budget", None,
              "Memory for bit-packed pages where training runs (bytes, or a fraction of the "
              "memory free there). Beyond it pages spill on the CPU (memory-mapped files in "
              "DGBDT_SPILL_DIR, default the system temp dir) and stream on a GPU (pinned host "
              "memory, copied through as many device slots as the budget holds, once per "
              "tree level). The model is the same for every budget. None: automatic (CPU: "
              "unlimited; GPU: the free memory less the rows' training state and a 1 GiB "
              "reserve). A GPU keeps a feature-major copy of in-memory pages to route rows "
              "(docs/gpu.md) only when the pages fit a given budget twice.",
              kind="budget",
              allowed="an int >= 1 (bytes) or a float in (0, 1] (fraction of free memory)"),
    ParamSpec("nthread", None,
              "CPU threads per worker; None uses all cores.",
              aliases=("n_jobs",), kind="int", low=1, value_map={-1: None},
              allowed="an int >= 1, or None / -1 for all cores"),
    ParamSpec("subsample", 1.0,
              "Fraction of rows sampled for each round's trees (their gradients count, the "
              "others' do not); the draw depends on (seed, round, the row's index in the data), "
              "so the model is the same for any partitioning or worker count.",
              low=0.0, low_open=True, high=1.0),
    ParamSpec("sampling_method", "uniform",
              "How rows are sampled when subsample < 1: 'uniform' (each row with probability "
              "subsample), or 'gradient_based' (XGBoost's minimal-variance sampling: a row's "
              "probability grows with sqrt(g^2 + 0.1 h^2), sampled rows are reweighted by "
              "1/p, subsample sets the expected fraction; on the CPU too, and the same model "
              "for any partitioning, worker count and Dask mode; graph mode adds 3 task hops a class a "
              "round for its threshold).",
              kind="choice", choices=("uniform", "gradient_based")),
    ParamSpec("colsample_bytree", 1.0,
              "Fraction of features each tree may split on.",
              low=0.0, low_open=True, high=1.0),
    ParamSpec("colsample_bylevel", 1.0,
              "Fraction of the tree's features each level may split on.",
              low=0.0, low_open=True, high=1.0),
    ParamSpec("colsample_bynode", 1.0,
              "Fraction of the level's features each node may split on.",
              low=0.0, low_open=True, high=1.0),
    ParamSpec("feature_weights", None,
              "Per-feature weights of column sampling (colsample_by*): a feature is drawn "
              "with probability in proportion to its weight, without replacement "
              "(Efraimidis-Spirakis keys from the same counter-based draws); 0 never draws "
              "it. One non-negative number a feature, at least one positive; without "
              "column sampling they change nothing (as in XGBoost, where a DMatrix's "
              "feature_weights set them).",
              kind="weights", allowed="None or a list of non-negative numbers, one a "
              "feature, not all 0"),
    ParamSpec("seed", 0,
              "Seed of row and column sampling.",
              aliases=("random_state",), kind="int", low=0),
    ParamSpec("verbosity", 1,
              "Logging level: 0 silent, 1 warnings, 2 info, 3 debug.",
              kind="int", low=0, high=3),
    ParamSpec("validate_parameters", True,
              "Accepted for compatibility; dgbdt always validates parameters.",
              kind="bool"),
]

#: canonical name -> spec, in documentation order
SCHEMA: dict[str, ParamSpec] = {s.name: s for s in _SPECS}
#: alias -> canonical name
ALIASES: dict[str, str] = {a: s.name for s in _SPECS for a in s.aliases}
