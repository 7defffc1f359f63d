"""One function per claim: from the tidy rows a notebook saved (data/<notebook>*.csv)
to that claim's verdict row. Notebooks call these, and tests/test_committed_verdicts.py
calls them again on the committed data, so every verdict can be recomputed.

Each function takes the frame(s) named in RULES and returns `verdicts.judge`'s row. The
intervals are bootstrap BCa 95% intervals over repeats (verdicts.ratio_with_spread);
a group that trips pyperf's noise rule is flagged in the row, never a veto.
"""
from __future__ import annotations

import math

import numpy as np

from labkit.core import stats

from labkit.lab import verdicts

KiB, MiB = 1024, 1024 * 1024
# What each notebook's interleaved verdict measurement is saved as (design.interleaved).
RUNS = "{}_verdict_runs"


def _entry(df, label, col="ns_per_switch"):
    sel = df.loc[df.entry == label, col].astype(float) if "entry" in df else df.iloc[0:0][col]
    return sel.dropna()


def _have(df, *labels, col="ns_per_switch"):
    """The labels with no measured value in `col` (empty: all present)."""
    present = set(df.entry) if "entry" in df else set()
    if col not in df:
        return list(labels)
    return [lab for lab in labels if lab not in present or _entry(df, lab, col).empty]


def _noisy(*samples) -> bool:
    return any(stats.is_noisy(s) for s in samples)


def _ratio_row(claim_id, df, num, den, note="", col="ns_per_switch", **kw):
    missing = _have(df, num, den, col=col)
    if missing:
        return verdicts.cannot_measure(claim_id, f"missing here: {', '.join(missing)}")
    a, b = _entry(df, num, col), _entry(df, den, col)
    r, lo, hi = verdicts.ratio_with_spread(a, b)
    return verdicts.judge(claim_id, r, low=lo, high=hi, noisy=_noisy(a, b),
                          note=f"{num} / {den}, {len(a)} and {len(b)} interleaved repeats"
                          + (f"; {note}" if note else ""), **kw)


def _bootstrap_indicator(samples: list, fn, n=2000, seed=verdicts.SEED):
    """(fn at the medians, 2.5% and 97.5% quantiles of fn over independent resamples):
    the percentile bootstrap of a 0/1 measured quantity such as an ordering."""
    rng = np.random.default_rng(seed)
    point = fn(*[np.median(s) for s in samples])
    draws = [fn(*[np.median(rng.choice(s, len(s))) for s in samples]) for _ in range(n)]
    lo, hi = np.quantile(draws, [0.025, 0.975])
    return float(point), float(lo), float(hi)


# ---- 01..06: interleaved verdict runs ----

def c000_1(runs):
    """C000.1: 1 if virtual_call < boost_fiber < syscall_getppid and the fiber is nearer
    the call on a log scale; the interval is the bootstrap of that indicator."""
    need = ["virtual_call", "boost_fiber", "syscall_getppid"]
    missing = _have(runs, *need)
    if missing:
        return verdicts.cannot_measure("C000.1", f"missing here: {', '.join(missing)}")
    call, fiber, sysc = (_entry(runs, k).to_numpy() for k in need)

    def x(c, f, s):
        return float(0 < c < f < s and math.log(f / c) < math.log(s / f))

    v, lo, hi = _bootstrap_indicator([call, fiber, sysc], x)
    c, f, s = (float(np.median(a)) for a in (call, fiber, sysc))
    return verdicts.judge(
        "C000.1", v, low=lo, high=hi, noisy=_noisy(call, fiber, sysc),
        measured=(f"x={v:g} [{lo:g}, {hi:g}]: call {c:.3g}, fiber {f:.3g}, syscall {s:.3g} "
                  f"ns per transfer; log-distance fiber/call {math.log(f / c):.2f} vs "
                  f"syscall/fiber {math.log(s / f):.2f}"),
        note=(f"per round trip (two transfers, the article's loop iteration): boost_fiber "
              f"{2 * f:.3g} ns against the article's 20-30 ns at 5 GHz"))


def c000_5(runs):
    """C000.5: boost_fiber / cxx20_generator, per transfer on both sides."""
    row = _ratio_row("C000.5", runs, "boost_fiber", "cxx20_generator")
    if row["measured_value"] != "not measured":
        f, g = (_entry(runs, k).median() for k in ("boost_fiber", "cxx20_generator"))
        row["note"] += (f"; per round trip (a resume and a suspend, the article's unit): "
                        f"boost_fiber {2 * f:.3g} ns, cxx20_generator {2 * g:.3g} ns "
                        "(article: 20-30 ns and 2-5 ns); the ratio is the same per transfer")
    return row


