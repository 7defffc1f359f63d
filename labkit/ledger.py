"""The claims ledger: every claim of the registry with the verdict its notebook gave in
the last run, or `not-measured`, never a pass by default."""
from __future__ import annotations

import json
import os

from labkit import results, verdicts

LEDGER_VERDICTS = (*verdicts.VERDICTS, "not-measured")
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
    """One row per claim of data/claims.csv: id, source, claim, claimed value, measured
    value, verdict, rule, note, the notebook that decides it and its figures. A claim whose
    notebook has no verdict file, or failed in the last run, is `not-measured`."""
    import pandas as pd

    claims = verdicts.claims()
    manifest = read_manifest()
    found = {}
    for nb in sorted(set(claims.experiment)):
        status = manifest.get(nb, {})
        if status.get("ok") is False:
            continue
        # The notebook's own verdicts, and those of its article-table rows (labkit.articles).
        for path in (results.data_dir() / f"{nb}_verdicts.csv",
                     results.data_dir() / f"{nb}_article_verdicts.csv"):
            if path.exists():
                for _, row in pd.read_csv(path, dtype=str).fillna("").iterrows():
                    found[row.claim_id] = row.to_dict()
    rows = []
    for _, c in claims.iterrows():
        nb = c.experiment
        v = found.get(c.claim_id)
        status = manifest.get(nb, {})
        if v is None:
            why = ("its notebook failed in the last run: " + status.get("error", "")[:200]
                   if status.get("ok") is False else "no verdict yet from " + nb)
        rows.append({
            "claim_id": c.claim_id,
            "source": c.source,
            "claim": c.claim,
            "claimed_value": f"{c.claimed_value} ({c.claimed_unit})",
            "measured_value": v["measured_value"] if v else "",
            "verdict": v["verdict"] if v else "not-measured",
            "rule": f"reproduced if {c.reproduced_if}; contradicted if {c.contradicted_if}",
            "note": v["note"] if v else why,
            "notebook": f"notebooks/{nb}.py",
            "figures": ", ".join(f"figures/{f}" for f in _figures_of(nb)),
        })
    return pd.DataFrame(rows)


def check(table) -> None:
    """Raise if a claim is missing, repeated, or has a verdict outside the allowed set."""
    ids = list(verdicts.claims().claim_id)
    if sorted(table.claim_id) != sorted(ids) or table.claim_id.duplicated().any():
        raise ValueError("the ledger must list every claim id of data/claims.csv exactly once")
    bad = set(table.verdict) - set(LEDGER_VERDICTS)
    if bad:
        raise ValueError(f"verdicts outside {LEDGER_VERDICTS}: {sorted(bad)}")


def counts(table):
    """Verdict counts, in the allowed order (zeros included)."""
    return table.verdict.value_counts().reindex(LEDGER_VERDICTS, fill_value=0)


def environment_note() -> str:
    """Where the ledger's inputs came from (the results root)."""
    return f"results from {results.root()}" + (
        " (LABKIT_RESULTS_DIR)" if os.environ.get("LABKIT_RESULTS_DIR") else "")
