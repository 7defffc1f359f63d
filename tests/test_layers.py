"""The package's layers (docs/architecture.md): the folder a module is in is its layer
(labkit/core, labkit/experiments, labkit/lab), and a module imports only from its own layer
and the layers below it. Within the core, the base modules (errors, the argument checks,
where results go, the build table, the struct layouts, the worker's entry point) import
nothing above themselves either. Read from the source with ast, so a function-local import
counts the same as one at the top."""
import ast
import functools
import re
from pathlib import Path

import pytest

from labkit import _moved

PACKAGE = Path(__file__).resolve().parent.parent / "labkit"

# Lowest first. The folders are the layers; "base" and "top" are the modules at labkit/.
BASE = {"errors", "_moved", "core.validate", "core.results", "core.native_build",
        "core.structs", "core._worker_main", "core.procfs"}
# labkit/__init__.py is the public API over the core (measure, catalogue, ...): the
# experiments and the lab may use it, the core may not.
API = {"__init__"}
TOP = {"__main__", "kernel_switch", "kernelinfo"}  # the last two: deprecated names
RANKS = {"base": 0, "core": 1, "api": 2, "experiments": 3, "lab": 4, "top": 5}


def _layer(name: str) -> str:
    """name: a module's path below labkit/ with dots, without .py (core.timing, errors)."""
    if name in BASE:
        return "base"
    if name in API:
        return "api"
    if name in TOP:
        return "top"
    head = name.split(".")[0]
    return head if head in ("core", "experiments", "lab") else "?"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")) + sorted(PACKAGE.rglob("*.pyx")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        if rel.parts[0] in ("bin", "shipped") or "__pycache__" in rel.parts:
            continue
        if rel.name == "__init__" and len(rel.parts) > 1:
            rel = rel.parent
        yield ".".join(rel.parts), path


def _imported(node) -> set[str]:
    """The labkit modules (as below labkit/, with dots) one import statement names."""
    found = set()
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if node.module == "labkit" or node.module.startswith("labkit."):
            base = node.module.split(".")[1:]
            if base:
                found.add(".".join(base))
            found |= {".".join([*base, a.name]) for a in node.names}
            if not base and any(a.name not in _module_names() for a in node.names):
                found.add("__init__")  # a name of the public API
    elif isinstance(node, ast.Import):
        found |= {a.name.split(".", 1)[1] if "." in a.name else "__init__"
                  for a in node.names if a.name.split(".")[0] == "labkit"}
    return found


def _imports(path: Path) -> set[str]:
    if path.suffix == ".pyx":
        text = path.read_text()
        return {m.replace("labkit.", "", 1) for m in re.findall(r"labkit(?:\.\w+)+", text)} | \
               {f"{pkg}.{m}" for pkg, m in re.findall(r"from labkit\.(\w+) import (\w+)", text)}
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        found |= _imported(node)
    # only names that are modules (or packages) of labkit; functions imported from them drop out
    return {n for n in found if n in _module_names()}


@functools.cache
def _module_names() -> set[str]:
    return {name for name, _ in _modules()}


def test_the_flat_package_is_gone():
    flat = sorted(p.name for p in PACKAGE.glob("*.py")
                  if p.stem not in TOP | API | BASE)
    assert not flat, f"put these modules in labkit/core, experiments or lab: {flat}"


def test_every_module_has_a_layer():
    missing = [name for name, _ in _modules() if _layer(name) == "?"]
    assert not missing, f"give these modules a layer (a folder, docs/architecture.md): {missing}"


def test_every_moved_name_still_resolves():
    for old, new in _moved.MOVED.items():
        if new.endswith(".procfs") and not (PACKAGE / "core" / "procfs.py").exists():
            continue
        rel = new.split(".", 1)[1].replace(".", "/")
        assert (PACKAGE / f"{rel}.py").exists() or (PACKAGE / rel / "__init__.py").exists() \
            or list((PACKAGE / rel).parent.glob(Path(rel).name + ".*.so")), old


@pytest.mark.parametrize("name, path", list(_modules()), ids=[n for n, _ in _modules()])
def test_imports_go_down_or_across_never_up(name, path):
    rank = RANKS[_layer(name)]
    up = sorted(m for m in _imports(path) - {name} if RANKS.get(_layer(m), -1) > rank)
    assert not up, (f"labkit.{name} ({_layer(name)}) imports from a higher layer: "
                    + ", ".join(f"{m} ({_layer(m)})" for m in up))


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of `graph` (module -> the modules it imports) as a path that ends
    where it starts, or [] when there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node):
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return []

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"lab.report": {"lab.reproduce"}, "lab.reproduce": {"lab.report"}}) \
        == ["lab.report", "lab.reproduce", "lab.report"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_no_import_circle():
    """No module imports one that imports it back, directly or through others, counting
    function-local imports too: a circle works only as long as the imports stay in the
    order they happen to be in today."""
    graph = {name: _imports(path) - {name} for name, path in _modules()}
    circle = _cycle(graph)
    assert not circle, "an import circle: " + " -> ".join(circle)
