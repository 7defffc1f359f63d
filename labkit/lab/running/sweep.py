"""Sweeps: run a measurement over a grid of parameters with a progress bar, saving what
was measured after every point, so that an interrupted or failing sweep keeps its results
and a resumed run (`labkit reproduce --resume`) measures only the points still missing.

Under `labkit reproduce` (LABKIT_PROGRESS names a file) the progress goes to that file,
which the terminal's status line reads, instead of a tqdm bar in the executed notebook."""
from __future__ import annotations

import itertools
import json
import os
import time
from typing import Callable

import pandas as pd
from tqdm.auto import tqdm

from labkit.core import results

PROGRESS_ENV = "LABKIT_PROGRESS"   # a file: {"desc", "done", "total", "started"}
RESUME_ENV = "LABKIT_RESUME"       # "1": skip the points already in the checkpoint


def _report_progress(desc: str, done: int, total: int, started: float) -> None:
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump({"desc": desc, "done": done, "total": total, "started": started}, f)
        os.replace(tmp, path)
    except OSError:
        pass  # progress is a courtesy: never let it stop a measurement


def _key(value) -> str:
    # Points are compared with the checkpoint's rows as text: a CSV round trip keeps that.
    return "" if value is None else str(value)


def _finished(checkpoint: str | None, points: list[dict]):
    """{point index: its rows} for the points already in the checkpoint (when resuming)."""
    if not checkpoint or os.environ.get(RESUME_ENV) != "1":
        return {}
    path = results.data_dir() / "checkpoints" / f"{checkpoint}.csv"
    if not path.exists():
        return {}
    typed = results.read_csv(path)
    text = results.read_csv(path, dtype=str, keep_default_na=False)
    done = {}
    for i, p in enumerate(points):
        if not all(k in text.columns for k in p):
            continue
        mask = pd.Series(True, index=text.index)
        if "error" in text.columns:  # a point that failed is tried again
            mask &= text["error"] == ""
        for k, v in p.items():
            mask &= text[k] == _key(v)
        if mask.any():
            done[i] = typed[mask.values].reset_index(drop=True)
    return done


def grid(**axes) -> list[dict]:
    """Every combination of the axes, in order: grid(a=[1, 2], b=["x"]) -> [{a:1,b:x}, {a:2,b:x}]."""
    for name, values in axes.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise TypeError(f"{name} must be a list of values, not {type(values).__name__}")
    keys = list(axes)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(axes[k] for k in keys))]


def sweep(measure_one: Callable[..., object], points: list[dict], *, desc: str = "sweep",
          checkpoint: str | None = None, on_error: str = "raise"):
    """Call measure_one(**point) for each point and concatenate the frames it returns,
    each tagged with the point's parameters. A tqdm progress bar shows the sweep.
    checkpoint: a name to save the partial frame to after every point (atomically), as
    data/checkpoints/<name>.csv: the notebook saves the finished frame itself.
    on_error="record" keeps going after a failing point and records its error in an
    `error` row; "raise" (default) stops, after saving what was measured.
    Ctrl-C stops the sweep and returns what was measured so far (also saved).
    With LABKIT_RESUME=1 (`labkit reproduce --resume`) the points already in the
    checkpoint are taken from it, not measured again."""
    if on_error not in ("raise", "record"):
        raise ValueError(f"on_error must be 'raise' or 'record'; got {on_error!r}")
    frames = []

    def save():
        if checkpoint and frames:
            results.save_csv(pd.concat(frames, ignore_index=True), checkpoint,
                             subdir="checkpoints")

    previous = _finished(checkpoint, points)
    started = time.time()
    quiet = bool(os.environ.get(PROGRESS_ENV))
    bar = tqdm(total=len(points), desc=desc, unit="pt", disable=quiet)
    try:
        for i, p in enumerate(points):
            _report_progress(desc, i, len(points), started)
            if i in previous:  # measured before the interrupt: kept, not measured again
                frames.append(previous[i])
                bar.update(1)
                continue
            bar.set_postfix({k: v for k, v in p.items()}, refresh=False)
            try:
                df = measure_one(**p)
            except KeyboardInterrupt:
                raise
            except Exception as exc:
                if on_error == "raise":
                    save()
                    raise
                df = pd.DataFrame([{"error": f"{type(exc).__name__}: {exc}"}])
            for k, v in p.items():
                if k not in df.columns:
                    df[k] = v
            frames.append(df)
            save()
            bar.update(1)
        _report_progress(desc, len(points), len(points), started)
    except KeyboardInterrupt:
        print(f"interrupted: kept {len(frames)} of {len(points)} points")
        if quiet:
            raise  # under `labkit reproduce` the run stops here; the checkpoint is saved
    finally:
        bar.close()
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def for_notebook(notebook: str) -> Callable[..., object]:
    """sweep() as the experiments' own sweeps take it (labkit.experiments imports nothing
    of the lab, so it is handed in): `run(measure_one, points, desc=..., checkpoint=PART)`
    saves to data/checkpoints/<notebook>_<PART>.csv (<notebook>.csv without a PART)."""
    def run(measure_one, points, *, desc: str = "sweep", checkpoint: str | None = None,
            on_error: str = "raise"):
        name = f"{notebook}_{checkpoint}" if checkpoint else notebook
        return sweep(measure_one, points, desc=desc, checkpoint=name, on_error=on_error)

    return run
