"""Booster: the trained model. Prediction on raw features, SHAP values, feature importance, JSON
model files (dgbdt's, or XGBoost's through dgbdt.model.xgboost_format), and XGBoost's model API
(slicing by rounds, attributes, dumps).

A model file is JSON (never pickle)::

    {"format": "dgbdt-model", "version": 2,
     "learner": {"objective", "num_class", "base_margin": [K floats], "num_features",
                 "feature_names", "best_iteration", "best_score",
                 "attributes": {str: str} (optional: absent before 0.7),
                 "feature_types": [XGBoost type per feature] (optional: categorical models),
                 "categories": [list of category values, or null, per feature] (optional),
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

from ..kernels.interrupts import keyboard_interrupts
from ..data.checks import check_feature_names
from ..data.batches import BatchDataset
from ..data.dataset import Dataset
from ..data.page_store import gpu_memory_errors
from ..data.input import as_features, as_matrix, inplace_input, is_nan_missing
from ..data.sparse import as_csr, dense_chunks, densify, is_sparse
from ..backends.device import array_module
from ..objectives.registry import get_objective
from ..objectives.registry import OBJECTIVES
from ..objectives.multi_target import MULTI_TARGET
from .model_api import ModelAPI
from .margins import _concatenated, add_tree_margins, initial_margins, scaled_tree
from ..tree.model import MAX_FEATURES, ModelFormatError, Tree, finite_numbers

FORMAT = "dgbdt-model"
VERSION = 2
LINEAR_VERSION = 3  # the version of models with linear leaves (others are written as VERSION)
QUANTILES_VERSION = 4  # models whose objective has parameters (objective_params)
FOREST_VERSION = 5     # models with several trees a round for each output (num_parallel_tree)
DART_VERSION = 6       # booster="dart" models: a weight a tree
READS = (1, 2, 3, 4, 5, 6)   # model format versions load_model reads


PREDICT_FIX = ("predict in row batches (the model's prediction is per row), or pass the rows in "
               "host memory (numpy or pandas: prediction then runs on the CPU).")


class Booster(ModelAPI):
    """A trained gradient-boosted tree ensemble."""

    def __init__(self, objective: str, num_class: int | None, base_margin, num_features: int,
                 feature_names: list[str] | None = None, objective_params: dict | None = None):
        # objective_params: what the objective needs to predict (Objective.model_params:
        # reg:quantileerror's several quantiles, which set the number of outputs)
        self.objective_params = dict(objective_params or {})
        self.objective = get_objective(objective, self.objective_params or None)
        self.num_class = num_class
        self.n_outputs = self.objective.n_outputs(num_class)
        self.base_margin = np.asarray(base_margin, dtype=np.float64).reshape(self.n_outputs)
        self.n_features = int(num_features)
        self.feature_names = list(feature_names) if feature_names is not None else None
        self.trees: list[Tree] = []
        self.tree_class: list[int] = []
        # trees a round for each output (a boosted random forest when > 1): round r holds
        # trees r*K*P .. (r+1)*K*P - 1, output k's P trees together
        self.num_parallel_tree = 1
        # booster="dart": every tree's weight (dgbdt.engine.dart); None for gbtree (all 1)
        self.tree_weights: list[float] | None = None
        self.best_iteration: int | None = None
        self.best_score: float | None = None
        self.timings: dict[str, float] = {}   # seconds per training stage (not saved)
        self.memory: dict[str, int] = {}      # where the training's pages lived (not saved)
        self._attributes: dict[str, str] = {}  # set_attr's strings (saved)
        # XGBoost's feature types ("c": categorical), or None when all are numerical, and the
        # category values of each categorical feature trained from a pandas category column
        self.feature_types: list[str] | None = None
        self.categories: list | None = None

    # -- structure ---------------------------------------------------------------------------
    def num_boosted_rounds(self) -> int:
        return len(self.trees) // self.trees_per_round

    @property
    def trees_per_round(self) -> int:
        return self.n_outputs * self.num_parallel_tree

    def num_features(self) -> int:
        return self.n_features

    def _trees_in(self, iteration_range) -> list[int]:
        begin, end = iteration_range if iteration_range else (0, 0)
        rounds = self.num_boosted_rounds()
        end = rounds if end in (0, None) else end
        if not 0 <= begin <= end <= rounds:
            raise ValueError(f"iteration_range {iteration_range} is outside [0, {rounds}] "
                             "boosted rounds")
        T = self.trees_per_round
        return list(range(begin * T, end * T))

    # -- prediction --------------------------------------------------------------------------
    def _matrix(self, data) -> tuple[np.ndarray, np.ndarray | None]:
        data = getattr(data, "__dgbdt_dataset__", data)   # dgbdt.compat.xgboost.DMatrix
        if isinstance(data, Dataset):
            X, names, bm = data.data, data.feature_names, data.base_margin
            have = getattr(data, "categories", None)
        elif is_sparse(data) and self.feature_types is None:     # kept sparse
            X, names = as_csr(data), None
            bm = None
        elif self.feature_types is not None:
            X, names, _, have = as_features(data, feature_types=self.feature_types,
                                            enable_categorical=True, check=False)
            bm = None
        else:
            X, names = as_matrix(data)
            bm = None
        if X.shape[1] != self.n_features:
            raise ValueError(f"data has {X.shape[1]} features but the model was trained on "
                             f"{self.n_features}")
        check_feature_names(names, self.feature_names, "data")
        if self.feature_types is not None:
            from ..data.categorical import mask_of, recode
            if is_sparse(X):
                X = densify(X)
            X = recode(X, mask_of(self.feature_types), have, self.categories, names)
        return X, bm

    def set_feature_types(self, data) -> None:
        """Record the training data's feature types and category values (a Dataset or
        DaskDataset; dgbdt.data.categorical) when it has categorical features. A model that
        has category values already (continued training) must get the same ones from a frame
        (its trees' sets are codes of those); arrays of codes keep the model's."""
        from ..data.categorical import mask_of
        types = getattr(data, "feature_types", None)
        if mask_of(types) is None:
            return
        cats = getattr(data, "categories", None)
        cats = None if cats is None else [None if c is None else list(c) for c in cats]
        if cats is None:                # codes (arrays): read as the model's, if it has any
            cats = self.categories
        elif self.categories is not None and cats != self.categories:
            raise ValueError("the model to continue (xgb_model) was trained on other "
                             "categories than this data's: make the data from frames with "
                             "the model's categories (one pd.CategoricalDtype per column)")
        self.feature_types = list(types)
        self.categories = cats

    def predict_margin_trees(self, X: np.ndarray, trees: list[int], out: np.ndarray,
                             leaves: np.ndarray | None = None) -> None:
        """out[r, k] += leaf values of the listed trees, at their weights (a dart model; leaf
        ids into ``leaves``)."""
        add_tree_margins(X, [self.tree_at(i) for i in trees],
                         [self.tree_class[i] for i in trees], out, leaves)

    @property
    def booster_type(self) -> str:
        """XGBoost's ``booster``: "dart" when the trees have weights, else "gbtree"."""
        return "gbtree" if self.tree_weights is None else "dart"

    def tree_at(self, i: int) -> Tree:
        """Tree i as it adds to the margin: its leaves times its weight (a dart model)."""
        if self.tree_weights is None or self.tree_weights[i] == 1.0:
            return self.trees[i]
        key = (id(self.trees[i]), self.tree_weights[i])
        made = self.__dict__.setdefault("_scaled", {})   # one copy a weight: predict_raw's
        if key not in made:                              # concatenation cache matches them
            made[key] = (self.trees[i], scaled_tree(self.trees[i], self.tree_weights[i]))
        return made[key][1]

    def round_trees(self, change) -> tuple[list[Tree], list[int]]:
        """The trees (and their classes) whose leaf values sum to a round's margin change:
        ``change`` is the round's new tree indices, or for a dart round (tree index, weight
        change) pairs (dgbdt.engine.dart.dart_round)."""
        if change and isinstance(change[0], tuple):
            return ([scaled_tree(self.trees[i], s) for i, s in change],
                    [self.tree_class[i] for i, _ in change])
        return [self.tree_at(i) for i in change], [self.tree_class[i] for i in change]

    def predict(self, data, output_margin: bool = False, pred_leaf: bool = False,
                iteration_range: tuple[int, int] | None = None,
                pred_contribs: bool = False, strict_shape: bool = False,
                pred_interactions: bool = False, approx_contribs: bool = False) -> np.ndarray:
        """Predictions for a Dataset, numpy array or pandas DataFrame.

        Returns the objective's transform of the margins ([n] or [n, num_class] for softprob),
        the margins with ``output_margin`` ([n] or [n, K]), the leaf index of each row in each
        tree with ``pred_leaf`` (int32 [n, n_trees]), or with ``pred_contribs`` each feature's
        SHAP value (TreeSHAP, exact for the trees; dgbdt.dgbdt.explain) and the bias in the
        last column: float64 [n, F + 1], or [n, K, F + 1] for several outputs; a row's values
        sum to its margin; with ``pred_interactions`` SHAP interaction values [n, F + 1, F + 1]
        ([n, K, F + 1, F + 1]) whose rows sum to the SHAP values. SHAP values and
        interaction values of GPU rows are computed on their GPU (dgbdt.kernels.gpu_shap;
        categorical splits too, up to ~900 features and paths of 31 features; beyond that the
        rows are copied to the CPU), and returned there.
        ``strict_shape``: XGBoost's fixed shapes whatever the objective: [n, K] for values and
        margins (softmax: [n, 1]), [n, rounds, K, P] for leaves (P: num_parallel_tree),
        [n, K, F + 1] for SHAP values. ``approx_contribs``: Saabas's (dgbdt.model.saabas).
        """
        data = getattr(data, "__dgbdt_dataset__", data)
        if isinstance(data, BatchDataset):      # rows read again, a batch at a time
            return data.stack(lambda b: Booster.predict(
                self, b, output_margin, pred_leaf, iteration_range, pred_contribs,
                strict_shape, pred_interactions, approx_contribs))
        shape = getattr(data, "shape", None)
        n = data.num_row if isinstance(data, Dataset) else shape[0] if shape else "the"
        with keyboard_interrupts(), gpu_memory_errors({}, f"predicting {n} rows", PREDICT_FIX):
            X, bm = self._matrix(data)
            if pred_contribs or pred_interactions:
                out = self._contributions(X, bm, self._trees_in(iteration_range),
                                          pred_interactions, approx_contribs)
            else:
                out = self._predict(X, bm, output_margin, pred_leaf, iteration_range)
        if not strict_shape:
            return out
        rows, K = out.shape[0], self.n_outputs
        if pred_leaf:       # a round's trees: K outputs of P parallel trees each
            return out.reshape(rows, -1, K, self.num_parallel_tree)
        if pred_interactions:
            return out.reshape(rows, K, self.n_features + 1, self.n_features + 1)
        if pred_contribs:
            return out.reshape(rows, K, self.n_features + 1)
        return out.reshape(rows, -1)

    def inplace_predict(self, data, iteration_range=None, predict_type: str = "value",
                        missing: float = np.nan, validate_features: bool = True,
                        base_margin=None, strict_shape: bool = False):
        """XGBoost's inplace_predict: predict on an array or frame as it is (here the same as
        predict; values equal to ``missing`` are missing, as in a Dataset's ``missing``)."""
        if predict_type not in ("value", "margin"):
            raise ValueError(f"predict_type must be 'value' or 'margin'; got {predict_type!r}")
        data = inplace_input(data)
        if base_margin is not None or not is_nan_missing(missing):
            data = Dataset(data, base_margin=base_margin, missing=missing)
        return self.predict(data, output_margin=predict_type == "margin",
                            iteration_range=iteration_range, strict_shape=strict_shape)

    def _contributions(self, X, bm, trees, interactions: bool = False, approx: bool = False):
        """SHAP values [n, K, F + 1] (or interaction values [n, K, F + 1, F + 1]) of the
        listed trees; the bias (intercept or base_margin, plus each tree's expected value)
        in the last column (the last diagonal entry). [n, ...] without K for one output."""
        from .saabas import approx_contributions
        from .shap import contributions
        if is_sparse(X):        # sparse rows: dense a chunk at a time
            xp = array_module(X)
            return xp.concatenate([self._contributions(
                densify(X, a, b), None if bm is None else bm[a:b], trees, interactions, approx)
                for a, b in dense_chunks(*X.shape)])
        if any(self.trees[i].linear for i in trees):
            raise NotImplementedError("SHAP values (pred_contribs / pred_interactions) of "
                                      "linear trees are not built: TreeSHAP attributes constant "
                                      "leaves; a linear leaf's terms would need their own "
                                      "attribution. Predict values or leaves instead.")
        if approx:
            return approx_contributions(self, X, bm, trees, interactions)
        return contributions(self, X, bm, trees, interactions, _concatenated)

    def _predict(self, X, bm, output_margin, pred_leaf, iteration_range):
        trees = self._trees_in(iteration_range)
        n = X.shape[0]
        xp = array_module(X)
        if pred_leaf:
            leaves = xp.zeros((n, len(trees)), dtype=np.int32)
            self.predict_margin_trees(X, trees, xp.zeros((n, self.n_outputs)), leaves)
            return leaves
        margin = self.initial_margin(n, bm, like=X)
        self.predict_margin_trees(X, trees, margin)
        if output_margin:
            return margin[:, 0] if self.n_outputs == 1 else margin
        return self.objective.transform(margin)

    def initial_margin(self, n: int, base_margin: np.ndarray | None, like=None) -> np.ndarray:
        """[n, K] starting margins: the data's base_margin if given, else the model's; on the
        GPU when ``like`` is a GPU array."""
        xp = array_module(like) if like is not None else array_module(base_margin)
        return initial_margins(self.base_margin, n, base_margin, xp)

    def __getitem__(self, key) -> "Booster":
        """The model of some boosting rounds: ``booster[a:b]`` (a step too) or ``booster[i]``
        (one round), as XGBoost slices; the intercept and attributes are kept."""
        rounds = self.num_boosted_rounds()
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = int(key) + (rounds if key < 0 else 0)
            if not 0 <= i < rounds:
                raise IndexError(f"round {key} is outside the model's {rounds} rounds")
            key = slice(i, i + 1)
        if not isinstance(key, slice):
            raise TypeError(f"a Booster is sliced by rounds (an int or a slice); got "
                            f"{type(key).__name__}")
        picked = range(rounds)[key]
        b = self.snapshot()
        T = self.trees_per_round
        b.trees = [self.trees[r * T + k] for r in picked for k in range(T)]
        b.tree_class = [self.tree_class[r * T + k] for r in picked for k in range(T)]
        if self.tree_weights is not None:
            b.tree_weights = [self.tree_weights[r * T + k] for r in picked for k in range(T)]
        b.best_iteration = b.best_score = None
        return b

    def set_param(self, key, value=None) -> None:
        """Between rounds of a training (from a callback): the learning rate of the next
        rounds (``"learning_rate"`` or ``"eta"``); nothing else may change mid-training."""
        items = key.items() if isinstance(key, dict) else [(key, value)]
        for k, v in items:
            if k not in ("learning_rate", "eta"):
                raise ValueError(f"set_param({k!r}): only the learning rate (eta) can change "
                                 "between rounds; other parameters are fixed for a training")
            if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not v >= 0:
                raise ValueError(f"learning_rate must be a number >= 0; got {v!r}")
            self._next_eta = float(v)

    def best(self) -> tuple:
        """(best_iteration, best_score): early stopping's, or (None, None). Read this way by
        dgbdt's own code: XGBoost's Booster (dgbdt.compat.booster) raises AttributeError for
        the attributes when early stopping was not used, as XGBoost's does."""
        return self.__dict__.get("best_iteration"), self.__dict__.get("best_score")

    def snapshot(self) -> "Booster":
        """A copy sharing this model's trees (Tree objects are not changed after training)
        whose tree list later training does not append to."""
        b = Booster(self.objective.name, self.num_class, self.base_margin, self.n_features,
                    self.feature_names, self.objective_params)
        b.trees, b.tree_class = list(self.trees), list(self.tree_class)
        b.num_parallel_tree = self.num_parallel_tree
        b.tree_weights = None if self.tree_weights is None else list(self.tree_weights)
        b.best_iteration, b.best_score = self.best()
        b._attributes, b.feature_types = dict(self._attributes), self.feature_types
        b.categories = self.categories
        b.timings, b.memory = dict(self.timings), dict(self.memory)
        return b

    # -- serialization -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        linear = any(t.linear for t in self.trees)
        version = DART_VERSION if self.tree_weights is not None else \
            FOREST_VERSION if self.num_parallel_tree > 1 else \
            QUANTILES_VERSION if self.objective_params else \
            LINEAR_VERSION if linear else VERSION
        return {
            "format": FORMAT, "version": version,
            "learner": {
                "objective": self.objective.name, "num_class": self.num_class,
                "base_margin": self.base_margin.tolist(), "num_features": self.n_features,
                "feature_names": self.feature_names, "best_iteration": self.best()[0],
                "best_score": self.best()[1], "attributes": dict(self._attributes),
                **({"feature_types": list(self.feature_types), "categories": self.categories}
                   if self.feature_types is not None else {}),
                **({"objective_params": dict(self.objective_params)}
                   if self.objective_params else {}),
                **({"num_parallel_tree": self.num_parallel_tree}
                   if self.num_parallel_tree > 1 else {}),
                **({"booster": "dart", "tree_weights": [float(w) for w in self.tree_weights]}
                   if self.tree_weights is not None else {})},
            "trees": [t.to_dict() for t in self.trees],
            "tree_class": list(self.tree_class),
        }

    def save_raw(self, format: str = "dgbdt") -> str:
        """The model as a JSON string (deterministic: same model, same bytes).

        ``format="xgboost"``: XGBoost's JSON model format (dgbdt.model.xgboost_format), which
        ``xgboost.Booster().load_model`` reads."""
        return json.dumps(self._document(format), separators=(",", ":"))

    def _document(self, format: str) -> dict:
        if format == "dgbdt":
            return self.to_dict()
        if format == "xgboost":
            from .xgboost_format import to_xgboost
            return to_xgboost(self)
        raise ValueError(f"format must be 'dgbdt' or 'xgboost'; got {format!r}")

    def save_model(self, path: str | os.PathLike, format: str = "dgbdt") -> None:
        """Write the model as JSON: dgbdt's format (the default), or XGBoost's with
        ``format="xgboost"`` (for XGBoost, Triton FIL, treelite); dgbdt.load_model reads
        both."""
        text = self.save_raw(format)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    @classmethod
    def from_dict(cls, d) -> "Booster":
        return _from_dict(d)

    def __repr__(self) -> str:
        return (f"Booster(objective={self.objective.name!r}, rounds={self.num_boosted_rounds()}, "
                f"features={self.n_features})")


def load_model(source: str | os.PathLike | bytes | dict) -> Booster:
    """Load a model: a path, a JSON string/bytes, or a parsed dict, in dgbdt's format
    (Booster.save_model) or XGBoost's format, JSON or its binary UBJSON (a model saved by
    XGBoost with ``save_model("model.json")`` or ``"model.ubj"``; dgbdt.model.ubjson; see
    dgbdt.model.xgboost_format for what is read)."""
    if isinstance(source, dict):
        return _from_document(source)
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
        return _from_document(d)
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelFormatError(f"{where} is not valid JSON ({e}); the file may be truncated "
                               "or not a dgbdt model") from None
    except RecursionError:
        raise ModelFormatError(f"{where} nests its JSON too deeply to be a model") from None
    return _from_document(d)


def _from_document(d) -> Booster:
    """A Booster from a parsed document: every malformed file ends in ModelFormatError (the
    checks name the field; a value that fails its conversion is named by what failed)."""
    from .xgboost_format import from_xgboost, is_xgboost_model
    xgb = is_xgboost_model(d)
    try:
        return from_xgboost(d, Booster) if xgb else _from_dict(d)
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


def _from_dict(d) -> Booster:
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
    b = Booster(obj, num_class, np.asarray(bm, dtype=np.float64), n_features, names, oparams)
    trees = _require(d, "trees", list, "model")
    tree_class = _require(d, "tree_class", list, "model")
    if len(tree_class) != len(trees):
        raise ModelFormatError(f"model: {len(trees)} trees but {len(tree_class)} tree_class "
                               "entries")
    P = ln.get("num_parallel_tree", 1) if version >= FOREST_VERSION else 1
    if not isinstance(P, int) or isinstance(P, bool) or P < 1:
        raise ModelFormatError("learner: num_parallel_tree must be an integer >= 1")
    b.num_parallel_tree = P
    if len(trees) % b.trees_per_round:
        raise ModelFormatError(f"model: {len(trees)} trees is not a multiple of the "
                               f"{b.n_outputs} outputs x {P} parallel trees")
    for i, (t, k) in enumerate(zip(trees, tree_class)):
        want = (i // P) % b.n_outputs
        if k != want:
            raise ModelFormatError(f"model: tree {i} has class {k!r}, expected {want}")
        b.trees.append(Tree.from_dict(t, n_features, f"tree {i}"))
        if b.trees[-1].linear and version < LINEAR_VERSION:
            raise ModelFormatError(f"tree {i}: linear_leaves need model format version "
                                   f"{LINEAR_VERSION}; the file says {version}")
    b.tree_class = [int(k) for k in tree_class]
    if version >= DART_VERSION and ln.get("booster", "gbtree") != "gbtree":
        if ln["booster"] != "dart":
            raise ModelFormatError(f"learner: booster must be 'gbtree' or 'dart'; got "
                                   f"{ln['booster']!r}")
        b.tree_weights = finite_numbers(ln.get("tree_weights"), len(trees), "learner",
                                        "a dart model's tree_weights (one a tree)").tolist()
    bi = ln.get("best_iteration")
    if bi is not None and (not isinstance(bi, int) or not 0 <= bi < max(1, len(trees))):
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
    return b
