"""Synthetic registries for scale figures: many bundles made from real ones by resampling
their processes, labelled synthetic, written only to a scratch store.

Each synthetic bundle starts from a real bundle as publish.prepare() stores it (its
verdicts recomputed there, once per template) and resamples, with replacement, the fresh
processes of each verdict design (whole `worker`s of verdict_runs, renumbered) and the
repeats of each measured design (rows of measurements within notebook and entry). Its
verdicts are the template's, marked `synthetic: the template's verdicts, not recomputed`:
the figures these stores give are of storage and queries, not of verdicts. Its machine
record says synthetic = True and carries a made-up machine id; everything else about the
hardware is the template's.

A store is scratch when it is empty or holds only synthetic bundles; synthesise() refuses
any other, so a real registry never receives one.
"""
from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

from labkit.lab.registry import publish
from labkit.lab.registry import store as stores

CHECK = "synthetic: the template's verdicts, not recomputed"


def _frames(files: dict) -> dict:
    import pandas as pd

    return {name: pd.read_parquet(io.BytesIO(data)) for name, data in files.items()}


def templates(paths) -> list[dict]:
    """Each real bundle as the registry would store it: {name: DataFrame} of its files,
    and its `format`."""
    out = []
    for p in paths:
        rel, files, _ = publish.prepare(p)
        frames = _frames(files)
        frames["format"] = rel.split("format=", 1)[1].split("/", 1)[0]
        out.append(frames)
    if not out:
        raise ValueError("paths must name at least one bundle")
    return out


def _resample_runs(runs, rng):
    import numpy as np
    import pandas as pd

    parts = []
    for nb, g in runs.groupby("notebook", sort=False):
        workers = g.worker.unique()
        chosen = rng.choice(workers, size=len(workers), replace=True)
        by = {w: f for w, f in g.groupby("worker", sort=False)}
        parts += [by[w].assign(worker=np.int64(i)) for i, w in enumerate(chosen)]
    return pd.concat(parts, ignore_index=True)


def _resample_rows(frame, rng):
    import numpy as np

    keys = [k for k in ("notebook", "entry") if k in frame]
    idx = []
    for _, g in frame.groupby(keys, sort=False, dropna=False):
        idx.append(rng.choice(g.index.to_numpy(), size=len(g), replace=True))
    return frame.loc[np.concatenate(idx)].reset_index(drop=True)


def one(template: dict, i: int, rng) -> tuple[str, dict]:
    """The i-th synthetic bundle from a template: (rel_dir, files)."""
    machine = template["machine.parquet"].copy()
    files = {}
    m = _resample_rows(template["measurements.parquet"], rng)
    files["measurements.parquet"] = _bytes(m)
    if "verdict_runs.parquet" in template:
        files["verdict_runs.parquet"] = _bytes(_resample_runs(template["verdict_runs.parquet"],
                                                              rng))
    v = template["verdicts.parquet"].copy()
    v["check"] = CHECK
    files["verdicts.parquet"] = _bytes(v)
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + files[name])
    digest = h.hexdigest()
    mid = hashlib.sha256(f"labkit synthetic machine {i}".encode()).hexdigest()[:12]
    machine = machine.assign(machine_id=mid, content_hash=digest, synthetic=True,
                             recomputed=0, created=f"2026-01-01T00:00:{i % 60:02d}+00:00")
    files[stores.MARKER] = _bytes(machine)
    r = machine.iloc[0]
    mode = "quick" if bool(r.quick) else "full"
    commit = str(r.labkit_commit).removesuffix("-dirty")
    fmt = template["format"]
    rel = f"run_mode={mode}/format={fmt}/commit={commit}/machine={mid}/bundle={digest[:16]}"
    return rel, files


def _bytes(df) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def check_scratch(store: stores.Store) -> None:
    """ValueError unless the store is empty or holds only synthetic bundles."""
    if not store.bundles():
        return
    con = store.connect()
    try:
        real = con.execute(
            f"SELECT count(*) FROM read_parquet('{store.glob('machine')}', union_by_name = true) "
            "WHERE NOT coalesce(CAST(synthetic AS BOOLEAN), false)").fetchone()[0]
    finally:
        con.close()
    if real:
        raise ValueError(f"store {store.describe()} holds {real} real bundles: synthetic "
                         "bundles go only to a scratch store (empty or synthetic)")


def synthesise(scratch, paths, n: int, *, seed: int = 0, start: int = 0) -> int:
    """Write n synthetic bundles (numbered from start) made from the bundles at `paths`
    into the scratch store; returns how many were written."""
    import numpy as np

    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    store = scratch if isinstance(scratch, stores.Store) else stores.open_store(scratch)
    if store.kind == "local" and not Path(store.root).exists():
        os.makedirs(store.root)
    check_scratch(store)
    temps = templates(paths)
    rng = np.random.default_rng(seed)
    for i in range(start, start + n):
        rel, files = one(temps[i % len(temps)], i, rng)
        store.put(rel, files)
    return n
