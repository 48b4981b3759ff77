"""Tests for dgbdt.params.normalize: the parameter schema, validation and the generated docs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dgbdt.params.normalize import (
    SCHEMA, ParameterError, ParamSpec, normalize_params, parameters_markdown)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "parameters.md"

EXPECTED_DEFAULTS = {
    "objective": "reg:squarederror",
    "eta": 0.3,
    "max_depth": 6,
    "max_bin": 256,
    "lambda": 1.0,
    "alpha": 0.0,
    "gamma": 0.0,
    "min_child_weight": 1.0,
    "max_delta_step": 0.0,
    "base_score": None,
    "num_target": None,
    "multi_strategy": "one_output_per_tree",
    "feature_weights": None,
    "seed": 0,
    "scale_pos_weight": 1.0,
    "huber_slope": 1.0,
    "tweedie_variance_power": 1.5,
    "quantile_alpha": 0.5,
    "aft_loss_distribution": "normal",
    "aft_loss_distribution_scale": 1.0,
    "lambdarank_pair_method": "topk",
    "lambdarank_num_pair_per_sample": None,
    "lambdarank_normalization": True,
    "lambdarank_score_normalization": True,
    "lambdarank_unbiased": False,
    "lambdarank_bias_norm": 1.0,
    "ndcg_exp_gain": True,
    "monotone_constraints": None,
    "interaction_constraints": None,
    "max_cat_to_onehot": 4,
    "max_cat_threshold": 64,
    "subsample": 1.0,
    "sampling_method": "uniform",
    "colsample_bytree": 1.0,
    "colsample_bylevel": 1.0,
    "colsample_bynode": 1.0,
    "eval_metric": None,
    "num_class": None,
    "tree_method": "hist",
    "verbosity": 1,
    "device": None,
    "device_memory_budget": None,
    "nthread": None,
    "grow_policy": "depthwise",
    "max_leaves": 0,
    "num_parallel_tree": 1,
    "booster": "gbtree",
    "updater": "shotgun",
    "process_type": "default",
    "refresh_leaf": True,
    "feature_selector": "cyclic",
    "top_k": 0,
    "tolerance": 0.0,
    "rate_drop": 0.0,
    "skip_drop": 0.0,
    "one_drop": False,
    "sample_type": "uniform",
    "normalize_type": "tree",
    "linear_tree": False,
    "max_linear_features": 5,
    "linear_lambda": 1.0,
    "disable_default_eval_metric": False,
    "validate_parameters": True,
}


def raises(match: str):
    """Shorthand: expect a ParameterError whose message matches ``match``."""
    return pytest.raises(ParameterError, match=match)


# --------------------------------------------------------------------------- defaults


@pytest.mark.parametrize("params", [None, {}])
def test_defaults_filled(params):
    assert normalize_params(params) == EXPECTED_DEFAULTS


def test_schema_is_complete_and_typed():
    assert set(SCHEMA) == set(EXPECTED_DEFAULTS)
    for name, spec in SCHEMA.items():
        assert isinstance(spec, ParamSpec)
        assert spec.name == name and spec.doc
        assert spec.default == EXPECTED_DEFAULTS[name]


def test_none_means_default():
    out = normalize_params({"eta": None, "max_depth": None, "random_state": None})
    assert out == EXPECTED_DEFAULTS


def test_input_not_mutated_and_not_a_mapping():
    params = {"learning_rate": 0.1}
    normalize_params(params)
    assert params == {"learning_rate": 0.1}
    with raises("params must be a mapping"):
        normalize_params([("eta", 0.1)])  # type: ignore[arg-type]


def test_errors_are_value_errors():
    assert issubclass(ParameterError, ValueError)


# --------------------------------------------------------------------------- aliases


@pytest.mark.parametrize(
    "alias, canonical, value",
    [
        ("learning_rate", "eta", 0.1),
        ("reg_lambda", "lambda", 2.0),
        ("reg_alpha", "alpha", 0.5),
        ("min_split_loss", "gamma", 1.5),
        ("random_state", "seed", 42),
        ("n_jobs", "nthread", 4),
    ],
)
def test_alias_maps_to_canonical(alias, canonical, value):
    out = normalize_params({alias: value})
    assert out[canonical] == value
    assert alias not in out


def test_alias_conflict():
    with raises(r"eta.*'eta'=0.1.*'learning_rate'=0.2"):
        normalize_params({"eta": 0.1, "learning_rate": 0.2})
    with raises(r"lambda.*'reg_lambda'"):
        normalize_params({"reg_lambda": 1, "lambda": 3})


def test_alias_same_value_is_fine():
    assert normalize_params({"eta": 0.1, "learning_rate": 0.1})["eta"] == 0.1
    assert normalize_params({"max_depth": 3, "seed": 1, "random_state": 1.0})["seed"] == 1


def test_alias_error_mentions_spelling():
    with raises(r"eta must be >= 0.*passed as 'learning_rate'"):
        normalize_params({"learning_rate": -0.5})


# --------------------------------------------------------------------------- names


def test_unknown_name_did_you_mean():
    with raises(r"^Unknown parameter 'max_dpeth'\. Did you mean 'max_depth'\?$"):
        normalize_params({"max_dpeth": 3})


def test_unknown_name_suggests_alias():
    with raises(r"Did you mean 'learning_rate'\?"):
        normalize_params({"learning_rte": 0.1})


def test_unknown_name_nothing_close_points_to_docs():
    with raises(r"Unknown parameter 'zzz'.*docs/parameters.md"):
        normalize_params({"zzz": 1})


def test_sklearn_only_name_gets_a_hint():
    with raises(r"n_estimators.*num_boost_round"):
        normalize_params({"n_estimators": 100})


def test_name_must_be_str():
    with raises(r"names must be str, got 3 \(int\)"):
        normalize_params({3: 1})  # type: ignore[dict-item]


# --------------------------------------------------------------------------- objective


@pytest.mark.parametrize("objective", ["reg:squarederror", "reg:logistic", "binary:logistic",
                                       "binary:logitraw"])
def test_objectives_accepted(objective):
    assert normalize_params({"objective": objective})["objective"] == objective


def test_objective_did_you_mean():
    with raises(r"objective must be one of .*got 'binary:logisitc'.*"
                r"did you mean objective='binary:logistic'"):
        normalize_params({"objective": "binary:logisitc"})


def test_objective_must_be_str():
    with raises(r"objective must be a str, got 1 \(int\)"):
        normalize_params({"objective": 1})


# --------------------------------------------------------------------------- floats


@pytest.mark.parametrize("value", [-1e-9, -0.1])
def test_eta_must_not_be_negative(value):
    with raises(r"eta must be >= 0, got"):
        normalize_params({"eta": value})
    assert normalize_params({"eta": 0})["eta"] == 0.0       # XGBoost takes 0 too


@pytest.mark.parametrize("name", ["lambda", "alpha", "gamma", "min_child_weight",
                                  "max_delta_step"])
def test_nonnegative_floats(name):
    assert normalize_params({name: 0})[name] == 0.0
    out = normalize_params({name: 2})[name]
    assert out == 2.0 and type(out) is float
    with raises(rf"{name} must be >= 0, got -1"):
        normalize_params({name: -1})


@pytest.mark.parametrize("name", ["eta", "lambda", "alpha", "gamma", "min_child_weight",
                                  "max_delta_step", "base_score"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), np.nan])
def test_floats_reject_nonfinite(name, value):
    with raises(rf"{name} must be a finite number"):
        normalize_params({name: value})


def test_float_rejects_string():
    with raises(r"eta must be a number, got '0.1' \(str\)"):
        normalize_params({"eta": "0.1"})


def test_base_score():
    assert normalize_params({"base_score": 3})["base_score"] == 3.0
    assert normalize_params({"base_score": -2.5})["base_score"] == -2.5
    out = normalize_params({"objective": "binary:logistic", "base_score": 0.2})
    assert out["base_score"] == 0.2
    # logitraw's base_score is a margin: no (0, 1) restriction
    assert normalize_params({"objective": "binary:logitraw", "base_score": 2.0})["base_score"] == 2.0


@pytest.mark.parametrize("objective", ["reg:logistic", "binary:logistic"])
@pytest.mark.parametrize("value", [0.0, 1.0, 1.5, -0.1])
def test_base_score_probability_range(objective, value):
    with raises(r"base_score must be strictly between 0 and 1"):
        normalize_params({"objective": objective, "base_score": value})


# --------------------------------------------------------------------------- ints


def test_max_depth_zero_has_own_message():
    with raises(r"max_depth=0.*lossguide.*positive depth"):
        normalize_params({"max_depth": 0})


def test_max_depth_negative():
    with raises(r"max_depth must be >= 0, got -2"):
        normalize_params({"max_depth": -2})


def test_int_accepts_integral_float():
    out = normalize_params({"max_depth": 3.0, "max_bin": 64.0})
    assert out["max_depth"] == 3 and type(out["max_depth"]) is int
    assert out["max_bin"] == 64 and type(out["max_bin"]) is int


def test_int_rejects_fraction():
    with raises(r"max_depth must be a whole number, got 3.5"):
        normalize_params({"max_depth": 3.5})


@pytest.mark.parametrize("value", [1, 65536, -5])
def test_max_bin_range(value):
    with raises(r"max_bin must be (>= 2|<= 65535)"):
        normalize_params({"max_bin": value})


def test_max_bin_bounds_inclusive():
    assert normalize_params({"max_bin": 2})["max_bin"] == 2
    assert normalize_params({"max_bin": 65535})["max_bin"] == 65535


def test_seed():
    assert normalize_params({"seed": 123456789})["seed"] == 123456789
    with raises(r"seed must be >= 0, got -1.*passed as 'random_state'"):
        normalize_params({"random_state": -1})
    with raises(r"seed must be an int, got"):
        normalize_params({"seed": np.random.RandomState(0)})


@pytest.mark.parametrize("value", [0, 1, 2, 3])
def test_verbosity_ok(value):
    assert normalize_params({"verbosity": value})["verbosity"] == value


@pytest.mark.parametrize("value", [-1, 4])
def test_verbosity_range(value):
    with raises(r"verbosity must be (>= 0|<= 3)"):
        normalize_params({"verbosity": value})


def test_nthread():
    assert normalize_params({"nthread": 8})["nthread"] == 8
    assert normalize_params({"n_jobs": -1})["nthread"] is None
    assert normalize_params({"nthread": None})["nthread"] is None
    for bad in (0, -2):
        with raises(r"nthread must be >= 1"):
            normalize_params({"nthread": bad})


# --------------------------------------------------------------------------- num_class


@pytest.mark.parametrize("objective", ["multi:softprob", "multi:softmax"])
def test_num_class_required_for_multi(objective):
    with raises(r"num_class is required"):
        normalize_params({"objective": objective})
    with raises(r"num_class must be >= 2"):
        normalize_params({"objective": objective, "num_class": 1})
    out = normalize_params({"objective": objective, "num_class": 3.0})
    assert out["num_class"] == 3 and type(out["num_class"]) is int


def test_num_class_with_non_multi_objective():
    out = normalize_params({"objective": "binary:logistic", "num_class": 1})
    assert out["num_class"] is None
    with raises(r"num_class must be None or 1 with objective='binary:logistic', got 3"):
        normalize_params({"objective": "binary:logistic", "num_class": 3})
    with raises(r"num_class must be >= 1, got 0"):
        normalize_params({"num_class": 0})


# --------------------------------------------------------------------------- strings


def test_eval_metric_normalized_to_list():
    assert normalize_params({"eval_metric": "auc"})["eval_metric"] == ["auc"]
    out = normalize_params({"eval_metric": ("logloss", "error", "logloss")})
    assert out["eval_metric"] == ["logloss", "error"]
    assert normalize_params({"eval_metric": None})["eval_metric"] is None


def test_eval_metric_did_you_mean():
    with raises(r"eval_metric must be one of .*got 'aucc'.*did you mean eval_metric='auc'"):
        normalize_params({"eval_metric": ["rmse", "aucc"]})


@pytest.mark.parametrize("value", [[], 3, ["rmse", 3]])
def test_eval_metric_bad_shapes(value):
    with raises(r"eval_metric must be"):
        normalize_params({"eval_metric": value})


def test_tree_method():
    assert normalize_params({"tree_method": "hist"})["tree_method"] == "hist"
    assert normalize_params({"tree_method": "auto"})["tree_method"] == "hist"
    assert normalize_params({"tree_method": "approx"})["tree_method"] == "approx"
    assert normalize_params({"tree_method": "exact"})["tree_method"] == "exact"
    with raises(r"tree_method='gpu_hist'.*device=\"cuda\" with tree_method=\"hist\""):
        normalize_params({"tree_method": "gpu_hist"})
    with raises(r"tree_method must be .*did you mean tree_method='hist'"):
        normalize_params({"tree_method": "hsit"})


def test_grow_policy():
    assert normalize_params({"grow_policy": "depthwise"})["grow_policy"] == "depthwise"
    out = normalize_params({"grow_policy": "lossguide", "max_leaves": 31, "max_depth": 0})
    assert (out["grow_policy"], out["max_leaves"], out["max_depth"]) == ("lossguide", 31, 0)
    with raises(r"grow_policy must be"):
        normalize_params({"grow_policy": "breadth"})


@pytest.mark.parametrize("value, expected", [
    ("cpu", "cpu"), ("cuda", "cuda"), ("gpu", "cuda"), ("cuda:1", "cuda:1"),
    ("gpu:2", "cuda:2"), ("cuda:0", "cuda:0"),
])
def test_device_ok(value, expected):
    assert normalize_params({"device": value})["device"] == expected


@pytest.mark.parametrize("value", ["cuda:-1", "cuda:x", "CUDA0", "tpu", 0])
def test_device_bad(value):
    with raises(r"device must be"):
        normalize_params({"device": value})


# --------------------------------------------------------------------------- bools


@pytest.mark.parametrize("value, expected", [(True, True), (False, False), (1, True),
                                             (0, False), (np.bool_(True), True)])
def test_disable_default_eval_metric(value, expected):
    out = normalize_params({"disable_default_eval_metric": value})
    assert out["disable_default_eval_metric"] is expected


@pytest.mark.parametrize("value", [2, "yes", 0.5])
def test_bool_param_rejects(value):
    with raises(r"disable_default_eval_metric must be a bool"):
        normalize_params({"disable_default_eval_metric": value})


def test_validate_parameters_accepted_and_ignored():
    assert normalize_params({"validate_parameters": False})["validate_parameters"] is True
    with raises(r"validate_parameters must be a bool"):
        normalize_params({"validate_parameters": "no"})


@pytest.mark.parametrize("name", ["eta", "max_depth", "lambda", "max_bin", "seed", "verbosity",
                                  "num_class", "nthread", "base_score"])
@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_bool_rejected_for_numeric(name, value):
    with raises(rf"{name} must be (a number|an int), got (True|False).*Booleans"):
        normalize_params({name: value})


# --------------------------------------------------------------------------- numpy


def test_numpy_scalars_accepted():
    out = normalize_params({
        "eta": np.float32(0.5),
        "max_depth": np.int64(4),
        "max_bin": np.float64(128.0),
        "lambda": np.int32(2),
        "seed": np.uint8(7),
        "objective": np.str_("binary:logistic"),
        "base_score": np.float16(0.25),
    })
    assert out["eta"] == 0.5 and type(out["eta"]) is float
    assert out["max_depth"] == 4 and type(out["max_depth"]) is int
    assert out["max_bin"] == 128 and type(out["max_bin"]) is int
    assert out["lambda"] == 2.0 and type(out["lambda"]) is float
    assert out["seed"] == 7 and type(out["seed"]) is int
    assert out["objective"] == "binary:logistic" and type(out["objective"]) is str
    assert out["base_score"] == 0.25


def test_numpy_value_shown_plainly_in_errors():
    with raises(r"eta must be >= 0, got -1\.5\."):
        normalize_params({"eta": np.float64(-1.5)})


# --------------------------------------------------------------------------- docs


def test_docs_in_sync():
    assert DOCS.read_text(encoding="utf-8") == parameters_markdown(), (
        "docs/parameters.md is stale: run `python -m dgbdt.params > docs/parameters.md`")


def test_docs_mention_every_parameter_and_alias():
    md = parameters_markdown()
    for spec in SCHEMA.values():
        assert f"## {spec.name}\n" in md
        for alias in spec.aliases:
            assert f"`{alias}`" in md


def test_module_main_prints_markdown():
    proc = subprocess.run([sys.executable, "-m", "dgbdt.params"], capture_output=True,
                          text=True, check=True)
    assert proc.stdout == parameters_markdown()
