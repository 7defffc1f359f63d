"""One function per claim: from the tidy rows a notebook saved (data/<notebook>*.csv)
to that claim's verdict row. The verdict designs and the notebooks' verdict tables call
these, and tests/test_committed_verdicts.py calls them again on the committed data, so
every verdict can be recomputed.

A claim's function is named after its id (C000.2a: `c000_2a`) and RULES finds it by that
name. It reads its experiment's verdict design runs (data/<notebook>_verdict_runs.csv,
the notebook from the claim's `experiment` in data/claims.csv and its record,
labkit.lab.experiment), unless `@reads` names other data; the sides it compares are its
record's named constants, the ones the notebook measures. Adding a claim is its row in
data/claims.csv and its function here.

Each function takes the frame(s) named in RULES and returns `verdicts.judge`'s row.
Timings are judged by labkit.lab.judging.engine: one statistic per fresh process, a repeated
confidence interval over processes, the first look that decides. Exact counts (bytes,
instructions, suspensions) are judged as they are. A group that trips pyperf's noise
rule is flagged in the row, never a veto.
"""
from __future__ import annotations

import inspect
import math
import re

import numpy as np

from labkit.core import results, stats
from labkit.lab import experiment
from labkit.lab.experiment import (COROUTINE_MEMORY, ECHO_SERVERS, FP_STATE_AND_RETURN,
                                   FRAMES_AND_ALLOCATORS, KERNEL_SWITCHES, LATENCY_LADDER,
                                   OPTIMISATION_LEVELS, STACK_SIZE, SWITCH_FREQUENCY,
                                   SYMMETRIC_VS_ASYMMETRIC)
from labkit.lab.judging import engine, verdicts

# The sides each design compares, as its record names them.
S01, S02, S03 = STACK_SIZE.sides, OPTIMISATION_LEVELS.sides, SYMMETRIC_VS_ASYMMETRIC.sides
S04, S05, S06 = LATENCY_LADDER.sides, KERNEL_SWITCHES.sides, FP_STATE_AND_RETURN.sides
S07A, S08, S09 = FRAMES_AND_ALLOCATORS.sides, SWITCH_FREQUENCY.sides, ECHO_SERVERS.sides
# What a rule reads when `@reads` does not say: its experiment's verdict design runs.
OWN = ("data", "verdict_runs")


def reads(*names):
    """A rule reading other data than its experiment's design runs: each name is one of
    its own record's data ("data", "verdict_runs") or another record's data name."""
    def mark(fn):
        fn.reads = names
        return fn
    return mark


def _entry(df, label, col="ns_per_switch"):
    sel = df.loc[df.side == label, col].astype(float) if "side" in df else df.iloc[0:0][col]
    return sel.dropna()


def _have(df, *labels, col="ns_per_switch"):
    """The labels with no measured value in `col` (empty: all present)."""
    present = set(df.side) if "side" in df else set()
    if col not in df:
        return list(labels)
    return [lab for lab in labels if lab not in present or _entry(df, lab, col).empty]


def _noisy(*samples) -> bool:
    return any(stats.is_noisy(s) for s in samples)


def _missing_row(claim_id, runs, *labels, col="ns_per_switch"):
    missing = _have(runs, *labels, col=col)
    if missing:
        return verdicts.cannot_measure(claim_id, f"missing here: {', '.join(missing)}")
    return None


def _per_side(runs, label) -> int:
    """Repeats of `label` in each process (the design's `repeats`)."""
    return int(runs[runs.side == label].groupby("worker").size().median())


def _ratio_row(claim_id, runs, num, den, note="", col="ns_per_switch", **kw):
    """A ratio of two entries, one per process (the median of its passes' ratios), judged
    by the engine."""
    missing = _missing_row(claim_id, runs, num, den, col=col)
    if missing:
        return missing
    a, b = _entry(runs, num, col), _entry(runs, den, col)
    return engine.judge(
        claim_id, {"x": engine.log_ratios(runs, num, den, col)}, looks=engine.looks_of(runs),
        noisy=_noisy(a, b),
        note=f"{num} / {den}, median of the {_per_side(runs, num)} ABBA passes' ratios in "
             f"each process" + (f"; {note}" if note else ""), **kw)


def _positive_indicator(value, low, high):
    """x = 1 when every named log-distance is above 0, 0 when one is below it: the
    interval of x is [1, 1], [0, 0] or [0, 1] from the intervals of the distances."""
    x = float(all(v > 0 for v in value.values()))
    lo = float(all(v > 0 for v in low.values()))
    hi = float(not any(v < 0 for v in high.values()))
    return x, min(lo, x), max(hi, x)


