"""A notebook's verdict design in one call: the claims its runs decide, the stopping rule
of its schedule (its experiment's record, labkit.lab.experiment), a checkpoint after every
replication, and the runs saved for the ledger; and the notebook's verdict table, every
claim of its experiment judged by its rule.
"""
from __future__ import annotations

import os
import random
import time

import pandas as pd

from labkit.core import results
from labkit.experiments import verdict_design
from labkit.lab import experiment
from labkit.lab.judging import engine, rules, verdicts
from labkit.lab.report.articles.rows import ROW_JUDGES
from labkit.lab.running import sweep


def _headline(rows) -> dict:
    """The rows of the notebook's own verdict table: the row claims of the article tables
    are judged on the same runs, and shown in the article's section (labkit.lab.report.articles)."""
    return {r["claim_id"]: r for r in rows if r["claim_id"] not in ROW_JUDGES}


def rules_for(notebook) -> list:
    """The rules judged on `notebook`'s design runs (rules.RULES), in registry order."""
    want = [experiment.of(notebook).verdict_runs]
    out = [fn for fn, names in rules.RULES.values() if names == want]
    if not out:
        raise ValueError(f"notebook must be one with a verdict design; {notebook!r} has no "
                         "rule reading its runs in labkit.lab.judging.rules.RULES")
    return out


def _hooks(notebook, labels, total: int):
    name = experiment.of(notebook).verdict_runs
    started = time.time()
    finished = None
    path = results.data_dir() / "checkpoints" / f"{name}.csv"
    if os.environ.get(sweep.RESUME_ENV) == "1" and path.exists():
        done = results.read_csv(path, low_memory=False)
        if "side" in done and set(done.side) == set(labels):
            finished = done
    sweep._report_progress("verdict processes", 0 if finished is None else
                           finished.worker.nunique(), total, started)

    def progress(runs):
        results.save_csv(runs, name, subdir="checkpoints")
        sweep._report_progress("verdict processes", runs.worker.nunique(), total, started)

    return progress, finished


def run(notebook, entries: dict, *, quick: bool, seed: int = 0):
    """Measure `entries` over fresh processes under the notebook's schedule and judge
    every claim its runs decide. Saves data/<notebook>_verdict_runs.csv; returns
    (runs, {claim id: verdict row}) for the claims of the notebook's own verdict table
    (the article-table rows judged on the same runs are shown in the article's section)."""
    record = experiment.of(notebook)
    schedule = record.schedule(quick=quick)
    progress, finished = _hooks(record, entries, schedule["looks"][-1])
    runs, rows, _ = verdict_design.measure_for_verdicts(
        entries, rules_for(record), schedule=schedule, seed=seed,
        progress=progress, finished=finished)
    results.save_csv(runs, record.verdict_runs)
    return runs, _headline(rows)


def run_rounds(notebook, measure, labels, *, quick: bool, seed: int = 0):
    """The same for replications that are rounds: measure(label, round) runs one label
    (a server, say) once in fresh processes; each round runs every label the open claims
    still read once, in an order starting at a random label, mirrored every other round."""
    labels = list(labels)
    record = experiment.of(notebook)
    schedule = record.schedule(quick=quick)
    progress, finished = _hooks(record, labels, schedule["looks"][-1])

    def one_round(i, still):
        order = verdict_design.process_order(labels if still is None else still, repeats=1,
                                     rng=random.Random(seed * 100_003 + i))
        if i % 2:
            order = order[::-1]
        return pd.concat([measure(lab, i).assign(side=lab, order=pos)
                          for pos, lab in enumerate(order)], ignore_index=True)

    judged = rules_for(record)
    runs, rows, _ = verdict_design.sequential(one_round, judged, schedule=schedule,
                                      progress=progress, finished=finished)
    results.save_csv(runs, record.verdict_runs)
    return runs, _headline(rows)


def judge_saved(notebook) -> dict:
    """What `run` returns as its rows, recomputed from the design runs saved in data/
    ({claim id: verdict row}; the claims whose file is missing are left out): a notebook's
    verdict table from its last run without measuring again."""
    record = experiment.of(notebook)
    rows = {cid: rules.recompute(cid) for cid, (_, names) in rules.RULES.items()
            if names == [record.verdict_runs]}
    return {cid: row for cid, row in rows.items() if row is not None}


def headline_claims(notebook) -> list[str]:
    """The claims of a notebook's own verdict table: every claim of its experiment but the
    article tables' row claims (labkit.lab.report.articles.rows.ROW_JUDGES), in
    data/claims.csv's order."""
    return [c for c in experiment.of(notebook).claims() if c not in ROW_JUDGES]


def _why(why, cid) -> str | None:
    if isinstance(why, dict):
        return why.get(cid)
    try:
        return why(cid) if callable(why) else why
    except ValueError:  # a claim the notebook's reasons do not know
        return "not measured in this run"


def verdict_table(notebook, judged=None, *, notes=None, why=None, **options):
    """The notebook's verdict table, saved as data/<notebook>_verdicts.csv and returned:
    every claim of its experiment (headline_claims), each judged by its rule. A claim its
    verdict design judged (`judged`: run's or run_rounds's rows) keeps that row; any other
    is its rule on the data the notebook has saved (its own data only: what another
    notebook measures is left out); a claim still not measured says why (`why`: text, a
    function of the claim id, or claim id -> text). notes: claim id -> text added to the note of a
    claim that was measured (its own sentence when the rule left no note). options go to
    the rules that take them (rules.recompute)."""
    judged = dict(judged or {})
    notes = notes or {}
    rows = []
    for cid in headline_claims(notebook):
        row = judged.get(cid)
        if row is None and cid in rules.RULES and rules.RULES[cid][1] != [
                experiment.of(notebook).verdict_runs]:
            row = rules.recompute(cid, only=notebook, **options)
        measured = row is not None and row.get("measured_value") != "not measured"
        reason = None if measured or why is None else _why(why, cid)
        if reason:
            row = verdicts.cannot_measure(cid, reason)
        elif row is None:
            row = verdicts.cannot_measure(cid, "not measured in this run")
        if measured and notes.get(cid):
            row["note"] = row["note"] + notes[cid] if row.get("note") else \
                notes[cid].removeprefix("; ")
        rows.append(row)
    table = verdicts.table(rows)
    results.save_csv(table, experiment.of(notebook).verdicts)
    return table


def variance_table():
    """labkit.lab.judging.engine.variance_components of every verdict design saved in data/, one
    block of rows per notebook."""
    designed = sorted({fn_files[1][0] for fn_files in rules.RULES.values()})
    parts = []
    for record in experiment.RECORDS.values():
        if record.verdict_runs not in designed:
            continue
        nb, path = record.name, results.data_dir() / f"{record.verdict_runs}.csv"
        if path.exists():
            runs = results.read_csv(path, low_memory=False)
            if "worker" in runs:
                parts.append(engine.variance_components(runs).assign(notebook=nb))
    if not parts:
        return pd.DataFrame({"note": ["no verdict design has run yet"]})
    out = pd.concat(parts, ignore_index=True)
    return out[["notebook", *[c for c in out.columns if c != "notebook"]]]
