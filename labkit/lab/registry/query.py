"""Questions asked of a registry, in DuckDB over its index (labkit.lab.registry.index:
a few Parquet files per partition, local folder or S3): the machines, each claim's
verdicts across them with a tally, each design's ns per switch across CPUs; every row says
who published it (the key's name and fingerprint). Full and quick runs are never mixed.

A machine with several bundles is read at its latest by the registry's own time of
publishing (`published`), never by the `created` a bundle states, and only among the
bundles of the key that first published that machine: a bundle of another key claiming
its id is counted (`claimed_by_others`) but never read in its place. Where two bundles of
one machine and commit give opposite verdicts on a claim, `claims` names both publishers
(`disagreement`).
"""
from __future__ import annotations

import pandas as pd

from labkit.lab.registry import index
from labkit.lab.registry import store as stores
from labkit.lab.sharing.recompute import AGREES

# filter name -> the SQL condition on the machine table (one parameter each).
FILTERS = {
    "vendor": "lower(cpu_vendor) LIKE '%' || lower(?) || '%'",
    "family": "CAST(cpu_family AS VARCHAR) = CAST(? AS VARCHAR)",
    "model": "(CAST(cpu_model_id AS VARCHAR) = CAST(? AS VARCHAR) "
             "OR lower(cpu_model) LIKE '%' || lower(?) || '%')",
    "layers": "lower(layers) = lower(?)",
    "commit": "starts_with(commit, lower(?))",
}
READ = "read_parquet('{glob}', hive_partitioning = true, hive_types_autocast = false, " \
       "union_by_name = true)"


# Columns of the machine table that a store written before them lacks: read as NULL.
LATER_COLUMNS = ("publisher", "fingerprint", "flags")


def _read(store, table: str) -> str:
    """The index table as a DuckDB source."""
    source = READ.format(glob=store.index_glob(table))
    if table != "machine":
        return source
    empty = ", ".join(f"NULL::VARCHAR AS {c}" for c in LATER_COLUMNS)
    return f"(SELECT * FROM {source} UNION ALL BY NAME SELECT {empty} WHERE false)"


# How many of a machine id's digits its label shows: the fewest that tell it from every
# other machine in the store (6 hex digits collide among a few thousand machines).
ID_DIGITS = (6, 8, 10, 12)


def _where(filters: dict, quick: bool) -> tuple[str, list]:
    conds, params = ["run_mode = ?"], [stores.run_mode(quick)]
    for name, value in (filters or {}).items():
        if value is None:
            continue
        if name not in FILTERS:
            raise ValueError(f"filters: {name!r} is not one of {', '.join(FILTERS)}")
        if not isinstance(value, (str, int)) or str(value) == "":
            raise ValueError(f"filters: {name} must be a non-empty text or number; got {value!r}")
        conds.append(FILTERS[name])
        params += [str(value)] * FILTERS[name].count("?")
    return " AND ".join(conds), params


def _partitions(filters, quick, alias: str) -> tuple[str, list]:
    """The filters that are partition keys (run mode, commit) as conditions on another
    table's read: DuckDB then skips that table's files in the folders they rule out."""
    conds, params = [f"{alias}.run_mode = ?"], [stores.run_mode(quick)]
    commit = (filters or {}).get("commit")
    if commit is not None:
        _where({"commit": commit}, quick)  # the same checks on the value
        conds.append(f"starts_with({alias}.commit, lower(?))")
        params.append(str(commit))
    return " AND ".join(conds), params


def _chosen(store, filters, quick) -> str:
    """SQL of the chosen bundles: one per machine, the latest the registry took from the
    machine's owner (_owners), among those the filters keep; with a `label` per machine."""
    where, _ = _where(filters, quick)
    return f"""
        SELECT m.*, o.claimed_by_others,
               m.cpu_model || ' ' || substr(m.machine, 1, s.digits) || ' (' || m.layers
               || ')' AS label
        FROM {_read(store, 'machine')} m JOIN ({_short_ids(store)}) s USING (machine)
             JOIN ({_owners(store)}) o USING (machine)
        WHERE {where} AND coalesce(m.fingerprint, '') = o.owner
        QUALIFY row_number() OVER (PARTITION BY m.machine ORDER BY m.published DESC,
                                   m.bundle) = 1"""


def _owners(store) -> str:
    """SQL of each machine id's owner: the fingerprint ('' unsigned) of the key that
    published it first, by the registry's time, over every run mode and commit; and how many
    bundles of other keys claim it."""
    return f"""
        SELECT machine, owner, count(DISTINCT bundle) FILTER (WHERE fp <> owner)
               AS claimed_by_others
        FROM (SELECT machine, bundle, coalesce(fingerprint, '') AS fp,
                     arg_min(coalesce(fingerprint, ''), published) OVER (PARTITION BY machine)
                         AS owner
              FROM {_read(store, 'machine')})
        GROUP BY machine, owner"""


