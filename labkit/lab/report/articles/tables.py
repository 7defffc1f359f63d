"""The eleven tables: each article item with its own rows and columns, the article's
number beside the median and spread of the notebook's sweep (columns marked "sweep"), the
relative column, and the claim and verdict of each row with the value, interval and
processes that verdict stands on, and what the claim's x is."""
from __future__ import annotations

import inspect
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from labkit.core.stats import net_text
from labkit.core.units import KiB, MiB
from labkit.lab import experiment
from labkit.lab.experiment import (COROUTINE_MEMORY, ECHO_SERVERS, FP_STATE_AND_RETURN,
                                   FRAMES_AND_ALLOCATORS, KERNEL_SWITCHES, LATENCY_LADDER,
                                   OPTIMISATION_LEVELS, STACK_SIZE, SWITCH_FREQUENCY,
                                   SYMMETRIC_VS_ASYMMETRIC)
from labkit.lab.judging import claims, verdicts
from labkit.lab.report.articles.anatomy import _anatomy
from labkit.lab.report.articles.measured import (ECHO_ROWS, LADDER, S000, S001, S002, S003, S004,
                                                 STACKS, STACK_CLAIMS, STRATEGIES, _coro, _csv,
                                                 _echo, _g, _kernel, _mem, _pct, _q, _qps, _ratio,
                                                 _reuse_at_judged_pool, _reuse_mem, _share, _span,
                                                 _stack, _switch_cost, _sym, _ucontext_and_condvar)
from labkit.lab.report.articles.rows import judged_on, verdict_of

# The column of each table that carries its rows' verdicts: every verdict with the value
# and interval its rule was applied to (data/*_verdicts.csv), over its fresh processes;
# the sweep's figures beside it are marked SWEEP.
VERDICT_COLUMN = "claim: verdict on the interval it stands on"
QUANTITY_COLUMN = "x: what the claim measures"
SWEEP = "sweep"
# A table whose rows are each a ratio the article gives (t08, t09): its columns and figure.
RATIO_COLUMNS = ["row", "article", f"here ({SWEEP})", "ratio, article", f"ratio, here ({SWEEP})",
                 VERDICT_COLUMN]
RATIO_FIGURE = {"reference": "as claimed", "ylabel": "the ratio of each row"}
_CLAIM = re.compile(r"\b(C\d{3}\.\d+[a-z]?): ")


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
    judged: dict = field(default_factory=dict)    # claim id -> its verdict row

    @property
    def anchor(self) -> str:
        return f"article-{self.key}"


def _frame(rows, columns):
    return pd.DataFrame(rows, columns=columns)


def _finish(t: ArticleTable, rows, columns, note: str) -> ArticleTable:
    """The last step of every table builder: its display frame, with what each shown
    claim's x is beside the verdict column, and its note."""
    frame = _frame(rows, columns)
    if VERDICT_COLUMN in frame:
        quantity = [("; ".join(f"{c}: {t.judged[c].get('measured_quantity', '')}"
                               for c in dict.fromkeys(_CLAIM.findall(str(cell)))
                               if c in t.judged)) for cell in frame[VERDICT_COLUMN]]
        frame.insert(list(frame.columns).index(VERDICT_COLUMN) + 1, QUANTITY_COLUMN, quantity)
    t.frame = frame
    t.note = note
    return t


def _verdict_cell(t: ArticleTable, *cids) -> str:
    """'C000.3a: contradicted on 1 [0.997, 1.01] over 64 processes; ...': each claim's
    verdict with what it stands on (rows.judged_on)."""
    out = []
    for cid in cids:
        if cid not in t.judged:
            row = verdict_of(cid)
            row["verdict"] = row.get("verdict", "") or "not-measured"
            t.judged[cid] = row
            t.verdicts[cid] = row["verdict"]
        out.append(f"{cid}: {judged_on(t.judged[cid])}")
    return "; ".join(out)


# key -> the builder of that table, in article order (each @_table adds its own).
TABLES: dict[str, Callable[[], ArticleTable]] = {}


def _table(key: str, source: str, title: str, record, **figure):
    """Declares a table builder: the table's key, the article item it answers (source,
    title), the experiment's record whose notebook it shows and whose data the builder gets
    (None when not measured), and the figure's `reference` and `ylabel`. The builder fills
    the table's points and verdicts and returns its rows, columns and note."""
    def register(build):
        def made() -> ArticleTable:
            t = ArticleTable(key, source, title, record.name, **figure)
            return _finish(t, *build(t, _csv(record.data)))
        TABLES[key] = made
        return build
    return register


