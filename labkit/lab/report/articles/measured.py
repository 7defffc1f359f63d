"""What was measured, read back from the data CSVs the notebooks write (results.data_dir):
the runs that stand for each article row, medians and spreads, and their formatting."""
from __future__ import annotations

import csv
import math

import numpy as np
import pandas as pd

from labkit.core import results
from labkit.core.machine import ROW_METADATA
from labkit.core.stats import is_noisy, quartiles
from labkit.core.units import KiB, MiB
from labkit.experiments import frames, frequency
from labkit.lab.experiment import COROUTINE_MEMORY, SWITCH_FREQUENCY
from labkit.lab.judging import verdicts


S000, S001, S002, S003, S004 = (
    "000_dc0f0e0d023658f3.txt", "001_22488c889cf00991.txt", "002_8f5c488cea1f882d.txt",
    "003_58dac7765c62683c.txt", "004_dfc61b1060864bf1.txt")


def measured_machines(data_dir=None) -> list[dict]:
    """The machines whose measured rows are in data/ (default results.data_dir()): one
    dict per `machine_id`, most rows first, with the metadata columns every row carries
    (labkit.core.machine.ROW_METADATA) at the value most of its rows give, every labkit
    commit its rows name (`labkit_commit`, comma-separated), `rows` and `files`. Empty
    when no data file has a `machine_id` column."""
    folder = results.data_dir() if data_dir is None else data_dir
    parts = []
    for path in sorted(folder.glob("*.csv")):
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
        if "machine_id" in header:
            parts.append(pd.read_csv(path, usecols=[c for c in ROW_METADATA if c in header],
                                     dtype=str).assign(file=path.name))
    if not parts:
        return []
    rows = pd.concat(parts, ignore_index=True)
    out = []
    for _, g in sorted(rows.groupby("machine_id"), key=lambda kv: -len(kv[1])):
        info = {c: (g[c].mode().iloc[0] if g[c].notna().any() else "")
                for c in ROW_METADATA if c in g}
        info["labkit_commit"] = ", ".join(sorted(g.labkit_commit.dropna().unique())) \
            if "labkit_commit" in g else ""
        for key, kind in (("cpu_count", int), ("xsave_bytes", int), ("tsc_ghz", float)):
            try:
                info[key] = kind(float(info[key])) if kind is int else kind(info[key])
            except (KeyError, TypeError, ValueError):
                pass
        out.append({**info, "rows": len(g), "files": sorted(g.file.unique())})
    return out


def _csv(name: str):
    path = results.data_dir() / f"{name}.csv"
    return results.read_csv(path, low_memory=False) if path.exists() else None


def _q(v):
    """Median and quartiles of a sample, NaNs left out (NaN when nothing is left)."""
    v = np.asarray(v, float)
    v = v[~np.isnan(v)]
    return quartiles(v) if len(v) else (math.nan,) * 3


def _noisy(*samples) -> bool:
    """pyperf's rule (labkit.core.stats.is_noisy) on any of the samples given; a missing sample,
    or one whose mean is 0, is not counted."""
    return any(is_noisy(s) for s in samples
               if s is not None and len(s) > 1 and np.asarray(s, float).mean())


def _ratio(a, b):
    """(ratio, low, high) of two samples' medians, or NaNs when one is missing."""
    if a is None or b is None or not len(a) or not len(b):
        return (math.nan,) * 3
    return verdicts.ratio_with_spread(a, b)


