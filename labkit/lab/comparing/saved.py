"""Two saved runs of one machine compared (before and after a change, or two commits):
per claim, the per-process statistic its rule judges on, and per entry of the latency
ladder, the per-process median ns, each compared with the registry's machine-effect test
(labkit.lab.registry.effects: the repeated-confidence critical value at the look each run
stopped at, Welch's standard error, Holm across every comparison, a margin for "no
difference")."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from labkit.core import results
from labkit.core import sequential
from labkit.errors import ParameterError
from labkit.lab.comparing import answer
from labkit.lab.judging import engine
from labkit.lab.judging import rules
from labkit.lab.registry import effects
from labkit.lab.sharing import bundle

RUNS_SUFFIX = "_verdict_runs"
LADDER = "04_latency_ladder"


def load(path) -> dict:
    """{label, path, machine_id, commit, runs: {notebook: verdict runs}} of a bundle (a
    folder with machine.json, format 4 on) or a results folder (its data/, or the folder
    itself, holding <notebook>_verdict_runs.csv files)."""
    path = Path(path)
    if (path / "machine.json").exists():

        b = bundle.read_bundle(path)
        if b["runs"] is None:
            raise ParameterError("sides", f"{path}: a bundle of format "
                                 f"{b['meta'].get('format')} carries no verdict runs (format "
                                 "4 on does; `labkit bundle` makes one)")
        runs = {nb: g.drop(columns="notebook").reset_index(drop=True)
                for nb, g in b["runs"].groupby("notebook")}
        machine_id = b["machine"]["machine_id"]
    else:
        folder = path / "data" if (path / "data").is_dir() else path
        files = sorted(folder.glob(f"*{RUNS_SUFFIX}.csv"))
        if not files:
            raise ParameterError("sides", f"{path}: neither a bundle (machine.json) nor a "
                                 f"results folder (no data/*{RUNS_SUFFIX}.csv)")
        runs = {f.name[:-len(RUNS_SUFFIX) - 4]: results.read_csv(f, low_memory=False)
                for f in files}
        ids = {m for r in runs.values() if "machine_id" in r for m in r.machine_id.dropna()}
        if len(ids) != 1:
            raise ParameterError("sides", f"{path}: its verdict runs name "
                                 f"{len(ids)} machines ({', '.join(sorted(ids)) or 'none'}); "
                                 "one results folder is one machine's")
        machine_id = ids.pop()
    commits = sorted({str(c) for r in runs.values() if "labkit_commit" in r
                      for c in r.labkit_commit.dropna()})
    return {"label": str(path), "path": str(path), "machine_id": str(machine_id),
            "commit": ", ".join(commits) or "unknown", "runs": runs}


def _ladder_statistic(runs, side: str):
    """Per-process log of the side's median ns per switch, and the design's looks."""
    col = next(c for c in engine.VALUE_COLUMNS if c in runs)
    per = engine.per_process(runs, col)
    v = per[side].to_numpy(float) if side in per else np.array([])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.where(v > 0, v, np.nan)), engine.looks_of(runs)


def comparisons(a: dict, b: dict) -> tuple[list[dict], list[dict]]:
    """The comparisons two loaded runs have in common ({what, claim_id or entry, a, b,
    looks_a, looks_b}), and the claims left out with why."""
    out, skipped = [], []
    for claim_id, (_, names) in rules.RULES.items():
        nb = names[0].removesuffix(RUNS_SUFFIX)
        if not names[0].endswith(RUNS_SUFFIX) or nb not in a["runs"] or nb not in b["runs"]:
            continue
        try:
            va, la = effects.rule_statistic(claim_id, a["runs"][nb])
            vb, lb = effects.rule_statistic(claim_id, b["runs"][nb])
        except ValueError as exc:
            skipped.append({"claim_id": claim_id, "why": str(exc)})
            continue
        out.append({"what": "claim", "name": claim_id, "notebook": nb,
                    "a": va, "looks_a": la, "b": vb, "looks_b": lb})
    if LADDER in a["runs"] and LADDER in b["runs"]:
        ra, rb = a["runs"][LADDER], b["runs"][LADDER]
        for side in [s for s in dict.fromkeys(ra.side) if s in set(rb.side)]:
            va, la = _ladder_statistic(ra, side)
            vb, lb = _ladder_statistic(rb, side)
            out.append({"what": "ladder entry", "name": side, "notebook": LADDER,
                        "a": va, "looks_a": la, "b": vb, "looks_b": lb})
    return out, skipped


def compare(path_a, path_b, *, margin: float = answer.MARGIN, other_machine: bool = False,
            alpha: float | None = None) -> dict:
    """Two saved runs of the same machine (other_machine: allow two machines), every
    claim and ladder entry they share decided together: {sides, answers, skipped}. An
    answer's ratio is A's over B's: of the claim's ratios, or of the entry's ns."""
    margin = answer.check_margin(margin)
    a, b = load(path_a), load(path_b)
    if a["machine_id"] != b["machine_id"] and not other_machine:
        raise ParameterError("sides", f"must be runs of one machine: {a['label']} is machine "
                             f"{a['machine_id']}, {b['label']} is {b['machine_id']} "
                             "(`labkit registry effects` compares machines)",
                             other=("other_machine", True))
    found, skipped = comparisons(a, b)
    if not found:
        raise ParameterError("sides", f"{a['label']} and {b['label']} share no verdict runs "
                             "of a claim judged on one ratio per process, nor the ladder's")
    decided = effects.decide(found, alpha=alpha or sequential.ALPHA, margin=margin)
    answers = [_as_answer(r, a["label"], b["label"], margin) for r in decided]
    return {"sides": [{k: s[k] for k in ("label", "path", "machine_id", "commit")}
                      for s in (a, b)],
            "answers": answers, "skipped": skipped}


def _as_answer(r: dict, la: str, lb: str, margin: float) -> dict:
    """effects.decide's row in the words of labkit.lab.comparing.answer."""
    lo, hi = r["low"], r["high"]
    if r["outcome"] == effects.EFFECT:
        outcome = answer.FASTER if hi < 1 else answer.SLOWER
    elif r["outcome"].startswith(effects.NO_EFFECT):
        outcome = answer.SAME
    else:
        outcome = answer.UNDECIDED
    row = {"what": r["what"], "name": r["name"], "notebook": r["notebook"],
           "a": f"{r['name']} in {la}", "b": f"{r['name']} in {lb}", "outcome": outcome,
           "ratio": r["ratio"], "low": lo, "high": hi, "level": r["level"],
           "processes": list(r["processes"]), "margin": margin,
           "leaning": None if outcome != answer.UNDECIDED or math.isnan(r["ratio"])
           or r["ratio"] == 1 else ("A" if r["ratio"] < 1 else "B") + " lower", "method": r["method"]}
    row["text"] = text(row)
    row["short"] = row["text"].split(": ")[1]
    return row


def text(row: dict) -> str:
    """One saved comparison as a person reads it: A's value over B's."""
    what = "ratio of the claim's ratios" if row["what"] == "claim" else "ratio of ns"
    said = {answer.FASTER: "lower in A", answer.SLOWER: "higher in A",
            answer.SAME: f"no difference within ±{row['margin']:.0%}",
            answer.UNDECIDED: "undecided" + (f", leaning {row['leaning']}"
                                             if row.get("leaning") else "")}[row["outcome"]]
    n = row["processes"]
    return (f"{row['what']} {row['name']}: {said}: A/B = {row['ratio']:.3g} "
            f"[{row['low']:.3g}, {row['high']:.3g}] ({what}; {n[0]} and {n[1]} processes)")
