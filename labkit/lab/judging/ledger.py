"""The claims ledger: every claim of the registry with the verdict its notebook gave in
the last run, or `not-measured`, never a pass by default."""
from __future__ import annotations

import json
import os

import pandas as pd

from labkit.core import results
from labkit.lab.judging import claims, rules, verdicts

# Claims whose rule needs more than one notebook's data: the ledger judges them itself.
JUDGED_HERE = ("C004.2",)
LEDGER_VERDICTS = verdicts.VERDICTS
MANIFEST = "run_manifest.json"


def write_manifest(entries: dict) -> None:
    """Record each notebook's outcome of this run (data/run_manifest.json, atomically)."""
    path = results.data_dir() / MANIFEST
    with results.atomic_path(path) as tmp:
        tmp.write_text(json.dumps(entries, indent=1, sort_keys=True))


def read_manifest() -> dict:
    path = results.data_dir() / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def _figures_of(notebook: str) -> list[str]:
    return sorted(p.name for p in results.figures_dir().glob(f"{notebook}-*.png"))


def ledger():
    """One row per claim of data/claims.csv: id, source, claim, claimed value, what is
    measured (the rule's x), measured value, verdict, rule, note, the notebook that
    decides it and its figures. A claim whose notebook has no verdict file, or failed in
    the last run, is `not-measured`."""
    registered = claims.registry()
    amendments = claims.amendments().drop_duplicates("claim_id", keep="last") \
        .set_index("claim_id")
    manifest = read_manifest()
    quantity = claims.measured_quantities()
    found = {}
    for nb in sorted(set(registered.notebook)):
        status = manifest.get(nb, {})
        if status.get("ok") is False:
            continue
        # The notebook's own verdicts, and those of its article-table rows
        # (labkit.lab.report.articles).
        for path in (results.data_dir() / f"{nb}_verdicts.csv",
                     results.data_dir() / f"{nb}_article_verdicts.csv"):
            if path.exists():
                for _, row in pd.read_csv(path, dtype=str).fillna("").iterrows():
                    found[row.claim_id] = row.to_dict()
    # A claim judged from two notebooks' parts (C004.2: 07b's memory, 09's throughput) is
    # judged here again from both data files, whichever notebook ran last.
    for claim_id in JUDGED_HERE:
        row = rules.recompute(claim_id, results.data_dir())
        if row is not None:
            found[claim_id] = {k: str(v) for k, v in row.items()}
    rows = []
    for _, c in registered.iterrows():
        nb = c.notebook
        v = found.get(c.claim_id)
        status = manifest.get(nb, {})
        if v is None:
            why = ("its notebook failed in the last run: " + status.get("error", "")[:200]
                   if status.get("ok") is False else "no verdict yet from " + nb)
        am = amendments.loc[c.claim_id] if c.claim_id in amendments.index else None
        original_rule = claims.rule_text(c.reproduced_if, c.contradicted_if)
        rows.append({
            "claim_id": c.claim_id,
            "source": c.source,
            "claim": c.claim,
            "claimed_value": claims.claimed(c),
            # What the rule's x is; a verdict file from before the column has none.
            "measured_quantity": (v.get("measured_quantity") if v else "")
            or quantity.get(c.claim_id, ""),
            "measured_value": v["measured_value"] if v else "",
            "verdict": v["verdict"] if v else "not-measured",
            # Under the rule as first written; a verdict file from before amendments were
            # recorded has no such column, and then it is the verdict itself.
            "original_verdict": (v.get("original_verdict") or v["verdict"]) if v
            else "not-measured",
            "rule": claims.rule_text(am["reproduced_if"], am["contradicted_if"], am["date"])
            if am is not None else original_rule,
            "original_rule": original_rule,
            "amendment": (f"{am['date']}: {am['reason']} Misreading: {am['misreading']}"
                          if am is not None else ""),
            "noisy": v.get("noisy", "") if v else "",
            "method": v.get("method", "") if v else "",
            "straddle": v.get("straddle", "") if v else "",
            "lean": v.get("lean", "") if v else "",
            "processes": v.get("processes", "") if v else "",
            "note": v["note"] if v else why,
            "notebook": f"notebooks/{nb}.py",
            "figures": ", ".join(f"figures/{f}" for f in _figures_of(nb)),
        })
    return pd.DataFrame(rows)


def check(table) -> None:
    """Raise if a claim is missing, repeated, or has a verdict outside the allowed set."""
    ids = list(claims.registry().claim_id)
    if sorted(table.claim_id) != sorted(ids) or table.claim_id.duplicated().any():
        raise ValueError("the ledger must list every claim id of data/claims.csv exactly once")
    seen = set(table.verdict) | set(table.get("original_verdict", []))
    bad = seen - set(LEDGER_VERDICTS)
    if bad:
        raise ValueError(f"verdicts outside {LEDGER_VERDICTS}: {sorted(bad)}")


def counts(table, column: str = "verdict"):
    """Verdict counts, in the allowed order (zeros included); column="original_verdict"
    counts the verdicts under the rules as first written."""
    return table[column].value_counts().reindex(LEDGER_VERDICTS, fill_value=0)


def environment_note() -> str:
    """Where the ledger's inputs came from (the results root)."""
    return f"results from {results.root()}" + (
        " (LABKIT_RESULTS_DIR)" if os.environ.get("LABKIT_RESULTS_DIR") else "")