def c000_2(runs):
    """C000.2: Boost fiber ping-pong, 8 MiB / 4 KiB stacks."""
    return _ratio_row("C000.2", runs, "8 MiB", "4 KiB", note="Boost fiber ping-pong")


def c000_3(runs):
    """C000.3: Boost fiber ping-pong built at -O0 / at -O2."""
    return _ratio_row("C000.3", runs, "O0", "O2", note="Boost fiber ping-pong")


def c000_4(runs):
    """C000.4, amended: asm_fpu scheduler of 1024 / two-context ping-pong; the original
    rule's ring of 1024 beside it."""
    missing = _have(runs, "scheduler 1024", "ring 1", "ring 1024")
    if missing:
        return verdicts.cannot_measure("C000.4", f"missing here: {', '.join(missing)}")
    sched, pp, ring = (_entry(runs, k) for k in ("scheduler 1024", "ring 1", "ring 1024"))
    r, lo, hi = verdicts.ratio_with_spread(sched, pp)
    o, olo, ohi = verdicts.ratio_with_spread(sched, ring)
    return verdicts.judge(
        "C000.4", r, low=lo, high=hi, noisy=_noisy(sched, pp, ring),
        original={"value": o, "low": olo, "high": ohi,
                  "measured": f"scheduler 1024 / ring 1024 = {o:.3g} [{olo:.3g}, {ohi:.3g}]"},
        note=(f"asm_fpu per transfer: scheduler of 1024 {sched.median():.3g} ns, two-context "
              f"ping-pong {pp.median():.3g} ns, ring of 1024 {ring.median():.3g} ns"))


def c002_3(runs):
    """C002.3: asm_fxsave / asm_fpu, both contexts with the same control words."""
    note = ""
    if not _have(runs, "asm_xsave"):
        note = f"asm_xsave / asm_fpu = {_entry(runs, 'asm_xsave').median() / _entry(runs, 'asm_fpu').median():.1f}"
    return _ratio_row("C002.3", runs, "asm_fxsave", "asm_fpu", note=note)


def c001_4(runs):
    """C001.4: one-way futex thread switch / asm switch, same CPU, with both magnitudes."""
    missing = _have(runs, "thread_futex same-cpu", "asm")
    if missing:
        return verdicts.cannot_measure("C001.4", f"missing here: {', '.join(missing)}")
    futex, asm = _entry(runs, "thread_futex same-cpu"), _entry(runs, "asm")
    x, xlo, xhi = verdicts.ratio_with_spread(futex, asm)
    c, clo, chi = verdicts.median_with_spread(asm)
    t, tlo, thi = verdicts.median_with_spread(futex)
    return verdicts.judge(
        "C001.4", {"x": x, "coroutine_ns": c, "thread_ns": t},
        low={"x": xlo, "coroutine_ns": clo, "thread_ns": tlo},
        high={"x": xhi, "coroutine_ns": chi, "thread_ns": thi},
        noisy=_noisy(futex, asm),
        measured=f"x = {x:.0f} [{xlo:.0f}, {xhi:.0f}]; asm {c:.3g} ns, thread_futex {t:.0f} ns "
                 "one-way, same CPU")


def c002_1(runs):
    """C002.1: process / thread pipe ping-pong, one-way, same CPU."""
    return _ratio_row("C002.1", runs, "process_pipe same-cpu", "thread_pipe same-cpu")


def c002_2(runs):
    """C002.2: throughput yielding every unit / never yielding."""
    return _ratio_row("C002.2", runs, "yield k=1", "yield k=0", col="units_per_s",
                      note="two threads on one CPU, ~1 us units")


def c002_4(runs):
    """C002.4, amended: process - thread pipe switch in TSC ticks, an upper bound."""
    missing = _have(runs, "process_pipe same-cpu", "thread_pipe same-cpu", col="ticks_per_switch")
    if missing:
        return verdicts.cannot_measure("C002.4", f"missing here: {', '.join(missing)}")
    p, t = (_entry(runs, k, "ticks_per_switch") for k in ("process_pipe same-cpu",
                                                          "thread_pipe same-cpu"))
    d, lo, hi = verdicts.difference_with_spread(p, t)
    ghz = runs["tsc_ghz"].dropna().iloc[0] if "tsc_ghz" in runs and runs.tsc_ghz.notna().any() else float("nan")
    return verdicts.judge("C002.4", d, low=lo, high=hi, noisy=_noisy(p, t),
                          note=f"TSC at {ghz:.2f} GHz (reference ticks, not core cycles); an "
                               "upper bound on the TLB part; cache pollution not judged")