# ---- 01..06: designs over fresh processes (labkit.experiments.verdict_design) ----

def c000_1(runs):
    """C000.1: 1 if virtual_call < boost_fiber < syscall_getppid and the fiber is nearer
    the call on a log scale: three log-distances per process, each with its interval."""
    need = [S04.VIRTUAL_CALL, S04.BOOST_FIBER, S04.SYSCALL]
    missing = _missing_row("C000.1", runs, *need)
    if missing:
        return missing
    call_fiber = engine.log_ratios(runs, S04.BOOST_FIBER, S04.VIRTUAL_CALL)
    fiber_sys = engine.log_ratios(runs, S04.SYSCALL, S04.BOOST_FIBER)
    distances = {"fiber/call": call_fiber, "syscall/fiber": fiber_sys,
                 "nearer the call": fiber_sys - call_fiber}
    c, f, s = (float(_entry(runs, k).median()) for k in need)

    def measured(x, xl, xh, n):
        return (f"x={x:g} [{xl:g}, {xh:g}]: call {c:.3g}, fiber {f:.3g}, syscall {s:.3g} "
                f"ns per transfer; log-distance fiber/call {math.log(f / c):.2f} vs "
                f"syscall/fiber {math.log(s / f):.2f}")

    return engine.judge(
        "C000.1", distances, looks=engine.looks_of(runs),
        scales={k: "linear" for k in distances}, combine=_positive_indicator,
        measured=measured, noisy=_noisy(*(_entry(runs, k) for k in need)),
        note=(f"per round trip (two transfers, the article's loop iteration): boost_fiber "
              f"{2 * f:.3g} ns against the article's 20-30 ns at 5 GHz"))


def c000_5(runs):
    """C000.5, amended: boost_fiber / cxx20_generator in raw ns per transfer (the whole
    timed loop over its switches, as the article times them); the original rule's net
    ratio (each loop minus its empty loop) beside it."""
    pair = (S04.BOOST_FIBER, S04.CXX20_GENERATOR)
    missing = _missing_row("C000.5", runs, *pair, col="ns_per_switch_raw")
    if missing:
        return missing
    (f, g), (fn, gn) = ([_entry(runs, k, col).median() for k in pair]
                        for col in ("ns_per_switch_raw", "ns_per_switch"))
    return engine.judge(
        "C000.5", {"x": engine.log_ratios(runs, *pair, "ns_per_switch_raw")},
        looks=engine.looks_of(runs),
        noisy=_noisy(*(_entry(runs, k, "ns_per_switch_raw") for k in pair)),
        original={"stats": {"x": engine.log_ratios(runs, *pair)},
                  "measured": lambda v, lo, hi, n: f"net ratio {v:.3g} [{lo:.3g}, {hi:.3g}]"},
        note=(f"boost_fiber / cxx20_generator, raw ns per transfer, median of the "
              f"{_per_side(runs, pair[0])} ABBA passes' ratios in each process; per round "
              f"trip (a resume and a suspend, the article's unit), raw: boost_fiber "
              f"{2 * f:.3g} ns, cxx20_generator {2 * g:.3g} ns (article: 20-30 ns and 2-5 ns); "
              f"net of the empty loop: {2 * fn:.3g} and {2 * gn:.3g} ns"))


STACK_ROWS = {"C000.2": S01.MIB_8, "C000.2a": S01.KIB_16, "C000.2b": S01.KIB_64,
              "C000.2c": S01.KIB_256, "C000.2d": S01.MIB_1}


def _stack_rule(claim_id):
    def rule(runs):
        return _ratio_row(claim_id, runs, STACK_ROWS[claim_id], S01.KIB_4,
                          note="Boost fiber ping-pong")
    rule.__name__ = rule.__qualname__ = claim_id.lower().replace(".", "_")
    rule.__doc__ = f"{claim_id}: Boost fiber ping-pong, {STACK_ROWS[claim_id]} / {S01.KIB_4} stacks."
    return rule


c000_2, c000_2a, c000_2b, c000_2c, c000_2d = (_stack_rule(c) for c in STACK_ROWS)


def c000_3(runs):
    """C000.3: Boost fiber ping-pong built at -O0 / at -O2."""
    return _ratio_row("C000.3", runs, S02.O0, S02.O2, note="Boost fiber ping-pong")


