"""XGBoost's JSON model format: export a dgbdt model that XGBoost (and what reads XGBoost
models: Triton FIL, treelite) loads and predicts alike, and import XGBoost's tree models.

The trees translate field for field: dgbdt keeps XGBoost's array layout (dgbdt.tree.model), and
a split sends ``x < split_condition`` left and a missing value to the default side in both. What
differs is around the trees:

* XGBoost stores the intercept as ``base_score`` in the objective's prediction space (a
  probability for the logistic objectives; margins for ``binary:logitraw`` and the multi-class
  ones), one float32 per output, written as ``"[v0,v1,...]"`` (XGBoost 3.1+); dgbdt keeps the
  margin in float64. The export writes the float32 nearest to the base score of dgbdt's margin,
  so XGBoost's margins differ from dgbdt's by that rounding (about 1e-7) plus XGBoost's float32
  sum over the trees.
* The root's parent is ``2147483647`` in XGBoost, ``-1`` in dgbdt.
* Categorical splits are XGBoost's fields in both (``split_type``, ``categories``...: the
  categories going right); the feature types are written too. Category values: when every
  categorical feature came from a pandas column of ASCII string categories (XGBoost 3.2
  mis-stores others: offsets in characters over UTF-8 bytes) or of integer categories
  (written as int64, XGBoost's type 15), the export writes XGBoost's category encoder
  (``cats``), so XGBoost re-codes frames by value as dgbdt does; otherwise (codes from arrays;
  float categories, which XGBoost refuses in frames; bool or mixed ones) it writes none and
  XGBoost reads the columns' codes: pass it codes.

Import reads gradient-boosted tree models (``gbtree``, ``dart`` with its trees' weights) with
num_parallel_tree trees per output per round and an objective dgbdt has, categorical splits
included (with the string or number categories of XGBoost's encoder, when it has them), and
linear models (``gblinear``: its ``weights``, dgbdt.model.gblinear; both ways), and
multi-target trees (``multi_strategy="multi_output_tree"``: ``size_leaf_vector`` T, each node's
T ``base_weights``, the leaves' values in ``leaf_weights``; dgbdt.tree.multi_target; both
ways); anything else (another objective, categorical vector-leaf trees) is refused by a ``ModelFormatError`` that says what
the model has and what dgbdt reads.
"""
from __future__ import annotations

import numpy as np

from ..objectives.multi_target import MULTI_TARGET
from ..objectives.registry import OBJECTIVES
from ..tree.model import MAX_FEATURES, ModelFormatError, Tree, finite_numbers

#: the XGBoost version written into exported models (the format of XGBoost 3.2)
XGBOOST_VERSION = [3, 2, 0]
_ROOT_PARENT = 2147483647


def is_xgboost_model(d) -> bool:
    """Whether a parsed JSON document looks like an XGBoost model (not a dgbdt one)."""
    return isinstance(d, dict) and "learner" in d and isinstance(d.get("version"), list) \
        and d.get("format") is None


#: the attribute dgbdt writes into XGBoost's model with its exact float64 intercept margins
EXACT_MARGIN = "dgbdt_base_margin"


def _exact_margin(attrs: dict, base: np.ndarray, objective, margin: np.ndarray):
    """The margins of ``EXACT_MARGIN`` when they are the file's base_score (each one's
    base_score, as float32, is the file's): a model dgbdt wrote and nobody changed since;
    otherwise the margins of the float32 base_score."""
    text = attrs.get(EXACT_MARGIN)
    if not isinstance(text, str):
        return margin
    try:
        exact = np.array([float(v) for v in text.split(",")], dtype=np.float64)
    except ValueError:
        return margin
    if exact.shape != margin.shape or not np.all(np.isfinite(exact)):
        return margin
    back = np.asarray(objective.margin_to_base_score(exact), dtype=np.float64).reshape(-1)
    if back.shape[0] != base.shape[0] or \
            not np.array_equal(back.astype(np.float32), np.asarray(base).astype(np.float32)):
        return margin
    return exact


def _num(x) -> str:
    """A float32 in its shortest round-trip form (XGBoost parses parameters as float32)."""
    return str(np.float32(x))


