"""The articles' own tables beside ours: each numeric item of the five articles keeps its
rows and columns, the article's number next to the measured median and its spread, the
relative column the article uses (% over the first row, or a ratio), and the claim id and
verdict that judge the row. Built from the data CSVs the notebooks write (results.data_dir),
never by measuring here.

    from labkit import articles
    t = articles.table("t01")        # one ArticleTable: .frame (for display), .points (figure)
    articles.figure(t)               # the article's points over the measured ones
    articles.article_verdicts("01_stack_size")   # the row claims judged from that notebook

Absolute ns come from another machine (a 5 GHz desktop, a Kunpeng VM): only the relative
columns are compared, and every verdict is the rule of data/claims.csv, written first.
"""
from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from labkit import results, verdicts

S000, S001, S002, S003, S004 = (
    "000_dc0f0e0d023658f3.txt", "001_22488c889cf00991.txt", "002_8f5c488cea1f882d.txt",
    "003_58dac7765c62683c.txt", "004_dfc61b1060864bf1.txt")

# Where each table's notebook section lives (the report links to it).
SECTION = "the-articles-table-beside-ours"


@dataclass
class ArticleTable:
    """One article item: its display frame, its points for the figure, and its verdicts."""
    key: str
    source: str
    title: str
    notebook: str
    frame: object = None            # pandas DataFrame, strings, for display
    points: list = field(default_factory=list)   # (label, article_rel, here, lo, hi)
    reference: str = ""             # the row the figure is normalised to
    ylabel: str = ""                # the figure's y axis, when not "relative to <reference>"
    extra: dict = field(default_factory=dict)    # another measured series: name -> [(v, lo, hi)]
    note: str = ""
    verdicts: dict = field(default_factory=dict)  # claim id -> verdict

    @property
    def anchor(self) -> str:
        return f"article-{self.key}"


# ---- reading the data ------------------------------------------------------------------

def _csv(name: str):
    import pandas as pd

    path = results.data_dir() / f"{name}.csv"
    return pd.read_csv(path, low_memory=False) if path.exists() else None


def _q(v):
    """Median and quartiles of a sample (NaN when empty)."""
    import numpy as np

    v = np.asarray(v, float)
    v = v[~np.isnan(v)]
    if not len(v):
        return (math.nan,) * 3
    q1, m, q3 = np.quantile(v, [0.25, 0.5, 0.75])
    return m, q1, q3


def _noisy(*samples) -> bool:
    import numpy as np

    from labkit.stats import NOISY_CV

    for s in samples:
        if s is None:
            continue
        s = np.asarray(s, float)
        if len(s) > 1 and s.mean() and s.std(ddof=1) >= NOISY_CV * abs(s.mean()):
            return True
    return False


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


# ---- verdicts of the row claims -------------------------------------------------------

def _judge(cid: str, r: tuple, *, noisy: bool = False, note: str = "", why: str = "") -> dict:
    m, lo, hi = r
    if m is None or math.isnan(m):
        return verdicts.cannot_measure(cid, why or "no data for it in this run")
    if math.isinf(lo) or math.isinf(hi) or math.isnan(lo) or math.isnan(hi):
        lo = hi = None
        noisy = True
    return verdicts.judge(cid, float(m), low=None if lo is None else float(lo),
                          high=None if hi is None else float(hi), noisy=noisy, note=note)


def _order(cid: str, first, middle, last, *, label: str, fmt=lambda v: _g(v)) -> dict:
    """x = 1 if first < middle < last with disjoint quartile spans, 0 if an order is
    reversed beyond them, the median ordering otherwise (then inconclusive by spread)."""
    a, b, c = _q(first), _q(middle), _q(last)
    if any(math.isnan(v[0]) for v in (a, b, c)):
        return verdicts.cannot_measure(cid, f"{label}: a server is missing from this run")
    strict = a[2] < b[1] and b[2] < c[1]
    reversed_ = a[1] > b[2] or b[1] > c[2]
    x = 1 if strict else 0 if reversed_ else 1 if a[0] < b[0] < c[0] else 0
    lo_hi = {} if strict or reversed_ else {"low": 1 - x, "high": x}
    measured = f"x={x}: {label} {fmt(a[0])} < {fmt(b[0])} < {fmt(c[0])} (medians)"
    return verdicts.judge(cid, x, measured=measured, **lo_hi)


def _stack(df, kernel: str, size: int, pattern: str = "pingpong", contexts: int = 2,
           colour: int = 0):
    if df is None:
        return None
    sel = df[(df.kernel == kernel) & (df.pattern == pattern) & (df.stack_size == size)
             & (df.contexts == contexts) & (df.colour_step.fillna(0) == colour)]
    return sel.ns_per_switch.to_numpy()


def _kernel(df, kernel: str, **eq):
    if df is None:
        return None
    sel = df[df.kernel == kernel]
    for k, v in eq.items():
        if k in sel:
            sel = sel[sel[k] == v]
    return sel.ns_per_switch.to_numpy()


KB, MB = 1 << 10, 1 << 20
STACKS = [(4 * KB, "4 KB", 22), (16 * KB, "16 KB", 24), (64 * KB, "64 KB", 28),
          (256 * KB, "256 KB", 35), (1 * MB, "1 MB", 45), (8 * MB, "8 MB", 120)]
STACK_CLAIMS = {16 * KB: "C000.2a", 64 * KB: "C000.2b", 256 * KB: "C000.2c",
                1 * MB: "C000.2d", 8 * MB: "C000.2"}


def _j_stack(cid):
    size = next(s for s, c in STACK_CLAIMS.items() if c == cid)
    d = _csv("01_stack_size")
    a, b = _stack(d, "boost_fiber", size), _stack(d, "boost_fiber", 4 * KB)
    return _judge(cid, _ratio(a, b), noisy=_noisy(a, b),
                  note=f"Boost fiber ping-pong, {size // KB} KiB over 4 KiB")


