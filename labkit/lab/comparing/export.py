"""Measurements in the formats other tools read: pyperf's JSON (one run per fresh process,
its values that process's repeats), Google Benchmark's JSON (`context` and `benchmarks`,
one repetition per fresh process: the median of its repeats, the statistic the verdict
engine takes its interval over), and a Markdown table (as hyperfine's --export-markdown).

What is exported is the per-process rows: the verdict designs' runs
(data/<notebook>_verdict_runs.csv, one fresh process per `worker`), or a comparison's own
runs. Only times are exported (ns per switch, or ns per pair); a design measured in
queries per second (the echo servers) is left out and said so."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyperf

from labkit.core import results
from labkit.errors import ParameterError

FORMATS = ("pyperf", "google-benchmark", "markdown")
TIME_COLUMNS = ("ns_per_switch", "ns_per_pair")  # the first a design's runs have is exported
RUNS_SUFFIX = "_verdict_runs"


def check_format(fmt) -> str:
    if fmt not in FORMATS:
        raise ParameterError("format", f"must be one of {', '.join(FORMATS)}; got {fmt!r}")
    return fmt


def rows_of(runs, group: str):
    """One design's runs as export rows: benchmark (`group/side`), worker, order, ns, and
    the iterations of one call; None where it has no time column."""
    col = next((c for c in TIME_COLUMNS if c in runs and runs[c].notna().any()), None)
    if col is None or "worker" not in runs or "side" not in runs:
        return None
    out = runs.assign(benchmark=group + "/" + runs.side.astype(str), ns=runs[col].astype(float),
                      unit_of=col)
    if "order" not in out:
        out = out.assign(order=range(len(out)))
    if "switches" not in out:
        out = out.assign(switches=1)
    out = out.assign(commit=runs.labkit_commit.astype(str) if "labkit_commit" in runs
                     else "unknown")
    return out[["benchmark", "worker", "order", "ns", "switches", "unit_of", "commit"]]


def collect(data_dir=None):
    """(rows, left out) of every verdict design's runs in data_dir (default: this results
    folder's data/): rows as rows_of gives them; left out: {file: why}."""
    folder = Path(data_dir) if data_dir is not None else results.data_dir()
    frames, left = [], {}
    for path in sorted(folder.glob(f"*{RUNS_SUFFIX}.csv")):
        runs = results.read_csv(path, low_memory=False)
        got = rows_of(runs, path.name[:-len(RUNS_SUFFIX) - 4])
        if got is None:
            left[path.name] = "no time column (" + ", ".join(TIME_COLUMNS) + ")"
        else:
            frames.append(got)
    if not frames:
        raise ParameterError("results", f"{folder}: no verdict design's runs with times "
                             f"(data/*{RUNS_SUFFIX}.csv); run `labkit reproduce` first")
    return pd.concat(frames, ignore_index=True), left


def pyperf_suite(rows, context: dict):
    """A pyperf BenchmarkSuite: per benchmark, one run per fresh process whose values are
    its repeats, in seconds (values at or below zero, below the timer's resolution, are
    left out: pyperf takes only positive values)."""
    machine = context.get("machine", {})
    common = {"unit": "second", "cpu_model_name": str(machine.get("cpu_model", "unknown")),
              "labkit_machine_id": str(machine.get("machine_id", "unknown")),
              "labkit_command": str(context.get("command", "unknown"))}
    benches = []
    for name, g in rows.groupby("benchmark", sort=False):
        runs = []
        for worker, p in g.sort_values("order").groupby("worker", sort=True):
            values = [v * 1e-9 for v in p.ns if v > 0]
            if values:
                meta = {**common, "name": name, "labkit_worker": int(worker),
                        "labkit_commit": str(p.commit.iloc[0])}
                runs.append(pyperf.Run(values, metadata=meta, collect_metadata=False))
        if runs:
            benches.append(pyperf.Benchmark(runs))
    return pyperf.BenchmarkSuite(benches)


