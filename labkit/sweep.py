"""Sweeps: run a measurement over a grid of parameters with a progress bar, saving what
was measured after every point, so that an interrupted or failing sweep keeps its results."""
from __future__ import annotations

import itertools
from typing import Callable


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
    Ctrl-C stops the sweep and returns what was measured so far (also saved)."""
    import pandas as pd
    from tqdm.auto import tqdm

    from labkit import results

    if on_error not in ("raise", "record"):
        raise ValueError(f"on_error must be 'raise' or 'record'; got {on_error!r}")
    frames = []

    def save():
        if checkpoint and frames:
            results.save_csv(pd.concat(frames, ignore_index=True), checkpoint,
                             subdir="checkpoints")

    bar = tqdm(points, desc=desc, unit="pt")
    try:
        for p in bar:
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
    except KeyboardInterrupt:
        print(f"interrupted: kept {len(frames)} of {len(points)} points")
    finally:
        bar.close()
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