def _j_o3():
    d = _csv("02_optimisation_levels")
    a, b = _kernel(d, "boost_fiber", build="O3"), _kernel(d, "boost_fiber", build="O2")
    return _judge("C000.3a", _ratio(a, b), noisy=_noisy(a, b), note="Boost fiber ping-pong")


def _sym(d, asym: bool, n: int):
    if d is None:
        return None
    sel = d[(d.kernel == "asm_fpu") & (d.asymmetric == asym) & (d.contexts == n)]
    return sel.ns_per_switch.to_numpy()


def _j_small_n():
    d = _csv("03_symmetric_vs_asymmetric")
    a, b = _sym(d, True, 2), _sym(d, False, 2)
    return _judge("C000.4a", _ratio(a, b), noisy=_noisy(a, b), note="asm_fpu ring, N=2")


def jump_fcontext_memory_ops(library: str | None = None) -> dict:
    """Stores, loads and instructions in Boost's jump_fcontext, counted in its disassembly
    (objdump): {'stores', 'loads', 'instructions', 'library'}; {} when objdump or the
    library is missing. A static count: what one call executes, as the routine is
    straight-line code."""
    import glob

    lib = library or next(iter(sorted(glob.glob("/usr/lib/*/libboost_context.so*"))), None)
    if not lib or not shutil.which("objdump"):
        return {}
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn",
                              "--disassemble=jump_fcontext", lib], capture_output=True,
                             text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {**count_memory_ops(out), "library": lib}


def count_memory_ops(disassembly: str) -> dict:
    """Count instructions, memory writes and memory reads in objdump's AT&T output of one
    routine. push/stmxcsr/fnstcw and a mov to (...) write; pop/ret/ldmxcsr/fldcw and a mov
    from (...) read; lea touches no memory."""
    stores = loads = n = 0
    for line in disassembly.splitlines():
        m = re.match(r"\s*[0-9a-f]+:\s+([a-z0-9]+)\s*(.*)$", line)
        if not m:
            continue
        op, args = m.group(1), m.group(2).split("#")[0].strip()
        n += 1
        if op.startswith("push") or op in ("stmxcsr", "fnstcw"):
            stores += 1
        elif op.startswith("pop") or op in ("ret", "ldmxcsr", "fldcw"):
            loads += 1
        elif op.startswith("lea") or op.startswith("nop") or op.startswith("endbr"):
            continue
        elif "(" in args:
            # AT&T: the destination is last; memory there is a write, elsewhere a read.
            last = args.rsplit(",", 1)[-1]
            if "(" in last:
                stores += 1
            else:
                loads += 1
            if op.startswith("jmp") or op.startswith("call"):
                pass
    return {"stores": stores, "loads": loads, "instructions": n}


def _anatomy():
    d = _csv("06_fp_state_and_return_anatomy")
    if d is not None and len(d):
        return d.iloc[0].to_dict()
    return jump_fcontext_memory_ops()


def _j_anatomy(cid):
    a = _anatomy()
    what = "stores" if cid == "C000.6a" else "loads"
    if not a:
        return verdicts.cannot_measure(cid, "objdump or Boost.Context's library is missing")
    return verdicts.judge(cid, float(a[what]), note=f"counted in {a['library']}'s "
                          f"jump_fcontext ({a['instructions']} instructions)")


def _share(d, setup: str, w: int = 100):
    if d is None:
        return None
    sel = d[(d.setup == setup) & (d.work_cycles == w)]
    return sel


def _j_share():
    d = _share(_csv("08_switch_frequency"), "1 MiB, 1 task/switch")
    if d is None or not len(d):
        return verdicts.cannot_measure("C000.7a", "no 1 MiB, W=100 point in this run")
    m, q1, q3 = _q(d.share_switching)
    return _judge("C000.7a", (m, q1, q3), noisy=_noisy(d.share_switching),
                  note="share of time switching, 1 MiB stacks, one task per switch, W=100")


ECHO_ROWS = [("callbacks", "callback_epoll", 125_000, 12, 50_000),
             ("plain coroutines", "cxx20_new", 108_000, 16, 1_200_000),
             ("optimised coroutines", "cxx20_pool_sym", 138_000, 9, 80_000)]


def _echo(d, server: str, conns: int = 1000, size: int = 64):
    if d is None:
        return None
    return d[(d.server == server) & (d.connections == conns) & (d.message_bytes == size)
             & (d.read_mode == "whole")]


def _j_p99():
    d = _csv("09_echo_servers")
    s = {k: _echo(d, k) for k in ("cxx20_pool_sym", "callback_epoll", "cxx20_new")}
    if any(v is None or not len(v) for v in s.values()):
        return verdicts.cannot_measure("C001.1a", "an echo server is missing from this run")
    return _order("C001.1a", s["cxx20_pool_sym"].p99_us, s["callback_epoll"].p99_us,
                  s["cxx20_new"].p99_us, label="p99 µs optimised < callbacks < plain")


def _j_allocs():
    d = _csv("09_echo_servers")
    s = {k: _echo(d, k) for k in ("cxx20_pool_sym", "callback_epoll", "cxx20_new")}
    if any(v is None or not len(v) for v in s.values()):
        return verdicts.cannot_measure("C001.1b", "an echo server is missing from this run")
    plain = s["cxx20_new"].allocs_per_msg.median()
    others = max(s["callback_epoll"].allocs_per_msg.median(),
                 s["cxx20_pool_sym"].allocs_per_msg.median())
    x = int(plain > 0 and plain >= 10 * others)
    return verdicts.judge("C001.1b", x, measured=f"x={x}: allocations per message plain "
                          f"{plain:.3g}, callbacks and optimised at most {others:.3g}")


def _qps(d, server):
    s = _echo(d, server)
    return None if s is None or not len(s) else s.qps.to_numpy()