def c003_1(runs):
    """C003.1: AArch64 hardware needed; the x86-64 ratio is reported for reference."""
    row = verdicts.judge("C003.1", 1.0, note="reference only: AArch64 timing needs AArch64 "
                                             "hardware")
    if not _have(runs, "thread_condvar same-cpu", "ucontext"):
        r, lo, hi = verdicts.ratio_with_spread(_entry(runs, "thread_condvar same-cpu"),
                                               _entry(runs, "ucontext"))
        row["measured_value"] = f"here (x86-64): thread_condvar / ucontext = {r:.3g} [{lo:.3g}, {hi:.3g}]"
    else:
        row["measured_value"] = "not measured"
    return row


def c003_2(runs):
    """C003.2: condvar thread hand-off / swapcontext, same CPU."""
    return _ratio_row("C003.2", runs, "thread_condvar same-cpu", "ucontext")


def c003_3(runs):
    """C003.3: condvar hand-off across two CPUs (a wake-up) / on one CPU."""
    if _have(runs, "thread_condvar cross-cpu"):
        return verdicts.cannot_measure("C003.3", "needs two CPUs: no cross-CPU run here")
    return _ratio_row("C003.3", runs, "thread_condvar cross-cpu", "thread_condvar same-cpu",
                      note="across CPUs this is a wake-up, not a switch")


# ---- 07a, 07b, 08, 09: the notebooks' own tidy rows ----

def c001_2(frames07a):
    """C001.2: heap / pool, ns per allocate+free pair of 256 B blocks, one block."""
    a = frames07a[(frames07a.get("experiment") == "allocation") & (frames07a.block == 256)
                  & (frames07a.pattern == "one block")] if "experiment" in frames07a else frames07a
    heap, pool = (a.loc[a.allocator == k, "ns_per_pair"].astype(float) for k in ("heap", "pool"))
    if heap.empty or pool.empty:
        return verdicts.cannot_measure("C001.2", "no 256 B heap/pool allocation rows")
    r, lo, hi = verdicts.ratio_with_spread(heap, pool)
    return verdicts.judge("C001.2", r, low=lo, high=hi, noisy=_noisy(heap, pool),
                          note=f"heap {heap.median():.3g} ns, pool {pool.median():.3g} ns per "
                               "pair (claimed ~100 and ~10)")


def _c004_parts(frames07b, frames09):
    nan = float("nan")
    mem = (nan, nan, nan)
    tps = (nan, nan, nan)
    if frames07b is not None and "variant" in frames07b:
        c = frames07b[frames07b.get("experiment", "coroutines") == "coroutines"]
        pooled = c.loc[(c.variant == "conn192") & (c.allocator == "pool"), "bytes_per_object"]
        default = c.loc[(c.variant == "conn256") & (c.allocator == "heap"), "bytes_per_object"]
        if len(pooled) and len(default):
            mem = verdicts.ratio_with_spread(pooled, default)
    if frames09 is not None and "server" in frames09:
        m = frames09[frames09.get("experiment", "main") == "main"]
        opt, new = (m.loc[m.server == s, "qps"].astype(float) for s in ("cxx20_pool_sym", "cxx20_new"))
        if len(opt) and len(new):
            tps = verdicts.ratio_with_spread(opt, new)
    return mem, tps


def c004_2(frames07b, frames09):
    """C004.2: memory ratio (07b) and throughput ratio (09), judged where either exists;
    a part not measured yet is missing data (NaN), and under the amended rule one failing
    part is enough to refute."""
    mem, tps = _c004_parts(frames07b, frames09)
    value = {"mem": mem[0], "tps": tps[0]}
    low = {"mem": mem[1], "tps": tps[1]}
    high = {"mem": mem[2], "tps": tps[2]}
    parts = []
    parts.append("memory from 07b" if not math.isnan(mem[0]) else "memory not measured (07b)")
    parts.append("throughput from 09" if not math.isnan(tps[0]) else "throughput not measured (09)")
    return verdicts.judge("C004.2", value, low=low, high=high,
                          note="; ".join(parts) + "; mem = conn192/pool over conn256/heap bytes "
                               "per coroutine, tps = cxx20_pool_sym / cxx20_new QPS")


