"""XGBoost's Booster over dgbdt's: XGBoost's constructor, load_model and slicing rules, its
evaluation lines, configuration and dumps; ``_compat`` gives a dgbdt Booster this class."""
from __future__ import annotations

import os
import warnings

import numpy as np

from ..model.booster import Booster as _Booster, load_model as _load_model
from ._common import XGBoostError, _unsupported
from .dmatrix import DMatrix


class Booster(_Booster):
    """dgbdt's Booster under XGBoost's constructor: ``Booster()`` then ``load_model(path)``,
    or ``Booster(model_file=path)``. It pickles (XGBoost's TrainingCheckPoint(as_pickle=True),
    copy.deepcopy, Dask) as its JSON model (dgbdt's format, ``save_raw("dgbdt")``) and the
    training's parameters (``config_params``, set_param's eval_metric): no Python objects of
    the model are pickled, and unpickling reads the JSON back, as ``load_model`` does."""

    # what a pickle keeps beside the JSON model: the configuration save_config and eval report
    _PICKLED = ("config_params", "_eval_metric", "position_bias")

    def __getstate__(self) -> dict:
        return {"model": self.save_raw("dgbdt"),
                **{k: self.__dict__[k] for k in self._PICKLED if k in self.__dict__}}

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        self.__dict__.update(_load_model(state.pop("model")).__dict__)
        self.__dict__.update(state)

    def __init__(self, params=None, cache=None, model_file=None):
        if params and model_file is None:
            _unsupported("Booster(params=...) without model_file (a Booster to update())",
                         "train with xgb.train(params, dtrain)")
        self.trees, self.tree_class = [], []
        if model_file is not None:
            self.load_model(model_file)
        if params:      # a loaded model's settings: what eval and save_config report
            params = dict(params.items() if isinstance(params, dict) else params)
            metric = params.pop("eval_metric", None)
            self.config_params = dict(getattr(self, "config_params", None) or {}, **params)
            if metric is not None:
                self.set_param("eval_metric", metric)

    @property
    def best_iteration(self):
        """Early stopping's best round; AttributeError without early stopping (XGBoost's:
        ``hasattr(booster, "best_iteration")`` tells whether it stopped early)."""
        return self._early("best_iteration")

    @best_iteration.setter
    def best_iteration(self, value) -> None:
        self.__dict__["best_iteration"] = value

    @property
    def best_score(self):
        """Early stopping's best score; AttributeError without early stopping."""
        return self._early("best_score")

    @best_score.setter
    def best_score(self, value) -> None:
        self.__dict__["best_score"] = value

    def _early(self, name: str):
        value = self.__dict__.get(name)
        if value is None:
            raise AttributeError(f"`{name}` is only defined when early stopping is used.")
        return value

    def predict(self, data, *args, validate_features: bool = True, **kwargs):
        """dgbdt's predict, with XGBoost's check of a DMatrix's feature names: a model
        trained with names refuses a DMatrix without them (dgbdt compares names where both
        have them); a one-tree model's leaf indices as [n], as XGBoost's.

        The output is dgbdt's float64 where XGBoost's is float32. Rounding dgbdt's float64
        sums to float32 at the end was tried and undone: XGBoost's own tests that chain
        predictions (a model's margins as the next one's base_margin, tree by tree) then
        differ from the whole model's by float32 rounding (XGBoost sums in float32 in one
        order, so its chains are exact), while float64 keeps them equal to ~1e-16."""
        if isinstance(data, DMatrix) and data.num_row() == 0:     # XGBoost: nothing to say
            return np.zeros((0,) if self.n_outputs == 1 else (0, self.n_outputs), np.float32)
        if validate_features and isinstance(data, DMatrix) and self.feature_names \
                and data.feature_names is None:
            raise ValueError("data did not contain feature names, but the following fields "
                             f"are expected: {', '.join(self.feature_names)} (XGBoost's "
                             "words; predict(..., validate_features=False) skips the check)")
        out = super().predict(data, *args, **kwargs)
        if kwargs.get("pred_leaf") and not kwargs.get("strict_shape") and out.ndim == 2 \
                and out.shape[1] == 1:
            return out[:, 0]            # XGBoost's leaves of a one-tree model: [n]
        return out

    def __getitem__(self, val) -> "Booster":
        """XGBoost's slicing rules over dgbdt's: an int is one round, ``...`` all of them; a
        start below 0, a step below 1, a stop before the start, an empty slice and a stop
        past the rounds are errors (dgbdt's own Booster slices as Python's range does)."""
        import numpy as np
        if isinstance(val, (int, np.integer)) and not isinstance(val, bool):
            val = slice(int(val), int(val) + 1)
        if val is Ellipsis:
            val = slice(0, 0)
        if isinstance(val, tuple):
            raise ValueError("Only supports slicing through 1 dimension.")
        if not isinstance(val, slice):
            raise TypeError(f"a Booster is sliced by an int, a slice or ...; got "
                            f"{type(val).__name__}")
        start = 0 if val.start in (None, Ellipsis) else int(val.start)
        stop = 0 if val.stop in (None, Ellipsis) else int(val.stop)
        if val.stop not in (None, Ellipsis) and stop < start:
            raise ValueError("Invalid slice", val)
        step = 1 if val.step is None else int(val.step)
        if start < 0:
            raise ValueError(f"Invalid slice: its start must be >= 0; got {start}")
        if step < 1:
            raise ValueError(f"Invalid slice: its step must be >= 1; got {step}")
        rounds = self.num_boosted_rounds()
        end = rounds if stop == 0 else stop       # XGBoost's 0: to the last round
        if end > rounds:
            raise IndexError("Layer index out of range")
        if end <= start:
            raise ValueError("Empty slice is not allowed.")
        return _compat(super().__getitem__(slice(start, end, step)))

    def load_model(self, fname) -> None:
        """Read a model (dgbdt's JSON, XGBoost's JSON or UBJSON; a path, or the bytes
        save_raw gave) into this Booster. A path is read as its extension says, as XGBoost
        reads it: ``.json`` must hold JSON, ``.ubj`` UBJSON (else XGBoostError, a
        ValueError); another extension: the format the file holds, with XGBoost's warning
        that it was guessed. A path that is no file raises XGBoostError, as XGBoost's does."""
        if isinstance(fname, bytearray):
            fname = bytes(fname)
        try:
            if isinstance(fname, (str, os.PathLike)) and not (
                    isinstance(fname, str) and fname.lstrip().startswith("{")):
                _check_file_format(fname)
            self.__dict__.update(_load_model(fname).__dict__)
        except FileNotFoundError as e:
            raise XGBoostError(f"cannot load the model: {e}") from e

    def save_raw(self, raw_format: str = "ubj"):
        """XGBoost's: the model as a bytearray of XGBoost's document, UBJSON (``"ubj"``, the
        default, as XGBoost's) or JSON (``"json"``); ``load_model`` and XGBoost read both.
        dgbdt's own names ``"dgbdt"`` / ``"xgboost"`` give dgbdt's string
        (Booster.save_raw)."""
        if raw_format in ("dgbdt", "xgboost"):
            return super().save_raw(raw_format)
        if raw_format not in ("json", "ubj"):
            raise ValueError(f"Unknown model format: {raw_format!r}; XGBoost's are 'ubj' and "
                             "'json'")
        import json

        from ..model.ubjson import dumps
        from ..model.xgboost_format import _objective_config, to_xgboost
        from .booster_config import trained_objective
        doc = to_xgboost(self)
        obj = trained_objective(self)     # the objective's training parameters, as XGBoost's
        doc["learner"]["objective"] = _objective_config(
            obj, self.num_class if obj.name.startswith("multi:") else 0)
        return bytearray(json.dumps(doc, separators=(",", ":")).encode() if raw_format == "json"
                         else dumps(doc))

    def save_model(self, fname) -> None:
        """The model in the format the path's extension names, as XGBoost picks it:
        ``.json``: XGBoost's JSON (XGBoost and dgbdt read it; the exact intercept rides
        along, dgbdt.model.xgboost_format), or dgbdt's JSON for a model with linear leaves,
        which XGBoost's format has no place for; ``.ubj``: XGBoost's UBJSON; any other:
        UBJSON, with XGBoost's warning."""
        ext = os.path.splitext(os.fspath(fname))[1].lower()
        if ext == ".json" and not any(t.linear for t in self.trees):
            with open(fname, "wb") as f:
                f.write(bytes(self.save_raw("json")))
            return
        if ext != ".json":
            if ext != ".ubj":
                warnings.warn("Saving model in the UBJSON format as default. You can use a "
                              "file extension: `json` or `ubj` to choose between formats.",
                              UserWarning, stacklevel=2)
            with open(fname, "wb") as f:
                f.write(bytes(self.save_raw("ubj")))
            return
        super().save_model(fname)

    def set_param(self, key, value=None) -> None:
        """XGBoost's set_param: the learning rate between rounds (dgbdt's), ``eval_metric``
        for ``eval`` / ``eval_set`` (XGBoost appends each one set), and the prediction
        settings ``device`` / ``nthread`` (recorded: dgbdt predicts where the rows are).
        Another training parameter (``tree_method``, ``max_depth``, ...) is recorded for
        save_config: this Booster does not train itself (no ``update``); a training continued
        from it (``train(params, ..., xgb_model=booster)``) takes train's ``params``, as
        XGBoost's does. A name dgbdt does not know is an error."""
        items = list(key.items()) if isinstance(key, dict) else \
            list(key) if isinstance(key, list) else [(key, value)]
        rest = []
        for k, v in items:
            if k in ("device", "nthread", "n_jobs"):
                # prediction settings: dgbdt predicts where the rows are, with the process's
                # threads; recorded for save_config
                self.config_params = dict(getattr(self, "config_params", None) or {}, **{k: v})
            elif k not in ("learning_rate", "eta", "eval_metric") and _is_parameter(k):
                self.config_params = dict(getattr(self, "config_params", None) or {}, **{k: v})
            elif k == "eval_metric":
                have = self.__dict__.setdefault("_eval_metric", [])
                for m in ([v] if isinstance(v, str) else list(v)):
                    if m not in have:
                        have.append(m)
            else:
                rest.append((k, v))
        for k, v in rest:
            super().set_param(k, v)

    def eval_set(self, evals, iteration: int = 0, feval=None, output_margin: bool = True) -> str:
        """XGBoost's evaluation line of the model on each (DMatrix, name): ``[iteration]\t
        name-metric:value...``, the metrics set by eval_metric (set_param's, or the
        training's: train's or an estimator's), else the objective's default;
        ``feval(predt, dmatrix)``: a custom metric's (name, value) pairs too, on margins
        (``output_margin``, XGBoost's default) or predictions.
        Values printed as XGBoost prints them (17 decimals; a custom metric's, 6)."""
        from ..engine.batch_eval import dataset_eval
        from ..metrics.registry import get_metric
        # set_param's metrics, else the training's (config_params), else the objective's
        names = self.__dict__.get("_eval_metric") or \
            (getattr(self, "config_params", None) or {}).get("eval_metric") or \
            [self.objective.default_metric]
        names = [names] if isinstance(names, str) else [m for m in names if isinstance(m, str)]
        metrics = [get_metric(m) for m in names]
        parts = [f"[{int(iteration)}]"]
        for d, name in evals:
            data = getattr(d, "dataset", d)
            for m, v in zip(metrics, dataset_eval(data, self).scores(self, [], self.objective,
                                                                     metrics)):
                parts.append(f"{name}-{m.name}:{v:.17f}")
            if feval is not None:
                out = feval(self.predict(data, output_margin=output_margin), d)
                for metric_name, v in (out if isinstance(out, list) else [out]):
                    parts.append(f"{name}-{metric_name}:{float(v):f}")
        return "\t".join(parts)

    def eval(self, data, name: str = "eval", iteration: int = 0) -> str:
        """XGBoost's: ``eval_set([(data, name)], iteration)``."""
        return self.eval_set([(data, name)], iteration)

    def get_categories(self, export_to_arrow: bool = False):
        """XGBoost's: the category values the model was trained with, a feature
        (dgbdt.compat.categories.Categories; ``empty()`` without categorical features)."""
        from .categories import categories_of
        return categories_of(self.feature_names, self.n_features, self.categories,
                             export_to_arrow)

    def save_config(self) -> str:
        """XGBoost's: the training configuration as a JSON string (booster_config.save_config)."""
        from .booster_config import save_config
        return save_config(self)

    def load_config(self, config: str) -> None:
        """XGBoost's: set the configuration's parameters (booster_config.load_config)."""
        from .booster_config import load_config
        load_config(self, config)

    def get_split_value_histogram(self, feature: str, fmap="", bins=None,
                                  as_pandas: bool = True):
        """XGBoost's: a histogram of the feature's split thresholds
        (booster_config.split_value_histogram)."""
        from .booster_config import split_value_histogram
        return split_value_histogram(self, feature, fmap, bins, as_pandas)

    def get_fscore(self, fmap: str = "") -> dict:
        """XGBoost's: the times each feature splits (get_score("weight")), keys named by
        ``fmap`` (XGBoost's feature map file) when given."""
        names = self.feature_names
        if names is not None and len(names) != self.n_features:     # XGBoost's check
            raise ValueError(f"feature_names has {len(names)} names but the model has "
                             f"{self.n_features} features")
        scores = self.get_score("weight")
        if not fmap:
            return scores
        from ..tree.dump import read_feature_map
        names = read_feature_map(fmap, self._names())
        by_old = dict(zip(self._names(), names))
        return {by_old.get(k, k): v for k, v in scores.items()}

    def get_dump(self, fmap: str = "", with_stats: bool = False, dump_format: str = "text"):
        """dgbdt's get_dump, and XGBoost's graphviz format: ``"dot"``, or ``"dot:"`` + a JSON
        object of to_graphviz's settings (``graph_attrs``, ``edge``: ``yes_color`` /
        ``no_color``, ``condition_node_params``, ``leaf_node_params``; dgbdt.tree.dump.dot);
        a feature map file that is not there raises XGBoostError (a ValueError), as
        XGBoost's does."""
        try:
            if dump_format == "dot" or str(dump_format).startswith("dot:"):
                import json

                from ..tree import dump
                opts = json.loads(dump_format[4:]) if dump_format != "dot" else {}
                edge = opts.pop("edge", {})
                names = dump.read_feature_map(fmap, self._names()) if fmap else self._names()
                return [dump.dot(t, names, with_stats, **opts, **edge) for t in self.trees]
            return super().get_dump(fmap, with_stats, dump_format)
        except FileNotFoundError as e:
            raise XGBoostError(f"cannot read the feature map: {e}") from e

    def dump_model(self, fout, fmap: str = "", with_stats: bool = False,
                   dump_format: str = "text") -> None:
        """XGBoost's: the trees' dump written to a file (a path or a text file object), each
        text tree under a ``booster[i]:`` line; JSON as one list."""
        trees = self.get_dump(fmap, with_stats, dump_format)
        text = ("[\n" + ",\n".join(trees) + "]\n" if dump_format == "json" else
                "".join(f"booster[{i}]:\n{t}" for i, t in enumerate(trees)))
        if hasattr(fout, "write"):
            fout.write(text)
            return
        with open(fout, "w", encoding="utf-8") as f:
            f.write(text)