def _j_qps_ratio(cid, a_server, b_server):
    d = _csv("09_echo_servers")
    a, b = _qps(d, a_server), _qps(d, b_server)
    if a is None or b is None:
        missing = a_server if a is None else b_server
        return verdicts.cannot_measure(cid, f"no {missing} server in this run (1000 "
                                       f"connections, 64 B)")
    return _judge(cid, _ratio(a, b), noisy=_noisy(a, b),
                  note=f"QPS {a_server} / {b_server}, 1000 connections, 64 B")


def _ucontext_and_condvar(d):
    if d is None:
        return None, None, None
    uc = d[(d.get("part") == "coroutine switch") & (d.kernel == "ucontext")].ns_per_switch
    same = d[(d.get("part") == "kernel hand-off") & (d.task == "thread_condvar")
             & (d.placement == "same-cpu")].ns_per_switch
    cross = d[(d.get("part") == "kernel hand-off") & (d.task == "thread_condvar")
              & (d.placement == "cross-cpu")].ns_per_switch
    return uc.to_numpy(), same.to_numpy(), cross.to_numpy()


def _j_cross_vs_ucontext():
    uc, _, cross = _ucontext_and_condvar(_csv("05_kernel_switches"))
    if uc is None or not len(uc) or not len(cross):
        return verdicts.cannot_measure("C003.3a", "needs two CPUs and the ucontext run")
    return _judge("C003.3a", _ratio(cross, uc), noisy=_noisy(cross, uc),
                  note="condvar hand-off across two CPUs / swapcontext")


def _coro(d, variant, allocator):
    if d is None:
        return None
    sel = d[(d.experiment == "coroutines") & (d.variant == variant) & (d.allocator == allocator)]
    return sel if len(sel) else None


# The five strategies of 004's table: the frames run that stands for each (variant,
# allocator, batch) in notebook 07, and its echo server in notebook 09.
STRATEGIES = [
    ("default new", ("conn256", "heap"), "cxx20_new", 256, 256, 100_000, "C004.1", "C004.1"),
    ("thread-local pool", ("conn256", "tlpool"), "cxx20_pool", 256, 256, 350_000,
     "C004.1a", "C004.1e"),
    ("fewer live locals", ("conn192", "heap"), "cxx20_lean", 192, 192, 360_000,
     "C004.1b", "C004.1f"),
    ("symmetric transfer", ("conn192", "pool"), "cxx20_pool_sym", 192, 192, 420_000,
     "C004.1c", "C004.1g"),
    # With a million alive at once a reused coroutine is still one frame each: the row's
    # memory is that of pooled 192-B frames; reuse shows in the server (no frame per message).
    ("coroutine-pool reuse", ("conn192", "pool"), "cxx20_reuse", 192, 40, 450_000,
     "C004.1d", "C004.1h"),
]


def _mem(d, variant, allocator):
    """Resident MiB for a million suspended coroutines: bytes per coroutine (RSS growth
    over the coroutines alive) x 1,000,000, so a quick run's smaller n reads the same."""
    s = _coro(d, variant, allocator)
    return None if s is None else (s.bytes_per_object * 1e6 / (1 << 20)).to_numpy()


def _j_mem(cid):
    st = next(s for s in STRATEGIES if s[6] == cid)
    d = _csv("07_coroutine_frames")
    a, b = _mem(d, *st[1]), _mem(d, "conn256", "heap")
    if a is None or b is None:
        return verdicts.cannot_measure(cid, f"no run of {st[1][0]} frames from "
                                       f"{st[1][1]!r} in notebook 07's data")
    return _judge(cid, _ratio(a, b), noisy=_noisy(a, b),
                  note=f"RSS of 1M suspended {st[1][0]}/{st[1][1]} over conn256/heap")


def _j_tps(cid):
    st = next(s for s in STRATEGIES if s[7] == cid)
    return _j_qps_ratio(cid, st[2], "cxx20_new")


# Every row claim this module judges (the other claims come from their notebook's
# verdict file): claim id -> a function of the data CSVs.
ROW_JUDGES = {
    **{c: (lambda c=c: _j_stack(c)) for c in ("C000.2a", "C000.2b", "C000.2c", "C000.2d")},
    "C000.3a": _j_o3,
    "C000.4a": _j_small_n,
    "C000.6a": lambda: _j_anatomy("C000.6a"),
    "C000.6b": lambda: _j_anatomy("C000.6b"),
    "C000.6c": lambda: verdicts.cannot_measure(
        "C000.6c", "needs branch-miss counters (perf), which this VM does not expose"),
    "C000.7a": _j_share,
    "C001.1a": _j_p99,
    "C001.1b": _j_allocs,
    "C001.1c": lambda: _j_qps_ratio("C001.1c", "cxx20_new", "callback_epoll"),
    "C003.3a": _j_cross_vs_ucontext,
    **{c: (lambda c=c: _j_mem(c)) for c in ("C004.1a", "C004.1b", "C004.1c", "C004.1d")},
    **{c: (lambda c=c: _j_tps(c)) for c in ("C004.1e", "C004.1f", "C004.1g", "C004.1h")},
}


def article_verdicts(notebook: str):
    """The verdict table of the row claims (ROW_JUDGES) whose experiment is `notebook`,
    judged from the data that notebook wrote: what its 'article's table' section saves
    as data/<notebook>_article_verdicts.csv for the ledger."""
    if not isinstance(notebook, str):
        raise TypeError(f"notebook must be a notebook name such as '01_stack_size', "
                        f"not {type(notebook).__name__}")
    c = verdicts.claims()
    if notebook not in set(c.experiment):
        raise ValueError(f"notebook must be one of {sorted(set(c.experiment))}, "
                         f"got {notebook!r}")
    ids = [i for i in c[c.experiment == notebook].claim_id if i in ROW_JUDGES]
    return _verdict_table([ROW_JUDGES[i]() for i in ids])