@_table("t01", S000, "Stack size against switch time (Boost fiber ping-pong)",
        STACK_SIZE, reference="4 KB")
def _t01(t: ArticleTable, d) -> tuple[list, list[str], str]:
    base = _stack(d, "boost_fiber", 4 * KiB)
    # The largest ring measured (4096 contexts in a full run): where stack size shows.
    rings = d[(d.entry == "asm_fpu") & (d.pattern == "ring")] if d is not None else None
    n_ring = int(rings.contexts.max()) if rings is not None and len(rings) else 4096
    ring_base = _stack(d, "asm_fpu", 4 * KiB, "ring", n_ring)
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
    note = ("The article ran Boost fiber at 5 GHz; here the same library. A ping-pong of "
            "two contexts touches two stack tops whatever the size, so no rise is "
            "expected there; the asm_fpu ring of many contexts (notebook 01) is where "
            "stack size shows: stack tops 8 MiB apart alias in the caches, and colouring "
            "them (offsetting each top) is the notebook's test of that.")
    if rings is not None and len(rings):
        big = rings[(rings.contexts == n_ring) & (rings.stack_size == 8 * MiB)]
        al, co = (big[big.colour_step.fillna(0) == 0].ns_per_switch.median(),
                  big[big.colour_step.fillna(0) > 0].ns_per_switch.median())
        if al == al and co == co:
            note += (f" Here, {n_ring} contexts with 8 MiB stacks: {_g(al)} ns aligned, "
                     f"{_g(co)} ns coloured.")
    return (rows, ["stack", "ns/switch, article",
                   f"ns/switch, here (Boost fiber, {SWEEP})",
                   "% over 4 KB, article", f"% over 4 KB, here ({SWEEP})",
                   f"ns/switch, here (asm_fpu ring of {n_ring}, {SWEEP})",
                   f"% over 4 KB, ring ({SWEEP})",
                   VERDICT_COLUMN], note)


@_table("t02", S000, "Optimisation level against switch time",
        OPTIMISATION_LEVELS, reference="-O2")
def _t02(t: ArticleTable, d) -> tuple[list, list[str], str]:
    base = _kernel(d, "boost_fiber", build="O2")
    rows = []
    for build, ns, cid in (("O0", 180, "C000.3"), ("O2", 25, None), ("O3", 22, "C000.3a")):
        a = _kernel(d, "boost_fiber", build=build)
        r = _ratio(a, base)
        instr = "-"
        if d is not None and "net" in d:
            s = d[(d.entry == "boost_fiber") & (d.build == build)].net.dropna()
            instr = _g(s.iloc[0]) if len(s) else "-"
        rows.append([f"-{build}", ns, _span(*_q(a)), _g(ns / 25), _span(*r), instr,
                     _verdict_cell(t, cid) if cid else "C000.3 (reference row)"])
        t.points.append((f"-{build}", ns / 25, *r))
    return (rows, ["build", "ns/switch, article",
                   f"ns/switch, here (Boost fiber, {SWEEP})",
                   "ratio to -O2, article", f"ratio to -O2, here ({SWEEP})",
                   "instructions/switch, here (callgrind)", VERDICT_COLUMN],
            ("The switch itself is assembly and does not change with -O; what -O0 slows "
             "is the C++ around it (Boost's fiber wrappers), which callgrind's instruction "
             "count shows without timing noise."))


@_table("t03", S000, "Symmetric against asymmetric switching",
        SYMMETRIC_VS_ASYMMETRIC, reference="N=2",
        ylabel="asymmetric / symmetric (1 = the same)")
def _t03(t: ArticleTable, d) -> tuple[list, list[str], str]:
    rows = []
    for label, n, art_ns, art_r, cid in (("few workers", 2, "~25 both", 1.0, "C000.4a"),
                                         ("about 1000 workers", 1024, "~25 vs ~30", 1.15,
                                          "C000.4")):
        s, a = _sym(d, False, n), _sym(d, True, n)
        r = _ratio(a, s)
        rows.append([label, n, art_ns, _span(*_q(s)), _span(*_q(a)),
                     "1.0" if n == 2 else "1.1-1.2", _span(*r), _verdict_cell(t, cid)])
        t.points.append((f"N={n}", art_r, *r))
    return (rows, ["workers", "N here", "ns/transfer, article",
                   f"symmetric ns, here (asm_fpu, {SWEEP})",
                   f"asymmetric ns, here ({SWEEP})",
                   "asym/sym, article", f"asym/sym, here ({SWEEP})", VERDICT_COLUMN],
            "The figure plots the ratio asym/sym itself (1.0 = no difference).")