def c000_7(frames08, *, work_cycles=100, before=(MiB, 1), after=(64 * KiB, 32)):
    """C000.7: share of time switching after/before and the throughput gain at W=100."""
    def pick(stack_size, batch):
        return frames08[(frames08.work_cycles == work_cycles) & (frames08.stack_size == stack_size)
                        & (frames08.batch == batch)]

    b, a = pick(*before), pick(*after)
    if b.empty or a.empty:
        return verdicts.cannot_measure("C000.7", f"no rows at W={work_cycles} for both set-ups")
    sb, sa = b.share_switching.astype(float), a.share_switching.astype(float)
    if np.median(sb) <= 0:
        return verdicts.cannot_measure("C000.7", "no measurable switching before: the share "
                                                 "ratio is undefined")
    s, slo, shi = verdicts.ratio_with_spread(sa, sb)
    g, glo, ghi = verdicts.ratio_with_spread(a.throughput_mtasks_s, b.throughput_mtasks_s)
    # The rule names share_after/share_before; the ratio's interval carries both.
    value = {"share_after": s, "share_before": 1.0, "gain": g}
    low = {"share_after": slo, "share_before": 1.0, "gain": glo}
    high = {"share_after": shi, "share_before": 1.0, "gain": ghi}
    implied = (1 - np.median(sa)) / (1 - np.median(sb))
    noisy = _noisy(b.total_ns, a.total_ns, b.work_only_ns, a.work_only_ns)
    return verdicts.judge(
        "C000.7", value, low=low, high=high, noisy=noisy,
        measured=f"share ratio {s:.2f} [{slo:.2f}, {shi:.2f}], gain {g:.2f} [{glo:.2f}, {ghi:.2f}]",
        note=(f"W={work_cycles} TSC ticks; share {100 * np.median(sb):.1f}% -> "
              f"{100 * np.median(sa):.1f}%; gain the shares allow (1-s1)/(1-s0) = {implied:.2f}; "
              "per-worker local queues not modelled (one thread)"))


def c001_1(frames09, order=("cxx20_pool_sym", "callback_epoll", "cxx20_new")):
    """C001.1: 1 if QPS(optimised) > QPS(callbacks) > QPS(plain coroutines); the interval
    is the bootstrap of that ordering. The measured text lists the servers fastest first."""
    m = frames09[frames09.get("experiment", "main") == "main"] if "experiment" in frames09 else frames09
    qps = {s: m.loc[m.server == s, "qps"].astype(float).to_numpy() for s in order}
    missing = [s for s, v in qps.items() if len(v) == 0]
    if missing:
        return verdicts.cannot_measure("C001.1", f"missing here: {', '.join(missing)}")

    def x(*meds):
        return float(all(p > q for p, q in zip(meds, meds[1:])))

    v, lo, hi = _bootstrap_indicator([qps[s] for s in order], x)
    meds = {s: float(np.median(q)) for s, q in qps.items()}
    ranked = sorted(meds, key=meds.get, reverse=True)
    return verdicts.judge(
        "C001.1", v, low=lo, high=hi, noisy=_noisy(*qps.values()),
        measured=f"x={v:g} [{lo:g}, {hi:g}]: " + " > ".join(f"{s} {meds[s]:,.0f}" for s in ranked),
        note="claimed order: " + " > ".join(order) + "; QPS medians, measured order shown")


def c001_3(frames09):
    """C001.3: asio io_uring / epoll QPS (the lab's callback twins if asio is missing)."""
    m = frames09[frames09.get("experiment", "main") == "main"] if "experiment" in frames09 else frames09
    for u, e in (("asio_uring", "asio_epoll"), ("callback_uring", "callback_epoll")):
        a, b = (m.loc[m.server == s, "qps"].astype(float) for s in (u, e))
        if len(a) and len(b):
            r, lo, hi = verdicts.ratio_with_spread(a, b)
            return verdicts.judge("C001.3", r, low=lo, high=hi, noisy=_noisy(a, b),
                                  note=f"{u} / {e}")
    return verdicts.cannot_measure("C001.3", "no io_uring server ran here")


# ---- counts and sizes: exact, or nearly so; the range over repeats is their spread ----

def c000_6(frames06):
    """C000.6: instructions per switch of Boost's jump_fcontext (callgrind, net)."""
    sel = frames06.loc[frames06.kernel == "boost_fcontext"] if "kernel" in frames06 else frames06.iloc[0:0]
    net = sel["net"].dropna() if "net" in sel else sel.iloc[0:0]
    if net.empty:
        return verdicts.cannot_measure("C000.6", "Boost's jump_fcontext was not counted here")
    return verdicts.judge("C000.6", float(net.iloc[0]),
                          note="callgrind, -O2 build; instruction counts are exact, so no "
                               "spread. The misprediction half (asm_ret / asm) is not judged")