def _objective_config(obj, num_class: int) -> dict:
    """The learner's objective section as XGBoost writes it for each objective (its own
    parameters: dgbdt's defaults, since a model keeps only the objective's name)."""
    name, prm = obj.name, obj.params
    if name.startswith("multi:"):
        return {"name": name, "softmax_multiclass_param": {"num_class": str(num_class)}}
    if name == "count:poisson":
        return {"name": name, "poisson_regression_param":
                {"max_delta_step": _num(prm["max_delta_step"])}}
    if name == "reg:tweedie":
        return {"name": name, "tweedie_regression_param":
                {"tweedie_variance_power": _num(prm["tweedie_variance_power"])}}
    if name == "reg:pseudohubererror":
        return {"name": name, "pseudo_huber_param": {"huber_slope": _num(prm["huber_slope"])}}
    if name == "reg:quantileerror":
        return {"name": name, "quantile_loss_param":
                {"quantile_alpha": "[" + ",".join(_num(a) for a in obj.alphas) + "]"}}
    if name == "survival:aft":
        return {"name": name, "aft_loss_param": {
            "aft_loss_distribution": prm["aft_loss_distribution"],
            "aft_loss_distribution_scale": _num(prm["aft_loss_distribution_scale"])}}
    if name in ("reg:squaredlogerror", "binary:hinge", "reg:absoluteerror", "survival:cox"):
        return {"name": name}
    if name.startswith("rank:"):
        return {"name": name, "lambdarank_param": {
            "lambdarank_bias_norm": "1",
            "lambdarank_normalization": str(int(obj.normalization)),
            "lambdarank_num_pair_per_sample": str(obj.num_pair if obj.k_given else 4294967295),
            "lambdarank_pair_method": obj.pair_method,
            "lambdarank_score_normalization": str(int(obj.score_normalization)),
            "lambdarank_unbiased": "0", "ndcg_exp_gain": str(int(obj.exp_gain))}}
    return {"name": name, "reg_loss_param":
            {"scale_pos_weight": _num(prm.get("scale_pos_weight", 1.0))}}