def _verdict_table(rows):
    import pandas as pd

    cols = ["claim_id", "source", "claimed_value", "measured_value", "verdict", "rule", "note"]
    return pd.DataFrame(rows, columns=cols)


def save_article_verdicts(notebook: str):
    """Judge the row claims of `notebook` and save them as
    data/<notebook>_article_verdicts.csv; returns the table."""
    t = article_verdicts(notebook)
    results.save_csv(t, f"{notebook}_article_verdicts")
    return t


_cache: dict = {}


def verdict_of(cid: str) -> dict:
    """The verdict row of one claim: judged here for a row claim, otherwise read from its
    notebook's verdict file ({} when that notebook has not run)."""
    if cid in ROW_JUDGES:
        return ROW_JUDGES[cid]()
    nb = verdicts.claim(cid)["experiment"]
    d = _csv(f"{nb}_verdicts")
    if d is None or cid not in set(d.claim_id):
        return {}
    return d[d.claim_id == cid].iloc[0].fillna("").to_dict()


# ---- the eleven tables -----------------------------------------------------------------

def _frame(rows, columns):
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def _verdict_cell(t: ArticleTable, *cids) -> str:
    out = []
    for cid in cids:
        if cid not in t.verdicts:
            t.verdicts[cid] = verdict_of(cid).get("verdict", "not-measured") or "not-measured"
        out.append(f"{cid}: {t.verdicts[cid]}")
    return "; ".join(out)


def _t01() -> ArticleTable:
    t = ArticleTable("t01", S000, "Stack size against switch time (Boost fiber ping-pong)",
                     "01_stack_size", reference="4 KB")
    d = _csv("01_stack_size")
    base = _stack(d, "boost_fiber", 4 * KB)
    # The largest ring measured (4096 contexts in a full run): where stack size shows.
    rings = d[(d.kernel == "asm_fpu") & (d.pattern == "ring")] if d is not None else None
    n_ring = int(rings.contexts.max()) if rings is not None and len(rings) else 4096
    ring_base = _stack(d, "asm_fpu", 4 * KB, "ring", n_ring)
    rows = []
    for size, label, ns in STACKS:
        a = _stack(d, "boost_fiber", size)
        r = _ratio(a, base)
        ring = _stack(d, "asm_fpu", size, "ring", n_ring)
        rr = _ratio(ring, ring_base) if ring is not None and len(ring) else (math.nan,) * 3
        cid = STACK_CLAIMS.get(size, "C000.2 (reference row)")
        rows.append([label, ns, _span(*_q(a)), f"{round(100 * (ns / 22 - 1)):+d}%",
                     _pct(*r), _span(*_q(ring)) if ring is not None and len(ring) else "-",
                     _pct(*rr), _verdict_cell(t, STACK_CLAIMS[size]) if size in STACK_CLAIMS
                     else cid])
        t.points.append((label, ns / 22, *r))
        t.extra.setdefault(f"here: asm_fpu ring of {n_ring}", []).append(rr)
    t.frame = _frame(rows, ["stack", "ns/switch, article", "ns/switch, here (Boost fiber)",
                            "% over 4 KB, article", "% over 4 KB, here",
                            f"ns/switch, here (asm_fpu ring of {n_ring})", "% over 4 KB, ring",
                            "claim: verdict"])
    t.note = ("The article ran Boost fiber at 5 GHz; here the same library. A ping-pong of "
              "two contexts touches two stack tops whatever the size, so no rise is "
              "expected there; the asm_fpu ring of many contexts (notebook 01) is where "
              "stack size shows: stack tops 8 MiB apart alias in the caches, and colouring "
              "them (offsetting each top) is the notebook's test of that.")
    if rings is not None and len(rings):
        big = rings[(rings.contexts == n_ring) & (rings.stack_size == 8 * MB)]
        al, co = (big[big.colour_step.fillna(0) == 0].ns_per_switch.median(),
                  big[big.colour_step.fillna(0) > 0].ns_per_switch.median())
        if al == al and co == co:
            t.note += (f" Here, {n_ring} contexts with 8 MiB stacks: {_g(al)} ns aligned, "
                       f"{_g(co)} ns coloured.")
    return t


def _t02() -> ArticleTable:
    t = ArticleTable("t02", S000, "Optimisation level against switch time",
                     "02_optimisation_levels", reference="-O2")
    d = _csv("02_optimisation_levels")
    base = _kernel(d, "boost_fiber", build="O2")
    rows = []
    for build, ns, cid in (("O0", 180, "C000.3"), ("O2", 25, None), ("O3", 22, "C000.3a")):
        a = _kernel(d, "boost_fiber", build=build)
        r = _ratio(a, base)
        instr = "-"
        if d is not None and "net" in d:
            s = d[(d.kernel == "boost_fiber") & (d.build == build)].net.dropna()
            instr = _g(s.iloc[0]) if len(s) else "-"
        rows.append([f"-{build}", ns, _span(*_q(a)), _g(ns / 25), _span(*r), instr,
                     _verdict_cell(t, cid) if cid else "C000.3 (reference row)"])
        t.points.append((f"-{build}", ns / 25, *r))
    t.frame = _frame(rows, ["build", "ns/switch, article", "ns/switch, here (Boost fiber)",
                            "ratio to -O2, article", "ratio to -O2, here",
                            "instructions/switch, here (callgrind)", "claim: verdict"])
    t.note = ("The switch itself is assembly and does not change with -O; what -O0 slows "
              "is the C++ around it (Boost's fiber wrappers), which callgrind's instruction "
              "count shows without timing noise.")
    return t


