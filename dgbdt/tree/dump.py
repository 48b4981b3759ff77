"""Trees as text, JSON and a table, in XGBoost's dump formats (Booster.get_dump and
Booster.trees_to_dataframe), so scripts that read XGBoost's dumps read dgbdt's.

Text, one string per tree, nodes depth first (a node, then its "yes" subtree, then its "no"
subtree), indented by a tab per level; numbers with 9 significant digits as XGBoost prints them::

    0:[f0<0.104900114] yes=1,no=2,missing=2
    \t1:leaf=-0.50247246
    \t2:leaf=0.697056949

``yes`` is the child of ``x < split``, ``missing`` the default child; ``with_stats`` adds the
split's gain and every node's cover (hessian sum).
"""
from __future__ import annotations

import json

import numpy as np

from .model import Tree


def _g(v) -> str:
    return f"{float(np.float32(v)):.9g}"


def _leaf(tree: Tree, n: int) -> str:
    """A leaf's value as XGBoost prints it: a number, or a vector leaf's ``[a, b, ...]``."""
    if tree.vector is None:
        return _g(tree.threshold[n])
    return "[" + ", ".join(_g(v) for v in tree.vector[n]) + "]"


def _no_stats(tree: Tree, with_stats: bool) -> None:
    if with_stats and tree.vector is not None:      # (XGBoost 3.2 refuses them too)
        raise NotImplementedError("a tree dump with statistics (with_stats) of a vector-leaf "
                                  "tree (multi_strategy='multi_output_tree') is not "
                                  "implemented. Fix: with_stats=False")


def _order(tree: Tree) -> list[tuple[int, int]]:
    """(node, depth) depth first: a node, its left (yes) subtree, its right (no) subtree."""
    out, stack = [], [(0, 0)]
    while stack:
        n, d = stack.pop()
        out.append((n, d))
        if tree.left[n] != -1:
            stack.append((int(tree.right[n]), d + 1))
            stack.append((int(tree.left[n]), d + 1))
    return out


def _missing(tree: Tree, n: int) -> int:
    return int(tree.left[n] if tree.default_left[n] else tree.right[n])


def _set(tree: Tree, n: int):
    """The categories a categorical split sends right, as a list, or None for a numerical
    split. XGBoost's dumps show that set with yes = the right child, no = the left."""
    cats = tree.categories.get(n) if tree.categories else None
    return None if cats is None else [int(c) for c in cats]


def escape(name: str) -> str:
    """A feature name as XGBoost's text and dot dumps print it: JSON's string escapes
    (``"`` as ``\\"``, a tab as ``\\t``, a newline as ``\\n``), so a dump stays one line a node."""
    return json.dumps(str(name), ensure_ascii=False)[1:-1]


def text(tree: Tree, names: list[str], with_stats: bool) -> str:
    _no_stats(tree, with_stats)
    names = [escape(n) for n in names]
    lines = []
    for n, d in _order(tree):
        pad = "\t" * d
        if tree.left[n] == -1:
            s = f"{pad}{n}:leaf={_leaf(tree, n)}"
            if with_stats:
                s += f",cover={_g(tree.sum_hessian[n])}"
        elif _set(tree, n) is not None:
            s = (f"{pad}{n}:[{names[tree.feature[n]]}:{{{','.join(map(str, _set(tree, n)))}}}] "
                 f"yes={int(tree.right[n])},no={int(tree.left[n])},missing={_missing(tree, n)}")
        else:
            s = (f"{pad}{n}:[{names[tree.feature[n]]}<{_g(tree.threshold[n])}] "
                 f"yes={int(tree.left[n])},no={int(tree.right[n])},missing={_missing(tree, n)}")
        if tree.left[n] != -1 and with_stats:
            s += f",gain={_g(tree.loss_change[n])},cover={_g(tree.sum_hessian[n])}"
        lines.append(s)
    return "\n".join(lines) + "\n"