def _num_target(value, n_trees: int) -> int:
    """learner_model_param.num_target checked: a whole number in [1, max(trees, 1)] (a model
    of T targets has T trees a round; a larger number is a corrupt file, not an array of that
    many intercepts to allocate)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)) \
            or not str(value).strip().isdigit():
        raise ModelFormatError("XGBoost model: learner_model_param.num_target must be a "
                               f"positive integer (XGBoost writes a string); got {value!r}")
    t = int(value)
    if not 1 <= t <= max(n_trees, 1):
        raise ModelFormatError(f"XGBoost model: learner_model_param.num_target {t} is "
                               f"outside [1, {max(n_trees, 1)}] (a model of T targets has T "
                               f"trees a round; this one has {n_trees} trees)")
    return t


def _quantile_params(ln: dict, obj: str, num_target: int) -> dict | None:
    """A multi-target XGBoost model dgbdt reads: reg:quantileerror with one target per
    quantile (its quantile_alpha list), or a label of several targets with an objective of
    dgbdt.objectives.multi_target (one tree per target a round); the objective_params of its
    Booster."""
    if num_target == 1:
        return None
    if obj in MULTI_TARGET:
        return {"num_target": num_target}
    text = ""
    if obj == "reg:quantileerror":
        text = str(ln["objective"].get("quantile_loss_param", {}).get("quantile_alpha", ""))
    try:
        alphas = [float(a) for a in text.strip("[]").split(",")]
    except ValueError:
        alphas = []
    if len(alphas) != num_target:
        raise ModelFormatError(f"XGBoost model: a multi-target model of {obj}; dgbdt reads "
                               "reg:quantileerror's one target per quantile, and labels of "
                               "several targets with " + ", ".join(sorted(MULTI_TARGET)))
    return {"quantile_alpha": alphas}


def to_xgboost(booster) -> dict:
    """The model as XGBoost's JSON document (a dict; json.dumps writes the file)."""
    if booster.linear is not None:
        return _linear_document(booster)
    if any(t.linear for t in booster.trees):
        raise ValueError("a model with linear trees (linear_tree=True) cannot be written in "
                         "XGBoost's format: XGBoost's trees have constant leaves. Save it in "
                         "dgbdt's format (the default of save_model).")
    obj = booster.objective
    P = booster.num_parallel_tree
    num_class = booster.num_class if obj.name.startswith("multi:") else 0
    base = obj.margin_to_base_score(booster.base_margin)
    objective = _objective_config(obj, num_class)
    trees = []
    for i, t in enumerate(booster.trees):
        if t.vector is not None:
            trees.append(_vector_tree_json(t, i, booster.n_features))
            continue
        n = t.n_nodes
        parents = t.parent.astype(np.int64)
        parents[parents < 0] = _ROOT_PARENT
        cat = {"categories": [], "categories_nodes": [], "categories_segments": [],
               "categories_sizes": [], "split_type": [0] * n}
        if t.categories:
            d = t.to_dict()
            cat = {k: d[k] for k in cat}
        trees.append({
            "base_weights": t.base_weight.astype(np.float64).tolist(),
            **cat,
            "default_left": [int(v) for v in t.default_left],
            "id": i,
            "left_children": t.left.astype(np.int64).tolist(),
            "loss_changes": t.loss_change.astype(np.float64).tolist(),
            "parents": parents.tolist(),
            "right_children": t.right.astype(np.int64).tolist(),
            "split_conditions": t.threshold.astype(np.float64).tolist(),
            "split_indices": t.feature.astype(np.int64).tolist(),
            "sum_hessian": t.sum_hessian.astype(np.float64).tolist(),
            "tree_param": {"num_deleted": "0", "num_feature": str(booster.n_features),
                           "num_nodes": str(n), "size_leaf_vector": "1"},
        })
    rounds = booster.num_boosted_rounds()
    attributes = booster.attributes()
    # XGBoost keeps the intercept as a float32 base_score: the exact margins ride along as
    # an attribute (XGBoost keeps attributes as they are), read back when still consistent
    attributes[EXACT_MARGIN] = ",".join(repr(float(m)) for m in booster.base_margin)
    _best_attributes(booster, attributes)
    gbtree = {
        "model": {
            "cats": _encoder(booster),
            "gbtree_model_param": {"num_parallel_tree": str(P), "num_trees": str(len(trees))},
            "iteration_indptr": [r * booster.trees_per_round for r in range(rounds + 1)],
            "tree_info": [int(k) for k in booster.tree_class],
            "trees": trees,
        },
        "name": "gbtree",
    }
    if booster.tree_weights is not None:     # dart: the gbtree model and the trees' weights
        gbtree = {"gbtree": gbtree, "name": "dart",
                  "weight_drop": [float(w) for w in booster.tree_weights]}
    return _document(booster, attributes, gbtree, objective, base, num_class)


def _best_attributes(booster, attributes: dict) -> None:
    """Early stopping's best round and score, as XGBoost keeps them (attributes)."""
    best_iteration, best_score = booster.best()
    if best_iteration is not None:
        attributes["best_iteration"] = str(best_iteration)
    if best_score is not None:
        attributes["best_score"] = repr(float(best_score))


def _linear_document(booster) -> dict:
    """A gblinear model as XGBoost's document: ``{"name": "gblinear", "model": {"weights":
    [(F + 1) K floats, feature-major, the biases last], "boosted_rounds": r}}``. The
    intercept is written for every output as the model's first (XGBoost's gblinear adds
    base_score[0] to each); its float64 margin rides along as for trees."""
    obj = booster.objective
    num_class = booster.num_class if obj.name.startswith("multi:") else 0
    base = obj.margin_to_base_score(booster.base_margin)
    attributes = booster.attributes()
    attributes[EXACT_MARGIN] = ",".join(repr(float(m)) for m in booster.base_margin)
    _best_attributes(booster, attributes)
    gb = {"model": {"boosted_rounds": booster.linear.rounds,
                    "weights": [float(v) for v in booster.linear.weights.reshape(-1)]},
          "name": "gblinear"}
    return _document(booster, attributes, gb, _objective_config(obj, num_class), base,
                     num_class)


