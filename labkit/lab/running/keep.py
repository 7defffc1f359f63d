"""A notebook's last finished results, copied aside while `labkit reproduce` runs it again:
put back whole if the run fails or is interrupted, dropped once it finishes. A notebook
writes each file atomically, but it writes several, so without this a run stopped half-way
would leave some of its files new and some old. Its sweep checkpoints are not touched: they
are how an interrupted run goes on."""
from __future__ import annotations

import filecmp
import json
import os
import shutil
from pathlib import Path

from labkit.core import results
from labkit.lab import experiment

COPY = "last_finished"  # in data/checkpoints/: the copy of a notebook's last finished results
UNFINISHED = "unfinished"  # in data/checkpoints/: what a run that did not finish changed
LIST = "files.json"  # written last and removed first: a copy without it is not a whole one
RUN = "_run"  # in the copy's folder while it is put back: the unfinished run's files


def _folder(kind: str, notebook: str) -> Path:
    return results.data_dir() / "checkpoints" / kind / notebook


def owned(notebook: str) -> list[Path]:
    """The notebook's results as they are now: data/<notebook>.csv, data/<notebook>_*.csv
    and the other data files its record names (experiment.files); figures/<notebook>-*
    and the figures of the article tables it shows (figures/articles-<key>.*)."""
    d, f = results.data_dir(), results.figures_dir()
    names = {notebook, *(p.stem for p in d.glob(f"{notebook}_*.csv"))}
    stems = [f"{notebook}-*"]
    if notebook in experiment.RECORDS:
        record = experiment.of(notebook)
        names.update(record.files())
        stems += [f"articles-{key}" for key in record.tables]
    figures = [p for stem in stems for p in f.glob(f"{stem}.*") if p.suffix in (".png", ".svg")]
    return sorted(p for p in [d / f"{n}.csv" for n in names] + figures if p.is_file())


def copy_aside(notebook: str) -> int:
    """Before `notebook` runs: copy its results aside; returns how many files. A copy left by
    a run that died before it could put it back is put back first (put_back)."""
    put_back(notebook)
    home = _folder(COPY, notebook)
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


def put_back(notebook: str) -> tuple[int, int]:
    """After a run of `notebook` that did not finish: its results as its last finished run
    left them. The files the run wrote or changed move to
    data/checkpoints/unfinished/<notebook>/. Returns (files put back, files moved). Cut
    short and called again, it goes on where it stopped."""
    home = _folder(COPY, notebook)
    back = moved = 0
    if (home / LIST).exists():
        kept = json.loads((home / LIST).read_text())
        root = results.root()
        for path in owned(notebook):
            rel = path.relative_to(root).as_posix()
            if rel in kept and (not (home / rel).exists()
                                or filecmp.cmp(path, home / rel, shallow=False)):
                continue  # put back already, or left as it was
            (home / RUN / rel).parent.mkdir(parents=True, exist_ok=True)
            path.replace(home / RUN / rel)
            moved += 1
        for rel in kept:
            if (home / rel).exists():
                os.replace(home / rel, root / rel)
                back += 1
        (home / LIST).unlink()
    if (home / RUN).is_dir():
        shutil.rmtree(_folder(UNFINISHED, notebook), ignore_errors=True)
        _folder(UNFINISHED, notebook).parent.mkdir(parents=True, exist_ok=True)
        (home / RUN).replace(_folder(UNFINISHED, notebook))
    shutil.rmtree(home, ignore_errors=True)
    return back, moved


def put_back_all() -> list[str]:
    """The notebooks whose copies a run that died left behind, each put back."""
    folder = results.data_dir() / "checkpoints" / COPY
    left = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    for notebook in left:
        put_back(notebook)
    return left


def drop(notebook: str) -> None:
    """After `notebook` finished: its new results stand, and the copy is let go."""
    home = _folder(COPY, notebook)
    (home / LIST).unlink(missing_ok=True)  # first: a drop cut short must not be put back
    shutil.rmtree(home, ignore_errors=True)
