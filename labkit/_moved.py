"""The modules that moved into labkit.core, labkit.experiments and labkit.lab keep their
old names for one release: `import labkit.timing`, `from labkit.timing import x` and
`labkit.timing` still work, give the very module at its new place (so a monkeypatch of
either name patches both), and raise a DeprecationWarning that names the new place."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

LAYERS = {
    "core": ["_core", "native", "structs", "native_build", "worker", "_worker_main", "machine",
             "entries", "timing", "checks", "pypeers", "handoff", "stats", "plots", "validate",
             "results", "procfs"],
    "experiments": ["callgrind", "frames", "frequency", "echo", "design"],
    "lab": ["verdicts", "claim_rules", "stability", "ledger", "articles", "report", "sweep",
            "reproduce", "bundle", "explore", "workshop", "notebook_index", "room",
            "room_suite", "room_tls", "cli"],
}
MOVED = {f"labkit.{m}": f"labkit.{layer}.{m}" for layer, mods in LAYERS.items() for m in mods}


def new_name(old: str) -> str | None:
    """Where labkit.<name>[.<sub>] lives now, or None if it did not move."""
    head = ".".join(old.split(".")[:2])
    return MOVED[head] + old[len(head):] if head in MOVED else None


def load(old: str, stacklevel: int = 3):
    """The module `old` (labkit.<name>[.<sub>]) at its new place, with a DeprecationWarning."""
    new = new_name(old)
    warnings.warn(f"{old} is now {new}", DeprecationWarning, stacklevel=stacklevel)
    return importlib.import_module(new)


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # First on sys.meta_path: labkit.articles.tables must not be found again, as a second
    # module, in the moved package's folder.
    def find_spec(self, fullname, path=None, target=None):
        if new_name(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        return load(spec.name, stacklevel=6)

    def exec_module(self, module):
        pass  # already executed at its new name


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
