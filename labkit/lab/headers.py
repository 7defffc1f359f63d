"""Every column a reader sees, in words: the one mapping of the lab's shown tables. Data
files and tidy frames keep their names; only what is shown changes."""
from __future__ import annotations

import os
import re
import warnings

import pandas as pd

from labkit.core import plots

# Column name -> its words (units in the words). A summary's median, q1 and q3 are words of
# the value it summarised (shown's `value`), so they are not here.
HEADERS = {
    # verdict tables and the claims ledger
    "claim_id": "claim", "source": "source text", "claim": "what it says",
    "claimed_value": "article's value", "measured_quantity": "what x is",
    "measured_value": "measured here", "verdict": "verdict", "rule": "rule", "note": "note",
    "noisy": "noisy (pyperf's rule)", "original_verdict": "verdict under the first rule",
    "original_rule": "rule as first written", "method": "interval's method",
    "straddle": "bound straddled", "lean": "leans", "processes": "fresh processes",
    "look": "look that decided", "amendment": "why amended", "notebook": "notebook",
    "figures": "figures", "opposite": "opposite verdicts",
    # the advisor's scores (grid.scores), as the report's choosing section shows them
    "design": "design", "points": "points", "coverage": "coverage of the 95% interval",
    "median_time_error": "median time error", "median_memory_error": "median memory error",
    "median_half_width": "median half-width",
    "interval_score": "interval score (log; lower is better)",
    "model_coverage": "coverage of the model's own interval",
    "median_model_error": "median error of the model alone",
    "original_coverage": "coverage, original rule",
    "original_median_half_width": "median half-width, original rule",
    "original_interval_score": "interval score, original rule",
    "targets_met": "all four targets met",
    # the catalogue
    "entry": "entry", "system": "system", "kind": "kind", "saves": "what it saves",
    "returns_by": "how it returns", "frame_bytes": "frame bytes",
    "available": "runs here", "why_not": "why not measured",
    # what a measurement was told
    "stack_size": "stack size", "stacks": "stacks", "stack": "stack",
    "contexts": "contexts", "colour_step": "colour step (bytes)", "pattern": "pattern",
    "build": "build", "repeats": "repeats", "stack_in_use": "stack in use (bytes)",
    "task": "task", "placement": "placement",
    "what": "what is measured", "every": "yield every k units", "setup": "set-up",
    "work_cycles": "work per task (cycles)",
    "rotation": "pass over the sweep", "server": "server", "case": "case",
    "guard": "guard page", "n": "n (objects)", "n_requested": "n asked for",
    "scaled": "n scaled down", "touched": "stack touched", "loop": "instructions, loop",
    "base": "instructions, baseline", "net": "instructions per switch (net)",
    # summaries
    "median_ticks": "TSC ticks per switch (median)", "iqr": "interquartile range",
    "min": "minimum", "max": "maximum", "mean": "mean", "std": "standard deviation",
    "cv": "coefficient of variation", "low": "interval's low end",
    "high": "interval's high end", "gain": "gain", "effect": "effect",
    "ratio": "ratio of medians", "ratio_to_asm_fpu": "ratio to asm_fpu",
    "spread": "spread of the ratio",
    # the FP/vector state's save and restore (notebook 06)
    "instruction": "instruction", "mask": "component mask", "step": "step",
    "components": "components", "area_bytes": "save area (bytes)",
    "median_ns": "ns per save/restore pair (median)",
    "q1_ns": "ns per save/restore pair (first quartile)",
    "q3_ns": "ns per save/restore pair (third quartile)",
    "raw_ns": "ns per pair, raw (median)", "baseline_ns": "ns per pair, baseline loop (median)",
    "xinuse": "components in use (XINUSE)",
    "copied_bytes_per_switch": "bytes copied per switch",
    # OS counts and hand-offs
    "handoffs": "hand-offs", "vol": "voluntary switches", "invol": "involuntary switches",
    "kernel_per_handoff": "OS switches per hand-off", "counts_agree": "counts as placed",
    "invol_share": "involuntary share", "ns_per_unit": "ns per unit of work (median)",
    "switches_per_unit": "OS switches per unit of work (median)",
    "switches_per_unit_q1": "OS switches per unit of work (first quartile)",
    "switches_per_unit_q3": "OS switches per unit of work (third quartile)",
    # memory
    "bytes_per_object": "bytes per object", "pte_bytes_per_object": "page-table bytes per object",
    "ns_create_per_object": "ns to create one object", "variant": "variant",
    "allocator": "allocator", "block": "block (bytes)", "batch": "batch",
    "live_bytes": "live bytes", "pool_allocs": "pool allocations", "pool_frees": "pool frees",
    "pool_in_use": "pool blocks in use",
    "pool_carved": "pool blocks carved", "pool_free_blocks": "pool free blocks",
    "pool_chunks": "pool chunks", "rss_growth_kb": "resident growth (KiB)",
    "bytes_per_coroutine": "resident bytes per coroutine",
    "page_tables_per_coroutine": "page-table bytes per coroutine",
    "total_mib": "resident total (MiB)", "rss_total_mib": "resident total (MiB)",
    "mib_total": "resident total (MiB)", "pte_total_mib": "page tables total (MiB)",
    "create_ns": "ns to create one", "destroy_ns": "ns to destroy one",
    "left_after_destroy_mib": "MiB left after destroying all",
    "per_million_mib": "MiB per million", "per_million_gib": "GiB per million",
    "pool_size": "pool size", "connection_bytes": "bytes per connection record",
    "frames_allocated": "frames allocated", "served": "connections served",
    "bytes_per_connection": "resident bytes per connection",
    "expected_mib": "expected (MiB)", "used_bytes": "stack bytes used",
    "saved_bytes_per_object": "saved bytes per object", "bookkeeping_bytes": "bookkeeping bytes",
    # notebook 08's checks
    "work_ticks_per_task": "TSC ticks of work per task (median)",
    "switches_per_task": "switches per task", "tasks": "tasks",
    "preempted_runs": "runs the OS preempted", "page_faults": "page faults in timed loops",
    # echo servers
    "qps": "queries per second (median)", "qps_q1": "queries per second (first quartile)",
    "qps_q3": "queries per second (third quartile)", "p99_us": "99th percentile latency (µs)",
    "allocs_per_s": "allocations per second", "allocs_per_msg": "allocations per message",
    "rss_kb": "resident memory (KiB)", "server_cpu_us_per_msg": "server CPU µs per message",
    "server_cpu_util": "server CPU use", "client_cpu_util": "client CPU use",
    "server_preempted_per_s": "server preemptions per second",
    "client_preempted_per_s": "client preemptions per second",
    "whole": "suspensions per message, whole reads", "style": "style", "frames": "frames",
    "transfer": "transfer", "backend": "backend", "io_uring": "io_uring server",
    # the room and the comparison of machines
    "machine": "machine", "machine_id": "machine", "name": "name", "exercise": "exercise",
    "prediction": "prediction", "measured": "measured", "match": "prediction matched",
    "state": "state", "progress": "progress", "seconds": "seconds", "detail": "detail",
}
# A summary's value columns, in the words of what it summarised.
_QUARTILES = {"median": "{} (median)", "q1": "{} (first quartile)", "q3": "{} (third quartile)"}
NS_PER_SWITCH = "ns per switch"
# A column's raw name: what code calls it, not what a reader reads.
_RAW = re.compile(r"^[a-z][a-z0-9_]*$")