def _document(booster, attributes, gradient_booster, objective, base, num_class) -> dict:
    """XGBoost's document around a gradient booster's part."""
    K = booster.n_outputs
    return {
        "learner": {
            "attributes": attributes,
            "feature_names": list(booster.feature_names or []),
            # none: [], as XGBoost writes a model of data without types
            "feature_types": list(booster.feature_types or []),
            "gradient_booster": gradient_booster,
            "learner_model_param": {
                "base_score": "[" + ",".join(_num(v) for v in base) + "]",
                "boost_from_average": "1", "num_class": str(num_class),
                "num_feature": str(booster.n_features),
                "num_target": str(K if booster.objective_params else 1)},
            "objective": objective,
        },
        "version": list(XGBOOST_VERSION),
    }


#: XGBoost's category value types (src/data/cat_container.cc CatIndexType: 7, 8 floats)
_I64, _NUMBER_TYPES = 15, range(7, 17)


def _kind(values) -> str | None:
    """How XGBoost's encoder can hold a feature's categories: "str" (ASCII), "int", or None
    (floats: XGBoost refuses them in frames; bool, mixed, non-ASCII)."""
    if all(isinstance(v, str) and v.isascii() for v in values):
        return "str"
    if any(isinstance(v, bool) for v in values):
        return None
    if all(isinstance(v, int) for v in values):
        return "int"
    return None


def _encoder(booster) -> dict:
    """XGBoost's category encoder (``cats``) of a model whose categorical features all have
    categories it can hold (_kind): per feature the ASCII bytes of string values and their
    offsets, or typed number values (an empty string entry for numerical features);
    ``feature_segments`` the running count of values, ``sorted_idx`` each feature's values in
    sorted order. An empty encoder otherwise (see the module doc)."""
    empty = {"enc": [], "feature_segments": [], "sorted_idx": []}
    cats, types = booster.categories, booster.feature_types
    if not cats or not types:
        return empty
    is_cat = [t == "c" for t in types]
    kinds = [_kind(c) if k and c is not None else None for c, k in zip(cats, is_cat)]
    if any(k and kind is None for k, kind in zip(is_cat, kinds)):
        return empty
    enc, segments, sorted_idx = [], [0], []
    for c, k, kind in zip(cats, is_cat, kinds):
        values = c if k else []
        if kind == "int":
            enc.append({"type": _I64, "values": [int(v) for v in values]})
            keys = values
        else:
            raw = [v.encode("ascii") for v in values]
            enc.append({"offsets": np.concatenate([[0], np.cumsum([len(b) for b in raw])])
                        .astype(np.int64).tolist() if raw else [],
                        "values": [x for b in raw for x in b]})
            keys = raw
        segments.append(segments[-1] + len(values))
        sorted_idx += sorted(range(len(values)), key=lambda i: keys[i])
    return {"enc": enc, "feature_segments": segments, "sorted_idx": sorted_idx}


def _decoded_categories(model: dict, n_features: int):
    """The categories of each feature from XGBoost's encoder (strings or numbers; None for
    features without), or None without an encoder."""
    enc = (model.get("cats") or {}).get("enc") or []
    if not enc:
        return None
    if len(enc) != n_features:
        raise ModelFormatError(f"XGBoost model: the category encoder has {len(enc)} entries "
                               f"for {n_features} features")
    out = []
    for e in enc:
        if "type" in e:
            if int(e["type"]) not in _NUMBER_TYPES:
                raise ModelFormatError(f"XGBoost model: category type {e['type']!r} in its "
                                       "encoder; dgbdt reads strings and numbers")
            cast = float if int(e["type"]) in (7, 8) else int
            out.append([cast(v) for v in e.get("values") or []] or None)
            continue
        offsets, values = e.get("offsets") or [], bytes(int(v) % 256 for v in e.get("values")
                                                        or [])
        try:
            out.append([values[a:b].decode("ascii") for a, b in zip(offsets[:-1], offsets[1:])]
                       if offsets else None)
        except UnicodeDecodeError:
            raise ModelFormatError("XGBoost model: non-ASCII categories in its encoder (XGBoost "
                                   "3.2 stores their offsets in characters, not bytes); dgbdt "
                                   "reads ASCII string categories") from None
    return out