def c004_1(frames07b):
    """C004.1: resident bytes per suspended default-new coroutine / frame bytes."""
    c = frames07b[frames07b.get("experiment", "coroutines") == "coroutines"] \
        if "experiment" in frames07b else frames07b
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
    f = frames07a[frames07a.get("experiment", "frame_sizes") == "frame_sizes"] \
        if "experiment" in frames07a else frames07a
    return f[f.build == build].drop_duplicates("variant").set_index("variant")


def c004_3(frames07a):
    """C004.3: frame bytes added by a 64 KiB array alive across a suspension (-O2)."""
    o2, o0 = _frame_sizes(frames07a, "O2"), _frame_sizes(frames07a, "O0")
    if not {"array_alive", "suspend"} <= set(o2.index):
        return verdicts.cannot_measure("C004.3", "no -O2 frame sizes here")
    added = lambda v, f=o2: int(f.frame_bytes[v] - f.frame_bytes["suspend"])  # noqa: E731
    at_o0 = f" ({added('array_alive', o0):,} B at -O0)" if "array_alive" in o0.index else ""
    return verdicts.judge("C004.3", added("array_alive"),
                          measured=f"{added('array_alive'):,} B at -O2{at_o0}")


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


def c001_5(frames09, server="asio_epoll", chunk=1024):
    """C001.5: suspensions per message, one whole read vs a read_some loop of `chunk`."""
    r = frames09[frames09.get("experiment", "reads") == "reads"] if "experiment" in frames09 else frames09
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


# claim id -> (function, the data files it reads, by name under data/)
RULES = {
    "C000.1": (c000_1, [RUNS.format("04_latency_ladder")]),
    "C000.2": (c000_2, [RUNS.format("01_stack_size")]),
    "C000.3": (c000_3, [RUNS.format("02_optimisation_levels")]),
    "C000.4": (c000_4, [RUNS.format("03_symmetric_vs_asymmetric")]),
    "C000.5": (c000_5, [RUNS.format("04_latency_ladder")]),
    "C000.7": (c000_7, ["08_switch_frequency"]),
    "C001.1": (c001_1, ["09_echo_servers"]),
    "C001.2": (c001_2, ["07a_frames_and_allocators"]),
    "C001.3": (c001_3, ["09_echo_servers"]),
    "C001.4": (c001_4, [RUNS.format("05_kernel_switches")]),
    "C002.1": (c002_1, [RUNS.format("05_kernel_switches")]),
    "C002.2": (c002_2, [RUNS.format("05_kernel_switches")]),
    "C002.3": (c002_3, [RUNS.format("06_fp_state_and_return")]),
    "C002.4": (c002_4, [RUNS.format("05_kernel_switches")]),
    "C003.1": (c003_1, [RUNS.format("05_kernel_switches")]),
    "C003.2": (c003_2, [RUNS.format("05_kernel_switches")]),
    "C003.3": (c003_3, [RUNS.format("05_kernel_switches")]),
    "C004.2": (c004_2, ["07b_coroutine_memory", "09_echo_servers"]),
    "C000.6": (c000_6, ["06_fp_state_and_return"]),
    "C001.5": (c001_5, ["09_echo_servers"]),
    "C004.1": (c004_1, ["07b_coroutine_memory"]),
    "C004.3": (c004_3, ["07a_frames_and_allocators"]),
    "C004.4": (c004_4, ["07a_frames_and_allocators"]),
}


def recompute(claim_id: str, data_dir=None) -> dict | None:
    """Recompute one claim's verdict row from the CSVs in data_dir (default: the results
    folder); None when a file it needs is missing (C004.2 needs only one of its two)."""
    import pandas as pd

    from labkit.core import results

    if claim_id not in RULES:
        raise ValueError(f"claim_id must be one of {sorted(RULES)}; got {claim_id!r}")
    fn, names = RULES[claim_id]
    data_dir = results.data_dir() if data_dir is None else data_dir
    frames = []
    for name in names:
        path = data_dir / f"{name}.csv"
        frames.append(pd.read_csv(path, low_memory=False, float_precision="round_trip")
                      if path.exists() else None)
    if claim_id == "C004.2":
        return fn(*frames) if any(f is not None for f in frames) else None
    if any(f is None for f in frames):
        return None
    return fn(*frames)
