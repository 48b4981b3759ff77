"""The house as docs/architecture.md draws it: every module of dgbdt stands in the layers table
there, and no module imports from a layer above its own (so no circle between folders), read
from the sources' import statements."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import dgbdt

PKG = Path(dgbdt.__file__).parent
DOC = PKG.parent / "docs" / "architecture.md"
MAX_TOP_MODULES = 12


def _layers() -> dict[str, tuple[int, str]]:
    """{module path relative to dgbdt/: (layer, package)} from the doc's table rows
    ``| layer | `package/` or (top) | `a.py`, `b.py` | ... |``."""
    out = {}
    for line in DOC.read_text().splitlines():
        m = re.match(r"\| (\d+) \| (`([\w/]+)/`|\(top\)) \| ([^|]+) \|", line)
        if not m:
            continue
        layer, package = int(m.group(1)), m.group(3) or ""
        for name in re.findall(r"`([\w*./]+)`", m.group(4)):
            if name.endswith(".py"):
                out[str(Path(package) / name)] = (layer, package)
    return out


def _modules() -> list[str]:
    return sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
                  if "__pycache__" not in p.parts
                  and not (p.name == "__init__.py" and p.parent != PKG))


def _imports(path: Path):
    """(line, absolute dotted module) of every dgbdt import in the file, the names imported
    from a package counted as its submodules where they are files."""
    rel = path.relative_to(PKG.parent).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                sub = f"{mod}.{a.name}"
                is_file = (PKG.parent / (sub.replace(".", "/") + ".py")).is_file()
                yield node.lineno, sub if is_file else mod
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name


def _module_file(dotted: str) -> str | None:
    parts = dotted.split(".")[1:]
    for cand in (Path(*parts).with_suffix(".py") if parts else None,
                 Path(*parts, "__init__.py") if parts else Path("__init__.py")):
        if cand is not None and (PKG / cand).is_file():
            return str(cand)
    return None


def test_every_module_is_in_the_layers_table():
    table = _layers()
    assert len(table) > 100, "the layers table of docs/architecture.md was not found"
    missing = [m for m in _modules() if m not in table]
    assert not missing, f"modules missing from docs/architecture.md's layers table: {missing}"
    stale = [m for m in table if not (PKG / m).is_file()]
    assert not stale, f"docs/architecture.md lists modules that do not exist: {stale}"


def test_no_module_imports_from_a_layer_above_its_own():
    table = _layers()
    # a package's __init__.py stands in its package's layer
    layer_of = {m: layer for m, (layer, _) in table.items()}
    for m, (layer, package) in table.items():
        if package:
            layer_of.setdefault(str(Path(package) / "__init__.py"), layer)
    ups = []
    for mod in sorted(layer_of):
        if mod == "__init__.py" or not (PKG / mod).is_file():   # dgbdt's face hands names on
            continue
        here = layer_of[mod]
        for line, target in _imports(PKG / mod):
            if not (target == "dgbdt" or target.startswith("dgbdt.")):
                continue
            f = _module_file(target)
            if f is None or f == "__init__.py":
                continue
            if layer_of[f] > here:
                ups.append(f"{mod}:{line} imports {f} (layer {layer_of[f]} > {here})")
    assert not ups, "\n".join(ups)


def test_few_modules_at_the_top():
    top = [p.name for p in PKG.glob("*.py")]
    assert len(top) <= MAX_TOP_MODULES, top