def c000_3a(runs):
    """C000.3a: Boost fiber ping-pong built at -O3 / at -O2."""
    return _ratio_row("C000.3a", runs, S02.O3, S02.O2, note="Boost fiber ping-pong")


def c000_4(runs):
    """C000.4, amended: asm_fpu scheduler of 1024 / two-context ping-pong; the original
    rule's ring of 1024 beside it."""
    sides = (S03.SCHEDULER_1024, S03.RING_1, S03.RING_1024)
    missing = _missing_row("C000.4", runs, *sides)
    if missing:
        return missing
    sched, pp, ring = (_entry(runs, k) for k in sides)
    return engine.judge(
        "C000.4", {"x": engine.log_ratios(runs, S03.SCHEDULER_1024, S03.RING_1)},
        looks=engine.looks_of(runs), noisy=_noisy(sched, pp, ring),
        original={"stats": {"x": engine.log_ratios(runs, S03.SCHEDULER_1024, S03.RING_1024)},
                  "measured": lambda v, lo, hi, n: (f"scheduler 1024 / ring 1024 = {v:.3g} "
                                                   f"[{lo:.3g}, {hi:.3g}]")},
        note=(f"asm_fpu per transfer: scheduler of 1024 {sched.median():.3g} ns, two-context "
              f"ping-pong {pp.median():.3g} ns, ring of 1024 {ring.median():.3g} ns"))


def c000_4a(runs):
    """C000.4a: asm_fpu scheduler of 2 coroutines / symmetric ring of 2, per transfer."""
    return _ratio_row("C000.4a", runs, S03.SCHEDULER_2, S03.RING_2, note="asm_fpu, N=2")


def c002_3(runs):
    """C002.3: asm_fxsave / asm_fpu, both contexts with the same control words."""
    note = ""
    if not _have(runs, S06.ASM_XSAVE):
        note = (f"{S06.ASM_XSAVE} / {S06.ASM_FPU} = "
                f"{_entry(runs, S06.ASM_XSAVE).median() / _entry(runs, S06.ASM_FPU).median():.1f}")
    return _ratio_row("C002.3", runs, S06.ASM_FXSAVE, S06.ASM_FPU, note=note)


def c001_4(runs):
    """C001.4: one-way futex thread switch / asm switch, same CPU, with both magnitudes."""
    missing = _missing_row("C001.4", runs, S05.FUTEX_SAME_CPU, S05.ASM)
    if missing:
        return missing
    t = engine.per_process(runs)
    futex, asm = _entry(runs, S05.FUTEX_SAME_CPU), _entry(runs, S05.ASM)
    named = {"x": engine.log_ratios(runs, S05.FUTEX_SAME_CPU, S05.ASM),
             "coroutine_ns": np.log(t[S05.ASM].to_numpy(float)),
             "thread_ns": np.log(t[S05.FUTEX_SAME_CPU].to_numpy(float))}

    def measured(v, lo, hi, n):
        return (f"x = {v['x']:.0f} [{lo['x']:.0f}, {hi['x']:.0f}]; asm {v['coroutine_ns']:.3g} "
                f"ns, thread_futex {v['thread_ns']:.0f} ns one-way, same CPU")

    return engine.judge("C001.4", named, looks=engine.looks_of(runs), noisy=_noisy(futex, asm),
                        measured=measured)


def c002_1(runs):
    """C002.1: process / thread pipe ping-pong, one-way, same CPU."""
    return _ratio_row("C002.1", runs, S05.PROCESS_PIPE_SAME_CPU, S05.THREAD_PIPE_SAME_CPU)


def c002_2(runs):
    """C002.2: throughput yielding every unit / never yielding."""
    return _ratio_row("C002.2", runs, S05.YIELD_EVERY, S05.YIELD_NEVER, col="units_per_s",
                      note="two threads on one CPU, ~1 us units")


def c002_4(runs):
    """C002.4, amended: process - thread pipe switch in TSC ticks, an upper bound."""
    p_, t_ = S05.PROCESS_PIPE_SAME_CPU, S05.THREAD_PIPE_SAME_CPU
    missing = _missing_row("C002.4", runs, p_, t_, col="ticks_per_switch")
    if missing:
        return missing
    t = engine.per_process(runs, "ticks_per_switch")
    ghz = (runs["tsc_ghz"].dropna().iloc[0] if "tsc_ghz" in runs and runs.tsc_ghz.notna().any()
           else float("nan"))
    return engine.judge(
        "C002.4", {"x": (t[p_] - t[t_]).to_numpy(float)}, looks=engine.looks_of(runs),
        scales={"x": "linear"},
        noisy=_noisy(_entry(runs, p_, "ticks_per_switch"), _entry(runs, t_, "ticks_per_switch")),
        note=f"TSC at {ghz:.2f} GHz (reference ticks, not core cycles); an upper bound on "
             "the TLB part; cache pollution not judged")


