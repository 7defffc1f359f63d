"""A notebook's last finished results, set aside while it runs again: put back whole if the
run fails or is interrupted, dropped once it finishes. A notebook writes each file
atomically, but it writes several, so without this a run stopped half-way would leave some
of its files new and some old. Its sweep checkpoints are not touched: they are how an
interrupted run goes on."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from labkit.core import results

ASIDE = "last_finished"  # in data/checkpoints/: a notebook's last finished results
UNFINISHED = "unfinished"  # in data/checkpoints/: what a failed or interrupted run wrote
LIST = "files.json"  # written last: a set aside without it was never whole


def _folder(kind: str, notebook: str) -> Path:
    return results.data_dir() / "checkpoints" / kind / notebook


def owned(notebook: str) -> list[Path]:
    """The notebook's results as they are now: its data files (data/<notebook>.csv,
    data/<notebook>_*.csv and any other its record names, experiment.files) and its
    figures (figures/<notebook>-*)."""
    from labkit.lab import experiment

    d = results.data_dir()
    names = {notebook, *(p.stem for p in d.glob(f"{notebook}_*.csv"))}
    if notebook in experiment.RECORDS:
        names.update(experiment.of(notebook).files())
    figures = [p for p in results.figures_dir().glob(f"{notebook}-*")
               if p.suffix in (".png", ".svg")]
    return sorted(p for p in [d / f"{n}.csv" for n in names] + figures if p.is_file())


def set_aside(notebook: str) -> int:
    """Before `notebook` runs: keep a copy of its results as they are. A set left by a run
    that died before it could put it back is put back first. Returns how many files were
    kept."""
    if (_folder(ASIDE, notebook) / LIST).exists():
        put_back(notebook)
    home = _folder(ASIDE, notebook)
    shutil.rmtree(home, ignore_errors=True)
    root = results.root()
    kept = []
    for path in owned(notebook):
        rel = path.relative_to(root)
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, home / rel)  # not a hard link: a file rewritten in place would reach it
        kept.append(rel.as_posix())
    home.mkdir(parents=True, exist_ok=True)
    with results.atomic_path(home / LIST) as tmp:
        tmp.write_text(json.dumps(kept, indent=1))
    return len(kept)


def put_back(notebook: str) -> int:
    """After a run of `notebook` that did not finish: its results as its last finished run
    left them. What this run wrote goes to data/checkpoints/unfinished/<notebook>/, set
    aside rather than deleted. Returns how many files were put back; without a whole set
    aside nothing is changed."""
    home = _folder(ASIDE, notebook)
    if not (home / LIST).exists():
        shutil.rmtree(home, ignore_errors=True)
        return 0
    kept = json.loads((home / LIST).read_text())
    root = results.root()
    unfinished = _folder(UNFINISHED, notebook)
    shutil.rmtree(unfinished, ignore_errors=True)
    for path in owned(notebook):
        rel = path.relative_to(root)
        (unfinished / rel).parent.mkdir(parents=True, exist_ok=True)
        path.replace(unfinished / rel)
    back = 0
    for rel in sorted(kept):
        if (home / rel).exists():  # else: put back already, by a call that was cut short
            os.replace(home / rel, root / rel)
            back += 1
    shutil.rmtree(home)
    return back


def drop(notebook: str) -> None:
    """After `notebook` finished: its new results stand, and the old ones are let go."""
    shutil.rmtree(_folder(ASIDE, notebook), ignore_errors=True)
