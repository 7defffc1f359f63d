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

Resampling is by row numbers drawn for each group at once (pyarrow's take), and the
bundles go straight into their folders, a batch at a time, each batch committed by one
compacted index file per partition written after its folders (labkit.lab.registry.index):
the publish path's staging and recomputation are what a real bundle needs, not a made one.

A store is scratch when it is empty or holds only synthetic bundles; synthesise() refuses
any other, so a real registry never receives one.
"""
from __future__ import annotations

import hashlib
import io
import os
import uuid
from pathlib import Path

import numpy as np
import pandas as pd

from labkit.lab.registry import index, publish
from labkit.lab.registry import store as stores
# pyarrow (the registry extra) is imported where used: it may be absent.

CHECK = "synthetic: the template's verdicts, not recomputed"
BATCH = 500  # bundles committed by one index file per partition


def _table(data: bytes):
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.read_table(pa.BufferReader(data))


def templates(paths) -> list[dict]:
    """Each real bundle as the registry would store it, ready to resample: its files as
    pyarrow tables and its `format`; the row numbers of each measured design (`groups`:
    notebook and entry) with its (notebook, entry) and ns per switch as numbers (`ladder`,
    for the index's ladder rows); the row numbers of each verdict design's processes
    (`runs`: a list per notebook of each worker's rows)."""
    out = []
    for p in paths:
        rel, files, _ = publish.prepare(p)
        t = {name: _table(data) for name, data in files.items()}
        t["format"] = rel.split("format=", 1)[1].split("/", 1)[0]
        v = pd.read_parquet(io.BytesIO(files["verdicts.parquet"])).assign(check=CHECK)
        t["verdicts_frame"], t["verdicts_bytes"] = v, index.to_bytes(v)
        t["machine_frame"] = pd.read_parquet(io.BytesIO(files[stores.MARKER]))
        m = t["measurements.parquet"].to_pandas()
        keys = [k for k in ("notebook", "entry") if k in m]
        groups = m.groupby(keys, sort=False, dropna=False).indices
        t["groups"] = [np.asarray(ix) for ix in groups.values()]
        t["ladder"] = []
        if keys == ["notebook", "entry"] and "ns_per_switch" in m:
            ns = pd.to_numeric(m.ns_per_switch, errors="coerce").to_numpy(float)
            t["ladder"] = [(nb, entry, ns) for nb, entry in groups]
        if "verdict_runs.parquet" in t:
            r = t["verdict_runs.parquet"].select(["notebook", "worker"]).to_pandas()
            t["runs"] = [[g.index.to_numpy()[ix]
                          for ix in g.groupby("worker", sort=False).indices.values()]
                         for _, g in r.groupby("notebook", sort=False)]
        out.append(t)
    if not out:
        raise ValueError("paths must name at least one bundle")
    return out


def one(template: dict, i: int, rng) -> tuple[str, dict, dict]:
    """The i-th synthetic bundle from a template: (rel_dir, files, its index rows as
    DataFrames by table)."""
    import pyarrow as pa

    files = {}
    draws = [g[rng.integers(0, g.size, g.size)] for g in template["groups"]]
    m = template["measurements.parquet"].take(pa.array(np.concatenate(draws)))
    files["measurements.parquet"] = _bytes(m)
    if "runs" in template:
        picked, worker = [], []
        for workers in template["runs"]:
            for k, w in enumerate(rng.integers(0, len(workers), len(workers))):
                picked.append(workers[w])
                worker.append(np.full(workers[w].size, k, dtype=np.int64))
        runs = template["verdict_runs.parquet"].take(pa.array(np.concatenate(picked)))
        col = runs.schema.get_field_index("worker")
        runs = runs.set_column(col, "worker", pa.array(np.concatenate(worker)))
        files["verdict_runs.parquet"] = _bytes(runs)
    files["verdicts.parquet"] = template["verdicts_bytes"]
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + files[name])
    digest = h.hexdigest()
    mid = hashlib.sha256(f"labkit synthetic machine {i}".encode()).hexdigest()[:12]
    machine = template["machine_frame"].assign(
        machine_id=mid, content_hash=digest, synthetic=True, recomputed=0,
        created=f"2026-01-01T00:00:{i % 60:02d}+00:00")
    files[stores.MARKER] = index.to_bytes(machine)
    r = machine.iloc[0]
    mode = "quick" if bool(r.quick) else "full"
    commit = str(r.labkit_commit).removesuffix("-dirty")
    rel = (f"run_mode={mode}/format={template['format']}/commit={commit}/machine={mid}/"
           f"bundle={digest[:16]}")
    keys = {"machine": mid, "bundle": digest[:16]}
    rows = {"machine": machine.assign(**keys),
            "verdicts": template["verdicts_frame"].assign(**keys),
            "ladder": _ladder(template, draws).assign(**keys)}
    return rel, files, rows


def _ladder(template: dict, draws: list):
    """index.ladder of the resampled measurements, from the draws: a measured design's
    resampled rows are its own rows, drawn again."""
    out = []
    for (nb, entry, ns), ix in zip(template["ladder"], draws):
        v = ns[ix]
        v = v[~np.isnan(v)]
        if v.size:
            out.append((nb, entry, float(np.median(v)), int(v.size)))
    return pd.DataFrame(out, columns=list(index.LADDER_COLUMNS)).astype({"rows": "int64"})


def _bytes(table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = pa.BufferOutputStream()
    pq.write_table(table, buf)
    return buf.getvalue().to_pybytes()


def check_scratch(store: stores.Store) -> None:
    """ValueError unless the store is empty or holds only synthetic bundles (committed or
    not: a bundle folder the index lacks counts too)."""
    real = store.query(
        f"SELECT count(*) FROM read_parquet('{store.index_glob('machine')}', "
        "union_by_name = true) WHERE NOT coalesce(CAST(synthetic AS BOOLEAN), false)")
    real = real[0][0] if real else 0
    if not real:
        loose = set(store.folders()) - set(store.bundles())
        if loose:
            found = store.query(
                "SELECT count(*) FROM read_parquet(?, union_by_name = true) "
                "WHERE NOT coalesce(CAST(synthetic AS BOOLEAN), false)",
                [[store.path(f"{r}/{stores.MARKER}") for r in sorted(loose)]])
            real = found[0][0] if found else 0
    if real:
        raise ValueError(f"store {store.describe()} holds {real} real bundles: synthetic "
                         "bundles go only to a scratch store (empty or synthetic)")


def synthesise(scratch, paths, n: int, *, seed: int = 0, start: int = 0,
               batch: int = BATCH) -> int:
    """Write n synthetic bundles (numbered from start) made from the bundles at `paths`
    into the scratch store, committed a batch at a time; returns how many were written."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive int; got {n!r}")
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ValueError(f"batch must be a positive int; got {batch!r}")
    store = stores.open_store(scratch)
    if store.kind == "local" and not Path(store.root).exists():
        os.makedirs(store.root)
    check_scratch(store)
    temps = templates(paths)
    rng = np.random.default_rng(seed)
    con = store.connect() if store.kind == "s3" else None
    try:
        for first in range(start, start + n, batch):
            made: dict = {}  # (table, partition) -> frames
            for i in range(first, min(first + batch, start + n)):
                rel, files, rows = one(temps[i % len(temps)], i, rng)
                store.place(rel, files, con)
                for table, frame in rows.items():
                    made.setdefault((table, index.partition(rel)), []).append(frame)
            name = f"{index.COMPACTED}{uuid.uuid4().hex[:16]}.parquet"
            for (table, part), frames in sorted(made.items(), key=lambda kv: kv[0][0] == "machine"):
                frames = [f for f in frames if not f.empty] or frames[:1]
                store.write(f"{index.INDEX}/{table}/{part}/{name}",
                            index.to_bytes(pd.concat(frames, ignore_index=True)), con)
    finally:
        if con is not None:
            con.close()
    return n