def c003_1(runs):
    """C003.1: AArch64 hardware needed; the x86-64 ratio is reported for reference."""
    row = verdicts.judge("C003.1", 1.0, note="reference only: AArch64 timing needs AArch64 "
                                             "hardware")
    if not _have(runs, S05.CONDVAR_SAME_CPU, S05.UCONTEXT):
        r = _ratio_row("C003.2", runs, S05.CONDVAR_SAME_CPU, S05.UCONTEXT)
        row["measured_value"] = f"here (x86-64): thread_condvar / ucontext = {r['measured_value']}"
    else:
        row["measured_value"] = "not measured"
    return row


def c003_2(runs):
    """C003.2: condvar thread hand-off / swapcontext, same CPU."""
    return _ratio_row("C003.2", runs, S05.CONDVAR_SAME_CPU, S05.UCONTEXT)


def c003_3(runs):
    """C003.3: condvar hand-off across two CPUs (a wake-up) / on one CPU."""
    if _have(runs, S05.CONDVAR_CROSS_CPU):
        return verdicts.cannot_measure("C003.3", "needs two CPUs: no cross-CPU run here")
    return _ratio_row("C003.3", runs, S05.CONDVAR_CROSS_CPU, S05.CONDVAR_SAME_CPU,
                      note="across CPUs this is a wake-up, not a switch")


def c003_3a(runs):
    """C003.3a: condvar hand-off across two CPUs / swapcontext."""
    if _have(runs, S05.CONDVAR_CROSS_CPU):
        return verdicts.cannot_measure("C003.3a", "needs two CPUs: no cross-CPU run here")
    return _ratio_row("C003.3a", runs, S05.CONDVAR_CROSS_CPU, S05.UCONTEXT,
                      note="condvar hand-off across two CPUs / swapcontext")


# ---- 07a, 07b, 08, 09: the notebooks' own tidy rows ----

def c001_2(runs):
    """C001.2: heap / pool, ns per allocate+free pair of 256 B blocks, one block, over
    fresh processes."""
    return _ratio_row("C001.2", runs, S07A.HEAP, S07A.POOL, col="ns_per_pair",
                      note=f"heap {_entry(runs, S07A.HEAP, 'ns_per_pair').median():.3g} ns, pool "
                           f"{_entry(runs, S07A.POOL, 'ns_per_pair').median():.3g} ns per pair "
                           "(claimed ~100 and ~10)")


def _memory_ratio(frames07b):
    """conn192/pool over conn256/heap bytes per coroutine (07b): exact sizes, so no
    interval beyond the range over repeats."""
    nan = float("nan")
    if frames07b is None or "variant" not in frames07b:
        return nan, nan, nan
    c = frames07b[frames07b.get("part", "coroutines") == "coroutines"]
    pooled = c.loc[(c.variant == "conn192") & (c.allocator == "pool"), "bytes_per_object"]
    default = c.loc[(c.variant == "conn256") & (c.allocator == "heap"), "bytes_per_object"]
    if not len(pooled) or not len(default):
        return nan, nan, nan
    r = pooled.astype(float).to_numpy()[:, None] / default.astype(float).to_numpy()[None, :]
    return float(np.median(pooled) / np.median(default)), float(r.min()), float(r.max())


@reads("data", ECHO_SERVERS.verdict_runs)
def c004_2(frames07b, runs09):
    """C004.2: memory ratio (07b, exact) and throughput ratio (09's rounds, over rounds),
    judged where either exists; a part not measured yet is missing data."""
    mem = _memory_ratio(frames07b)
    note = ("mem = conn192/pool over conn256/heap bytes per coroutine, tps = "
            "cxx20_pool_sym / cxx20_new QPS")
    have_tps = runs09 is not None and not _have(runs09, S09.CXX20_POOL_SYM, S09.CXX20_NEW,
                                                col="qps")
    if not have_tps:
        value = {"mem": mem[0], "tps": float("nan")}
        return verdicts.judge("C004.2", value, low={"mem": mem[1], "tps": float("nan")},
                              high={"mem": mem[2], "tps": float("nan")},
                              note="throughput not measured (09); " + note)

    def with_mem(v, lo, hi):
        return ({"mem": mem[0], "tps": v["tps"]}, {"mem": mem[1], "tps": lo["tps"]},
                {"mem": mem[2], "tps": hi["tps"]})

    tps = engine.log_ratios(runs09, S09.CXX20_POOL_SYM, S09.CXX20_NEW, "qps")
    return engine.judge("C004.2", {"tps": tps},
                        looks=engine.looks_of(runs09), combine=with_mem,
                        note=("memory not measured (07b); " if math.isnan(mem[0]) else "")
                        + note)


