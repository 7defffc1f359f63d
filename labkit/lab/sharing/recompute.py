"""A bundle's verdicts recomputed from its own verdict runs with the claims' written rules
(labkit.lab.judging.rules, the engine's path), before they are shown or stored beside
anyone else's: publish refuses a bundle whose verdicts disagree, and merge shows how each
verdict was checked."""
from __future__ import annotations

import tempfile
from pathlib import Path

from labkit.lab.judging import rules, verdicts
from labkit.lab.sharing import bundle as bundles

# How a verdict row is compared with its recomputation (as tests/test_committed_verdicts.py).
COMPARED = ("verdict", "original_verdict", "measured_value")
AGREES = "recomputed: agrees"


_CHECKED: dict = {}  # bundle content hash -> recompute(): see checks


def checks(path, b: dict) -> dict:
    """recompute(b) of the bundle at `path`, once per content: a room merges every bundle
    so far at each arrival, and a recomputation costs seconds."""
    key = bundles.content_hash(path)
    if key not in _CHECKED:
        _CHECKED[key] = recompute(b)
    return _CHECKED[key]


def recompute(b: dict) -> dict:
    """claim_id -> (check, recomputed row or None): each stated verdict recomputed from
    the bundle's own data. check is AGREES, 'not recomputable: why' or 'disagrees: how'."""
    out = {}
    stated = b["verdicts"].astype(str).set_index("claim_id")
    if not b["recomputable"]:
        why = (f"not recomputable: a format-{b['meta'].get('format')} bundle carries no "
               "verdict runs")
        return {c: (why, None) for c in stated.index}
    with tempfile.TemporaryDirectory(prefix="labkit-recompute-") as tmp:
        data = Path(tmp)
        _as_data_folder(b, data)
        for claim_id, row in stated.iterrows():
            method = row.get("method", "")
            if claim_id not in rules.RULES:
                out[claim_id] = ("not recomputable: judged in its notebook, no rule of "
                                 "labkit.lab.judging.rules", None)
                continue
            if method not in (verdicts.METHOD, verdicts.EXACT):
                out[claim_id] = (f"not recomputable: judged by the method {method or 'none'!r}",
                                 None)
                continue
            again = rules.recompute(claim_id, data)
            if again is None:
                out[claim_id] = (f"disagrees: {row['verdict']} by {method}, but the bundle does "
                                 "not carry the data it stands on", None)
                continue
            got = {k: str(again.get(k, "")) for k in COMPARED}
            bad = [k for k in COMPARED if got[k] != str(row.get(k, ""))]
            out[claim_id] = (AGREES, again) if not bad else (
                f"disagrees: the bundle says {row['verdict']}, {row['measured_value']}; "
                f"recomputed: {got['verdict']}, {got['measured_value']}", again)
    return out


def _as_data_folder(b: dict, into: Path) -> None:
    """The bundle's rows as the data/ folder the rules read: <notebook>.csv and
    <notebook>_verdict_runs.csv."""
    for name, frame in (("", b["measurements"]), (bundles.RUNS_SUFFIX, b["runs"])):
        if frame is None or frame.empty:
            continue
        for nb, g in frame.groupby("notebook"):
            g.drop(columns="notebook").dropna(axis=1, how="all") \
                .to_csv(into / f"{nb}{name}.csv", index=False)