def _t03() -> ArticleTable:
    t = ArticleTable("t03", S000, "Symmetric against asymmetric switching",
                     "03_symmetric_vs_asymmetric", reference="N=2",
                     ylabel="asymmetric / symmetric (1 = the same)")
    d = _csv("03_symmetric_vs_asymmetric")
    rows = []
    for label, n, art_ns, art_r, cid in (("few workers", 2, "~25 both", 1.0, "C000.4a"),
                                         ("about 1000 workers", 1024, "~25 vs ~30", 1.15,
                                          "C000.4")):
        s, a = _sym(d, False, n), _sym(d, True, n)
        r = _ratio(a, s)
        rows.append([label, n, art_ns, _span(*_q(s)), _span(*_q(a)),
                     "1.0" if n == 2 else "1.1-1.2", _span(*r), _verdict_cell(t, cid)])
        t.points.append((f"N={n}", art_r, *r))
    t.frame = _frame(rows, ["workers", "N here", "ns/transfer, article",
                            "symmetric ns, here (asm_fpu)", "asymmetric ns, here",
                            "asym/sym, article", "asym/sym, here", "claim: verdict"])
    t.note = "The figure plots the ratio asym/sym itself (1.0 = no difference)."
    return t


LADDER = [("virtual call", "virtual_call", "a few", 3, "C000.1"),
          ("fiber switch (Boost)", "boost_fiber", "20-30", 25, "C000.1"),
          ("system call", "syscall_getppid", "hundreds", 200, "C000.1"),
          ("C++20 coroutine resume+suspend", "cxx20_generator", "2-5", 3.5, "C000.5")]


def _t04() -> ArticleTable:
    t = ArticleTable("t04", S000, "The latency ladder: call, fiber, system call, C++20",
                     "04_latency_ladder", reference="fiber switch (Boost)")
    d = _csv("04_latency_ladder")
    fiber = _kernel(d, "boost_fiber")
    rows = []
    for label, kernel, art, mid, cid in LADDER:
        a = _kernel(d, kernel)
        r = _ratio(a, fiber)
        rows.append([label, art, _span(*_q(a)), _g(mid / 25, 2), _span(*r),
                     _verdict_cell(t, cid)])
        t.points.append((label, mid / 25, *r))
    t.frame = _frame(rows, ["step", "ns, article", "ns, here", "ratio to fiber, article",
                            "ratio to fiber, here", "claim: verdict"])
    t.note = ("The article's words ('a few', 'hundreds') are plotted at 3 and 200 ns, the "
              "middle of its ranges; C000.1 judges the order and the log distances, C000.5 "
              "the stackful/stackless ratio.")
    return t


def _t05() -> ArticleTable:
    t = ArticleTable("t05", S000, "jump_fcontext's anatomy", "06_fp_state_and_return",
                     reference="instructions", ylabel="count / the article's (1 = as it says)")
    a = _anatomy()
    d = _csv("06_fp_state_and_return")
    instr = math.nan
    if d is not None and "net" in d:
        s = d[(d.kernel == "boost_fcontext")].net.dropna()
        instr = float(s.iloc[0]) if len(s) else math.nan
    rows = [["stores", "about 8", _g(a.get("stores", math.nan)), "objdump count",
             _verdict_cell(t, "C000.6a")],
            ["loads", "about 8", _g(a.get("loads", math.nan)), "objdump count",
             _verdict_cell(t, "C000.6b")],
            ["instructions per switch", "about 20", _g(instr),
             "callgrind, net of the empty loop", _verdict_cell(t, "C000.6")],
            ["misprediction of the final jump", "10-20 cycles", "cannot measure here",
             "needs branch-miss counters (perf); this VM exposes none", _verdict_cell(t, "C000.6c")]]
    for label, art, v in (("stores", 8, a.get("stores", math.nan)),
                          ("loads", 8, a.get("loads", math.nan)),
                          ("instructions", 20, instr)):
        t.points.append((label, 1.0, v / art if v == v else math.nan, math.nan, math.nan))
    t.frame = _frame(rows, ["item", "article", "here", "how", "claim: verdict"])
    t.note = ("Counts are exact (no spread): the figure plots here/article per item "
              "(1.0 = as the article says).")
    return t


def _t06() -> ArticleTable:
    t = ArticleTable("t06", S000, "Case study: share of time switching, before and after",
                     "08_switch_frequency", reference="before",
                     ylabel="share / share before; throughput ratio")
    d = _csv("08_switch_frequency")
    before = _share(d, "1 MiB, 1 task/switch")
    after = _share(d, "64 KiB, 32 tasks/switch")
    b = _q(before.share_switching) if before is not None else (math.nan,) * 3
    a = _q(after.share_switching) if after is not None else (math.nan,) * 3
    gain = _ratio(after.throughput_mtasks_s.to_numpy() if after is not None else None,
                  before.throughput_mtasks_s.to_numpy() if before is not None else None)
    pc = (lambda v: tuple(100 * x for x in v))
    rows = [["before: 1 MB stacks, 1 task per switch, ~100 cycles of work", "~15%",
             _span(*pc(b), 2) + "%", _verdict_cell(t, "C000.7a")],
            ["after: 64 KB stacks, batches of 32", "under 3%", _span(*pc(a), 2) + "%",
             _verdict_cell(t, "C000.7")],
            ["throughput, after / before", "1.4 (+40%)", _span(*gain),
             _verdict_cell(t, "C000.7")]]
    t.points = [("share before", 1.0, 1.0, b[1] / b[0] if b[0] else math.nan,
                 b[2] / b[0] if b[0] else math.nan),
                ("share after", 3 / 15, *(v / b[0] if b[0] else math.nan for v in a)),
                ("throughput after/before", 1.4, *gain)]
    t.frame = _frame(rows, ["row", "article", "here", "claim: verdict"])
    t.note = ("W=100 TSC ticks of work per task, 64 asm_fpu coroutines on one thread; the "
              "per-worker local queues of the article are not modelled (one thread).")
    return t


