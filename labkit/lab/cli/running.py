"""`labkit reproduce`, `labkit stability` and `labkit report`: the notebooks run, run
again to see whether verdicts hold, and the HTML report rebuilt from the last run."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from labkit.core import results
from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag
# The lab's modules load when a command runs: parsing loads only the parsers.

REPRODUCE_DESCRIPTION = (
    "Run every notebook (or some) with papermill, write data/, figures/ and the HTML report. "
    "A status line on stderr shows the notebook, the sweep point, elapsed time and ETA; "
    "Ctrl-C stops, keeps what finished, and says how to resume.")
STABILITY_DESCRIPTION = (
    "Rerun the verdict-bearing notebooks K times, each run into its own results folder, and "
    "report how many claims keep their verdict and whether two runs ever reached opposite "
    "verdicts.")


def _reproduce_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="small sweeps and few repeats (minutes, what CI runs); results "
                             "go to reports/quick/ and never replace a full run's")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK",
                        help="run only these notebooks (names without .py); the report keeps "
                             "the others' last results, marked as earlier")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"),
                        help="set a notebook parameter (e.g. -p repeats 5), checked against "
                             "its declared type and range (labkit.lab.running.params) before "
                             "anything runs; beats --quick's value; recorded in the executed "
                             "notebook and the report")
    parser.add_argument("-f", "--parameters-file", metavar="FILE",
                        help="notebook parameters from a YAML file of NAME: VALUE lines, "
                             "checked like -p (which beats it)")
    parser.add_argument("--resume", action="store_true",
                        help="continue an interrupted run: skip the notebooks it finished and "
                             "the sweep points already in data/checkpoints/")
    parser.add_argument("--no-progress", action="store_true",
                        help="no status line on stderr")
    parser.add_argument("--timeout", type=int, default=3600, metavar="SECONDS",
                        help="longest a notebook cell may run (default 3600)")
    parser.add_argument("--json", action="store_true",
                        help="print the run's summary as JSON on stdout (verdict counts, each "
                             "claim's verdict, interval and processes, each notebook's time); "
                             "everything else goes to stderr")


def _reproduce(args) -> int:
    from labkit.lab.running import reproduce

    return reproduce.run(args)


def _stability_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=3, help="how many runs, 1 to 50 (default 3)")
    parser.add_argument("--quick", action="store_true", help="the notebooks' quick mode")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="only these notebooks")
    parser.add_argument("--out", type=Path,
                        help="folder for the runs (default reports/stability[-quick])")
    parser.add_argument("--with-committed", action="store_true",
                        help="count the committed full run as run 1 and save data/stability.csv")


def _stability(args) -> int:
    """Run the runs, then print the table, its figure and the run times."""
    from labkit.lab.judging import stability

    table, seconds = stability.run(args.runs, quick=args.quick, only=args.only,
                                   out=args.out, with_committed=args.with_committed)
    print(table.to_string(index=False))
    print(stability.figure(table))
    print("run times: " + ", ".join(f"run {i + 1} {s / 60:.1f} min" for i, s in enumerate(seconds))
          + (" (quick)" if args.quick else " (full)"))
    return 0


def _report(args) -> int:
    from labkit.lab.judging import ledger
    from labkit.lab.report import page
    from labkit.lab.running import notebook_run, notebooks, reproduce

    out = reproduce.reports_dir(args.quick)
    os.environ["LABKIT_RESULTS_DIR"] = str(out if args.quick else results.home())
    manifest = ledger.read_manifest()
    outcomes = []
    for src in notebooks.notebook_sources():
        done = out / "executed" / f"{src.stem}.ipynb"
        if done.exists() and manifest.get(src.stem, {}).get("ok", True):
            outcomes.append(notebook_run.earlier_outcome(src.stem, done, manifest))
    if not outcomes:
        raise FileNotFoundError(f"no executed notebooks in {out / 'executed'}: run "
                                f"`labkit reproduce{' --quick' if args.quick else ''}` first")
    print(page.build(outcomes, out_dir=out, quick=args.quick))
    return 0


REPRODUCE = Command("reproduce", "run the notebooks and build the HTML report",
                    REPRODUCE_DESCRIPTION, _reproduce_arguments, _reproduce, checks_first=True)

STABILITY = Command("stability", "rerun the verdict notebooks K times: do verdicts hold?",
                    STABILITY_DESCRIPTION, _stability_arguments, _stability, checks_first=True)

REPORT = Command("report", "rebuild the HTML report from the last executed notebooks",
                 "Rebuild reports/[quick/]labkit-report.html without running anything.",
                 lambda p: flag(p, "--quick", "the quick run's report"), _report)