def _short_ids(store) -> str:
    """SQL of each machine id in the store with the digits its label shows: the first of
    ID_DIGITS that no other machine id of the store shares (all of it if none does). Over
    every machine, not only those a query keeps, so a machine's label is the same in every
    answer. In sorted order the id sharing the longest prefix with one is a neighbour."""
    def unique_at(n):
        return (f"substr(machine, 1, {n}) NOT IN (substr(coalesce(prev, ''), 1, {n}), "
                f"substr(coalesce(next, ''), 1, {n}))")

    cases = " ".join(f"WHEN {unique_at(n)} THEN {n}" for n in ID_DIGITS)
    return f"""
        SELECT machine, CASE {cases} ELSE length(machine) END AS digits
        FROM (SELECT machine, lag(machine) OVER w AS prev, lead(machine) OVER w AS next
              FROM (SELECT DISTINCT machine FROM {_read(store, 'machine')})
              WINDOW w AS (ORDER BY machine))"""


def _run(store, sql: str, params: list):
    """The query's DataFrame, or None for a store with nothing committed."""
    return store.query(sql, params, frame=True)


def machines(registry, *, filters: dict | None = None, quick: bool = False):
    """One row per machine (its latest bundle): identity, hardware, layers, commit,
    whether its verdicts were recomputed, and how many bundles it has in the store."""
    store = stores.open_store(registry)
    where, params = _where(filters, quick)
    sql = f"""WITH chosen AS ({_chosen(store, filters, quick)}),
        counts AS (SELECT machine, count(DISTINCT bundle) AS bundles
                   FROM {_read(store, 'machine')} WHERE {where} GROUP BY machine)
        SELECT c.label, c.machine, c.bundle, c.publisher, c.fingerprint, c.cpu_vendor,
               c.cpu_model, c.cpu_family, c.cpu_model_id,
               c.cpu_stepping, c.microcode, c.vector_isa, c.xcr0, c.xsave_bytes, c.layers,
               c.commit, c.format, c.recomputable, c.recomputed, c.created, c.published,
               coalesce(c.flags, '') AS flags, n.bundles, c.claimed_by_others
        FROM chosen c JOIN counts n USING (machine) ORDER BY c.label"""
    df = _run(store, sql, params + params)
    return pd.DataFrame() if df is None else df


def _claims_sql(store, filters, quick, columns: str) -> tuple[str, list]:
    """The claims query (its SELECT list given) and its parameters."""
    _, params = _where(filters, quick)
    vwhere, vparams = _partitions(filters, quick, "v")
    sql = f"""WITH chosen AS ({_chosen(store, filters, quick)}),
        v AS ({index.dedupe_sql('verdicts', _read(store, 'verdicts') + ' v', vwhere)})
        SELECT {columns} FROM v JOIN chosen c ON v.bundle = c.bundle"""
    return sql, params + vparams


def claims(registry, *, filters: dict | None = None, quick: bool = False):
    """One row per (claim, machine): verdict, measured value, how the registry checked
    it (recomputed or why not) and the claim's text."""
    store = stores.open_store(registry)
    sql, params = _claims_sql(store, filters, quick, 'v.claim_id, c.label, c.machine, '
                              'v.verdict, v.measured_value, v."check", v.claim, c.commit, '
                              "c.publisher, c.fingerprint, coalesce(c.flags, '') AS flags")
    df = _run(store, sql + " ORDER BY v.claim_id, c.label", params)
    if df is None:
        return pd.DataFrame()
    split = disagreements(store, quick=quick)
    df["disagreement"] = [split.get((c, m, k), "") for c, m, k in
                          zip(df.claim_id, df.machine, df.commit)]
    return df.drop(columns="commit")


# The verdicts two bundles of one machine and commit cannot both give.
OPPOSITE = ("reproduced", "contradicted")


def disagreements(registry, *, quick: bool = False) -> dict:
    """(claim_id, machine, commit) -> 'contradicted by NAME (FINGERPRINT); reproduced by
    ...' wherever two bundles of one machine and commit give opposite verdicts on a claim,
    whoever published them (the chosen bundle and any other)."""
    store = stores.open_store(registry)
    mode = stores.run_mode(quick)
    sql = f"""WITH mm AS (SELECT bundle, machine, commit, publisher, fingerprint
                          FROM {_read(store, 'machine')} WHERE run_mode = ?
                          QUALIFY count(*) OVER (PARTITION BY machine, commit) > 1),
        v AS ({index.dedupe_sql('verdicts', _read(store, 'verdicts') + ' v', 'v.run_mode = ?')})
        SELECT v.claim_id, mm.machine, mm.commit,
               string_agg(DISTINCT v.verdict || ' by ' || coalesce(mm.publisher, 'unsigned')
                          || ' (' || coalesce(mm.fingerprint, 'no key') || ')', '; '
                          ORDER BY v.verdict || ' by ' || coalesce(mm.publisher, 'unsigned')
                          || ' (' || coalesce(mm.fingerprint, 'no key') || ')') AS said
        FROM v JOIN mm USING (bundle)
        WHERE v.verdict IN {OPPOSITE}
        GROUP BY ALL HAVING count(DISTINCT v.verdict) > 1"""
    rows = store.query(sql, [mode, mode])
    return {(c, m, k): said for c, m, k, said in rows or ()}


