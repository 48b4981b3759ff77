"""A tree as flat arrays, in XGBoost's JSON layout, and its validated (de)serialization.

Node 0 is the root. For an internal node n: rows with ``x[feature[n]] < threshold[n]`` go to
``left[n]``, the others to ``right[n]``, missing values to ``left`` if ``default_left[n]``. A leaf
has ``left[n] == right[n] == -1`` and its value in ``threshold[n]`` (XGBoost's
``split_conditions`` holds both). ``base_weight`` is XGBoost's: a leaf's eta * w*, the
root's and an inner node's w* (times eta, the value its pruner gives a node it makes a
leaf); ``loss_change`` the split's gain, ``sum_hessian`` the node's hessian sum. Floats are
float32, as in XGBoost.

A categorical split (``categories[n]``: the sorted category codes it sends right; the others
go left, as XGBoost's ``Decision``; threshold 0) is stored in XGBoost's fields: ``split_type``
(1 for categorical nodes), ``categories_nodes`` (those nodes, ascending),
``categories_segments`` / ``categories_sizes`` (each one's run in ``categories``) and
``categories`` (the codes). Trees without categorical splits leave these fields out.

A piecewise-linear tree (``linear_tree``; dgbdt.kernels.linear_math) has ``linear_leaves``: one object
per leaf, ``{"node", "features", "coefs", "centers", "scales"}``: the leaf's value for row x is
``coefs[0] + sum_t coefs[t + 1] * (x[features[t]] - centers[t]) / scales[t]`` in float64, a
term left out where x[features[t]] is missing (its threshold holds coefs[0] as float32). Trees
with constant leaves leave the field out (model format version 3 added it).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


#: a model file's category codes stay below this (XGBoost's limit, 2^24): the kernels read a
#: split's categories as a bitset up to its largest code
MAX_CATEGORY_CODE = 1 << 24
#: features a model may name: split features are int32 in the kernels and the page layout
MAX_FEATURES = (1 << 31) - 1


class ModelFormatError(ValueError):
    """A model file that is not a valid dgbdt model (truncated, edited, another format)."""


_FIELDS = {  # JSON key -> (attribute, dtype)
    "left_children": ("left", np.int32),
    "right_children": ("right", np.int32),
    "parents": ("parent", np.int32),
    "split_indices": ("feature", np.int32),
    "split_conditions": ("threshold", np.float32),
    "default_left": ("default_left", np.bool_),
    "base_weights": ("base_weight", np.float32),
    "loss_changes": ("loss_change", np.float32),
    "sum_hessian": ("sum_hessian", np.float32),
}


_LINEAR_KEYS = ("features", "coefs", "centers", "scales")


class _PackedNodes:
    """node -> {key: 1-D array} as one array of nodes and, per key, the arrays back to back
    with their lengths and their dtype (``of``: None where a key's arrays differ in dtype or
    are not 1-D: such a dict pickles as it is). Unpacked arrays are copies."""

    def __init__(self, nodes, parts):
        self.nodes, self.parts = nodes, parts

    @classmethod
    def of(cls, by_node: dict, keys) -> "_PackedNodes | None":
        nodes = sorted(by_node)
        if not nodes or any(set(by_node[n]) != set(keys) for n in nodes):
            return None
        parts = {}
        for k in keys:
            arrays = [by_node[n][k] for n in nodes]
            if any(not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype != arrays[0].dtype
                   for a in arrays):
                return None
            parts[k] = (np.concatenate(arrays), np.array([len(a) for a in arrays], np.int64),
                        arrays[0].dtype)
        return cls(np.array(nodes, np.int64), parts)

    def unpack(self) -> dict:
        out = {int(n): {} for n in self.nodes}
        for k, (flat, sizes, dtype) in self.parts.items():
            ends = np.cumsum(sizes)
            for n, b, e in zip(out, (ends - sizes).tolist(), ends.tolist()):
                out[n][k] = flat[b:e].astype(dtype, copy=True)
        return out


@dataclass
class Tree:
    left: np.ndarray
    right: np.ndarray
    parent: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    base_weight: np.ndarray
    loss_change: np.ndarray
    sum_hessian: np.ndarray
    #: categorical splits: node -> int32 sorted codes going right; None without any
    categories: dict | None = None
    #: linear leaves: node -> {"features", "coefs", "centers", "scales"} (module doc;
    #: prediction: dgbdt.tree.linear_model); None for constant leaves
    linear: dict | None = None
    #: a vector-leaf tree's node weights, float32 [n_nodes, T] (dgbdt.tree.multi_target;
    #: its leaves' threshold is 0); None for a tree of one output
    vector: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        return int(self.left.shape[0])

    # Pickling (Dask sends models to its workers so): the per-node dicts of small arrays go as
    # a few flat arrays. Dask's serializer makes every numpy array its own frame, slow to
    # send for a linear model's many leaf arrays
    # (docs/benchmarks-archive.md#figures-behind-code-choices).
    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_per_target", None)      # prediction's views (dgbdt.tree.multi_target)
        if self.linear:
            state["linear"] = _PackedNodes.of(self.linear, _LINEAR_KEYS) or self.linear
        if self.categories:
            state["categories"] = _PackedNodes.of({n: {"codes": c}
                                                   for n, c in self.categories.items()},
                                                  ("codes",)) or self.categories
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        if isinstance(state.get("linear"), _PackedNodes):
            state["linear"] = state["linear"].unpack()
        if isinstance(state.get("categories"), _PackedNodes):
            state["categories"] = {n: d["codes"] for n, d in state["categories"].unpack().items()}
        self.__dict__.update(state)

    def is_leaf(self) -> np.ndarray:
        return self.left == -1

    def to_dict(self) -> dict:
        out = {}
        for key, (attr, dtype) in _FIELDS.items():
            arr = getattr(self, attr)
            if dtype is np.bool_:
                out[key] = [int(v) for v in arr]
            elif dtype is np.float32:
                out[key] = arr.astype(np.float64).tolist()  # exact, and repr round-trips
            else:
                out[key] = arr.tolist()
        if self.categories:
            nodes = sorted(self.categories)
            sizes = [len(self.categories[n]) for n in nodes]
            split_type = np.zeros(self.n_nodes, np.int64)
            split_type[nodes] = 1
            out["split_type"] = split_type.tolist()
            out["categories_nodes"] = nodes
            out["categories_segments"] = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(
                np.int64).tolist()
            out["categories_sizes"] = sizes
            out["categories"] = [int(c) for n in nodes for c in self.categories[n]]
        if self.linear:
            out["linear_leaves"] = linear_leaves_json(self.linear)
        if self.vector is not None:
            out["size_leaf_vector"] = int(self.vector.shape[1])
            out["leaf_vector"] = self.vector.astype(np.float64).ravel().tolist()
        return out

    @classmethod
    def from_dict(cls, d: dict, n_features: int, where: str) -> "Tree":
        if not isinstance(d, dict):
            raise ModelFormatError(f"{where}: expected an object, got {type(d).__name__}")
        arrays = {}
        n = None
        for key, (attr, dtype) in _FIELDS.items():
            if key not in d:
                raise ModelFormatError(f"{where}: missing field '{key}'")
            v = d[key]
            if not isinstance(v, list) or not all(
                    isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
                raise ModelFormatError(f"{where}: field '{key}' must be a list of numbers")
            if n is None:
                n = len(v)
            elif len(v) != n:
                raise ModelFormatError(
                    f"{where}: field '{key}' has {len(v)} entries, expected {n} (one per node)")
            arr = np.asarray(v, dtype=np.float64)
            if not np.all(np.isfinite(arr)):
                raise ModelFormatError(f"{where}: field '{key}' holds a non-finite number")
            if dtype is not np.float32 and np.any(arr != np.round(arr)):
                raise ModelFormatError(f"{where}: field '{key}' must hold integers")
            arrays[attr] = arr.astype(dtype)
        if not n:
            raise ModelFormatError(f"{where}: a tree needs at least one node")
        tree = cls(**arrays, categories=_categories_from(d, n, where))
        tree._check_structure(n_features, where)
        if "linear_leaves" in d:
            tree.linear = linear_leaves_from(d["linear_leaves"], tree, n_features, where)
        if "size_leaf_vector" in d or "leaf_vector" in d:
            tree.vector = _vector_from(d, n, where)
        return tree

    def _check_structure(self, n_features: int, where: str) -> None:
        """Children in range, each node reached exactly once from the root, features valid."""
        n = self.n_nodes
        leaf = self.left == -1
        if np.any(leaf != (self.right == -1)):
            raise ModelFormatError(f"{where}: a node has exactly one child")
        inner = ~leaf
        kids = np.concatenate([self.left[inner], self.right[inner]])
        if np.any(kids <= 0) or np.any(kids >= n):
            raise ModelFormatError(f"{where}: a child index is out of range [1, {n})")
        if len(np.unique(kids)) != kids.size or kids.size != n - 1:
            raise ModelFormatError(f"{where}: nodes do not form a tree (a node is shared or "
                                   "unreachable)")
        if np.any(self.left[inner] <= np.flatnonzero(inner)) or np.any(
                self.right[inner] <= np.flatnonzero(inner)):
            raise ModelFormatError(f"{where}: a child must come after its parent")
        f = self.feature[inner]
        if np.any(f < 0) or np.any(f >= n_features):
            raise ModelFormatError(f"{where}: a split feature is outside [0, {n_features})")


class PackedTrees:
    """A list of trees as one array a node field (their nodes back to back, ``sizes`` nodes a
    tree) and each tree's other state (Tree.__getstate__'s, without the node arrays): how a
    model crosses Dask (Booster.__getstate__). Dask's serializer makes every numpy array its
    own frame: a 200-tree model was 1,800 frames, 23-32 ms from a rank to the client (1x H200;
    docs/benchmarks.md). Unpacked arrays are copies."""

    def __init__(self, sizes: np.ndarray, fields: dict, rest: list):
        self.sizes, self.fields, self.rest = sizes, fields, rest

    @classmethod
    def of(cls, trees: list) -> "PackedTrees | None":
        """None where a tree is not a plain Tree with the node arrays' own dtypes (such a list
        pickles as it is)."""
        if not trees or any(type(t) is not Tree for t in trees):
            return None
        sizes = np.array([t.n_nodes for t in trees], np.int64)
        fields = {}
        for attr, dtype in _FIELDS.values():
            arrays = [getattr(t, attr) for t in trees]
            if any(not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != (n,)
                   for a, n in zip(arrays, sizes.tolist())):
                return None
            fields[attr] = np.concatenate(arrays)
        rest = [{k: v for k, v in t.__getstate__().items() if k not in fields} for t in trees]
        return cls(sizes, fields, rest)

    def unpack(self) -> list:
        ends = np.cumsum(self.sizes)
        out = []
        for b, e, rest in zip((ends - self.sizes).tolist(), ends.tolist(), self.rest):
            t = Tree.__new__(Tree)
            t.__setstate__({**{attr: flat[b:e].copy() for attr, flat in self.fields.items()},
                            **rest})
            out.append(t)
        return out


def _vector_from(d: dict, n: int, where: str) -> np.ndarray:
    """A vector-leaf tree's node weights float32 [n, T] from its ``size_leaf_vector`` T >= 2
    and ``leaf_vector`` (n * T numbers, node by node), validated."""
    T = d.get("size_leaf_vector")
    if not isinstance(T, int) or isinstance(T, bool) or T < 2:
        raise ModelFormatError(f"{where}: size_leaf_vector must be an integer >= 2 (the "
                               f"targets of a vector-leaf tree), got {T!r}")
    if d.get("categories_nodes") or d.get("linear_leaves"):
        raise ModelFormatError(f"{where}: a vector-leaf tree has neither categorical splits "
                               "nor linear leaves")
    v = finite_numbers(d.get("leaf_vector"), n * T, where,
                       f"leaf_vector ({T} values for each of the {n} nodes)")
    return v.reshape(n, T).astype(np.float32)


def _categories_from(d: dict, n: int, where: str) -> dict | None:
    """The categorical splits of a tree's JSON (the XGBoost fields in the module doc), or None
    when it has none; validated."""
    if not d.get("categories_nodes"):
        if any(int(v) != 0 for v in d.get("split_type", []) or []):
            raise ModelFormatError(f"{where}: split_type marks a categorical node but "
                                   "categories_nodes is empty")
        return None
    fields = {}
    for key in ("split_type", "categories_nodes", "categories_segments", "categories_sizes",
                "categories"):
        v = d.get(key)
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                              and x >= 0 for x in v):
            raise ModelFormatError(f"{where}: field '{key}' must be a list of integers >= 0")
        fields[key] = v
    nodes, seg, size = (fields["categories_nodes"], fields["categories_segments"],
                        fields["categories_sizes"])
    if len(fields["split_type"]) != n:
        raise ModelFormatError(f"{where}: field 'split_type' has {len(fields['split_type'])} "
                               f"entries, expected {n} (one per node)")
    if not (len(nodes) == len(seg) == len(size)) or any(x >= n for x in nodes):
        raise ModelFormatError(f"{where}: categories_nodes/segments/sizes do not match")
    if sorted(i for i, t in enumerate(fields["split_type"]) if t) != sorted(nodes):
        raise ModelFormatError(f"{where}: split_type and categories_nodes disagree")
    cats = fields["categories"]
    big = [c for c in cats if c >= MAX_CATEGORY_CODE]
    if big:
        # a split's category set is a bitset up to its largest code: bound what a file asks
        raise ModelFormatError(f"{where}: field 'categories' holds the code {big[0]}, beyond "
                               f"the {MAX_CATEGORY_CODE} codes (2^24, XGBoost's limit) a "
                               "categorical split may hold")
    out = {}
    for node, a, k in zip(nodes, seg, size):
        if a + k > len(cats):
            raise ModelFormatError(f"{where}: a category segment runs past 'categories'")
        out[int(node)] = np.asarray(sorted(cats[a:a + k]), dtype=np.int32)
    return out


def linear_leaves_json(linear: dict) -> list:
    """A tree's ``linear_leaves`` field: one object per leaf, by node (floats exact)."""
    return [{"node": int(n), "features": [int(f) for f in m["features"]],
             "coefs": [float(c) for c in m["coefs"]],
             "centers": [float(c) for c in m["centers"]],
             "scales": [float(s) for s in m["scales"]]}
            for n, m in sorted(linear.items())]