def google_benchmark(rows, context: dict) -> dict:
    """Google Benchmark's JSON: its `context` (with labkit's under `labkit`) and one
    `iteration` row per fresh process and benchmark (the median of its repeats)."""
    machine = context.get("machine", {})
    out = []
    for family, (name, g) in enumerate(rows.groupby("benchmark", sort=False)):
        per = g.groupby("worker").agg(ns=("ns", "median"), switches=("switches", "first"))
        for i, (_, p) in enumerate(per.iterrows()):
            out.append({"name": name, "family_index": family, "per_family_instance_index": 0,
                        "run_name": name, "run_type": "iteration", "repetitions": len(per),
                        "repetition_index": i, "threads": 1,
                        "iterations": int(p.switches) if p.switches == p.switches else 1,
                        "real_time": float(p.ns), "cpu_time": float(p.ns), "time_unit": "ns"})
    ghz = machine.get("tsc_ghz")
    return {"context": {"date": context.get("date", ""), "host_name": "",
                        "executable": "labkit", "num_cpus": machine.get("cpu_count", 0),
                        "mhz_per_cpu": int(round(1000 * ghz)) if ghz else 0,
                        "cpu_scaling_enabled": machine.get("governor") not in (None, "performance"),
                        "caches": [], "load_avg": [], "library_build_type": "release",
                        "labkit": context},
            "benchmarks": out}


def markdown(rows, context: dict) -> str:
    """A Markdown table: per benchmark the median, quartiles, min and max over fresh
    processes of each process's median, and its time relative to the fastest benchmark of
    its group."""
    per = rows.groupby(["benchmark", "worker"]).ns.median().reset_index()
    stats = per.groupby("benchmark", sort=False).ns.agg(
        median="median", q1=lambda s: s.quantile(0.25), q3=lambda s: s.quantile(0.75),
        lo="min", hi="max", processes="size")
    group = stats.index.str.rsplit("/", n=1).str[0]
    fastest = stats["median"].groupby(group).transform("min")
    machine = context.get("machine", {})
    measured = ", ".join(sorted(set(rows.commit)))
    lines = [f"Per fresh process, the median of its repeats (ns); {machine.get('cpu_model', '')}"
             f", machine {machine.get('machine_id', '?')}; measured at labkit {measured}, "
             f"exported by labkit {context.get('labkit_commit', '?')} on "
             f"{context.get('date', '')}.", "",
             "| Benchmark | Median [ns] | Q1 [ns] | Q3 [ns] | Min [ns] | Max [ns] | "
             "Processes | Relative |", "|:---|---:|---:|---:|---:|---:|---:|---:|"]
    for (name, s), best in zip(stats.iterrows(), fastest):
        rel = s["median"] / best if best > 0 else float("nan")
        lines.append(f"| `{name}` | {s['median']:.3g} | {s.q1:.3g} | {s.q3:.3g} | {s.lo:.3g} | "
                     f"{s.hi:.3g} | {int(s.processes)} | {rel:.2f} |")
    return "\n".join(lines) + "\n"


def write(fmt: str, out, rows, context: dict) -> Path:
    """Write `rows` (rows_of / collect) to `out` in `fmt`."""
    fmt = check_format(fmt)
    out = Path(out)
    if not out.parent.is_dir():
        raise ParameterError("output", f"{out}: its folder does not exist")
    if fmt == "pyperf":
        pyperf_suite(rows, context).dump(str(out), compact=False, replace=True)
    elif fmt == "google-benchmark":
        out.write_text(json.dumps(google_benchmark(rows, context), indent=1) + "\n")
    else:
        out.write_text(markdown(rows, context))
    return out


def parse_target(text: str) -> tuple[str, str]:
    """FORMAT=FILE, as --export takes it, checked before anything is measured: a known
    format, and a file that can be written."""
    fmt, sep, path = str(text).partition("=")
    if not sep or not path:
        raise ParameterError("export", f"must be FORMAT=FILE with FORMAT one of "
                             f"{', '.join(FORMATS)}; got {text!r}")
    if fmt not in FORMATS:
        raise ParameterError("export", f"format must be one of {', '.join(FORMATS)}; got {fmt!r}")
    out = Path(path)
    if out.is_dir() or not out.parent.is_dir() or not os.access(out.parent, os.W_OK) \
            or (out.exists() and not os.access(out, os.W_OK)):
        raise ParameterError("export", f"{path}: cannot be written (its folder must exist "
                             "and be writable, and it must not be a folder)")
    return fmt, path