@_table("t04", S000, "The latency ladder: call, fiber, system call, C++20",
        LATENCY_LADDER, reference="fiber switch (Boost)")
def _t04(t: ArticleTable, d) -> tuple[list, list[str], str]:
    fiber = _kernel(d, "boost_fiber")
    rows = []
    for label, kernel, art, mid, cid in LADDER:
        a = _kernel(d, kernel)
        r = _ratio(a, fiber)
        rows.append([label, art, _span(*_q(a)), _span(*_q(_kernel(d, kernel, "ns_per_switch_raw"))),
                     _g(mid / 25, 2), _span(*r), _verdict_cell(t, cid)])
        t.points.append((label, mid / 25, *r))
    return (rows, ["step", "ns, article", f"net ns, here ({SWEEP})",
                   f"raw ns, here ({SWEEP})",
                   "ratio to fiber, article", f"ratio to fiber, here (net, {SWEEP})",
                   VERDICT_COLUMN],
            ("The article timed whole loops, so its numbers compare with the raw column "
             "(the loop's time per transfer, nothing subtracted); the net column takes "
             "off the same loop without the transfer. The article's words ('a few', "
             "'hundreds') are plotted at 3 and 200 ns, the middle of its ranges; C000.1 "
             "judges the order and the log distances on net times, C000.5 the "
             "stackful/stackless ratio on raw ones (amended)."))


@_table("t05", S000, "jump_fcontext's anatomy", FP_STATE_AND_RETURN,
        reference="instructions", ylabel="count / the article's (1 = as it says)")
def _t05(t: ArticleTable, d) -> tuple[list, list[str], str]:
    a = _anatomy()
    instr = math.nan
    if d is not None and "net" in d:
        s = d[(d.entry == "boost_fcontext")].net.dropna()
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
    return (rows, ["item", "article", "here", "how", VERDICT_COLUMN],
            ("Counts are exact (no spread): the figure plots here/article per item "
             "(1.0 = as the article says)."))


@_table("t06", S000, "Case study: share of time switching, before and after",
        SWITCH_FREQUENCY, reference="before",
        ylabel="share / share before; throughput ratio")
def _t06(t: ArticleTable, d) -> tuple[list, list[str], str]:
    before = _share(d, "1 MiB, 1 task/switch")
    after = _share(d, "64 KiB, 32 tasks/switch")
    b = _q(before.share_switching) if before is not None else (math.nan,) * 3
    a = _q(after.share_switching) if after is not None else (math.nan,) * 3
    gain = _ratio(after.throughput_mtasks_s.to_numpy() if after is not None else None,
                  before.throughput_mtasks_s.to_numpy() if before is not None else None)
    pc = (lambda v: tuple(100 * x for x in v))
    cost = _switch_cost(MiB, 1)
    ind = cost.get("independent") if cost else None
    hidden = "; hidden by out-of-order overlap" if cost and cost["hidden"] else ""
    rows = [["before: 1 MB stacks, 1 task per switch, ~100 cycles of work", "~15%",
             _span(*pc(b), 2) + "%" + (" (dependent work)" if ind else "") + hidden,
             _verdict_cell(t, "C000.7a")],
            ["before, with independent work (no idle slot to hide a switch in)", "~15%",
             net_text(ind["share"], "%", scale=100) if ind else "not measured in this run",
             "C000.7a (its other bound)"],
            ["after: 64 KB stacks, batches of 32", "under 3%", _span(*pc(a), 2) + "%",
             _verdict_cell(t, "C000.7")],
            ["throughput, after / before", "1.4 (+40%)", _span(*gain),
             _verdict_cell(t, "C000.7")]]
    t.points = [("share before", 1.0, 1.0, b[1] / b[0] if b[0] else math.nan,
                 b[2] / b[0] if b[0] else math.nan),
                ("share after", 3 / 15, *(v / b[0] if b[0] else math.nan for v in a)),
                ("throughput after/before", 1.4, *gain)]
    return (rows, ["row", "article", f"here ({SWEEP})", VERDICT_COLUMN],
            ("W=100 TSC ticks of work per task, 64 asm_fpu coroutines on one thread; the "
             "per-worker local queues of the article are not modelled (one thread). "
             "Dependent work is one multiply-add chain, beside which an out-of-order "
             "core runs much of a switch for free; independent work fills the core's "
             "issue width, so a switch cannot hide. Where they disagree the dependent "
             "share bounds the cost from below and the independent one from above."))


