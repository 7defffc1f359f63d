"""Questions asked of a registry, in DuckDB over its index (labkit.lab.registry.index:
a few Parquet files per partition, local folder or S3): the machines, each claim's
verdicts across them with a tally, each design's ns per switch across CPUs. A machine with
several bundles is read at its latest (by `created`); full and quick runs are never mixed.
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


def _read(store, table: str) -> str:
    """The index table as a DuckDB source."""
    return READ.format(glob=store.index_glob(table))


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
    """SQL of the chosen bundles: one per machine, its latest, among those the filters
    keep; with a `label` per machine."""
    where, _ = _where(filters, quick)
    return f"""
        SELECT m.*, m.cpu_model || ' ' || substr(m.machine, 1, s.digits) || ' (' || m.layers
               || ')' AS label
        FROM {_read(store, 'machine')} m JOIN ({_short_ids(store)}) s USING (machine)
        WHERE {where}
        QUALIFY row_number() OVER (PARTITION BY m.machine ORDER BY m.created DESC, m.bundle) = 1"""


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
        SELECT c.label, c.machine, c.bundle, c.cpu_vendor, c.cpu_model, c.cpu_family, c.cpu_model_id,
               c.cpu_stepping, c.microcode, c.vector_isa, c.xcr0, c.xsave_bytes, c.layers,
               c.commit, c.format, c.recomputable, c.recomputed, c.created, n.bundles
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
                              'v.verdict, v.measured_value, v."check", v.claim')
    df = _run(store, sql + " ORDER BY v.claim_id, c.label", params)
    return pd.DataFrame() if df is None else df


def tally(rows) -> list[dict]:
    """Per claim: how many machines gave each verdict, most common first, and the line
    'C000.2: contradicted on 14 of 15 machines', and on how many of them the verdict was
    recomputed on publish."""
    cols = ["label", "verdict", "measured_value", "check"]
    if rows is None or rows.empty:
        return []
    # one dict per row, built from plain lists: DataFrame.to_dict per claim costs seconds
    # over ten thousand machines
    records = [dict(zip(cols, vals)) for vals in zip(*(rows[c].tolist() for c in cols))]
    out = []
    for claim_id, idx in sorted(rows.groupby("claim_id").indices.items()):
        counts = rows.verdict.iloc[idx].value_counts()
        n = int(counts.sum())
        parts = [f"{v} on {int(k)}" for v, k in counts.items()]
        head = (f"{parts[0]} of {n} machines" if len(parts) == 1
                else ", ".join(parts) + f" of {n} machines")
        checked = int((rows["check"].iloc[idx] == AGREES).sum())
        out.append({"claim_id": claim_id, "machines": n,
                    "tally": {v: int(k) for v, k in counts.items()},
                    "line": f"{claim_id}: {head}", "recomputed": checked,
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