SETUPS = {"before": "1 MiB, 1 task/switch", "after": "64 KiB, 32 tasks/switch"}
WORKS = ("dependent", "independent")
# 08's sides, "<setup> <work>" (SWITCH_FREQUENCY.sides.BEFORE_DEPENDENT: "before dependent").
LABEL = {(s, w): getattr(S08, f"{s}_{w}".upper()) for s in SETUPS for w in WORKS}
SHARE_FLOOR = 1e-6  # a share whose interval reaches 0 is unresolved: the ratio is unbounded


def _share_stats(runs, setup):
    """Per process, for each kind of work: the share of time switching at `setup`,
    1 - work-only / total of the medians (unfloored: the interval carries the sign)."""
    t_total = engine.per_process(runs, "total_ns")
    t_work = engine.per_process(runs, "work_only_ns")
    return {w: (1 - t_work[LABEL[setup, w]] / t_total[LABEL[setup, w]]).to_numpy(float)
            for w in WORKS}


def _union(value, low, high, name, kinds, clamp=None):
    """One named interval spanning the intervals of every kind of work: the work between
    two switches lies somewhere between a dependent chain, in whose shadow an out-of-order
    core can hide a switch, and independent chains, which leave it no slot."""
    keys = [f"{name} {k}" for k in kinds]
    lo, hi = min(low[k] for k in keys), max(high[k] for k in keys)
    v = value[keys[0]]
    if clamp:
        lo, hi, v = (min(max(x, clamp[0]), clamp[1]) for x in (lo, hi, v))
    return v, lo, hi


def _hidden(value, low, high, name):
    """Whether the two kinds of work disagree: one's interval wholly above the other's."""
    d, i = f"{name} dependent", f"{name} independent"
    return low[i] > high[d] or low[d] > high[i]


def c000_7(runs, *, work_cycles=100):
    """C000.7: share of time switching after / before and the throughput gain at W=100,
    over fresh processes; each figure's interval spans both kinds of work."""
    labels = list(LABEL.values())
    missing = _missing_row("C000.7", runs, *labels, col="total_ns")
    if missing:
        return missing
    sb, sa = _share_stats(runs, "before"), _share_stats(runs, "after")
    stats_ = {**{f"share_before {w}": sb[w] for w in WORKS},
              **{f"share_after {w}": sa[w] for w in WORKS},
              **{f"gain {w}": engine.log_ratios(runs, LABEL["after", w], LABEL["before", w],
                                                 "throughput_mtasks_s") for w in WORKS}}
    scales = {k: "linear" if k.startswith("share") else "log" for k in stats_}
    seen = {}

    def combine(v, lo, hi):
        seen["hidden"] = [n for n in ("share_before", "share_after") if _hidden(v, lo, hi, n)]
        b = _union(v, lo, hi, "share_before", WORKS, (SHARE_FLOOR, 1.0))
        a = _union(v, lo, hi, "share_after", WORKS, (0.0, 1.0))
        g = _union(v, lo, hi, "gain", WORKS)
        # The rule names share_after/share_before: carry the ratio's interval in
        # share_after, with share_before fixed at 1.
        ratio = (a[0] / b[0], a[1] / b[2], a[2] / b[1])
        seen["shares"] = (b, a)
        return ({"share_after": ratio[0], "share_before": 1.0, "gain": g[0]},
                {"share_after": ratio[1], "share_before": 1.0, "gain": g[1]},
                {"share_after": ratio[2], "share_before": 1.0, "gain": g[2]})

    def measured(v, lo, hi, n):
        top = "unbounded" if hi["share_after"] > 1e5 else f"{hi['share_after']:.2f}"
        return (f"share ratio {v['share_after']:.2f} [{lo['share_after']:.2f}, {top}], "
                f"gain {v['gain']:.2f} [{lo['gain']:.2f}, {hi['gain']:.2f}]")

    row = engine.judge("C000.7", stats_, looks=engine.looks_of(runs), scales=scales,
                       combine=combine, measured=measured,
                       noisy=_noisy(*(_entry(runs, k, "total_ns") for k in labels)),
                       note=f"W={work_cycles} TSC ticks, {SETUPS['before']} (before) against "
                            f"{SETUPS['after']} (after); every interval spans dependent and "
                            "independent work; per-worker local queues not modelled (one "
                            "thread)")
    (b, a) = seen["shares"]
    row["note"] += (f"; share before {100 * b[0]:.1f}% [{100 * b[1]:.1f}, {100 * b[2]:.1f}], "
                    f"after {100 * a[0]:.1f}% [{100 * a[1]:.1f}, {100 * a[2]:.1f}]")
    if seen["hidden"]:
        row["note"] += ("; hidden by out-of-order overlap at " + ", ".join(seen["hidden"])
                        + ": the dependent work's subtraction does not see the whole switch")
    return row