@_table("t07", S001, "Echo server: callbacks, plain and optimised coroutines",
        ECHO_SERVERS, reference="callbacks")
def _t07(t: ArticleTable, d) -> tuple[list, list[str], str]:
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
    return (rows, ["style", "server here", "QPS, article", f"QPS, here ({SWEEP})",
                   "QPS / callbacks, article", f"QPS / callbacks, here ({SWEEP})",
                   "p99, article", f"p99, here ({SWEEP})", "allocations/s, article",
                   f"allocations/s, here ({SWEEP})", VERDICT_COLUMN],
            ("1000 connections, 64-byte messages on loopback, server pinned to one CPU and "
             "the load generator to the other (the article: wrk on 8 cores). Optimised "
             "coroutines here are pooled frames with symmetric transfer."))


@_table("t08", S001, "Allocation, io_uring and the cost of plain coroutines",
        ECHO_SERVERS, **RATIO_FIGURE)
def _t08(t: ArticleTable, d) -> tuple[list, list[str], str]:
    f = _csv(FRAMES_AND_ALLOCATORS.data)

    def alloc(name):
        if f is None:
            return None
        s = f[(f.part == "allocation") & (f.allocator == name) & (f.pattern == "one block")
              & (f.block == 256)] if "block" in f else None
        return None if s is None or not len(s) else s.ns_per_pair.to_numpy()
    heap, pool = alloc("heap"), alloc("pool")

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
    return (rows, RATIO_COLUMNS,
            ("Allocate+free pairs of a 256-byte block (notebook 07a); QPS at 1000 "
             "connections, 64 B (notebook 09). The figure plots each ratio over the "
             "article's."))


@_table("t09", S002, "Kernel switches: processes, threads, yielding, FP state",
        KERNEL_SWITCHES, **RATIO_FIGURE)
def _t09(t: ArticleTable, d) -> tuple[list, list[str], str]:
    f = _csv(FP_STATE_AND_RETURN.data)

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
    return (rows, RATIO_COLUMNS,
            ("Pipe ping-pong pinned to one CPU; yielding 'often' is fixed at one "
             "sched_yield per ~1 µs unit of work."))


@_table("t10", S003, "1M swapcontext against 1M mutex+condvar thread switches",
        KERNEL_SWITCHES, reference="ratio thread/swapcontext",
        ylabel="thread switch / swapcontext")
def _t10(t: ArticleTable, d) -> tuple[list, list[str], str]:
    uc, same, cross = _ucontext_and_condvar(d)
    # ns per switch x 1e6 switches / 1e6 ns per ms: the ns figure reads as ms per million.
    r1, r2 = _ratio(same, uc), _ratio(cross, uc)
    rows = [["Kunpeng 916 VM, 1 core (article)", "814", "3,300", "4.05", "",
             _verdict_cell(t, "C003.2")],
            ["i7-9700 VM, 7 cores (article)", "430", "32,000", "74", "",
             _verdict_cell(t, "C003.3", "C003.3a")],
            ["here, threads on 1 CPU", _span(*_q(uc)), _span(*_q(same)), "",
             _span(*r1), "judges C003.2"],
            ["here, threads on 2 CPUs", _span(*_q(uc)), _span(*_q(cross)), "",
             _span(*r2), "judges C003.3a (C003.3: 2 CPUs / 1 CPU)"],
            ["Kunpeng 916 (textbook): one switch, thread vs fiber", "500 ns", "1,900 ns",
             "3.8", "AArch64 hardware: not here", _verdict_cell(t, "C003.1")]]
    t.points = [("1 core: thread/swapcontext", 3300 / 814, *r1),
                ("cross-core: thread/swapcontext", 32000 / 430, *r2)]
    return (rows, ["machine", "1M swapcontext ms, article / here",
                   "1M thread switches ms, article / here",
                   "thread/swapcontext, article",
                   f"thread/swapcontext, here ({SWEEP})",
                   VERDICT_COLUMN],
            ("ns per one-way switch equals ms per million switches; the rows 'here' are the "
             "notebook's sweep. The Kunpeng rows "
             "need AArch64 hardware (qemu-user times an emulator), so the ratio is what "
             "travels."))


@_table("t11", S004, "Five coroutine-frame strategies: frame, memory for 1M, TPS",
        COROUTINE_MEMORY, reference="default new")