def _g(v: float, digits: int = 3) -> str:
    """A number at `digits` significant figures, thousands grouped, '-' for NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def _span(m, lo, hi, digits: int = 3) -> str:
    if m is None or math.isnan(m):
        return "not measured"
    if lo is None or math.isnan(lo) or math.isinf(lo) or math.isinf(hi):
        return _g(m, digits) + ("" if lo is None or math.isnan(lo) else " [unbounded]")
    return f"{_g(m, digits)} [{_g(lo, digits)}, {_g(hi, digits)}]"


def _pct(r, lo, hi) -> str:
    if math.isnan(r):
        return "-"
    if math.isinf(lo) or math.isinf(hi):
        return f"{100 * (r - 1):+.0f}% [unbounded]"
    return f"{100 * (r - 1):+.0f}% [{100 * (lo - 1):+.0f}, {100 * (hi - 1):+.0f}]"


def _stack(df, kernel: str, size: int, pattern: str = "pingpong", contexts: int = 2,
           colour: int = 0):
    if df is None:
        return None
    sel = df[(df.entry == kernel) & (df.pattern == pattern) & (df.stack_size == size)
             & (df.contexts == contexts) & (df.colour_step.fillna(0) == colour)]
    return sel.ns_per_switch.to_numpy()


def _kernel(df, kernel: str, col: str = "ns_per_switch", **eq):
    if df is None:
        return None
    sel = df[df.entry == kernel]
    for k, v in eq.items():
        if k in sel:
            sel = sel[sel[k] == v]
    return sel[col].to_numpy()


STACKS = [(4 * KiB, "4 KB", 22), (16 * KiB, "16 KB", 24), (64 * KiB, "64 KB", 28),
          (256 * KiB, "256 KB", 35), (1 * MiB, "1 MB", 45), (8 * MiB, "8 MB", 120)]


STACK_CLAIMS = {16 * KiB: "C000.2a", 64 * KiB: "C000.2b", 256 * KiB: "C000.2c",
                1 * MiB: "C000.2d", 8 * MiB: "C000.2"}


def _sym(d, asym: bool, n: int):
    if d is None:
        return None
    sel = d[(d.entry == "asm_fpu") & (d.asymmetric == asym) & (d.contexts == n)]
    return sel.ns_per_switch.to_numpy()


def _share(d, setup: str, w: int = 100):
    if d is None:
        return None
    sel = d[(d.setup == setup) & (d.work_cycles == w)]
    return sel


# Notebook 08's runs with independent work (frequency.WORKS), beside its dependent ones.
INDEPENDENT_CSV = SWITCH_FREQUENCY.part("independent")


def _switch_cost(stack_size: int, batch: int, w: int = 100):
    """frequency.switch_cost at one set-up of notebook 08, from both its CSVs (None when
    the dependent runs are missing)."""
    d, i = _csv(SWITCH_FREQUENCY.data), _csv(INDEPENDENT_CSV)
    if d is None:
        return None
    both = pd.concat([x for x in (d, i) if x is not None], ignore_index=True)
    try:
        return frequency.switch_cost(both, work_cycles=w, stack_size=stack_size, batch=batch)
    except ValueError:
        return None


ECHO_ROWS = [("callbacks", "callback_epoll", 125_000, 12, 50_000),
             ("plain coroutines", "cxx20_new", 108_000, 16, 1_200_000),
             ("optimised coroutines", "cxx20_pool_sym", 138_000, 9, 80_000)]


def _echo(d, server: str, conns: int = 1000, size: int = 64):
    if d is None:
        return None
    return d[(d.server == server) & (d.connections == conns) & (d.message_bytes == size)
             & (d.read_mode == "whole")]


def _qps(d, server):
    s = _echo(d, server)
    return None if s is None or not len(s) else s.qps.to_numpy()


def _ucontext_and_condvar(d):
    if d is None:
        return None, None, None
    uc = d[(d.get("part") == "coroutine switch") & (d.entry == "ucontext")].ns_per_switch
    same = d[(d.get("part") == "kernel hand-off") & (d.task == "thread_condvar")
             & (d.placement == "same-cpu")].ns_per_switch
    cross = d[(d.get("part") == "kernel hand-off") & (d.task == "thread_condvar")
              & (d.placement == "cross-cpu")].ns_per_switch
    return uc.to_numpy(), same.to_numpy(), cross.to_numpy()


def _coro(d, variant, allocator):
    if d is None:
        return None
    sel = d[(d.part == "coroutines") & (d.variant == variant) & (d.allocator == allocator)]
    return sel if len(sel) else None


# The five strategies of 004's table: the frames run that stands for each (variant,
# allocator, batch) in notebook 07b, and its echo server in notebook 09.
STRATEGIES = [
    ("default new", ("conn256", "heap"), "cxx20_new", 256, 256, 100_000, "C004.1", "C004.1"),
    ("thread-local pool", ("conn256", "tlpool"), "cxx20_pool", 256, 256, 350_000,
     "C004.1a", "C004.1e"),
    ("fewer live locals", ("conn192", "heap"), "cxx20_lean", 192, 192, 360_000,
     "C004.1b", "C004.1f"),
    ("symmetric transfer", ("conn192", "pool"), "cxx20_pool_sym", 192, 192, 420_000,
     "C004.1c", "C004.1g"),
    # The frames run named here stands in only where 07b has no run of the reuse design
    # itself (REUSE_CSV: connections served by a pool of reused frames), which the table
    # shows when it is there.
    ("coroutine-pool reuse", ("conn192", "pool"), "cxx20_reuse", 192, 40, 450_000,
     "C004.1d", "C004.1h"),
]


# Notebook 07b's runs of the reuse strategy (frames.pool_reuse): n connections served by
# a pool of P reused coroutines, memory against P.
REUSE_CSV = COROUTINE_MEMORY.part("pool_reuse")


def _reuse_at_judged_pool():
    """The reuse runs at the pool size the article's row is judged at
    (frames.judged_pool_size of their n), or None when 07b has not measured them."""
    d = _csv(REUSE_CSV)
    if d is None or not len(d):
        return None
    sel = d[d.pool_size == frames.judged_pool_size(int(d.n.iloc[0]))]
    return sel if len(sel) else None


def _reuse_mem():
    """Resident MiB per million connections of the reuse strategy at its judged pool
    size, one per repeat (None when not measured)."""
    s = _reuse_at_judged_pool()
    return None if s is None else (s.bytes_per_connection * 1e6 / MiB).to_numpy()


def _reuse_ratio():
    """(ratio, low, high, note) of C004.1d: the reuse strategy's memory at its judged pool
    size over default new's (conn256 frames from the heap) for the same n connections
    (frames.pool_reuse_ratio); NaNs and a reason when either run is missing."""
    s, f = _reuse_at_judged_pool(), _coro(_csv(COROUTINE_MEMORY.data), "conn256", "heap")
    if s is None or f is None:
        return (math.nan,) * 3 + ("no pooled-reuse run, or no conn256/heap run, in 07b's data",)
    n, p = int(s.n.iloc[0]), int(s.pool_size.iloc[0])
    if not (f.n == n).any():
        return (math.nan,) * 3 + (f"no conn256/heap run with n = {n:,} beside the reuse runs",)
    r = frames.pool_reuse_ratio(s, f, pool_size=p)
    return (r["ratio"], r["low"], r["high"],
            f"{n:,} connections served by {p:,} reused coroutines (n / "
            f"{round(1 / frames.REUSE_POOL_SHARE)}) over {n:,} conn256 coroutines from the heap")


def _mem(d, variant, allocator):
    """Resident MiB for a million suspended coroutines: bytes per coroutine (RSS growth
    over the coroutines alive) x 1,000,000, so a quick run's smaller n reads the same."""
    s = _coro(d, variant, allocator)
    return None if s is None else (s.bytes_per_object * 1e6 / MiB).to_numpy()


LADDER = [("virtual call", "virtual_call", "a few", 3, "C000.1"),
          ("fiber switch (Boost)", "boost_fiber", "20-30", 25, "C000.1"),
          ("system call", "syscall_getppid", "hundreds", 200, "C000.1"),
          ("C++20 coroutine resume+suspend", "cxx20_generator", "2-5", 3.5, "C000.5")]
