"""The package's layers (docs/architecture.md): a module imports only from its own layer
and the layers below it, and every module has a layer. Read from the source with ast, so a
function-local import counts the same as one at the top."""
import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "labkit"

# Lowest first. Keep in step with docs/architecture.md.
LAYERS = {
    "base": ["errors", "validate", "results", "native_build", "_worker_main", "procfs"],
    "core": ["_core", "native", "worker", "machine", "entries", "timing", "checks", "pypeers",
             "handoff", "stats", "plots"],
    "experiments": ["callgrind", "frames", "frequency", "echo", "design"],
    "lab": ["verdicts", "claim_rules", "stability", "ledger", "articles", "report", "sweep",
            "reproduce", "bundle", "explore", "workshop", "notebook_index", "room",
            "room_suite", "room_tls", "cli", "__main__", "__init__",
            # deprecated names, kept for one release
            "kernel_switch", "kernelinfo"],
}
RANK = {m: i for i, mods in enumerate(LAYERS.values()) for m in mods}
LAYER_NAME = {m: name for name, mods in LAYERS.items() for m in mods}


def _modules():
    for path in sorted(PACKAGE.glob("*.py")) + sorted(PACKAGE.glob("*.pyx")):
        yield path.stem, path
    for path in sorted(PACKAGE.glob("*/__init__.py")):
        yield path.parent.name, path.parent


def _imports(path: Path) -> set[str]:
    """The labkit modules that `path` (a file, or a subpackage's folder) imports."""
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
    found = set()
    for f in files:
        if f.suffix == ".pyx":
            text = f.read_text()
            found |= {m for m in RANK if f"from labkit import {m}" in text
                      or f"labkit.{m} " in text}
            continue
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                parts = node.module.split(".")
                if parts[0] != "labkit":
                    continue
                if len(parts) > 1:
                    found.add(parts[1])
                else:
                    found |= {a.name for a in node.names if a.name in RANK}
            elif isinstance(node, ast.Import):
                for a in node.names:
                    parts = a.name.split(".")
                    if parts[0] == "labkit" and len(parts) > 1:
                        found.add(parts[1])
    return found


def test_every_module_has_a_layer():
    missing = [name for name, _ in _modules() if name not in RANK]
    assert not missing, f"give these modules a layer in tests/test_layers.py and docs/architecture.md: {missing}"


@pytest.mark.parametrize("name, path", list(_modules()), ids=[n for n, _ in _modules()])
def test_imports_go_down_or_across_never_up(name, path):
    if name not in RANK:
        pytest.skip("no layer (see test_every_module_has_a_layer)")
    up = sorted(m for m in _imports(path) - {name} if m in RANK and RANK[m] > RANK[name])
    assert not up, (f"labkit.{name} ({LAYER_NAME[name]}) imports from a higher layer: "
                    + ", ".join(f"{m} ({LAYER_NAME[m]})" for m in up))