def _t11(t: ArticleTable, f) -> tuple[list, list[str], str]:
    d = _csv(ECHO_SERVERS.data)
    base_mem = _mem(f, "conn256", "heap")
    base_q = _qps(d, "cxx20_new")
    rows = []
    reuse = _reuse_at_judged_pool()
    for label, (var, alloc), server, art_frame, art_mb, art_tps, mc, tc in STRATEGIES:
        s = _coro(f, var, alloc)
        frame = _g(s.frame_bytes.median()) if s is not None else "-"
        mem = _mem(f, var, alloc)
        if mc == "C004.1d" and reuse is not None:
            # The reuse design itself: connections served by a pool of reused frames.
            frame, mem = _g(reuse.frame_bytes.median()), _reuse_mem()
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
    return (rows, ["strategy", "frame B, article", "frame B, here",
                   f"server allocations / bytes per message, here ({SWEEP})",
                   "MB for 1M, article", f"MiB for 1M, here ({SWEEP})",
                   "memory / default, article", f"memory / default, here ({SWEEP})",
                   "TPS, article", f"QPS, here ({SWEEP})", "TPS / default, article",
                   f"QPS / default, here ({SWEEP})", VERDICT_COLUMN],
            ("Memory: resident bytes per suspended coroutine x 1,000,000, in MiB, measured "
             "with all of a run's coroutines suspended at once (notebook 07b; a million in "
             "a full run); TPS: the echo load of notebook 09 at 1000 connections, 64 B. "
             "The frame sizes here are built to the article's 256 and 192 B; the servers' "
             "own frames show in their allocations per message (counted in the server). "
             "The reuse row is the reuse design (notebook 07b, section 1b): n connections "
             "(a million in a full run), each a 16-byte record, served by a pool of n / 100 coroutines "
             "whose frames are reused, never freed; its memory follows the pool's size "
             "(07b shows it for every pool size measured)."))


def by_notebook() -> dict[str, list[str]]:
    """Which tables each notebook shows in its "article's table beside ours" section (its
    experiment's record, labkit.lab.experiment)."""
    return {e.name: list(e.tables) for e in experiment.RECORDS.values() if e.tables}


def table(key: str) -> ArticleTable:
    """One article table ('t01' ... 't11', in article order), built from the data CSVs."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a str such as 't01', not {type(key).__name__}")
    if key not in TABLES:
        raise ValueError(f"key must be one of {sorted(TABLES)}, got {key!r}")
    return _with_unplaced(TABLES[key]())


def _placed() -> set[str]:
    """The claims the table builders place: every claim id their code names (here and in
    labkit.lab.report.articles.measured, where the rows' claims are listed)."""
    return set(re.findall(r"C\d{3}\.\d+[a-z]?", inspect.getsource(sys.modules[__name__])
                          + inspect.getsource(inspect.getmodule(_csv))))


def _with_unplaced(t: ArticleTable) -> ArticleTable:
    """A table with a row of its own for each claim of an experiment whose first article
    table it is that no table's builder places: the claim, and its verdict with the value
    and interval it stands on (a claim added to data/claims.csv shows here untouched)."""
    placed = _placed()
    home = [e for e in experiment.RECORDS.values() if e.tables[:1] == (t.key,)]
    placed |= set(t.judged) | set(t.verdicts)
    extra = [c for e in home for c in e.claims() if c not in placed]
    if not extra or t.frame is None:
        return t

    rows = []
    for cid in extra:
        _verdict_cell(t, cid)
        row = t.judged[cid]
        t.verdicts[cid] = row.get("verdict", "") or "not-measured"
        cells = {c: "" for c in t.frame.columns}
        cells[t.frame.columns[0]] = claims.claim(cid)["claim"]
        if VERDICT_COLUMN in cells:
            cells[VERDICT_COLUMN] = f"{cid}: {judged_on(row)}"
        if QUANTITY_COLUMN in cells:
            cells[QUANTITY_COLUMN] = f"{cid}: {row.get('measured_quantity', '')}"
        rows.append(cells)
    t.frame = pd.concat([t.frame, pd.DataFrame(rows, columns=t.frame.columns)],
                        ignore_index=True)
    return t


def tables() -> list[ArticleTable]:
    """All eleven tables, in article order."""
    return [table(k) for k in TABLES]


def closing_note(ts: list[ArticleTable] | None = None):
    """Per table, which claims have each outcome (labkit.lab.judging.verdicts.VERDICTS): a frame,
    one row per table."""
    rows = []
    for t in ts if ts is not None else tables():
        by = {}
        for cid, v in t.verdicts.items():
            by.setdefault(v, []).append(cid)
        rows.append({"table": f"{t.key}: {t.title}",
                     **{v: ", ".join(by.get(v, [])) for v in verdicts.VERDICTS}})
    return pd.DataFrame(rows)