def dot(tree: Tree, names: list[str], with_stats: bool, graph_attrs: dict | None = None,
        yes_color: str = "#FF0000", no_color: str = "#0000FF",
        condition_node_params: dict | None = None,
        leaf_node_params: dict | None = None) -> str:
    """One tree as a graphviz ``digraph`` in XGBoost's dot dump layout: nodes depth first,
    a split labeled ``feature<threshold`` (a categorical one ``feature:{codes}``, its "yes"
    edge to the right child), a leaf ``leaf=value``, ``with_stats`` adding gain and cover on
    new lines; edges labeled yes / no, ", missing" on the default side, colored
    ``yes_color`` / ``no_color``. ``graph_attrs`` and the node parameter dicts become
    graphviz attributes (``key="value"``)."""
    def attrs(params):
        return "".join(f'{k}="{v}" ' for k, v in (params or {}).items())

    _no_stats(tree, with_stats)
    names = [escape(n) for n in names]
    out = ["digraph {", "    graph [ rankdir=TB ]"]
    out += [f'    graph [ {k}="{v}" ]' for k, v in (graph_attrs or {}).items()]
    out.append("")
    for n, _ in _order(tree):
        if tree.left[n] == -1:
            label = f"leaf={_leaf(tree, n)}"
            if with_stats:
                label += f"\ncover={_g(tree.sum_hessian[n])}"
            out += [f'    {n} [ label="{label}" {attrs(leaf_node_params)}]', ""]
            continue
        cats = _set(tree, n)
        label = (f"{names[tree.feature[n]]}<{_g(tree.threshold[n])}" if cats is None else
                 f"{names[tree.feature[n]]}:{{{','.join(map(str, cats))}}}")
        if with_stats:
            label += f"\ngain={_g(tree.loss_change[n])}\ncover={_g(tree.sum_hessian[n])}"
        out.append(f'    {n} [ label="{label}" {attrs(condition_node_params)}]')
        left, right, miss = int(tree.left[n]), int(tree.right[n]), _missing(tree, n)
        yes = left if cats is None else right       # a category set sends "yes" right
        for c in (left, right):
            word, color = ("yes", yes_color) if c == yes else ("no", no_color)
            word += ", missing" if c == miss else ""
            out.append(f'    {n} -> {c} [label="{word}" color="{color}"]')
        out.append("")
    out[-1] = "}"
    return "\n".join(out)


def as_json(tree: Tree, names: list[str], with_stats: bool) -> str:
    _no_stats(tree, with_stats)

    def node(n: int, d: int) -> dict:
        if tree.left[n] == -1:
            out = {"nodeid": n, "leaf": float(np.float32(tree.threshold[n])) if tree.vector
                   is None else [float(v) for v in tree.vector[n]]}
            if with_stats:
                out["cover"] = float(np.float32(tree.sum_hessian[n]))
            return out
        cats = _set(tree, n)
        yes, no = (tree.left[n], tree.right[n]) if cats is None else (tree.right[n], tree.left[n])
        out = {"nodeid": n, "depth": d, "split": names[tree.feature[n]],
               "split_condition": float(np.float32(tree.threshold[n])) if cats is None else cats,
               "yes": int(yes), "no": int(no), "missing": _missing(tree, n)}
        if with_stats:
            out["gain"] = float(np.float32(tree.loss_change[n]))
            out["cover"] = float(np.float32(tree.sum_hessian[n]))
        out["children"] = [node(int(tree.left[n]), d + 1), node(int(tree.right[n]), d + 1)]
        return out
    return json.dumps(node(0, 0))


def dataframe(trees: list[Tree], names: list[str]):
    """XGBoost's trees_to_dataframe table: a row per node of every tree."""
    import pandas as pd

    rows = []
    for t, tree in enumerate(trees):
        _no_stats(tree, True)       # the table holds gain and cover
        for n in range(tree.n_nodes):
            leaf = tree.left[n] == -1
            cats = _set(tree, n)
            yes, no = (tree.left[n], tree.right[n]) if cats is None else (tree.right[n],
                                                                           tree.left[n])
            rows.append({
                "Tree": t, "Node": n, "ID": f"{t}-{n}",
                "Feature": "Leaf" if leaf else names[tree.feature[n]],
                "Split": np.nan if leaf or cats is not None else float(np.float32(
                    tree.threshold[n])),
                "Yes": np.nan if leaf else f"{t}-{int(yes)}",
                "No": np.nan if leaf else f"{t}-{int(no)}",
                "Missing": np.nan if leaf else f"{t}-{_missing(tree, n)}",
                "Gain": float(np.float32(tree.threshold[n] if leaf else tree.loss_change[n])),
                "Cover": float(np.float32(tree.sum_hessian[n])),
                # XGBoost's table holds the codes as strings (read back from its text dump)
                "Category": np.nan if cats is None else [str(c) for c in cats]})
    return pd.DataFrame(rows, columns=["Tree", "Node", "ID", "Feature", "Split", "Yes", "No",
                                       "Missing", "Gain", "Cover", "Category"])


def read_feature_map(path, names: list[str]) -> list[str]:
    """``names`` with those an XGBoost feature map file gives (``<id>\t<name>\t<type>``
    lines; ids outside the model are an error)."""
    out = list(names)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 2 or not parts[0].strip().isdigit():
                raise ValueError(f"{path}: line {n} is not '<id>\\t<name>\\t<type>'")
            i = int(parts[0])
            if i >= len(out):
                raise ValueError(f"{path}: line {n} names feature {i}; the model has "
                                 f"{len(out)} features")
            out[i] = parts[1]
    return out
