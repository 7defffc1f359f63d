"""A registry's index: the rows its queries read, kept in a few files per partition instead
of several per bundle.

Under the registry's root, beside the bundles:

    _index/<table>/run_mode=<m>/format=<n>/commit=<c>/d-<bundle>.parquet   one bundle (a delta)
    _index/<table>/run_mode=<m>/format=<n>/commit=<c>/c-<id>.parquet       many (compacted)

Tables (TABLES): `machine`, the bundle's machine record; `verdicts`, its verdict rows;
`ladder`, each (notebook, entry)'s median ns per switch over the bundle's measurement rows
and how many rows that is. Every row carries its `machine` and `bundle`; the folders carry
run_mode, format and commit, so DuckDB prunes them as it prunes the bundles' own folders.

A publish writes its bundle's deltas after the bundle's folder, the machine delta last and
only if absent: that write is the publish's commit point, since every query starts from the
machine table. `compact` rewrites each partition's files of a table into one compacted
file and only then removes the files it absorbed, so at every instant each table holds
every committed bundle, at worst twice; readers keep one copy (KEYS). The bundle folders
stay the data of record: verdict runs and measurements are read from them.
"""
from __future__ import annotations

import io
import os
import uuid

import pandas as pd
# pyarrow (the registry extra) is imported where used: it may be absent.

INDEX = "_index"
TABLES = ("machine", "verdicts", "ladder")
PARTITIONS = ("run_mode", "format", "commit")  # the index's folders
DELTA, COMPACTED = "d-", "c-"
# What identifies a row within a table: a bundle met in two files is read once.
KEYS = {"machine": ("bundle",), "verdicts": ("bundle", "claim_id"),
        "ladder": ("bundle", "notebook", "entry")}
LADDER_COLUMNS = ("notebook", "entry", "median_ns", "rows")
# A publish that leaves a partition with this many deltas compacts the partition: queries
# then open a few files per partition however long no one runs `compact`.
AUTO_COMPACT = 200


def parts(rel: str) -> dict:
    """A bundle's rel_dir ('run_mode=full/format=4/...') as {key: value}."""
    out = dict(p.split("=", 1) for p in rel.strip("/").split("/"))
    missing = {"run_mode", "format", "commit", "machine", "bundle"} - set(out)
    if missing:
        raise ValueError(f"rel_dir {rel!r} lacks {', '.join(sorted(missing))}")
    return out


def partition(rel: str) -> str:
    """The index folder (below _index/<table>/) a bundle's rows go in."""
    p = parts(rel)
    return "/".join(f"{k}={p[k]}" for k in PARTITIONS)


def delta_name(rel: str) -> str:
    return f"{DELTA}{parts(rel)['bundle']}.parquet"


def ladder(frame):
    """Median ns per switch and row count per (notebook, entry) over the rows whose
    ns_per_switch reads as a number: the figure the ladder shows for one bundle."""
    empty = pd.DataFrame({"notebook": pd.Series(dtype=object), "entry": pd.Series(dtype=object),
                          "median_ns": pd.Series(dtype=float), "rows": pd.Series(dtype="int64")})
    if frame is None or not {"notebook", "entry", "ns_per_switch"} <= set(frame.columns):
        return empty
    ns = pd.to_numeric(frame.ns_per_switch, errors="coerce")
    keep = ns.notna()
    if not keep.any():
        return empty
    g = pd.DataFrame({"notebook": frame.notebook[keep], "entry": frame.entry[keep],
                      "ns": ns[keep].astype(float)}).groupby(["notebook", "entry"], dropna=False).ns
    out = pd.DataFrame({"median_ns": g.median(), "rows": g.size().astype("int64")}).reset_index()
    return out[list(LADDER_COLUMNS)]