def _is_parameter(name: str) -> bool:
    """Whether ``name`` is a training parameter dgbdt knows (XGBoost's name or alias)."""
    from ..params.normalize import ALIASES, SCHEMA
    return name in SCHEMA or name in ALIASES


def _check_file_format(path) -> None:
    """XGBoost's rule for a model file's format: ``.json`` holds JSON, ``.ubj`` UBJSON (an
    error names the mismatch); another extension: the format found, with a warning."""
    with open(path, "rb") as f:
        head = f.read(2)
    # UBJSON's object opens with "{" then a type marker; JSON's with "{" then '"' or a space
    ubj = head[:1] == b"{" and head[1:2] in (b"L", b"i", b"U", b"l", b"I", b"$", b"#", b"}")
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext == ".json" and ubj:
        raise XGBoostError(f"{os.fspath(path)!r} ends in .json but holds UBJSON (XGBoost's "
                           f"binary model, starting {head!r}, not JSON's '{{\"'): rename it "
                           "with the extension .ubj")
    if ext == ".ubj" and not ubj:
        raise XGBoostError(f"{os.fspath(path)!r} ends in .ubj but does not hold UBJSON (it "
                           f"starts {head!r}; JSON starts '{{\"'): rename it with the "
                           "extension .json")
    if ext not in (".json", ".ubj"):
        warnings.warn(f"Unknown file format: `{ext.lstrip('.')}`. Using "
                      f"{'UBJSON (`ubj`)' if ubj else 'JSON (`json`)'}, the format the file "
                      "holds.", UserWarning, stacklevel=3)


def _compat(booster) -> Booster:
    booster.__class__ = Booster     # the same object, XGBoost's constructor and load_model
    return booster