def _param(d: dict, key: str, where: str):
    if not isinstance(d, dict) or key not in d:
        raise ModelFormatError(f"XGBoost model: {where} has no '{key}'")
    return d[key]


def _parse_base_score(text: str, n: int) -> np.ndarray:
    s = str(text).strip()
    values = s[1:-1].split(",") if s.startswith("[") else [s]
    try:
        out = np.array([float(v) for v in values if v.strip()], dtype=np.float64)
    except ValueError:
        raise ModelFormatError(f"XGBoost model: base_score {text!r} is not a number list") \
            from None
    if out.size == 1 and n > 1:
        out = np.full(n, out[0])
    if out.size != n or not np.all(np.isfinite(out)):
        raise ModelFormatError(f"XGBoost model: base_score {text!r} does not hold {n} finite "
                               "numbers")
    return out


def _vector_tree_json(t: Tree, i: int, n_features: int) -> dict:
    """A vector-leaf tree (dgbdt.tree.multi_target) in XGBoost 3.2's layout of a
    multi-target tree: ``base_weights`` every node's T weights, ``leaf_weights`` the leaves'
    (in node order), a leaf's right child the index of its values there."""
    n, T = t.vector.shape
    leaf = t.left == -1
    right = t.right.astype(np.int64)
    right[leaf] = np.arange(int(leaf.sum()))
    parents = t.parent.astype(np.int64)
    parents[parents < 0] = _ROOT_PARENT
    return {
        "base_weights": t.vector.astype(np.float64).ravel().tolist(),
        "categories": [], "categories_nodes": [], "categories_segments": [],
        "categories_sizes": [],
        "default_left": [int(v) for v in t.default_left],
        "id": i,
        "leaf_weights": t.vector[leaf].astype(np.float64).ravel().tolist(),
        "left_children": t.left.astype(np.int64).tolist(),
        "loss_changes": t.loss_change.astype(np.float64).tolist(),
        "parents": parents.tolist(),
        "right_children": right.tolist(),
        "split_conditions": t.threshold.astype(np.float64).tolist(),
        "split_indices": t.feature.astype(np.int64).tolist(),
        "split_type": [0] * n,
        "sum_hessian": t.sum_hessian.astype(np.float64).tolist(),
        "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                       "num_nodes": str(n), "size_leaf_vector": str(T)},
    }


def _vector_tree(t: dict, T: int, n_features: int, where: str) -> Tree:
    """A vector-leaf tree of XGBoost's JSON (see _vector_tree_json; a file without
    ``leaf_weights`` keeps the leaves' values in ``base_weights``), validated."""
    if not isinstance(t, dict):
        raise ModelFormatError(f"{where}: expected an object")
    d = {k: t[k] for k in ("left_children", "right_children", "split_indices",
                           "default_left", "loss_changes", "sum_hessian") if k in t}
    left = _param(t, "left_children", where)
    n = len(left) if isinstance(left, list) else 0
    base = finite_numbers(_param(t, "base_weights", where), n * T, where,
                          f"base_weights ({T} a node)").reshape(n, T)
    leaf = np.array([c == -1 for c in left], dtype=bool)
    right = finite_numbers(_param(t, "right_children", where), n, where, "right_children",
                           integer=True).astype(np.int64)
    if "leaf_weights" in t:
        n_leaves = int(leaf.sum())
        values = finite_numbers(t["leaf_weights"], n_leaves * T, where,
                                f"leaf_weights ({T} a leaf)").reshape(n_leaves, T)
        if np.any(right[leaf] < 0) or np.any(right[leaf] >= n_leaves):
            raise ModelFormatError(f"{where}: a leaf's right_children is not an index into "
                                   "its leaf_weights")
        base[leaf] = values[right[leaf]]
    right[leaf] = -1
    d["right_children"] = right.tolist()
    d["parents"] = [(-1 if int(p) == _ROOT_PARENT else int(p))
                    for p in _param(t, "parents", where)]
    d["base_weights"] = [0.0] * n
    conds = finite_numbers(_param(t, "split_conditions", where), n, where, "split_conditions")
    d["split_conditions"] = np.where(leaf, 0.0, conds).tolist()
    if any(int(v) for v in t.get("split_type", []) or []) or t.get("categories_nodes"):
        raise ModelFormatError(f"{where}: a vector-leaf tree with categorical splits; dgbdt "
                               "reads numerical ones")
    tree = Tree.from_dict(d, n_features, where)
    tree.vector = base.astype(np.float32)
    return tree


