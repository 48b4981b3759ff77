"""Training parameters: one schema, XGBoost's names, strict validation.

Every public entry point of dgbdt funnels user parameters through
:func:`normalize_params`, which

* resolves aliases (``learning_rate`` -> ``eta``, ``reg_lambda`` -> ``lambda``, ...),
* rejects unknown names with a did-you-mean suggestion,
* coerces values (``3.0`` is a fine ``max_depth``; numpy scalars are fine; booleans are
  never numbers),
* validates each value and the combinations that depend on the objective,
* and returns a dict holding *every* canonical parameter, defaults filled in.

A value of ``None`` always means "not set": the parameter takes its default.  This lets
scikit-learn style wrappers pass every keyword through unchanged.

:data:`SCHEMA` (dgbdt.params.schema: every parameter's spec) is also the source of the
reference page: ``python -m dgbdt.params`` prints :func:`parameters_markdown`, which is
committed as ``docs/parameters.md``.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from typing import Mapping

import numpy as np

from .schema import (
    ALIASES, METRICS, MULTI_OBJECTIVES, OBJECTIVES, PROBABILITY_BASE_SCORE, SCHEMA, ParamSpec,
    _num)

__all__ = [
    "ParameterError",
    "ParamSpec",
    "SCHEMA",
    "OBJECTIVES",
    "METRICS",
    "normalize_params",
    "parameters_markdown",
]

#: metrics spelled with a number after "@" (XGBoost's): error@0.7, tweedie-nloglik@1.2
_METRIC_AT = re.compile(r"^(error|tweedie-nloglik)@([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?)$"
                        r"|^(ndcg|map|pre)(@[0-9]+)?-?$")

_DOCS_HINT = "see docs/parameters.md (or dgbdt.params.normalize.parameters_markdown()) for the full list"

#: names people often put in the params dict that are not training parameters
_NOT_PARAMS = {
    "n_estimators": "the number of trees is the num_boost_round argument of train(), "
    "not a training parameter",
    "num_boost_round": "pass num_boost_round to train(), not inside params",
    "early_stopping_rounds": "pass early_stopping_rounds to train(), not inside params",
}


class ParameterError(ValueError):
    """A training parameter has an unknown name, a bad value, or conflicts with another.

    The message names the parameter, shows the offending value, states what is allowed
    and says how to fix it.
    """


# --------------------------------------------------------------------------- helpers

def _show(value: object) -> str:
    """repr() of a value, with numpy scalars shown as plain Python values."""
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _suggest(word: str, candidates: list[str]) -> str | None:
    """Closest candidate to ``word`` (case-insensitive), or None when nothing is close."""
    lowered = {c.lower(): c for c in candidates}
    hits = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[hits[0]] if hits else None


class _Ctx:
    """Formats errors about one parameter as it was spelled by the user."""

    def __init__(self, spec: ParamSpec, given: str):
        self.spec = spec
        self.given = given

    def fail(self, value: object, must: str, fix: str | None = None,
             show_type: bool = False) -> ParameterError:
        """Build ``<name> must be <must>, got <value>. Fix: ...``."""
        spec = self.spec
        via = f" (passed as '{self.given}')" if self.given != spec.name else ""
        if fix is None:
            fix = (f"Fix: pass {spec.describe_allowed()}, or leave {spec.name} out "
                   f"to use the default ({spec.default!r}).")
        shown = _show(value) + (f" ({type(value).__name__})" if show_type else "")
        return ParameterError(f"{spec.name} must be {must}, got {shown}{via}. {fix}")

    def explain(self, value: object, text: str) -> ParameterError:
        """A tailored message for a recognised but unsupported value."""
        via = f" (passed as '{self.given}')" if self.given != self.spec.name else ""
        return ParameterError(f"Unsupported {self.spec.name}={_show(value)}{via}: {text}")


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def _as_float(ctx: _Ctx, value: object) -> float:
    if _is_bool(value):
        raise ctx.fail(value, "a number", "Booleans are not accepted for numeric parameters. "
                       f"Fix: pass a number, e.g. {ctx.spec.name}={ctx.spec.default!r}.")
    if not isinstance(value, numbers.Real):
        raise ctx.fail(value, "a number", show_type=True)
    out = float(value)
    if not math.isfinite(out):
        raise ctx.fail(value, "a finite number")
    return out


def _as_int(ctx: _Ctx, value: object) -> int:
    if _is_bool(value):
        raise ctx.fail(value, "an int", "Booleans are not accepted for numeric parameters. "
                       f"Fix: pass an int, e.g. {ctx.spec.name}={ctx.spec.default!r}.")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isfinite(f) and f.is_integer():
            return int(f)
        raise ctx.fail(value, "a whole number")
    raise ctx.fail(value, "an int", show_type=True)


def _check_bounds(ctx: _Ctx, value: float | int, raw: object) -> None:
    """Raise when ``value`` lies outside the spec's bounds (the error shows ``raw``)."""
    spec = ctx.spec
    if spec.low is not None:
        if (value <= spec.low) if spec.low_open else (value < spec.low):
            op = ">" if spec.low_open else ">="
            raise ctx.fail(raw, f"{op} {_num(spec.low)}")
    if spec.high is not None:
        if (value >= spec.high) if spec.high_open else (value > spec.high):
            op = "<" if spec.high_open else "<="
            raise ctx.fail(raw, f"{op} {_num(spec.high)}")