def _t07() -> ArticleTable:
    t = ArticleTable("t07", S001, "Echo server: callbacks, plain and optimised coroutines",
                     "09_echo_servers", reference="callbacks")
    d = _csv("09_echo_servers")
    cb = _qps(d, "callback_epoll")
    rows = []
    for label, server, qps, p99, aps in ECHO_ROWS:
        s = _echo(d, server)
        have = s is not None and len(s)
        q = _q(s.qps) if have else (math.nan,) * 3
        r = _ratio(s.qps.to_numpy() if have else None, cb)
        cids = ["C001.1", "C001.1a", "C001.1b"] + (["C001.1c"] if server == "cxx20_new" else [])
        rows.append([label, server, f"{qps:,}", _span(*q), _g(qps / 125_000),
                     _span(*r), f"{p99} ms",
                     _span(*(v / 1000 for v in _q(s.p99_us)), 2) + " ms" if have else "-",
                     f"{aps:,}", _g(s.allocs_per_s.median()) if have else "-",
                     _verdict_cell(t, *cids)])
        t.points.append((label, qps / 125_000, *r))
    t.frame = _frame(rows, ["style", "server here", "QPS, article", "QPS, here",
                            "QPS / callbacks, article", "QPS / callbacks, here",
                            "p99, article", "p99, here", "allocations/s, article",
                            "allocations/s, here", "claims: verdicts"])
    t.note = ("1000 connections, 64-byte messages on loopback, server pinned to one CPU and "
              "the load generator to the other (the article: wrk on 8 cores). Optimised "
              "coroutines here are pooled frames with symmetric transfer.")
    return t


def _t08() -> ArticleTable:
    t = ArticleTable("t08", S001, "Allocation, io_uring and the cost of plain coroutines",
                     "09_echo_servers", reference="as claimed",
                     ylabel="the ratio of each row")
    f = _csv("07_coroutine_frames")

    def alloc(name):
        if f is None:
            return None
        s = f[(f.experiment == "allocation") & (f.allocator == name) & (f.pattern == "one block")
              & (f.block == 256)] if "block" in f else None
        return None if s is None or not len(s) else s.ns_per_pair.to_numpy()
    heap, pool = alloc("heap"), alloc("pool")
    d = _csv("09_echo_servers")

    def qps(server):
        return _qps(d, server)
    hp = _ratio(heap, pool)
    ur = _ratio(qps("asio_uring"), qps("asio_epoll"))
    pc = _ratio(qps("cxx20_new"), qps("callback_epoll"))
    rows = [["frame allocation, heap", "~100 ns", _span(*_q(heap)) + " ns", "heap/pool 10",
             _span(*hp), _verdict_cell(t, "C001.2")],
            ["frame allocation, pool", "~10 ns", _span(*_q(pool)) + " ns", "", "",
             _verdict_cell(t, "C001.2")],
            ["asio io_uring / epoll QPS", "+8%", _pct(*ur), "1.08", _span(*ur),
             _verdict_cell(t, "C001.3")],
            ["plain coroutines / callbacks QPS", "-15%", _pct(*pc), "0.864", _span(*pc),
             _verdict_cell(t, "C001.1c")]]
    t.points = [("heap/pool", 10.0, *hp), ("io_uring/epoll", 1.08, *ur),
                ("plain/callbacks", 0.864, *pc)]
    t.frame = _frame(rows, ["row", "article", "here", "ratio, article", "ratio, here",
                            "claim: verdict"])
    t.note = ("Allocate+free pairs of a 256-byte block (notebook 07); QPS at 1000 "
              "connections, 64 B (notebook 09). The figure plots each ratio over the "
              "article's.")
    return t


def _t09() -> ArticleTable:
    t = ArticleTable("t09", S002, "Kernel switches: processes, threads, yielding, FP state",
                     "05_kernel_switches", reference="as claimed",
                     ylabel="the ratio of each row")
    d = _csv("05_kernel_switches")
    f = _csv("06_fp_state_and_return")

    def hand(task):
        if d is None:
            return None
        return d[(d.get("part") == "kernel hand-off") & (d.task == task)
                 & (d.placement == "same-cpu")]
    proc, thr = hand("process_pipe"), hand("thread_pipe")
    pn = proc.ns_per_switch.to_numpy() if proc is not None else None
    tn = thr.ns_per_switch.to_numpy() if thr is not None else None
    pt = _ratio(pn, tn)

    def yields(every):
        if d is None:
            return None
        return d[(d.get("part") == "yield") & (d.every == every)].units_per_s.to_numpy()
    y0, y1 = yields(0), yields(1)
    yr = _ratio(y1, y0)
    fx, fp = _kernel(f, "asm_fxsave", fp_control="same"), _kernel(f, "asm_fpu", fp_control="same")
    fr = _ratio(fx, fp)
    tlb = (verdicts.difference_with_spread(proc.ticks_per_switch, thr.ticks_per_switch)
           if proc is not None and len(proc) and len(thr) else (math.nan,) * 3)
    us = (lambda v: tuple(x / 1000 for x in v))
    rows = [["process switch", "3-5 µs", _span(*us(_q(pn))) + " µs", "process/thread 2.5",
             _span(*pt), _verdict_cell(t, "C002.1")],
            ["thread switch", "1-2 µs", _span(*us(_q(tn))) + " µs", "", "",
             _verdict_cell(t, "C002.1")],
            ["two CPU-bound threads on one core, no yield", "3800 QPS",
             _span(*_q(y0)) + " units/s", "yield/no-yield 0.29", _span(*yr),
             _verdict_cell(t, "C002.2")],
            ["the same, yielding often", "1100 QPS", _span(*_q(y1)) + " units/s", "", "",
             _verdict_cell(t, "C002.2")],
            ["switch saving FP registers", "90 ns", _span(*_q(fx)) + " ns (asm_fxsave)",
             "with/without 3", _span(*fr), _verdict_cell(t, "C002.3")],
            ["switch without", "30 ns", _span(*_q(fp)) + " ns (asm_fpu)", "", "",
             _verdict_cell(t, "C002.3")],
            ["TLB flush", "hundreds to thousands of cycles",
             _span(*tlb) + " TSC ticks (process - thread)", "", "dTLB miss counters "
             "absent in this VM: the switch-time difference stands in",
             _verdict_cell(t, "C002.4")]]
    t.points = [("process/thread", 2.5, *pt), ("yield/no-yield", 1100 / 3800, *yr),
                ("FP save/without", 3.0, *fr)]
    t.frame = _frame(rows, ["row", "article", "here", "ratio, article", "ratio, here",
                            "claim: verdict"])
    t.note = ("Pipe ping-pong pinned to one CPU; yielding 'often' is fixed at one "
              "sched_yield per ~1 µs unit of work.")
    return t