def words(name, value: str = NS_PER_SWITCH):
    """The words for column `name` (a summary's median and quartiles: of `value`); a name
    with none, or a label that is already words, is returned as it is."""
    if not isinstance(name, str):
        return name
    if name in _QUARTILES:
        return _QUARTILES[name].format(value)
    return HEADERS.get(name, name)


def _names(frame) -> list:
    """The labels a table shows as headers that are column names: its column labels where
    the columns are not values of a named column, and the names of its column and index
    levels (a pivot's headers, such as entries, are values and stay)."""
    cols = frame.columns
    out = [n for n in cols.names if n is not None] + [n for n in frame.index.names
                                                      if n is not None]
    for level, name in enumerate(cols.names):
        if name is None:
            out += list(cols.get_level_values(level))
    return out


def unworded(frame, value: str = NS_PER_SWITCH) -> list[str]:
    """The raw names among `frame`'s headers that have no words (HEADERS), sorted."""
    return sorted({str(n) for n in _names(frame)
                   if isinstance(n, str) and _RAW.match(n) and words(n, value) == n
                   and n not in HEADERS})


def shown(frame, value: str = NS_PER_SWITCH):
    """`frame` (a DataFrame or Series) with its headers in words: column names, and the
    names of its column and index levels; `value` is what its median and quartiles are of.
    A raw name with no words is refused under plots.STRICT_LOOK (as the tests run), else
    warned about."""
    if isinstance(frame, pd.Series):
        return shown(frame.to_frame(), value)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame or Series, not "
                        f"{type(frame).__name__}")
    if not isinstance(value, str):
        raise TypeError(f"value must be words (a str), not {type(value).__name__}")
    if not value.strip():
        raise ValueError("value must name what the median and quartiles are of; got ''")
    missing = unworded(frame, value)
    if missing:
        said = "no words declared in labkit.lab.headers.HEADERS for " + ", ".join(missing)
        # A table's columns are fixed by code, so the tests find a new raw one; a user's run
        # keeps its table.
        if os.environ.get(plots.STRICT_LOOK) == "1":
            raise ValueError(said)
        warnings.warn(said, stacklevel=2)
    out = frame.copy(deep=False)
    if isinstance(out.columns, pd.MultiIndex):
        out.columns = out.columns.set_levels(
            [lev.map(lambda n: words(n, value)) if name is None else lev
             for lev, name in zip(out.columns.levels, out.columns.names)])
    elif out.columns.name is None:
        out.columns = [words(c, value) for c in out.columns]
    out.columns = out.columns.set_names([words(n, value) for n in out.columns.names])
    out.index = out.index.set_names([words(n, value) for n in out.index.names])
    return out