def tally(rows) -> list[dict]:
    """Per claim: how many machines gave each verdict, most common first, and the line
    'C000.2: contradicted on 14 of 15 machines', and on how many of them the verdict was
    recomputed on publish."""
    cols = ["label", "verdict", "measured_value", "check", "publisher", "fingerprint", "flags",
            "disagreement"]
    if rows is None or rows.empty:
        return []
    # one dict per row, built from plain lists: DataFrame.to_dict per claim costs seconds
    # over ten thousand machines
    cols = [c for c in cols if c in rows]
    records = [dict(zip(cols, vals)) for vals in zip(*(rows[c].tolist() for c in cols))]
    out = []
    for claim_id, idx in sorted(rows.groupby("claim_id").indices.items()):
        counts = rows.verdict.iloc[idx].value_counts()
        n = int(counts.sum())
        parts = [f"{v} on {int(k)}" for v, k in counts.items()]
        head = (f"{parts[0]} of {n} machines" if len(parts) == 1
                else ", ".join(parts) + f" of {n} machines")
        checked = int((rows["check"].iloc[idx] == AGREES).sum())
        split = int((rows["disagreement"].iloc[idx] != "").sum()) if "disagreement" in rows \
            else 0
        if split:
            head += (f"; on {split} of them another bundle of the same machine and commit "
                     "gives the opposite verdict")
        out.append({"claim_id": claim_id, "machines": n,
                    "tally": {v: int(k) for v, k in counts.items()},
                    "line": f"{claim_id}: {head}", "recomputed": checked,
                    "disagreements": split,
                    "verdicts": [records[i] for i in idx]})
    return out


def ladder(registry, *, filters: dict | None = None, quick: bool = False,
           notebook: str = "04_latency_ladder"):
    """Each design's (entry's) median ns per switch on each machine (over the rows of the
    latency ladder's measurements; index.ladder), with its ratio to that machine's own
    `asm`."""
    store = stores.open_store(registry)
    _, params = _where(filters, quick)
    mwhere, mparams = _partitions(filters, quick, "t")
    sql = f"""WITH chosen AS ({_chosen(store, filters, quick)}),
        m AS ({index.dedupe_sql('ladder', _read(store, 'ladder') + ' t',
                                'notebook = ? AND ' + mwhere)}),
        med AS (SELECT c.label, m.entry, m.median_ns, m.rows
                FROM m JOIN chosen c ON m.bundle = c.bundle)
        SELECT a.*, a.median_ns / b.median_ns AS ratio_to_asm
        FROM med a LEFT JOIN med b ON a.label = b.label AND b.entry = 'asm'
        ORDER BY a.entry, a.label"""
    df = _run(store, sql, params + [notebook] + mparams)
    return pd.DataFrame() if df is None else df


def explain_claims(registry, *, filters: dict | None = None, quick: bool = False) -> str:
    """DuckDB's physical plan of the claims query: where the partition filters prune."""
    store = stores.open_store(registry)
    sql, params = _claims_sql(store, filters, quick, "v.claim_id, c.label, v.verdict")
    df = _run(store, "EXPLAIN " + sql, params)
    return "" if df is None else "\n".join(df.iloc[:, -1].astype(str))


def verdict_runs(registry, *, filters: dict | None = None, quick: bool = False) -> dict:
    """label -> {notebook: that machine's verdict runs} for the chosen bundles that carry
    them (format 4 on); each file read whole with its own types."""
    store = stores.open_store(registry)
    chosen = machines(store, filters=filters, quick=quick)
    if chosen.empty:
        return {}
    chosen = chosen[chosen.recomputable.astype(bool)]
    mode = stores.run_mode(quick)
    out = {}
    for _, m in chosen.iterrows():
        rel = (f"run_mode={mode}/format={m.format}/commit={m.commit}/machine={m.machine}/"
               f"bundle={m.bundle}")
        try:
            runs = store.read(rel, "verdict_runs.parquet")
        except Exception:  # noqa: BLE001 - a bundle with no runs (none of its designs ran)
            continue
        out[m.label] = {nb: g.drop(columns="notebook").reset_index(drop=True)
                        for nb, g in runs.groupby("notebook")}
    return out