def c000_7a(runs):
    """C000.7a: the share of time switching before (1 MiB, one task per switch, W=100),
    its interval spanning dependent and independent work."""
    labels = [LABEL["before", w] for w in WORKS]
    missing = _missing_row("C000.7a", runs, *labels, col="total_ns")
    if missing:
        return missing
    sb = _share_stats(runs, "before")
    stats_ = {f"x {w}": sb[w] for w in WORKS}
    seen = {}

    def combine(v, lo, hi):
        seen["hidden"] = _hidden(v, lo, hi, "x")
        return _union(v, lo, hi, "x", WORKS, (0.0, 1.0))

    row = engine.judge("C000.7a", stats_, looks=engine.looks_of(runs),
                       scales={k: "linear" for k in stats_}, combine=combine,
                       noisy=_noisy(*(_entry(runs, k, "total_ns") for k in labels)),
                       note=f"share of time switching, {SETUPS['before']}, W=100; the "
                            "interval spans dependent and independent work")
    if seen["hidden"]:
        row["note"] += ("; hidden by out-of-order overlap: the dependent work's share is "
                        "below the independent work's")
    return row


ECHO_ORDER = (S09.CXX20_POOL_SYM, S09.CALLBACK_EPOLL, S09.CXX20_NEW)


def _ordering(claim_id, runs, order, col, *, faster_first: bool, unit: str):
    """x = 1 if `order` is the claimed ordering of `col` (QPS falling, or p99 rising):
    the log-ratio of each neighbour pair per round, each with its interval."""
    missing = _missing_row(claim_id, runs, *order, col=col)
    if missing:
        return missing
    pairs = {f"{a}/{b}": engine.log_ratios(runs, *((a, b) if faster_first else (b, a)), col)
             for a, b in zip(order, order[1:])}
    meds = {s: float(_entry(runs, s, col).median()) for s in order}
    ranked = sorted(meds, key=meds.get, reverse=faster_first)

    def measured(x, xl, xh, n):
        return (f"x={x:g} [{xl:g}, {xh:g}]: " + (" > " if faster_first else " < ").join(
            f"{s} {meds[s]:,.0f}" for s in ranked) + f" {unit} (medians)")

    return engine.judge(claim_id, pairs, looks=engine.looks_of(runs),
                        scales={k: "linear" for k in pairs}, combine=_positive_indicator,
                        measured=measured, noisy=_noisy(*(_entry(runs, s, col) for s in order)),
                        note="claimed order: " + (" > " if faster_first else " < ").join(order)
                        + "; each round a fresh process per server")


def c001_1(runs, order=ECHO_ORDER):
    """C001.1: 1 if QPS(optimised) > QPS(callbacks) > QPS(plain coroutines)."""
    return _ordering("C001.1", runs, order, "qps", faster_first=True, unit="QPS")


def c001_1a(runs, order=ECHO_ORDER):
    """C001.1a: 1 if p99(optimised) < p99(callbacks) < p99(plain coroutines)."""
    return _ordering("C001.1a", runs, order, "p99_us", faster_first=False, unit="µs p99")


def c001_1c(runs):
    """C001.1c: QPS of plain coroutines / callbacks."""
    return _ratio_row("C001.1c", runs, S09.CXX20_NEW, S09.CALLBACK_EPOLL, col="qps",
                      note="1000 connections, 64 B")