def rows(rel: str, files: dict) -> dict:
    """One bundle's index rows (table -> parquet bytes) from its files (name -> bytes)."""
    p = parts(rel)
    machine = pd.read_parquet(io.BytesIO(files["machine.parquet"]))
    verdicts = pd.read_parquet(io.BytesIO(files["verdicts.parquet"]))
    measured = files.get("measurements.parquet")
    cols = ["notebook", "entry", "ns_per_switch"]
    if measured is not None:
        import pyarrow.parquet as pq

        have = pq.read_schema(io.BytesIO(measured)).names
        measured = pd.read_parquet(io.BytesIO(measured), columns=[c for c in cols if c in have])
    frames = {"machine": machine, "verdicts": verdicts, "ladder": ladder(measured)}
    return {t: to_bytes(f.assign(machine=p["machine"], bundle=p["bundle"]))
            for t, f in frames.items()}


def to_bytes(df) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def dedupe_sql(table: str, source: str, where: str = "") -> str:
    """SELECT of a table's rows from `source` (a read_parquet), one per KEYS."""
    keys = ", ".join(KEYS[table])
    return f"SELECT DISTINCT ON ({keys}) * FROM {source} {('WHERE ' + where) if where else ''}"


def compact(store, *, adopt: bool = True, only: str | None = None) -> dict:
    """Rewrite each partition's index files of each table into one compacted file, then
    remove the files it absorbed. With `adopt`, first index every bundle folder the index
    lacks (a store from before the index, or a publish killed between placing its folder
    and committing it: its folder is whole, its checks were passed). Returns
    {"adopted": bundles, "compacted": files written, "absorbed": files removed}. `only`
    restricts it to one partition ('run_mode=full/format=4/commit=...').

    Safe beside publishers and other compactions: a file is removed only by the
    compaction that wrote its rows into a new file, and a reader that meets a bundle in
    both keeps one."""
    adopted = 0
    if adopt and only is None:
        committed = set(store.bundles())
        for rel in store.folders():
            if rel in committed:
                continue
            names = [r.rsplit("/", 1)[-1] for r, _ in store.listing(rel)]
            files = {n: store.read_bytes(f"{rel}/{n}") for n in names if n.endswith(".parquet")}
            made = rows(rel, files)
            for table in ("verdicts", "ladder", "machine"):  # the machine row commits
                store.write(f"{INDEX}/{table}/{partition(rel)}/{delta_name(rel)}", made[table])
            adopted += 1
    groups: dict = {}
    for rel, _ in store.listing(INDEX):
        bits = rel.split("/")  # _index, table, run_mode=, format=, commit=, file
        if len(bits) != 6 or bits[1] not in TABLES or not bits[-1].endswith(".parquet") \
                or not bits[-1].startswith((DELTA, COMPACTED)):
            continue  # a file being written aside
        if only is None or "/".join(bits[2:5]) == only:
            groups.setdefault((bits[1], "/".join(bits[2:5])), []).append(rel)
    written = absorbed = 0
    con = store.connect()
    try:
        for (table, part), rels in sorted(groups.items(), key=lambda kv: kv[0][0] == "machine"):
            if len(rels) < 2:
                continue
            sources = ", ".join("'" + store.path(r).replace("'", "''") + "'" for r in rels)
            select = dedupe_sql(table, f"read_parquet([{sources}], union_by_name = true, "
                                       "hive_partitioning = false)")
            name = f"{COMPACTED}{uuid.uuid4().hex[:16]}.parquet"
            final = f"{INDEX}/{table}/{part}/{name}"
            if store.kind == "local":
                tmp = store.path(f"{INDEX}/{table}/{part}/.{name}.tmp")
                con.execute(f"COPY ({select}) TO '{tmp}' (FORMAT parquet)")
                os.replace(tmp, store.path(final))
            else:
                con.execute(f"COPY ({select}) TO '{store.path(final)}' (FORMAT parquet)")
            store.remove(rels)  # only now: every row is in the new file
            written += 1
            absorbed += len(rels)
    finally:
        con.close()
    return {"adopted": adopted, "compacted": written, "absorbed": absorbed}