def _as_choice(ctx: _Ctx, value: object) -> str:
    spec = ctx.spec
    if not isinstance(value, str):
        raise ctx.fail(value, "a str", show_type=True)
    if value in spec.rejected:
        raise ctx.explain(value, spec.rejected[value])
    if value not in spec.choices:
        close = _suggest(value, list(spec.choices) + list(spec.rejected))
        fix = (f"Fix: did you mean {spec.name}='{close}'?" if close
               else "Fix: pick one of the values listed.")
        raise ctx.fail(value, spec.describe_allowed(), fix)
    return str(value)


def _as_bool(ctx: _Ctx, value: object) -> bool:
    if _is_bool(value):
        return bool(value)
    if isinstance(value, numbers.Integral) and int(value) in (0, 1):
        return bool(int(value))
    raise ctx.fail(value, "a bool (True/False, or 1/0)")


def _as_metrics(ctx: _Ctx, value: object) -> list[str]:
    if isinstance(value, str):
        items: list[object] = [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
        if not items:
            raise ctx.fail(value, "a non-empty list of metric names",
                           "Fix: pass None to use the objective's default metric.")
    else:
        raise ctx.fail(value, "a metric name or a list of them", show_type=True)
    out: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ctx.fail(value, "a metric name or a list of metric names (str)")
        if item not in METRICS and not _METRIC_AT.match(item):
            close = _suggest(item.partition("@")[0], list(METRICS))
            fix = (f"Fix: did you mean eval_metric='{close}'?" if close
                   else "Fix: pick metrics from the names listed.")
            raise ctx.fail(item, "one of " + ", ".join(repr(m) for m in METRICS)
                           + " (or 'error@t', 'tweedie-nloglik@r' with a number, 'ndcg@k', "
                           "'map@k', 'pre@k', optionally with a trailing '-')", fix)
        if item not in out:
            out.append(item)
    return out


_DEVICE_RE = re.compile(r"^(cuda|gpu):(\d+)$")


def _as_budget(ctx: _Ctx, value: object) -> int | float:
    """Bytes (an int >= 1) or a fraction of free memory (a float in (0, 1])."""
    if _is_bool(value) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ctx.fail(value, ctx.spec.describe_allowed(), show_type=True)
    if isinstance(value, (int, np.integer)):
        if value < 1:
            raise ctx.fail(value, ctx.spec.describe_allowed())
        return int(value)
    if not (0.0 < float(value) <= 1.0):
        raise ctx.fail(value, ctx.spec.describe_allowed(),
                       "Fix: pass a byte count as an int (e.g. 2 * 2**30), or a fraction of "
                       "the free memory in (0, 1] as a float.")
    return float(value)


def _as_device(ctx: _Ctx, value: object) -> str:
    if not isinstance(value, str):
        raise ctx.fail(value, "a str", show_type=True)
    if value == "cpu" or value == "cuda":
        return value
    if value == "gpu":
        return "cuda"
    m = _DEVICE_RE.match(value)
    if m:
        return f"cuda:{int(m.group(2))}"
    close = _suggest(value, ["cpu", "cuda", "gpu"])
    hint = f" (did you mean device='{close}'?)" if close else ""
    raise ctx.fail(value, ctx.spec.describe_allowed(),
                   f"Fix: pass device='cpu', device='cuda' or device='cuda:0'{hint}.")


def _number_or_list(ctx: _Ctx, value: object, check, empty: str):
    """One number, or a non-empty list of them, each passed through ``check(number, given)``
    (which raises); a list of one is that number."""
    if isinstance(value, str) or not hasattr(value, "__len__"):
        out = _as_float(ctx, value)
        check(out, value)
        return out
    items = list(np.asarray(value, dtype=object).reshape(-1))
    if not items:
        raise ctx.fail(value, empty)
    outs = []
    for v in items:
        f = _as_float(ctx, v)
        check(f, v)
        outs.append(f)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _as_alphas(ctx: _Ctx, value: object) -> float | tuple[float, ...]:
    """One number, or a list of them (quantile_alpha's several quantiles: one model output
    each), each within the spec's bounds; a list of one is that number."""
    return _number_or_list(ctx, value, lambda f, v: _check_bounds(ctx, f, v),
                           "a number or a non-empty list of numbers")


def _as_scores(ctx: _Ctx, value: object) -> float | tuple[float, ...]:
    """base_score: one finite number, or a list of them (one per model output, XGBoost 3's
    vector intercept); a list of one is that number."""
    def finite(f, v):
        if not np.isfinite(f):
            raise ctx.fail(value, ctx.spec.describe_allowed())
    return _number_or_list(ctx, value, finite,
                           "a number or a non-empty list of numbers (one per output)")


def _as_weights(ctx: _Ctx, value: object) -> tuple[float, ...]:
    """feature_weights: a non-empty list of finite numbers >= 0, not all 0."""
    if isinstance(value, str) or not hasattr(value, "__len__"):
        raise ctx.fail(value, ctx.spec.describe_allowed())
    outs = tuple(_as_float(ctx, v) for v in np.asarray(value, dtype=object).reshape(-1))
    if not outs or not all(np.isfinite(w) and w >= 0 for w in outs) or max(outs) <= 0:
        raise ctx.fail(value, ctx.spec.describe_allowed())
    return outs


def _coerce(spec: ParamSpec, given: str, value: object) -> object:
    """Coerce and validate one non-None value of ``spec`` (spelled ``given`` by the user)."""
    ctx = _Ctx(spec, given)
    kind = spec.kind
    if kind in ("float", "int"):
        out: object = _as_float(ctx, value) if kind == "float" else _as_int(ctx, value)
        if out in spec.rejected:
            raise ctx.explain(value, spec.rejected[out])
        if out in spec.value_map:
            return spec.value_map[out]
        _check_bounds(ctx, out, value)  # type: ignore[arg-type]
        return out
    if kind == "choice":
        out = _as_choice(ctx, value)
        return spec.value_map.get(out, out)
    if kind == "bool":
        return _as_bool(ctx, value)
    if kind == "metrics":
        return _as_metrics(ctx, value)
    if kind == "device":
        return _as_device(ctx, value)
    if kind == "budget":
        return _as_budget(ctx, value)
    if kind == "alphas":
        return _as_alphas(ctx, value)
    if kind == "scores":
        return _as_scores(ctx, value)
    if kind == "weights":
        return _as_weights(ctx, value)
    # the constraints' syntax is the tree's (dgbdt.tree.constraints)
    if kind == "interactions":
        from ..tree.constraints import parse_interactions
        try:
            return parse_interactions(value)
        except ValueError as e:
            raise ctx.fail(value, ctx.spec.describe_allowed(), f"Fix: {e}.") from None
    if kind == "monotone":
        from ..tree.constraints import parse
        try:
            return parse(value)
        except ValueError as e:
            raise ctx.fail(value, ctx.spec.describe_allowed(), f"Fix: {e}.") from None
    raise AssertionError(f"unknown kind {kind!r} in schema")


def _unknown_name(name: str) -> ParameterError:
    if name in _NOT_PARAMS:
        return ParameterError(f"Unknown parameter '{name}': {_NOT_PARAMS[name]}.")
    candidates = list(SCHEMA) + list(ALIASES)
    close = _suggest(name, candidates)
    if close is not None:
        return ParameterError(f"Unknown parameter '{name}'. Did you mean '{close}'?")
    return ParameterError(f"Unknown parameter '{name}'. dgbdt accepts XGBoost's training "
                          f"parameter names; {_DOCS_HINT}.")


# --------------------------------------------------------------------------- public API

def normalize_params(params: Mapping[str, object] | None) -> dict[str, object]:
    """Validate ``params`` and return every canonical parameter with its value.

    Aliases are resolved to canonical names, defaults are filled in for everything
    missing (``None`` counts as missing), values are coerced to plain Python types and
    checked, and objective-dependent rules are applied (``num_class`` for ``multi:*``
    objectives, the ``(0, 1)`` range of ``base_score`` for logistic objectives).

    Raises :class:`ParameterError` on an unknown name, a bad value, or a canonical name
    and its alias given with different values.
    """
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise ParameterError(f"params must be a mapping (dict) of parameter names to values, "
                             f"got {type(params).__name__}. Fix: pass e.g. "
                             f"{{'max_depth': 6, 'eta': 0.3}}.")

    given: dict[str, tuple[str, object]] = {}  # canonical -> (spelling, normalized value)
    for name, raw in params.items():
        if not isinstance(name, str):
            raise ParameterError(f"Parameter names must be str, got {_show(name)} "
                                 f"({type(name).__name__}). Fix: use the XGBoost name as a "
                                 f"string; {_DOCS_HINT}.")
        canonical = name if name in SCHEMA else ALIASES.get(name)
        if canonical is None:
            raise _unknown_name(name)
        if raw is None:
            continue
        value = _coerce(SCHEMA[canonical], name, raw)
        if canonical in given:
            other, prev = given[canonical]
            if prev != value:
                raise ParameterError(
                    f"Conflicting values for {canonical}: '{other}'={_show(params[other])} "
                    f"and '{name}'={_show(raw)} name the same parameter. "
                    f"Fix: pass only one of '{other}' and '{name}'.")
        else:
            given[canonical] = (name, value)

    out: dict[str, object] = {name: spec.default for name, spec in SCHEMA.items()}
    for canonical, (_, value) in given.items():
        out[canonical] = value
    out["validate_parameters"] = True  # always validated, whatever was asked
    if out["objective"] == "count:poisson" and "max_delta_step" not in given:
        # XGBoost's learner sets 0.7 for count:poisson unless given: the objective's hessian
        # exp(m + max_delta_step) and the trees' leaf clipping share the name and the value
        out["max_delta_step"] = 0.7
    _check_objective_rules(out, given)
    _check_gblinear_rules(out, given)
    _check_growth_rules(out)
    _check_linear_rules(out)
    return out


def _check_linear_rules(out: dict[str, object]) -> None:
    """What linear_tree (piecewise-linear leaves) works with so far."""
    if not out["linear_tree"]:
        return
    if out["alpha"]:
        raise ParameterError(
            f"alpha={out['alpha']} with linear_tree=True: an L1 penalty on linear leaves is not "
            "built (their fit is a ridge). Fix: alpha=0 and regularize with lambda (the "
            "constant) and linear_lambda (the coefficients).")
    if out["max_delta_step"] and out["objective"] != "count:poisson":
        raise ParameterError(
            f"max_delta_step={out['max_delta_step']} with linear_tree=True: a linear leaf's "
            "value depends on the row, so it cannot be clipped as a constant leaf is. Fix: "
            "max_delta_step=0, or linear_tree=False.")
    if out["objective"] in ("reg:absoluteerror", "reg:quantileerror"):
        raise ParameterError(
            f"objective={out['objective']!r} with linear_tree=True: its leaves are set to "
            "quantiles of their rows' residuals, which linear leaves are not. Fix: "
            "linear_tree=False, or a Newton objective (e.g. reg:squarederror, "
            "reg:pseudohubererror).")
    if out["monotone_constraints"] is not None and any(
            c not in (0, "0") for c in (out["monotone_constraints"].values()
                                        if isinstance(out["monotone_constraints"], dict)
                                        else out["monotone_constraints"])):
        raise ParameterError(
            "monotone_constraints with linear_tree=True: bounding linear leaves is not "
            "built. Fix: drop monotone_constraints, or linear_tree=False.")


#: updater values of process_type="update" (dgbdt.tree.tree_updates)
TREE_UPDATERS = ("refresh", "prune", "refresh,prune", "prune,refresh")


def _check_gblinear_rules(out: dict[str, object], given: dict) -> None:
    """The updater's rules: a tree updater (refresh, prune) with process_type="update" only,
    and that process on gbtree only; XGBoost's gblinear defaults (eta 0.5, lambda 0, unless
    given) and the selectors its shotgun updater takes."""
    tree_updater = out["updater"] in TREE_UPDATERS
    if out["process_type"] == "update" and (out["booster"] != "gbtree" or not tree_updater):
        raise ParameterError(
            "process_type='update' updates the trees of a gbtree model (xgb_model): pass "
            "booster='gbtree' and updater='refresh', 'prune' or 'refresh,prune' (got booster="
            f"{out['booster']!r}, updater={out['updater']!r}).")
    if tree_updater and out["process_type"] != "update":
        raise ParameterError(
            f"updater={out['updater']!r} updates an existing model's trees: pass "
            "process_type='update' with xgb_model= (new trees grow as tree_method says).")
    if out["booster"] != "gblinear":
        return
    for name, default in (("eta", 0.5), ("lambda", 0.0)):
        if name not in given:
            out[name] = default
    if out["updater"] == "shotgun" and out["feature_selector"] not in ("cyclic", "shuffle"):
        raise ParameterError(
            f"feature_selector={out['feature_selector']!r} with updater='shotgun': XGBoost's "
            "shotgun updater takes 'cyclic' or 'shuffle' only. Fix: updater='coord_descent', "
            "or feature_selector='cyclic'.")


def _check_growth_rules(out: dict[str, object]) -> None:
    """max_depth=0 belongs to loss-guided growth; max_leaves caps both policies (a depth-wise
    tree's levels split in node order until the cap), not depth-wise linear trees."""
    lossguide = out["grow_policy"] == "lossguide"
    if out["max_depth"] == 0 and not (lossguide and out["max_leaves"]):
        raise ParameterError(
            "max_depth=0 means unlimited depth, which needs grow_policy=\"lossguide\" and a "
            f"leaf limit (got grow_policy={out['grow_policy']!r}, max_leaves="
            f"{out['max_leaves']}). Fix: a positive depth, e.g. max_depth=6 (the default), "
            "or grow_policy=\"lossguide\" with max_leaves > 0.")
    if out["max_leaves"] and not lossguide and out.get("linear_tree"):
        raise ParameterError(
            f"max_leaves={out['max_leaves']} with grow_policy={out['grow_policy']!r} and "
            "linear_tree: depth-wise linear trees have no leaf limit (not built). Fix: "
            "grow_policy=\"lossguide\", or drop max_leaves.")


def _check_objective_rules(out: dict[str, object], given: dict[str, tuple[str, object]]) -> None:
    """Cross-parameter checks that depend on the objective."""
    objective = out["objective"]
    num_class = out["num_class"]
    if objective in MULTI_OBJECTIVES:
        if num_class is None:
            raise ParameterError(
                f"num_class is required with objective='{objective}', got None. "
                f"Fix: pass num_class=<number of classes> (an int >= 2).")
        if num_class < 2:  # type: ignore[operator]
            raise ParameterError(
                f"num_class must be >= 2 with objective='{objective}', got {num_class}. "
                f"Fix: pass the number of classes, or use a binary:* objective for 2 classes.")
    elif num_class is not None:
        if num_class != 1:
            raise ParameterError(
                f"num_class must be None or 1 with objective='{objective}', got {num_class}. "
                f"Fix: use objective='multi:softprob' (or 'multi:softmax') for multiclass, "
                f"or drop num_class.")
        out["num_class"] = None

    base_score = out["base_score"]
    if base_score is not None and objective in PROBABILITY_BASE_SCORE:
        if not all(0.0 < b < 1.0 for b in np.atleast_1d(base_score)):
            via = given["base_score"][0]
            raise ParameterError(
                f"base_score must be strictly between 0 and 1 with objective='{objective}' "
                f"(it is a probability), got {base_score!r}"
                + (f" (passed as '{via}')" if via != "base_score" else "")
                + ". Fix: pass a probability such as 0.5, or base_score=None to estimate "
                  "it from the labels.")


def _md_value(value: object) -> str:
    return f"`{value!r}`" if value is not None else "`None`"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def parameters_markdown() -> str:
    """The parameter reference page (``docs/parameters.md``), generated from :data:`SCHEMA`."""
    lines = [
        "# Training parameters",
        "",
        "<!-- Generated by `python -m dgbdt.params > docs/parameters.md`; do not edit by hand. -->",
        "",
        "dgbdt takes XGBoost's parameter names. Every name and value is validated:",
        "unknown names fail with a did-you-mean suggestion, aliases map to the canonical",
        "name (giving a name and its alias with different values is an error), and",
        "`None` means \"not set\" (the default applies).",
        "",
        "| Parameter | Aliases | Default | Allowed |",
        "|---|---|---|---|",
    ]
    for spec in SCHEMA.values():
        aliases = ", ".join(f"`{a}`" for a in spec.aliases) or "-"
        lines.append(f"| [`{spec.name}`](#{spec.name}) | {aliases} | {_md_value(spec.default)} "
                     f"| {_md_cell(spec.describe_allowed())} |")
    lines.append("")
    for spec in SCHEMA.values():
        lines += [f"## {spec.name}", "", spec.doc, ""]
        lines.append(f"- Default: {_md_value(spec.default)}")
        if spec.aliases:
            lines.append("- Aliases: " + ", ".join(f"`{a}`" for a in spec.aliases))
        lines.append(f"- Allowed: {spec.describe_allowed()}")
        for value, text in spec.rejected.items():
            lines.append(f"- Not supported: `{value!r}`: {text}")
        lines.append("")
    return "\n".join(lines)