def c001_3(runs):
    """C001.3: asio io_uring / epoll QPS (the lab's callback twins if asio is missing)."""
    for u, e in ((S09.ASIO_URING, S09.ASIO_EPOLL), (S09.CALLBACK_URING, S09.CALLBACK_EPOLL)):
        if not _have(runs, u, e, col="qps"):
            return _ratio_row("C001.3", runs, u, e, col="qps")
    return verdicts.cannot_measure("C001.3", "no io_uring server ran here")


TPS_ROWS = {"C004.1e": S09.CXX20_POOL, "C004.1f": S09.CXX20_LEAN,
            "C004.1g": S09.CXX20_POOL_SYM, "C004.1h": S09.CXX20_REUSE}


def _tps_rule(claim_id):
    def rule(runs):
        return _ratio_row(claim_id, runs, TPS_ROWS[claim_id], S09.CXX20_NEW, col="qps",
                          note="QPS, 1000 connections, 64 B")
    rule.__name__ = rule.__qualname__ = claim_id.lower().replace(".", "_")
    rule.__doc__ = f"{claim_id}: QPS of {TPS_ROWS[claim_id]} / {S09.CXX20_NEW}."
    return rule


c004_1e, c004_1f, c004_1g, c004_1h = (_tps_rule(c) for c in TPS_ROWS)


# ---- counts and sizes: exact, or nearly so; the range over repeats is their spread ----

@reads("data")
def c000_6(frames06):
    """C000.6: instructions per switch of Boost's jump_fcontext (callgrind, net)."""
    sel = frames06.loc[frames06.entry == "boost_fcontext"] if "entry" in frames06 else frames06.iloc[0:0]
    net = sel["net"].dropna() if "net" in sel else sel.iloc[0:0]
    if net.empty:
        return verdicts.cannot_measure("C000.6", "Boost's jump_fcontext was not counted here")
    return verdicts.judge("C000.6", float(net.iloc[0]),
                          note="callgrind, -O2 build; instruction counts are exact, so no "
                               "spread. The misprediction half (asm_ret / asm) is not judged")


@reads("data")
def c004_1(frames07b):
    """C004.1: resident bytes per suspended default-new coroutine / frame bytes."""
    c = frames07b[frames07b.get("part", "coroutines") == "coroutines"] \
        if "part" in frames07b else frames07b
    d = c[(c.variant == "conn256") & (c.allocator == "heap")]
    if d.empty:
        return verdicts.cannot_measure("C004.1", "no conn256/heap coroutine rows")
    x = d.bytes_per_object.astype(float) / d.frame_bytes.astype(float)
    n = int(d.n.iloc[0])
    return verdicts.judge(
        "C004.1", float(x.median()), low=float(x.min()), high=float(x.max()),
        noisy=_noisy(x),
        measured=f"x = {x.median():.3f} [{x.min():.3f}, {x.max():.3f}]: "
                 f"{d.bytes_per_object.median():.0f} B per coroutine, frame "
                 f"{int(d.frame_bytes.iloc[0])} B",
        note=f"n = {n:,}" + (" (quick run; the rule says 1,000,000)" if n < 1_000_000 else "")
             + "; spread: min and max over repeats")


def _frame_sizes(frames07a, build):
    f = frames07a[frames07a.get("part", "frame_sizes") == "frame_sizes"] \
        if "part" in frames07a else frames07a
    return f[f.build == build].drop_duplicates("variant").set_index("variant")


@reads("data")
def c004_3(frames07a):
    """C004.3: frame bytes added by a 64 KiB array alive across a suspension (-O2)."""
    o2, o0 = _frame_sizes(frames07a, "O2"), _frame_sizes(frames07a, "O0")
    if not {"array_alive", "suspend"} <= set(o2.index):
        return verdicts.cannot_measure("C004.3", "no -O2 frame sizes here")
    added = lambda v, f=o2: int(f.frame_bytes[v] - f.frame_bytes["suspend"])  # noqa: E731
    at_o0 = f" ({added('array_alive', o0):,} B at -O0)" if "array_alive" in o0.index else ""
    return verdicts.judge("C004.3", added("array_alive"),
                          measured=f"{added('array_alive'):,} B at -O2{at_o0}")


