"""`labkit export`: this results folder's per-process measurements in pyperf's JSON,
Google Benchmark's JSON or a Markdown table."""
from __future__ import annotations


from labkit.lab.cli.command import Command


def _arguments(p) -> None:
    p.add_argument("format", choices=["pyperf", "google-benchmark", "markdown"],
                   help="pyperf (python -m pyperf stats/hist/compare_to read it), "
                        "google-benchmark (its compare.py reads it) or markdown")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="the file to write")


def _run(args) -> int:
    from labkit.lab import envelope
    from labkit.lab.comparing import export

    rows, left = export.collect()
    path = export.write(args.format, args.output, rows, envelope.context(args.argv))
    print(f"{path}: {rows.benchmark.nunique()} benchmarks, {len(rows)} rows over fresh "
          "processes" + "".join(f"; {f} left out: {why}" for f, why in left.items()))
    return 0


EXPORT = Command(
    "export", "write this results folder's measurements for pyperf, Google Benchmark or Markdown",
    "The verdict designs' per-process runs (data/*_verdict_runs.csv) as pyperf's JSON (one "
    "run per fresh process), Google Benchmark's JSON (one repetition per fresh process) or "
    "a Markdown table.", _arguments, _run, options={"output": "-o"})
