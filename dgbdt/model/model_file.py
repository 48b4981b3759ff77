"""dgbdt's model file: the JSON document of a Booster, written and read (validated).

A model file is JSON (never pickle)::

    {"format": "dgbdt-model", "version": 2,
     "learner": {"objective", "num_class", "base_margin": [K floats], "num_features",
                 "feature_names", "best_iteration", "best_score",
                 "attributes": {str: str} (optional: absent before 0.7),
                 "feature_types": [XGBoost type per feature] (optional: categorical models,
                                   and models of data with XGBoost's type names),
                 "categories": [list of category values, or null, per feature] (optional),
                 "position_bias": {"ti+": [P floats], "tj-": [P floats], "rounds": int}
                                  (optional, any version: lambdarank_unbiased's estimates),
                 "objective_params": {"quantile_alpha": [K floats]} or
                                     {"num_target": K} (version 4)},
     "trees": [tree, ...], "tree_class": [k of each tree]}

Version 2 added categorical splits (dgbdt.tree.model) and the two optional learner fields;
version 1 files (numerical splits only) load as before. Version 3 added linear leaves
(``linear_tree``; a tree's ``linear_leaves``, dgbdt.tree.model): a model with linear trees is
written as version 3, any other still as version 2 (the same bytes as before, readable by
older dgbdt), and a file of version 1 or 2 may not hold linear leaves. Version 4 added
``objective_params``, the objective's parameters that the model needs to predict:
reg:quantileerror's list of several quantiles (one output each), or ``num_target``, the
targets of a multi-target label (one output each; dgbdt.objectives.multi_target); only such
models are written as version 4 (an older dgbdt refuses them rather than read one output).
Version 6 added dart models (learner ``booster``: "dart" and ``tree_weights``, one a tree:
a tree adds its leaf values times its weight); only those are written as version 6.
Version 5 added ``num_parallel_tree`` (learner; boosted random forests: P trees a round for
each output, tree i of class (i // P) % K); only such models are written as version 5.
Version 8 added ``multi_strategy`` (learner: "multi_output_tree"): P vector-leaf trees a round
for all K outputs, every tree of class 0, each holding ``size_leaf_vector`` K and
``leaf_vector`` (K weights a node; dgbdt.tree.multi_target); only such models are written as
version 8.
Version 7 added linear models (``booster="gblinear"``, dgbdt.engine.gblinear): learner ``booster``:
"gblinear" and ``linear``: {"weights": [(F + 1) K float32 numbers, feature-major, the biases
last], "boosted_rounds": int}, with no trees; only those are written as version 7.

A categorical model predicts from category codes (arrays, with the model's feature types) or
pandas category columns, whose values are re-coded to the training's codes by value (the
model's ``categories``; a value the training did not have is an error, as in XGBoost 3).

with trees in XGBoost's array layout (dgbdt.tree.model). Loading validates every field and the
tree structure, so a truncated or edited file fails with a ModelFormatError naming the problem.
The margin of row x for output k is base_margin[k] + sum of the leaf values of the trees of class
k (round r holds trees r*K*P .. (r+1)*K*P-1, P = num_parallel_tree).
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..objectives.multi_target import MULTI_TARGET
from ..objectives.registry import OBJECTIVES, get_objective
from ..tree.model import MAX_FEATURES, ModelFormatError, Tree, finite_numbers

FORMAT = "dgbdt-model"
VERSION = 2
LINEAR_VERSION = 3  # the version of models with linear leaves (others are written as VERSION)
QUANTILES_VERSION = 4  # models whose objective has parameters (objective_params)
FOREST_VERSION = 5     # models with several trees a round for each output (num_parallel_tree)
DART_VERSION = 6       # booster="dart" models: a weight a tree
GBLINEAR_VERSION = 7   # booster="gblinear" models: weights, no trees (dgbdt.model.gblinear)
VECTOR_LEAF_VERSION = 8   # multi_strategy="multi_output_tree" models: vector-leaf trees
READS = (1, 2, 3, 4, 5, 6, 7, 8)   # model format versions load_model reads


def document(b) -> dict:
    """Booster ``b`` as dgbdt's JSON document: the lowest version that holds it, so a model
    without the newer features keeps the bytes an older dgbdt wrote (and reads)."""
    linear = any(t.linear for t in b.trees)
    version = VECTOR_LEAF_VERSION if b.vector_leaf else \
        GBLINEAR_VERSION if b.linear is not None else \
        DART_VERSION if b.tree_weights is not None else \
        FOREST_VERSION if b.num_parallel_tree > 1 else \
        QUANTILES_VERSION if b.objective_params else \
        LINEAR_VERSION if linear else VERSION
    return {
        "format": FORMAT, "version": version,
        "learner": {
            "objective": b.objective.name, "num_class": b.num_class,
            "base_margin": b.base_margin.tolist(), "num_features": b.n_features,
            "feature_names": b.feature_names, "best_iteration": b.best()[0],
            "best_score": b.best()[1], "attributes": dict(b._attributes),
            **({"feature_types": list(b.feature_types), "categories": b.categories}
               if b.feature_types is not None else {}),
            **({"objective_params": dict(b.objective_params)}
               if b.objective_params else {}),
            **({"num_parallel_tree": b.num_parallel_tree}
               if b.num_parallel_tree > 1 else {}),
            **({"multi_strategy": b.multi_strategy} if b.vector_leaf else {}),
            **({"booster": "dart", "tree_weights": [float(w) for w in b.tree_weights]}
               if b.tree_weights is not None else {}),
            **({"booster": "gblinear", "linear": b.linear.to_dict()}
               if b.linear is not None else {}),
            **({"position_bias": _bias_document(b.position_bias)}
               if getattr(b, "position_bias", None) else {})},
        "trees": [t.to_dict() for t in b.trees],
        "tree_class": list(b.tree_class),
    }


def load(source: str | os.PathLike | bytes | dict, make):
    """Load a model: a path, a JSON string/bytes, or a parsed dict, in dgbdt's format
    (Booster.save_model) or XGBoost's format, JSON or its binary UBJSON (a model saved by
    XGBoost with ``save_model("model.json")`` or ``"model.ubj"``; dgbdt.model.ubjson; see
    dgbdt.model.xgboost_format for what is read)."""
    if isinstance(source, dict):
        return _from_document(source, make)
    if isinstance(source, (bytes, bytearray)):
        raw, where = bytes(source), "model bytes"
    elif isinstance(source, str) and source.lstrip().startswith("{"):
        raw, where = source.encode("utf-8"), "model string"
    else:
        with open(source, "rb") as f:
            raw, where = f.read(), str(source)
    if raw[:1] == b"{" and raw[1:2] in (b"L", b"i", b"U", b"l", b"I", b"$", b"#", b"}"):
        from .ubjson import UBJSONError, loads     # XGBoost's binary form (model.ubj)
        try:
            d = loads(raw)
        except (UBJSONError, UnicodeDecodeError, RecursionError) as e:
            raise ModelFormatError(f"{where} is not a valid UBJSON model ({e})") from None
        return _from_document(d, make)
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelFormatError(f"{where} is not valid JSON ({e}); the file may be truncated "
                               "or not a dgbdt model") from None
    except RecursionError:
        raise ModelFormatError(f"{where} nests its JSON too deeply to be a model") from None
    return _from_document(d, make)


def _from_document(d, make):
    """A Booster from a parsed document: every malformed file ends in ModelFormatError (the
    checks name the field; a value that fails its conversion is named by what failed)."""
    from .xgboost_format import from_xgboost, is_xgboost_model
    xgb = is_xgboost_model(d)
    try:
        return from_xgboost(d, make) if xgb else from_dict(d, make)
    except ModelFormatError:
        raise
    except (ValueError, TypeError, OverflowError, KeyError, IndexError, AttributeError,
            RecursionError) as e:
        raise ModelFormatError(f"{'XGBoost' if xgb else 'dgbdt'} model: a malformed field "
                               f"({type(e).__name__}: {e})") from None


def _require(d: dict, key: str, types, where: str):
    if key not in d:
        raise ModelFormatError(f"{where}: missing field '{key}'")
    v = d[key]
    if not isinstance(v, types) or isinstance(v, bool):
        raise ModelFormatError(f"{where}: field '{key}' has the wrong type "
                               f"({type(v).__name__})")
    return v


def from_dict(d, make):
    """A Booster (``make``: the class) from dgbdt's JSON document, every field validated."""
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ModelFormatError(f"not a dgbdt model: expected \"format\": \"{FORMAT}\" at the top")
    version = d.get("version")
    if version not in READS:
        raise ModelFormatError(f"unsupported dgbdt model version {version!r}; this dgbdt "
                               f"reads versions {', '.join(map(str, READS))}")
    ln = _require(d, "learner", dict, "model")
    obj = _require(ln, "objective", str, "learner")
    if obj not in OBJECTIVES:
        raise ModelFormatError(f"learner: unknown objective {obj!r}")
    num_class = ln.get("num_class")
    if num_class is not None and (not isinstance(num_class, int) or num_class < 2):
        raise ModelFormatError("learner: num_class must be null or an integer >= 2")
    n_features = _require(ln, "num_features", int, "learner")
    if not 1 <= n_features <= MAX_FEATURES:
        raise ModelFormatError(f"learner: num_features must be in [1, {MAX_FEATURES}] (the "
                               f"feature ids the kernels read); got {n_features}")
    names = ln.get("feature_names")
    if names is not None and (not isinstance(names, list) or len(names) != n_features
                              or not all(isinstance(x, str) for x in names)):
        raise ModelFormatError(f"learner: feature_names must be null or {n_features} strings")
    bm = _require(ln, "base_margin", list, "learner")
    oparams = ln.get("objective_params") if version >= QUANTILES_VERSION else None
    if oparams is not None:
        if not isinstance(oparams, dict) or set(oparams) - {"quantile_alpha", "num_target"}:
            raise ModelFormatError("learner: objective_params must be an object with "
                                   "quantile_alpha or num_target only")
        nt = oparams.get("num_target", 2)
        if not isinstance(nt, int) or isinstance(nt, bool) or nt < 2:
            raise ModelFormatError("learner: objective_params num_target must be an integer "
                                   ">= 2")
        if "num_target" in oparams and obj not in MULTI_TARGET:
            raise ModelFormatError(f"learner: objective {obj} has no multi-target form")
        qa = oparams.get("quantile_alpha", [0.5])
        if not (isinstance(qa, list) and qa and all(
                isinstance(a, (int, float)) and not isinstance(a, bool) and 0 < a < 1
                for a in qa)):
            raise ModelFormatError("learner: objective_params quantile_alpha must be a list "
                                   "of numbers in (0, 1)")
    n_outputs = get_objective(obj).n_outputs(num_class) if obj.startswith("multi:") and \
        num_class else get_objective(obj, oparams).n_outputs(None) if oparams else 1
    if obj.startswith("multi:") and num_class is None:
        raise ModelFormatError(f"learner: objective {obj} needs num_class")
    if len(bm) != n_outputs or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                       and np.isfinite(v) for v in bm):
        raise ModelFormatError(f"learner: base_margin must be {n_outputs} finite numbers")
    b = make(obj, num_class, np.asarray(bm, dtype=np.float64), n_features, names, oparams)
    trees = _require(d, "trees", list, "model")
    tree_class = _require(d, "tree_class", list, "model")
    if len(tree_class) != len(trees):
        raise ModelFormatError(f"model: {len(trees)} trees but {len(tree_class)} tree_class "
                               "entries")
    P = ln.get("num_parallel_tree", 1) if version >= FOREST_VERSION else 1
    if not isinstance(P, int) or isinstance(P, bool) or P < 1:
        raise ModelFormatError("learner: num_parallel_tree must be an integer >= 1")
    b.num_parallel_tree = P
    ms = ln.get("multi_strategy", "one_output_per_tree") if version >= VECTOR_LEAF_VERSION \
        else "one_output_per_tree"
    if ms not in ("one_output_per_tree", "multi_output_tree") or (
            ms == "multi_output_tree" and b.n_outputs < 2):
        raise ModelFormatError(f"learner: multi_strategy must be 'one_output_per_tree' or "
                               f"(a model of several outputs) 'multi_output_tree'; got {ms!r}")
    b.multi_strategy = ms
    if len(trees) % b.trees_per_round:
        raise ModelFormatError(f"model: {len(trees)} trees is not a multiple of the "
                               f"{b.n_outputs} outputs x {P} parallel trees")
    for i, (t, k) in enumerate(zip(trees, tree_class)):
        want = 0 if b.vector_leaf else (i // P) % b.n_outputs
        if k != want:
            raise ModelFormatError(f"model: tree {i} has class {k!r}, expected {want}")
        b.trees.append(Tree.from_dict(t, n_features, f"tree {i}"))
        size = None if b.trees[-1].vector is None else b.trees[-1].vector.shape[1]
        if size != (b.n_outputs if b.vector_leaf else None):
            raise ModelFormatError(
                f"tree {i}: " + (f"a multi_output_tree model's trees have {b.n_outputs} leaf "
                                 f"values a node (size_leaf_vector); got {size}"
                                 if b.vector_leaf else "a vector-leaf tree in a model "
                                 "without multi_strategy='multi_output_tree'"))
        if b.trees[-1].linear and version < LINEAR_VERSION:
            raise ModelFormatError(f"tree {i}: linear_leaves need model format version "
                                   f"{LINEAR_VERSION}; the file says {version}")
    b.tree_class = [int(k) for k in tree_class]
    if version >= GBLINEAR_VERSION and ln.get("booster") == "gblinear":
        from .gblinear import LinearWeights
        if trees:
            raise ModelFormatError("model: a gblinear model has no trees")
        b.linear = LinearWeights.from_dict(ln.get("linear"), n_features, b.n_outputs,
                                           "learner linear")
    elif version >= DART_VERSION and ln.get("booster", "gbtree") != "gbtree":
        if ln["booster"] != "dart":
            raise ModelFormatError(f"learner: booster must be 'gbtree' or 'dart'; got "
                                   f"{ln['booster']!r}")
        b.tree_weights = finite_numbers(ln.get("tree_weights"), len(trees), "learner",
                                        "a dart model's tree_weights (one a tree)").tolist()
    bi = ln.get("best_iteration")
    if bi is not None and (not isinstance(bi, int) or not 0 <= bi < max(
            1, len(trees), b.num_boosted_rounds())):
        raise ModelFormatError("learner: best_iteration out of range")
    b.best_iteration = bi
    b.best_score = ln.get("best_score")
    attrs = ln.get("attributes", {})    # optional: models saved before 0.7 have none
    if not isinstance(attrs, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                              for k, v in attrs.items()):
        raise ModelFormatError("learner: attributes must map strings to strings")
    b._attributes = dict(attrs)
    types, cats = ln.get("feature_types"), ln.get("categories")
    if types is not None:
        if not isinstance(types, list) or len(types) != n_features or not all(
                isinstance(t, str) for t in types):
            raise ModelFormatError(f"learner: feature_types must be null or {n_features} "
                                   "strings")
        if cats is not None and (not isinstance(cats, list) or len(cats) != n_features
                                 or not all(c is None or isinstance(c, list) for c in cats)):
            raise ModelFormatError(f"learner: categories must be null or {n_features} lists "
                                   "(or nulls)")
        b.feature_types, b.categories = list(types), cats
    if "position_bias" in ln:
        b.position_bias = _bias_from(ln["position_bias"], b.num_boosted_rounds())
    return b


def _bias_document(bias: dict) -> dict:
    return {"ti+": [float(v) for v in bias["ti+"]], "tj-": [float(v) for v in bias["tj-"]],
            "rounds": int(bias["rounds"])}


def _bias_from(d, rounds: int) -> dict:
    """The learner's optional ``position_bias`` (lambdarank_unbiased's estimates after the
    training's last round, dgbdt.objectives.rank_bias: {"ti+": [P], "tj-": [P], "rounds"}),
    validated: P >= 1 finite ratios >= 0 each, rounds in [1, the model's rounds]."""
    where = "learner position_bias"
    if not isinstance(d, dict) or set(d) != {"ti+", "tj-", "rounds"}:
        raise ModelFormatError(f"{where} must be an object with ti+, tj- and rounds")
    ti, tj, n = d["ti+"], d["tj-"], d["rounds"]
    if not isinstance(ti, list) or not ti:
        raise ModelFormatError(f"{where}: ti+ must be a non-empty list of numbers")
    ti = finite_numbers(ti, len(ti), where, "ti+")
    tj = finite_numbers(tj, len(ti), where, "tj- (as many as ti+)")
    if np.any(ti < 0) or np.any(tj < 0):
        raise ModelFormatError(f"{where}: the ratios ti+ and tj- must be >= 0")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= max(rounds, 1):
        raise ModelFormatError(f"{where}: rounds must be an integer in [1, {rounds}] (the "
                               "model's rounds)")
    return {"ti+": ti, "tj-": tj, "rounds": n}