@reads("data")
def c004_4(frames07a, pointer: int = 8):
    """C004.4: 1 if the empty frame holds the promise and two pointers and every variant
    with live locals or parameters grows by at least their size (-O2), else 0."""
    o2 = _frame_sizes(frames07a, "O2")
    if not {"empty", "suspend"} <= set(o2.index):
        return verdicts.cannot_measure("C004.4", "no -O2 frame sizes here")
    promise = int(o2.promise_bytes.iloc[0])
    live = o2.live_bytes[o2.live_bytes > 0]
    added = {v: int(o2.frame_bytes[v] - o2.frame_bytes["suspend"]) for v in live.index}
    checks = {"empty >= promise + 2 pointers": bool(o2.frame_bytes["empty"] >= promise + 2 * pointer)}
    checks.update({f"{v} adds >= {int(live[v])}": added[v] >= live[v] for v in live.index})
    x = int(all(checks.values()))
    return verdicts.judge(
        "C004.4", x,
        measured=f"x = {x}: empty frame {int(o2.frame_bytes['empty'])} B >= {promise} + "
                 f"{2 * pointer}; " + ", ".join(f"{v} +{added[v]} (live {int(live[v])})"
                                                for v in live.index),
        note="all checks hold" if x else
             "failed: " + ", ".join(k for k, ok in checks.items() if not ok))


@reads("data")
def c001_5(frames09, server=S09.ASIO_EPOLL, chunk=1024):
    """C001.5: suspensions per message, one whole read vs a read_some loop of `chunk`."""
    r = frames09[frames09.get("part", "reads") == "reads"] if "part" in frames09 else frames09
    sel = r[r.server == server] if "server" in r else r.iloc[0:0]
    w = sel.loc[sel.read_mode == "whole", "read_waits_per_msg"].astype(float)
    some = sel.loc[(sel.read_mode == "some") & (sel.chunk == chunk), "read_waits_per_msg"].astype(float)
    if w.empty or some.empty:
        return verdicts.cannot_measure("C001.5", f"no {server} read rows here")
    (wm, w1, w3), (sm, s1, s3) = stats.quartiles(w), stats.quartiles(some)
    return verdicts.judge(
        "C001.5", {"whole": wm, "some": sm}, low={"whole": w1, "some": s1},
        high={"whole": w3, "some": s3},
        measured=(f"{server}: whole {wm:.2f}, some ({chunk} B) {sm:.2f} suspensions/message, "
                  f"some/whole {sm / wm:.1f}"),
        note="counted inside the server; spread: quartiles over runs")


_RULE = re.compile(r"c(\d{3})_(\d+[a-z]?)")


def _rules() -> dict:
    """claim id -> (its function, the data names it reads), in data/claims.csv's order: every
    function of this module named after a claim (`c000_2a` for C000.2a), reading its
    experiment's design runs unless `@reads` says otherwise."""
    judged = experiment.judged_by()
    found = {}
    for name, fn in list(globals().items()):
        m = _RULE.fullmatch(name)
        if not m or not callable(fn):
            continue
        cid = f"C{m[1]}.{m[2]}"
        if cid not in judged:
            raise ValueError(f"rules.{name} judges {cid}, which has no row in data/claims.csv")
        record = experiment.of(judged[cid])
        found[cid] = (fn, [getattr(record, n) if n in OWN else n
                           for n in getattr(fn, "reads", ("verdict_runs",))])
    return {cid: found[cid] for cid in judged if cid in found}


# claim id -> (function, the data files it reads, by name under data/). The rules that
# read a notebook's design runs are the ones its design judges (labkit.lab.judging.designs).
RULES = _rules()


def recompute(claim_id: str, data_dir=None, *, only=None, **options) -> dict | None:
    """Recompute one claim's verdict row from the CSVs in data_dir (default: the results
    folder); None when a file it needs is missing (C004.2 needs only one of its two).
    only: a notebook; the data of other notebooks is taken as missing (what that notebook
    alone can judge). options: keyword arguments given to the rule where it takes them
    (C001.5's `chunk`, say); the others are left out."""
    if claim_id not in RULES:
        raise ValueError(f"claim_id must be one of {sorted(RULES)}; got {claim_id!r}")
    fn, names = RULES[claim_id]
    data_dir = results.data_dir() if data_dir is None else data_dir
    frames = []
    for name in names:
        path = data_dir / f"{name}.csv"
        mine = only is None or name in experiment.of(only).files()
        frames.append(results.read_csv(path, low_memory=False, float_precision="round_trip")
                      if mine and path.exists() else None)

    kw = {k: v for k, v in options.items() if k in inspect.signature(fn).parameters}
    if claim_id == "C004.2":
        return fn(*frames, **kw) if any(f is not None for f in frames) else None
    if any(f is None for f in frames):
        return None
    return fn(*frames, **kw)