def from_xgboost(d: dict, booster_class):
    """A dgbdt Booster (of ``booster_class``, dgbdt.model.booster.Booster) of an XGBoost JSON model
    (see the module docstring for what it reads)."""
    from ..objectives.registry import get_objective

    ln = _param(d, "learner", "the document")
    gb = _param(ln, "gradient_booster", "learner")
    name = gb.get("name") if isinstance(gb, dict) else None
    if name not in ("gbtree", "dart", "gblinear"):
        raise ModelFormatError(f"XGBoost model: booster {name!r}; dgbdt reads 'gbtree', "
                               "'dart' and 'gblinear'")
    weights = None
    if name == "dart":      # the trees' model under "gbtree", their weights beside it
        weights = _param(gb, "weight_drop", "gradient_booster")
        gb = _param(gb, "gbtree", "gradient_booster")
    model = _param(gb, "model", "gradient_booster")
    mp = _param(ln, "learner_model_param", "learner")
    obj = _param(_param(ln, "objective", "learner"), "name", "objective")
    if obj not in OBJECTIVES:
        raise ModelFormatError(f"XGBoost model: objective {obj!r}; dgbdt has "
                               f"{', '.join(OBJECTIVES)}")
    num_class = int(mp.get("num_class", "0") or 0)
    linear = name == "gblinear"      # a linear model: weights, no trees
    oparams = _quantile_params(ln, obj, _num_target(
        mp.get("num_target", "1"), len(model.get("weights") or []) if linear
        else len(model.get("trees") or [])))
    param = {} if linear else _param(model, "gbtree_model_param", "model")
    P = param.get("num_parallel_tree", "1")
    if isinstance(P, bool) or not isinstance(P, (str, int)) or not str(P).isdigit() \
            or int(P) < 1:
        raise ModelFormatError("XGBoost model: gbtree_model_param.num_parallel_tree must be "
                               f"a positive integer; got {P!r}")
    P = int(P)
    n_features = _param(mp, "num_feature", "learner_model_param")
    if isinstance(n_features, bool) or not isinstance(n_features, (str, int)):
        raise ModelFormatError("XGBoost model: learner_model_param.num_feature must be an "
                               f"integer (XGBoost writes a string); got {n_features!r}")
    n_features = int(n_features)
    if not 1 <= n_features <= MAX_FEATURES:
        raise ModelFormatError(f"XGBoost model: learner_model_param.num_feature must be in [1, "
                               f"{MAX_FEATURES}] (the feature ids the kernels read); got "
                               f"{n_features}")
    objective = get_objective(obj, oparams)
    num_class = num_class if obj.startswith("multi:") else None
    if obj.startswith("multi:") and not num_class:
        raise ModelFormatError(f"XGBoost model: objective {obj} without num_class")
    K = objective.n_outputs(num_class)
    base = _parse_base_score(_param(mp, "base_score", "learner_model_param"), K)
    margin = np.concatenate([objective.base_score_to_margin(b, num_class)[:1] for b in base])
    margin = _exact_margin(ln.get("attributes") or {}, base, objective, margin)
    if linear:      # XGBoost's gblinear adds base_score[0] to every output
        margin = np.full(K, margin[0])
    names = ln.get("feature_names") or None
    types = ln.get("feature_types") or []
    if any(t not in ("float", "q", "int", "i", "c") for t in types) or (
            types and len(types) != n_features):
        raise ModelFormatError(f"XGBoost model: feature_types {types!r}; dgbdt reads "
                               f"{n_features} of 'c', 'q', 'float', 'int', 'i'")
    booster = booster_class(obj, num_class, margin, n_features,
                            [str(n) for n in names] if names else None, oparams)
    if types:                # XGBoost's types: its Booster.feature_types after loading
        booster.feature_types = [str(t) for t in types]
    if "c" in types:
        booster.categories = _decoded_categories(model, n_features)
    if linear:
        from .gblinear import LinearWeights
        booster.linear = LinearWeights.from_dict(model, n_features, K, "XGBoost gblinear model")
    trees = [] if linear else _param(model, "trees", "model")
    info = [] if linear else _param(model, "tree_info", "model")
    sizes = {str(t.get("tree_param", {}).get("size_leaf_vector", "1")) if isinstance(t, dict)
             else "1" for t in trees}
    KT = K          # trees a round for each parallel tree: one an output
    if sizes - {"0", "1"}:      # vector-leaf trees (multi_strategy="multi_output_tree")
        if sizes != {str(K)} or K < 2:
            raise ModelFormatError(f"XGBoost model: trees of size_leaf_vector {sorted(sizes)}"
                                   f"; a multi_output_tree model of {K} targets has {K} "
                                   "values a leaf in every tree")
        booster.multi_strategy = "multi_output_tree"
        KT = 1      # one tree a round (of class 0) for every output
    if len(info) != len(trees) or len(trees) % (KT * P):
        raise ModelFormatError(f"XGBoost model: {len(trees)} trees and {len(info)} tree_info "
                               f"entries for {KT} trees a round x {P} parallel trees")
    indptr = model.get("iteration_indptr")
    if indptr is not None and list(indptr) != list(range(0, len(trees) + 1, KT * P)):
        raise ModelFormatError(f"XGBoost model: iteration_indptr is not {KT * P} trees a "
                               "round (dgbdt reads models whose every round has "
                               "num_parallel_tree trees for each output)")
    booster.num_parallel_tree = P
    for i, (t, k) in enumerate(zip(trees, info)):
        if int(k) != (i // P) % KT:
            raise ModelFormatError(f"XGBoost model: tree {i} is of class {k}, expected "
                                   f"{(i // P) % KT} ({P} trees per class per round)")
        booster.trees.append(_vector_tree(t, K, n_features, f"XGBoost tree {i}")
                             if booster.vector_leaf else _tree(t, n_features,
                                                               f"XGBoost tree {i}"))
        booster.tree_class.append(int(k))
    if weights is not None:
        booster.tree_weights = finite_numbers(weights, len(trees), "XGBoost model",
                                              "a dart model's weight_drop (one a tree)").tolist()
    attrs = ln.get("attributes") or {}
    booster.set_attr(**{str(k): str(v) for k, v in attrs.items()
                        if k not in ("best_iteration", "best_score", EXACT_MARGIN)})
    if "best_iteration" in attrs:
        bi = int(attrs["best_iteration"])
        if not 0 <= bi < booster.num_boosted_rounds():
            # such a model would load, then save a file dgbdt refuses and predict nothing
            raise ModelFormatError(f"XGBoost model: attributes best_iteration {bi} is outside "
                                   f"the model's {booster.num_boosted_rounds()} rounds")
        booster.best_iteration = bi
    if "best_score" in attrs:
        booster.best_score = float(attrs["best_score"])
    return booster


def _tree(t: dict, n_features: int, where: str) -> Tree:
    if not isinstance(t, dict):
        raise ModelFormatError(f"{where}: expected an object")
    tp = t.get("tree_param", {})
    if int(tp.get("num_deleted", "0")) or int(tp.get("size_leaf_vector", "1")) > 1:
        raise ModelFormatError(f"{where}: deleted nodes or vector leaves; dgbdt reads plain "
                               "trees")
    parents = [(-1 if int(p) == _ROOT_PARENT else int(p)) for p in _param(t, "parents", where)]
    d = {k: t[k] for k in ("left_children", "right_children", "split_indices",
                           "split_conditions", "default_left", "base_weights",
                           "loss_changes", "sum_hessian", "split_type", "categories",
                           "categories_nodes", "categories_segments", "categories_sizes")
         if k in t}
    d["parents"] = parents
    return Tree.from_dict(d, n_features, where)