def _t10() -> ArticleTable:
    t = ArticleTable("t10", S003, "1M swapcontext against 1M mutex+condvar thread switches",
                     "05_kernel_switches", reference="ratio thread/swapcontext",
                     ylabel="thread switch / swapcontext")
    uc, same, cross = _ucontext_and_condvar(_csv("05_kernel_switches"))
    ms = (lambda v: tuple(x for x in v))  # ns per switch x 1e6 switches = ms
    r1, r2 = _ratio(same, uc), _ratio(cross, uc)
    rows = [["Kunpeng 916 VM, 1 core (article)", "814", "3,300", "4.05", "",
             _verdict_cell(t, "C003.2")],
            ["i7-9700 VM, 7 cores (article)", "430", "32,000", "74", "",
             _verdict_cell(t, "C003.3", "C003.3a")],
            ["here, threads on 1 CPU", _span(*ms(_q(uc))), _span(*ms(_q(same))), "",
             _span(*r1), "judges C003.2"],
            ["here, threads on 2 CPUs", _span(*ms(_q(uc))), _span(*ms(_q(cross))), "",
             _span(*r2), "judges C003.3a (C003.3: 2 CPUs / 1 CPU)"],
            ["Kunpeng 916 (textbook): one switch, thread vs fiber", "500 ns", "1,900 ns",
             "3.8", "AArch64 hardware: not here", _verdict_cell(t, "C003.1")]]
    t.points = [("1 core: thread/swapcontext", 3300 / 814, *r1),
                ("cross-core: thread/swapcontext", 32000 / 430, *r2)]
    t.frame = _frame(rows, ["machine", "1M swapcontext ms, article / here",
                            "1M thread switches ms, article / here",
                            "thread/swapcontext, article", "thread/swapcontext, here",
                            "claim: verdict"])
    t.note = ("ns per one-way switch equals ms per million switches. The Kunpeng rows need "
              "AArch64 hardware (qemu-user times an emulator), so the ratio is what travels.")
    return t


def _t11() -> ArticleTable:
    t = ArticleTable("t11", S004, "Five coroutine-frame strategies: frame, memory for 1M, TPS",
                     "07_coroutine_frames", reference="default new")
    f = _csv("07_coroutine_frames")
    d = _csv("09_echo_servers")
    base_mem = _mem(f, "conn256", "heap")
    base_q = _qps(d, "cxx20_new")
    rows = []
    for label, (var, alloc), server, art_frame, art_mb, art_tps, mc, tc in STRATEGIES:
        s = _coro(f, var, alloc)
        frame = _g(s.frame_bytes.median()) if s is not None else "-"
        mem = _mem(f, var, alloc)
        q = _qps(d, server)
        mr, qr = _ratio(mem, base_mem), _ratio(q, base_q)
        e = _echo(d, server)
        per_msg = (f"{_g(e.allocs_per_msg.median(), 2)} / {_g(e.alloc_bytes_per_msg.median())} B"
                   if e is not None and len(e) else "-")
        rows.append([label, art_frame, frame, per_msg, art_mb,
                     _span(*_q(mem)) if mem is not None else f"no {var}/{alloc} run",
                     _g(art_mb / 256), _span(*mr), f"{art_tps:,}",
                     _span(*_q(q)) if q is not None else f"no {server} server in this run",
                     _g(art_tps / 100_000), _span(*qr),
                     _verdict_cell(t, *dict.fromkeys([mc, tc]))])
        t.points.append((label + " TPS", art_tps / 100_000, *qr))
        t.points.append((label + " memory", art_mb / 256, *mr))
    t.frame = _frame(rows, ["strategy", "frame B, article", "frame B, here",
                            "server allocations / bytes per message, here",
                            "MB for 1M, article", "MiB for 1M, here",
                            "memory / default, article", "memory / default, here",
                            "TPS, article", "QPS, here", "TPS / default, article",
                            "QPS / default, here", "claims: verdicts"])
    t.note = ("Memory: resident bytes per suspended coroutine x 1,000,000, in MiB, measured "
              "with all of a run's coroutines suspended at once (notebook 07; a million in "
              "a full run); TPS: the echo load of notebook 09 at 1000 connections, 64 B. The frame "
              "sizes here are built to the article's 256 and 192 B; the servers' own frames show in "
              "their allocations per message (counted in the server). With 1M coroutines "
              "alive at once, reuse keeps one frame per coroutine: its memory row is the "
              "pooled 192-B frames.")
    return t


TABLES = {"t01": _t01, "t02": _t02, "t03": _t03, "t04": _t04, "t05": _t05, "t06": _t06,
          "t07": _t07, "t08": _t08, "t09": _t09, "t10": _t10, "t11": _t11}
