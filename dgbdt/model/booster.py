"""Booster: the trained model. Prediction on raw features, SHAP values, feature importance, JSON
model files (dgbdt's, or XGBoost's through dgbdt.model.xgboost_format), and XGBoost's model API
(slicing by rounds, attributes, dumps).

A model file is JSON (never pickle): its format and versions are dgbdt.model.model_file's.
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
from . import model_file
from .model_api import ModelAPI
from .margins import _concatenated, add_tree_margins, initial_margins, scaled_tree
from ..tree.model import PackedTrees, Tree



PREDICT_FIX = ("predict in row batches (the model's prediction is per row), or pass the rows in "
               "host memory (numpy or pandas: prediction then runs on the CPU).")


class Booster(ModelAPI):
    """A trained gradient-boosted tree ensemble, or linear model (``linear``)."""

    #: booster="gblinear": the model's weights (dgbdt.model.gblinear.LinearWeights); None for
    #: trees. A class default: XGBoost's Booster() constructor (dgbdt.compat) skips __init__
    linear = None

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
        # "multi_output_tree": one vector-leaf tree a round for all the outputs
        # (dgbdt.tree.multi_target); "one_output_per_tree": a tree an output
        self.multi_strategy = "one_output_per_tree"
        # booster="dart": every tree's weight (dgbdt.engine.dart); None for gbtree (all 1)
        self.tree_weights: list[float] | None = None
        self.best_iteration: int | None = None
        self.best_score: float | None = None
        self.timings: dict[str, float] = {}   # seconds per training stage (not saved)
        self.memory: dict[str, int] = {}      # where the training's pages lived (not saved)
        self._attributes: dict[str, str] = {}  # set_attr's strings (saved)
        # XGBoost's feature types ("c": categorical; "int", "float", ... only names, as a
        # frame's columns give them in dgbdt.compat.xgboost), or None, and the
        # category values of each categorical feature trained from a pandas category column
        self.feature_types: list[str] | None = None
        self.categories: list | None = None

    # Pickling (Dask sends models between the client and its workers): the trees as one array
    # a node field (dgbdt.tree.model.PackedTrees), not a frame for every array of every tree
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_scaled", None)          # tree_at's cache, keyed by the trees' ids
        packed = PackedTrees.of(self.trees)
        if packed is not None:
            state["trees"] = packed
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        if isinstance(state.get("trees"), PackedTrees):
            state["trees"] = state["trees"].unpack()
        self.__dict__.update(state)

    # -- structure ---------------------------------------------------------------------------
    def num_boosted_rounds(self) -> int:
        if self.linear is not None:
            return self.linear.rounds
        return len(self.trees) // self.trees_per_round

    @property
    def trees_per_round(self) -> int:
        return (1 if self.vector_leaf else self.n_outputs) * self.num_parallel_tree

    @property
    def vector_leaf(self) -> bool:
        """Whether the trees are vector-leaf trees (multi_strategy="multi_output_tree")."""
        return self.multi_strategy == "multi_output_tree"

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
        from ..data.categorical import mask_of, recode
        data = getattr(data, "__dgbdt_dataset__", data)   # dgbdt.compat.xgboost.DMatrix
        # feature types without a categorical one (XGBoost's "int", "float", ...) are names
        categorical = mask_of(self.feature_types) is not None
        if isinstance(data, Dataset):
            X, names, bm = data.data, data.feature_names, data.base_margin
            have = getattr(data, "categories", None)
        elif is_sparse(data) and not categorical:     # kept sparse
            X, names = as_csr(data), None
            bm = None
        elif categorical:
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
        if categorical:
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
        """XGBoost's ``booster``: "gblinear" for a linear model, "dart" when the trees have
        weights, else "gbtree"."""
        if self.linear is not None:
            return "gblinear"
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
            if self.linear is not None:     # gblinear: no trees, no iteration range
                from .gblinear import linear_predict
                out = linear_predict(self, X, bm, output_margin, pred_leaf, pred_contribs,
                                     pred_interactions)
            elif pred_contribs or pred_interactions:
                out = self._contributions(X, bm, self._trees_in(iteration_range),
                                          pred_interactions, approx_contribs)
            else:
                out = self._predict(X, bm, output_margin, pred_leaf, iteration_range)
        if not strict_shape:
            return out
        rows, K = out.shape[0], self.n_outputs
        if pred_leaf:       # a round's trees: K outputs (a vector tree: 1) of P trees each
            return out.reshape(rows, -1, self.trees_per_round // self.num_parallel_tree,
                               self.num_parallel_tree)
        if pred_interactions:
            return out.reshape(rows, K, self.n_features + 1, self.n_features + 1)
        if pred_contribs:
            return out.reshape(rows, K, self.n_features + 1)
        return out.reshape(rows, -1)

    def prediction_dtype(self, pred_leaf: bool = False):
        """The dtype of predict's output: int32 leaf indices with ``pred_leaf``, else float64
        (what dgbdt.dask.predict declares for its lazy arrays)."""
        return np.int32 if pred_leaf else np.float64

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
        if self.vector_leaf:        # (XGBoost 3.2 refuses them too)
            raise NotImplementedError(
                "pred_contribs / pred_interactions of a multi_strategy='multi_output_tree' "
                "model (vector-leaf trees) are not implemented. Fix: train with "
                "multi_strategy='one_output_per_tree' for SHAP values")
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
        if self.linear is not None:     # (XGBoost's words; its XGBoostError is a ValueError)
            raise ValueError("Slice is not supported by the current booster: a gblinear "
                             "model's weights are the sum of all its rounds")
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
        b.multi_strategy = self.multi_strategy
        b.tree_weights = None if self.tree_weights is None else list(self.tree_weights)
        if self.linear is not None:
            b.linear = self.linear.copy()
        b.best_iteration, b.best_score = self.best()
        b._attributes, b.feature_types = dict(self._attributes), self.feature_types
        b.categories = self.categories
        b.timings, b.memory = dict(self.timings), dict(self.memory)
        return b

    # -- serialization -----------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The model as dgbdt's JSON document (dgbdt.model.model_file)."""
        return model_file.document(self)

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
        return model_file.from_dict(d, cls)

    def __repr__(self) -> str:
        return (f"Booster(objective={self.objective.name!r}, rounds={self.num_boosted_rounds()}, "
                f"features={self.n_features})")


def load_model(source: str | os.PathLike | bytes | dict) -> Booster:
    """Load a model: a path, a JSON string/bytes, or a parsed dict, in dgbdt's format
    (Booster.save_model) or XGBoost's format, JSON or its binary UBJSON (a model saved by
    XGBoost with ``save_model("model.json")`` or ``"model.ubj"``; dgbdt.model.ubjson; see
    dgbdt.model.xgboost_format for what is read). Every malformed file ends in
    ModelFormatError naming the problem (dgbdt.model.model_file)."""
    return model_file.load(source, Booster)
