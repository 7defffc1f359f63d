"""What `labkit compare` compares: each side is a catalogue entry, an entry at a build
(`asm_fpu@O3`), a user's switch (added in this process first), or a bundle or results
folder (its saved verdict runs)."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import labkit
from labkit.core import entries, native
from labkit.errors import ParameterError
from labkit.errors import UserSwitchError


@dataclass(frozen=True)
class Side:
    """label: how the answer names it (the `side` column of the runs). A live side has an
    entry (and a build, or None: the entry's default); a saved one a path."""
    label: str
    entry: str | None = None
    build: str | None = None
    path: Path | None = None

    @property
    def live(self) -> bool:
        return self.path is None

    def measuring(self, *, switches: int, cpu: int | None):
        """A function of `repeats=` timing this side in the current worker (the design's
        fresh process)."""
        return functools.partial(labkit.measure, self.entry, switches=switches, cpu=cpu,
                                 build=self.build)


def _looks_like_path(text: str) -> bool:
    return os.sep in text or text.startswith(".") or Path(text).exists()


def parse(text) -> Side:
    """One side from its text; a ParameterError naming `sides` when it is none of them."""
    if not isinstance(text, str) or not text:
        raise ParameterError("sides", f"must each be an entry, ENTRY@BUILD or a folder; "
                             f"got {text!r}")
    if _looks_like_path(text):
        path = Path(text)
        if not path.is_dir():
            raise ParameterError("sides", f"{text}: no such bundle or results folder")
        return Side(text, path=path)
    entry, _, build = text.partition("@")
    return check_live(Side(text, entry=entry, build=build or None))


def check_live(side: Side) -> Side:
    """The side, if its entry runs here and its build exists."""
    try:
        entries.check_name(side.entry)
    except ValueError as exc:
        said = str(exc).removeprefix("entry ")
        raise ParameterError("sides", f"{side.label}: {said} (`labkit catalogue` lists "
                             "them)") from exc
    if side.build is not None and side.build not in native.builds():
        raise ParameterError("sides", f"{side.label}: the build must be one of "
                             f"{', '.join(native.builds())}; got {side.build!r}")
    return side


def user_switch(source=None, python=None) -> Side:
    """A user's switch, built (source), checked and added to this process's catalogue, as
    `labkit measure --source/--python` does; its side is named by its entry."""
    param = "source" if source is not None else "python"
    try:
        entry = labkit.add_switch(source, python=python)
    except UserSwitchError as exc:  # built, but failed a check: the first line says which
        said = (str(exc).strip().splitlines() or [""])[0]
        raise ParameterError(param, f"{source or python}: {said}") from exc
    except ValueError as exc:  # not found, not built, not importable
        said = (str(exc).strip().splitlines() or [""])[0].removeprefix(param + " ")
        raise ParameterError(param, said) from exc
    return Side(entry, entry=entry)


def gather(texts, *, sources=(), pythons=()) -> list[Side]:
    """Every side, in the order given (the positional ones, then --source, then
    --python): at least two, each once, all live or all saved."""
    sides = [parse(t) for t in texts or ()]
    sides += [user_switch(source=s) for s in sources or ()]
    sides += [user_switch(python=p) for p in pythons or ()]
    labels = [s.label for s in sides]
    if len(sides) < 2:
        raise ParameterError("sides", f"must name at least two things to compare; got "
                             f"{labels or 'none'}")
    if len(set(labels)) != len(labels):
        raise ParameterError("sides", f"must name each side once; got {labels}")
    if len({s.live for s in sides}) > 1:
        raise ParameterError("sides", "must be all live (entries, builds, switches) or all "
                             "saved (bundles or results folders): a saved run and a live one "
                             "were not measured by the same design")
    return sides