# Which tables each notebook shows in its "article's table beside ours" section.
BY_NOTEBOOK = {"01_stack_size": ["t01"], "02_optimisation_levels": ["t02"],
               "03_symmetric_vs_asymmetric": ["t03"], "04_latency_ladder": ["t04"],
               "05_kernel_switches": ["t09", "t10"], "06_fp_state_and_return": ["t05"],
               "07_coroutine_frames": ["t11"], "08_switch_frequency": ["t06"],
               "09_echo_servers": ["t07", "t08", "t11"]}


def table(key: str) -> ArticleTable:
    """One article table ('t01' ... 't11', in article order), built from the data CSVs."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a str such as 't01', not {type(key).__name__}")
    if key not in TABLES:
        raise ValueError(f"key must be one of {sorted(TABLES)}, got {key!r}")
    return TABLES[key]()


def tables() -> list[ArticleTable]:
    """All eleven tables, in article order."""
    return [TABLES[k]() for k in TABLES]


def figure(t: ArticleTable, *, save: bool = True):
    """The article's points (normalised to its reference row) over the measured ones with
    their spread, log scale, titled, the machine in the caption. Saves
    figures/articles-<key>.png/.svg when save is True; returns the figure."""
    import matplotlib

    if not isinstance(t, ArticleTable):
        raise TypeError(f"t must be an ArticleTable from articles.table(), not {type(t).__name__}")
    matplotlib.use("Agg") if matplotlib.get_backend().lower() == "agg" else None
    import matplotlib.pyplot as plt

    from labkit import plots

    labels = [p[0] for p in t.points]
    xs = range(len(labels))
    fig, ax = plt.subplots(figsize=(max(5.5, 0.9 * len(labels) + 2), 3.0))
    art = [p[1] for p in t.points]
    here = [p[2] for p in t.points]
    lo = [max(0.0, p[2] - p[3]) if _finite(p[2], p[3]) else 0.0 for p in t.points]
    hi = [max(0.0, p[4] - p[2]) if _finite(p[2], p[4]) else 0.0 for p in t.points]
    ax.errorbar(list(xs), here, yerr=[lo, hi], fmt="o", capsize=3, color="C0",
                label="here: median, spread")
    for i, (name, series) in enumerate(t.extra.items()):
        v = [p[0] for p in series]
        lo_ = [max(0.0, p[0] - p[1]) if _finite(p[0], p[1]) else 0.0 for p in series]
        hi_ = [max(0.0, p[2] - p[0]) if _finite(p[0], p[2]) else 0.0 for p in series]
        ax.errorbar([x + 0.15 * (i + 1) for x in xs], v, yerr=[lo_, hi_], fmt="s",
                    capsize=3, color=f"C{i + 1}", label=name)
        here = here + v
    ax.plot(list(xs), art, "D", mfc="none", mec="C3", ms=8, label="article")
    ax.set_xticks(list(xs), labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(t.ylabel or f"relative to {t.reference}")
    vals = [v for v in art + here if v is not None and _finite(v) and v > 0]
    if vals and max(vals) / min(vals) > 8:
        plots.log_axis(ax)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(f"{t.title}\n({t.source}: article vs this machine)", fontsize=9)
    if save:
        plots.finish(fig, f"articles-{t.key}")
    else:
        fig.text(0.01, -0.02, plots.machine_caption(), fontsize=7, ha="left", va="top")
        fig.tight_layout()
    return fig


def _finite(*v) -> bool:
    return all(x is not None and not (isinstance(x, float) and (math.isnan(x) or math.isinf(x)))
               for x in v)


def closing_note(ts: list[ArticleTable] | None = None):
    """Per table, which claims reproduced, which were contradicted, which were
    inconclusive (or not measured / not applicable): a frame, one row per table."""
    import pandas as pd

    rows = []
    for t in ts if ts is not None else tables():
        by = {}
        for cid, v in t.verdicts.items():
            by.setdefault(v, []).append(cid)
        rows.append({"table": f"{t.key}: {t.title}",
                     **{v: ", ".join(by.get(v, [])) for v in
                        ("reproduced", "contradicted", "inconclusive", "not-applicable-here",
                         "not-measured")}})
    return pd.DataFrame(rows)


def save_anatomy():
    """Count jump_fcontext's stores, loads and instructions (objdump) and save them as
    data/06_fp_state_and_return_anatomy.csv; returns the counts ({} when objdump or
    Boost.Context is missing: then nothing is saved)."""
    import pandas as pd

    a = jump_fcontext_memory_ops()
    if a:
        results.save_csv(pd.DataFrame([a]), "06_fp_state_and_return_anatomy")
    return a


def to_html(t: ArticleTable) -> str:
    """The table as HTML: title, source, the frame, the note."""
    import html as _html

    return (f"<h3 id='{t.notebook}-{t.key}'>{_html.escape(t.title)}</h3>"
            f"<p><code>{_html.escape(t.source)}</code></p>"
            + t.frame.to_html(index=False, border=0)
            + f"<p><small>{_html.escape(t.note)}</small></p>")


def section(notebook: str) -> None:
    """A notebook's "article's table beside ours": show each of its article tables with
    its figure, then judge the row claims of this notebook from the data it just saved
    and save them (data/<notebook>_article_verdicts.csv) for the ledger."""
    if not isinstance(notebook, str):
        raise TypeError(f"notebook must be a notebook name such as '01_stack_size', "
                        f"not {type(notebook).__name__}")
    if notebook not in BY_NOTEBOOK:
        raise ValueError(f"notebook must be one of {sorted(BY_NOTEBOOK)}, got {notebook!r}")
    import matplotlib.pyplot as plt
    from IPython.display import HTML, display

    for key in BY_NOTEBOOK[notebook]:
        t = table(key)
        display(HTML(to_html(t)))
        fig = figure(t)
        display(fig)
        plt.close(fig)
    v = save_article_verdicts(notebook)
    if len(v):
        display(HTML("<p>The row claims judged from this notebook's data:</p>"
                     + v[["claim_id", "measured_value", "verdict", "note"]].to_html(
                         index=False, border=0)))
