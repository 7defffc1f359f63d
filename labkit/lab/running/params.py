"""Every notebook's parameters, read from its experiment's record (labkit.lab.experiment:
name, type, full value, quick value, what is allowed and one line of help;
labkit.lab.running.parameter.Param).

A notebook's `parameters` cell takes its values from here (`resolve`), and `labkit
reproduce` passes the values a run uses into the notebook (papermill's injected cell), so
what an executed notebook records is what it ran with. `-p NAME VALUE` is read by the
parameter's declared type (`parse`) and beats the quick value; a parameters file (`-f
params.yaml`, `read_file`: a YAML mapping NAME: VALUE, as papermill's) gives typed values,
checked the same way, and `-p` beats it.
"""
from __future__ import annotations

import pandas as pd
import yaml

from labkit.lab import experiment
from labkit.lab.running.parameter import Param

def tables() -> dict[str, tuple[Param, ...]]:
    """Every notebook's declared parameters: notebook name -> its record's Params."""
    return {name: e.params for name, e in experiment.RECORDS.items()}


def table(notebook) -> tuple[Param, ...]:
    """The declared parameters of one notebook (by name, or its record; ValueError for an
    unknown notebook)."""
    return experiment.of(notebook).params


def resolve(notebook: str, *, quick: bool = False, **overrides) -> dict:
    """Every parameter's value for one run of `notebook`, in the table's order: the quick
    or the full value, and any override beats both. An unknown name or a value outside
    what the table allows raises ValueError/TypeError naming the parameter."""
    if not isinstance(quick, bool):
        raise TypeError(f"quick must be True or False; got {quick!r}")
    params = {p.name: p for p in table(notebook)}
    unknown = sorted(set(overrides) - set(params))
    if unknown:
        raise ValueError(f"{experiment.of(notebook).name} has no parameter {unknown[0]!r}; its parameters: "
                         f"{list(params)}")
    return {name: p.check(overrides[name]) if name in overrides else
            (p.quick if quick else p.full) for name, p in params.items()}


def read_file(path) -> dict:
    """A parameters file: a YAML mapping NAME: VALUE (read with yaml.safe_load), as
    papermill's -f takes. ValueError, naming the file, for one that cannot be read, is not
    YAML, or is not such a mapping; an empty file sets nothing."""
    try:
        text = open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"-f {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") \
            from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"-f {path}: not valid YAML: {what}{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"-f {path}: must be a YAML mapping of NAME: VALUE; got a "
                         f"{type(data).__name__}")
    for name in data:
        if not isinstance(name, str):
            raise ValueError(f"-f {path}: every name must be a parameter's name (text); "
                             f"got {name!r}")
    return data


def parse(notebooks: list[str], given: list[tuple[str, str]],
          others: dict[str, set[str]] | None = None, *, file_values: dict | None = None,
          file=None) -> dict:
    """The values a run of `notebooks` is given, each checked by its declared type before
    anything runs: `file_values` from a parameters file (`file`, typed already), then the
    `-p NAME VALUE` pairs (`given`, text read by the declared type), which beat them. A
    name must be a parameter of at least one of the notebooks; a notebook without a table
    (`others`: its parameters cell's names) takes the value as papermill would. ValueError
    names the file or -p, the parameter and what is allowed."""
    others = others or {}
    declared = {p.name: p for nb in notebooks for p in tables().get(nb, ())}
    known = set(declared).union(*others.values())
    out = {}
    for name, value in (file_values or {}).items():
        out[name] = _one(notebooks, declared, known, name, value, f"-f {file}: {name}: ",
                         lambda p, v: _file_value(p, v, file), lambda v: v)
    for name, text in given:
        out[name] = _one(notebooks, declared, known, name, text, f"-p {name}: ",
                         lambda p, t: p.parse(t), papermill_value)
    return out


def _file_value(p: Param, value, file):
    try:
        return p.check(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"-f {file}: {exc}") from None


def _one(notebooks, declared, known, name, value, where, read, undeclared):
    """One value for `name`: read(p, value) for every declared parameter of that name (its
    ValueError says where), undeclared(value) for a notebook without a table; `where`
    starts the other messages."""
    if name == "quick":
        raise ValueError(f"{where}use --quick (it also keeps the results apart)")
    if name not in known:
        raise ValueError(f"{where}no notebook run here has that parameter; "
                         f"known: {sorted(known - {'quick'})}")
    if name not in declared:
        return undeclared(value)
    # One value goes to every notebook that has the name: each must accept it.
    having = [(nb, p) for nb in notebooks for p in tables().get(nb, ()) if p.name == name]
    for nb, p in having:
        try:
            out = read(p, value)
        except ValueError as exc:
            if len({q.allowed() for _, q in having}) == 1:
                raise
            raise ValueError(f"{exc} (in {nb})") from None
    return out


def papermill_value(text: str):
    """A -p value as papermill's command line reads it: int, float, True/False, None,
    else the text itself (for a notebook that declares no table)."""
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def describe(notebook: str, *, quick: bool = False):
    """The table of one notebook as a frame: name, value this mode, full, quick, allowed,
    help (what `params.describe("01_stack_size")` shows in JupyterLab)."""
    return pd.DataFrame([{"name": p.name, "value": p.quick if quick else p.full,
                          "full": p.full, "quick": p.quick, "allowed": p.allowed(),
                          "help": p.help} for p in table(notebook)])
