"""A notebook's verdict design in one call: the claims its runs decide, the stopping rule
of its schedule, a checkpoint after every replication, and the runs saved for the ledger.
"""
from __future__ import annotations

import os
import random
import time

from labkit.core import results, sequential
from labkit.experiments import design

from labkit.lab.judging import rules
from labkit.lab.running import sweep


def _headline(rows) -> dict:
    """The rows of the notebook's own verdict table: the row claims of the article tables
    are judged on the same runs, and shown in the article's section (labkit.lab.report.articles)."""
    from labkit.lab.report.articles.rows import ROW_JUDGES

    return {r["claim_id"]: r for r in rows if r["claim_id"] not in ROW_JUDGES}


def rules_for(notebook: str) -> list:
    """The rules judged on `notebook`'s design runs (rules.RULES), in registry order."""
    want = [rules.RUNS.format(notebook)]
    out = [fn for fn, names in rules.RULES.values() if names == want]
    if not out:
        raise ValueError(f"notebook must be one with a verdict design; {notebook!r} has no "
                         "rule reading its runs in labkit.lab.judging.rules.RULES")
    return out


def _hooks(notebook: str, labels, total: int):
    name = rules.RUNS.format(notebook)
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


def run(notebook: str, entries: dict, *, quick: bool, seed: int = 0):
    """Measure `entries` over fresh processes under the notebook's schedule and judge
    every claim its runs decide. Saves data/<notebook>_verdict_runs.csv; returns
    (runs, {claim id: verdict row}) for the claims of the notebook's own verdict table
    (the article-table rows judged on the same runs are shown in the article's section)."""
    schedule = sequential.schedule(notebook, quick=quick)
    progress, finished = _hooks(notebook, entries, schedule["looks"][-1])
    runs, rows, _ = design.measure_for_verdicts(
        entries, rules_for(notebook), schedule=schedule, seed=seed,
        progress=progress, finished=finished)
    results.save_csv(runs, rules.RUNS.format(notebook))
    return runs, _headline(rows)


def run_rounds(notebook: str, measure, labels, *, quick: bool, seed: int = 0):
    """The same for replications that are rounds: measure(label, round) runs one label
    (a server, say) once in fresh processes; each round runs every label the open claims
    still read once, in an order starting at a random label, mirrored every other round."""
    import pandas as pd

    labels = list(labels)
    schedule = sequential.schedule(notebook, quick=quick)
    progress, finished = _hooks(notebook, labels, schedule["looks"][-1])

    def one_round(i, still):
        order = design.process_order(labels if still is None else still, repeats=1,
                                     rng=random.Random(seed * 100_003 + i))
        if i % 2:
            order = order[::-1]
        return pd.concat([measure(lab, i).assign(side=lab, order=pos)
                          for pos, lab in enumerate(order)], ignore_index=True)

    judged = rules_for(notebook)
    runs, rows, _ = design.sequential(one_round, judged, schedule=schedule,
                                      progress=progress, finished=finished)
    results.save_csv(runs, rules.RUNS.format(notebook))
    return runs, _headline(rows)


def variance_table():
    """labkit.lab.judging.engine.variance_components of every verdict design saved in data/, one
    block of rows per notebook."""
    import pandas as pd

    from labkit.lab.judging import engine

    names = sorted({n for _, files in rules.RULES.values() for n in files
                    if n.endswith(rules.RUNS.format(""))})
    parts = []
    for name in names:
        nb = name[:-len(rules.RUNS.format(""))]
        path = results.data_dir() / f"{name}.csv"
        if path.exists():
            runs = results.read_csv(path, low_memory=False)
            if "worker" in runs:
                parts.append(engine.variance_components(runs).assign(notebook=nb))
    if not parts:
        return pd.DataFrame({"note": ["no verdict design has run yet"]})
    out = pd.concat(parts, ignore_index=True)
    return out[["notebook", *[c for c in out.columns if c != "notebook"]]]