def finite_numbers(v, n, where, what, integer=False) -> np.ndarray:
    """A model file's list of ``n`` finite numbers (``integer``: whole ones) as float64, or
    a ModelFormatError naming ``where`` and ``what``."""
    if not isinstance(v, list) or len(v) != n or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise ModelFormatError(f"{where}: {what} must be a list of {n} numbers")
    a = np.asarray(v, dtype=np.float64)
    if not np.all(np.isfinite(a)) or (integer and np.any(a != np.round(a))):
        raise ModelFormatError(f"{where}: {what} holds a non-finite" +
                               (" or non-integer" if integer else "") + " number")
    return a


def linear_leaves_from(leaves, tree, n_features: int, where: str) -> dict:
    """The linear leaves of a tree's JSON (``linear_leaves``, dgbdt.tree.model's doc),
    validated against the tree (``tree``: its Tree, structure checked)."""
    if not isinstance(leaves, list):
        raise ModelFormatError(f"{where}: linear_leaves must be a list of objects")
    out = {}
    for i, m in enumerate(leaves):
        at = f"{where}: linear_leaves[{i}]"
        if not isinstance(m, dict) or not {"node", "features", "coefs", "centers",
                                           "scales"} <= set(m):
            raise ModelFormatError(f"{at} needs node, features, coefs, centers and scales")
        node = m["node"]
        if not isinstance(node, int) or isinstance(node, bool) or not 0 <= node < tree.n_nodes \
                or tree.left[node] != -1 or node in out:
            raise ModelFormatError(f"{at}: node {node!r} is not a leaf of the tree (or repeats)")
        feats = m["features"]
        d = len(feats) if isinstance(feats, list) else -1
        f = finite_numbers(feats, d, at, "features", integer=True).astype(np.int32)
        if np.any(f < 0) or np.any(f >= n_features) or len(np.unique(f)) != d:
            raise ModelFormatError(f"{at}: features must be distinct indices in "
                                   f"[0, {n_features})")
        coefs = finite_numbers(m["coefs"], d + 1, at, "coefs (one more than features)")
        centers = finite_numbers(m["centers"], d, at, "centers (one per feature)")
        scales = finite_numbers(m["scales"], d, at, "scales (one per feature)")
        if np.any(scales <= 0):
            raise ModelFormatError(f"{at}: scales must be > 0")
        out[int(node)] = {"features": f, "coefs": coefs, "centers": centers, "scales": scales}
    return out


def category_arrays(trees: list[Tree], n_nodes: int) -> dict:
    """The categorical splits of concatenated trees for kernels.cpu_categorical.
    predict_raw_cat: per node ``is_cat``, ``cat_begin``, ``cat_size`` and ``cats``, a byte per
    code 0..max of each set (1: the code goes right)."""
    is_cat = np.zeros(n_nodes, np.bool_)
    begin = np.zeros(n_nodes, np.int64)
    size = np.zeros(n_nodes, np.int64)
    parts, at, base = [], 0, 0
    for t in trees:
        for node, codes in sorted((t.categories or {}).items()):
            width = int(codes.max()) + 1 if codes.size else 0
            row = np.zeros(width, np.uint8)
            row[codes] = 1
            i = base + node
            is_cat[i], begin[i], size[i] = True, at, width
            parts.append(row)
            at += width
        base += t.n_nodes
    cats = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return {"is_cat": is_cat, "cat_begin": begin, "cat_size": size, "cats": cats}
