"""How stable is the ledger? Rerun the verdict-bearing notebooks K times, each run into
its own results folder, and report each claim's agreement across the runs.

    labkit stability --runs 3 [--quick] [--only 05_kernel_switches ...] [--out DIR]
    labkit stability --runs 2 --with-committed     # after a full make reproduce

Writes DIR/run-1 ... run-K (data/, figures/, executed/ of each run), DIR/stability.csv
(one row per claim: its verdict in every run, whether they all agree, and whether two
runs reached opposite verdicts) and prints the stability figure with every run's time.
With --with-committed the committed full run (data/00_claims_ledger.csv) is run 1 and
the table is also saved as data/stability.csv, which notebook 00 shows in the report.
The aim: over 3 full runs, no claim reaches opposite verdicts and at least 43 of the 45
keep one verdict.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd

from labkit.core import results
from labkit.errors import ParameterError
from labkit.lab.judging import ledger
from labkit.lab.running import notebook_run, notebooks

OPPOSITE = {("reproduced", "contradicted"), ("contradicted", "reproduced")}


def agreement(tables: list):
    """One row per claim from K ledger tables (claim_id, verdict columns): the verdicts
    run by run, `agree` (all K the same), `opposite` (one run reproduced where another
    contradicted) and the most common verdict."""
    if not isinstance(tables, (list, tuple)) or not tables:
        raise TypeError("tables must be a non-empty list of ledger tables")
    for i, t in enumerate(tables):
        if not isinstance(t, pd.DataFrame) or not {"claim_id", "verdict"} <= set(t.columns):
            raise ValueError(f"tables[{i}] must be a frame with claim_id and verdict columns")
    wide = pd.concat([t.set_index("claim_id").verdict.rename(f"run {i + 1}")
                      for i, t in enumerate(tables)], axis=1)
    runs = list(wide.columns)
    wide["agree"] = wide[runs].nunique(axis=1) == 1
    wide["opposite"] = wide[runs].apply(
        lambda r: any((a, b) in OPPOSITE for a in r for b in r), axis=1)
    wide["most common"] = wide[runs].mode(axis=1)[0]
    return wide.reset_index()


def figure(table, measured_only: bool = True) -> str:
    """'N of M claims keep the same verdict over K runs', counting only claims some run
    measured (not-measured everywhere means the notebook was left out)."""
    runs = [c for c in table.columns if c.startswith("run ")]
    t = table
    if measured_only:
        t = t[~(t[runs] == "not-measured").all(axis=1)]
    return (f"{int(t.agree.sum())} of {len(t)} claims keep the same verdict over "
            f"{len(runs)} runs; {int(t.opposite.sum())} reach opposite verdicts")


def _ledger_of(folder: Path):
    before = os.environ.get("LABKIT_RESULTS_DIR")
    os.environ["LABKIT_RESULTS_DIR"] = str(folder)
    try:
        return ledger.ledger()
    finally:
        if before is None:
            os.environ.pop("LABKIT_RESULTS_DIR", None)
        else:
            os.environ["LABKIT_RESULTS_DIR"] = before


RECORD = "stability"   # data/stability.csv: the check of the committed full run
COMMITTED = "run 1 (committed)"
MEASURED = "measured value, run 1"   # ties a check to the very run it was made beside


def on_record(ledger_table):
    """(table, text): data/stability.csv and its stability figure when its run 1 is the
    run `ledger_table` comes from (the same verdict and measured value for every claim);
    else (None, why)."""
    path = results.data_dir() / f"{RECORD}.csv"
    if not path.exists():
        return None, f"no stability check is on record for these results ({path.name})"
    table = results.read_csv(path)
    now = ledger_table.set_index("claim_id")[["verdict", "measured_value"]].astype(str)
    first = (table.set_index("claim_id")[[COMMITTED, MEASURED]].astype(str)
             if {COMMITTED, MEASURED} <= set(table.columns) else None)
    if first is None or not first.reindex(now.index).set_axis(now.columns, axis=1).equals(now):
        return None, (f"the stability check on record ({path.name}) is of an earlier run: "
                      "its run 1 is not these results")
    return table, figure(table)


def moved(table):
    """The claims whose verdict is not the same in every run, with each run's verdict."""
    runs = [c for c in table.columns if c.startswith("run ")]
    return table.loc[~table.agree, ["claim_id", *runs, "opposite"]]


def run(runs: int = 3, *, quick: bool = False, only: list[str] | None = None,
        out: Path | None = None, with_committed: bool = False, echo=print):
    """Run the verdict-bearing notebooks `runs` times into out/run-k; returns
    (agreement table, seconds per run). with_committed: the committed full run's ledger
    is run 1 and the table is saved as data/stability.csv too."""
    if not isinstance(runs, int) or isinstance(runs, bool) or not 1 <= runs <= 50:
        raise ParameterError("runs", f"must be an int in [1, 50]; got {runs!r}")
    sources = [s for s in notebooks.notebook_sources(only) if s.stem != notebooks.LEDGER]
    if not sources:
        raise ParameterError("only",
                             "must name at least one experiment notebook (not the ledger)")
    out = Path(out).resolve() if out is not None else results.home() / "reports" / (
        "stability-quick" if quick else "stability")
    if with_committed and quick:
        raise ParameterError("with_committed", "compares full runs with the committed full "
                             "run; it cannot be used with quick")
    tables, seconds = [], []
    if with_committed:
        try:
            committed = results.load_csv(notebooks.LEDGER)
        except FileNotFoundError as exc:
            raise ParameterError("with_committed", f"needs a full run's ledger: {exc}") from None
        tables.append(committed)
    for k in range(1, runs + 1):
        folder = out / f"run-{k}"
        start = time.monotonic()
        for src in sources:
            o = notebook_run.run_notebook(src, quick=quick, out_dir=folder / "executed",
                                          results_dir=folder)
            echo(f"  run {k}: {'ok    ' if o.ok else 'FAILED'} {o.name} ({o.seconds:.0f} s)"
                 + ("" if o.ok else f": {o.error.splitlines()[-1][:200] if o.error else ''}"))
        seconds.append(time.monotonic() - start)
        tables.append(_ledger_of(folder))
    table = agreement(tables)
    if with_committed:
        table = table.rename(columns={"run 1": COMMITTED})
        table[MEASURED] = table.claim_id.map(committed.set_index("claim_id").measured_value)
        results.save_csv(table, RECORD)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"{RECORD}.csv", index=False)
    return table, seconds
