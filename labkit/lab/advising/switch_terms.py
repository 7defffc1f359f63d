"""The switch's own terms: a design's ping-pong (notebook 04; threads: notebook 05's
hand-off), the copy stack's cost by bytes in use, the share of a switch the work hides
(notebook 08), a thread ring's many contexts (notebook 01), and the FP-control and vector
state a switch saves (notebook 06)."""
from __future__ import annotations

import math

import numpy as np

import labkit
from labkit.core import validate
from labkit.core.plots import bytes_label
from labkit.lab.advising import taxonomy
from labkit.lab.advising import evidence as _ev

def _pingpong(df, entry):
    if df.empty or "entry" not in df:
        return df.iloc[0:0]
    sel = (df.entry == entry)
    if "pattern" in df:
        sel &= df.pattern == "pingpong"
    if "fp_control" in df:
        sel &= df.fp_control.isin(["as-is", "same"]) | df.fp_control.isna()
    if "stack_in_use" in df:
        sel &= df.stack_in_use.isna() | (df.stack_in_use == 0)
    return df[sel & df.ns_per_switch.notna()]


def ladder(ev, design: str) -> _ev.Term:
    """A design's ping-pong cost per switch: over fresh processes where a verdict design
    measured it, else over the ladder's repeats, else measured now (this machine only)."""
    rng = ev.rng(f"ladder {design}")
    for name in ("04_latency_ladder_verdict_runs", "05_kernel_switches_verdict_runs",
                 "06_fp_state_and_return_verdict_runs"):
        df = _pingpong(ev.rows(name), design)
        if "side" in df:
            df = df[df.side == design]
        if len(df) and df.worker.nunique() >= 2:
            return _ev.draws(df.ns_per_switch, rng, df.worker)
    df = _pingpong(ev.rows("04_latency_ladder"), design)
    if df.empty and ev.local:
        ev.announce(f"{design}'s ping-pong", "data/04_latency_ladder.csv has no row of it "
                    "from this machine")
        got = labkit.measure(design, switches=20_000 if ev.quick else 200_000,
                             repeats=3 if ev.quick else 7)
        ev.add("04_latency_ladder", got)
        df = _pingpong(got, design)
    if df.empty:
        raise LookupError(f"no ping-pong of {design} in {ev.source}")
    return _ev.draws(df.ns_per_switch, rng)


def handoff(ev, mode: str) -> _ev.Term:
    """One hand-off between two threads on one CPU (notebook 05)."""
    rng = ev.rng(f"handoff {mode}")
    vr = ev.rows("05_kernel_switches_verdict_runs")
    if "side" in vr:
        df = vr[(vr.side == f"{mode} same-cpu") & vr.ns_per_switch.notna()]
        if df.worker.nunique() >= 2:
            return _ev.draws(df.ns_per_switch, rng, df.worker)
    rows = ev.rows("05_kernel_switches")
    df = rows[(rows["mode"] == mode) & (rows.placement == "same-cpu")] if "mode" in rows \
        else rows.iloc[0:0]
    if df.empty and ev.local:
        ev.announce(f"{mode} hand-offs on one CPU", "data/05_kernel_switches.csv has none "
                    "from this machine")
        got = labkit.measure_handoff(mode, cpus=(0, 0), switches=2_000 if ev.quick else 20_000,
                                     repeats=3 if ev.quick else 7)
        got = got.assign(mode=mode, placement="same-cpu")
        ev.add("05_kernel_switches", got)
        df = got
    if df.empty:
        raise LookupError(f"no {mode} hand-off in {ev.source}")
    return _ev.draws(df.ns_per_switch, rng)


def _ring_rows(ev):
    df = ev.rows("01_stack_size")
    if "pattern" not in df:
        return df.iloc[0:0]
    sel = (df.pattern == "ring") & (df.prefault != True) & df.ns_per_switch.notna()  # noqa: E712
    spread = sel & (df.colour_step.fillna(0) > 0)
    if spread.any():
        step = df[spread].colour_step.min()  # one layout: the smallest spreading step
        return df[spread & (df.colour_step == step)]
    return df[sel & (df.colour_step.fillna(0) == 0)]


LINE = 64  # bytes of a cache line
RING_KERNEL = "asm_fpu"  # the kernel notebook 01's ring runs
OVERLAP_KERNEL = "asm_fpu"  # the kernel notebook 08's switch-frequency sweep runs


def overlap(ev, work_ns: float, size: int | None, own):
    """(Term, note): ns of a switch costing `own` (draws) hidden in the shadow of `work_ns`
    of work between suspensions (the out-of-order core runs the one beside the other).
    Notebook 08's kernel hides the fraction 1 - (its ns per switch at that work over at
    no work; one task per switch, interpolated in log work, the stack size nearest
    `size`) of its own switch; a design hides that fraction of its own switch, but never
    more ns than the kernel hid of its own."""
    df = ev.rows("08_switch_frequency")
    if "work_ns_per_task" in df:
        df = df[(df.entry == OVERLAP_KERNEL) & (df.batch == 1) & df.ns_per_switch.notna()]
    if df.empty or "work_ns_per_task" not in df:
        return None, "the switch at its full cost whatever the work (no switch-frequency data)"
    s = _ev.nearest_size(df, size or validate.DEFAULT_STACK_SIZE)
    df = df[df.stack_size == s]
    rng = ev.rng(f"overlap {s}")
    levels = df.groupby("work_units").work_ns_per_task.median().sort_values()
    draws = {u: _ev.draws(df[df.work_units == u].ns_per_switch, rng).draws for u in levels.index}
    bare = draws[levels.index[0]]
    x = np.log1p(levels.to_numpy(float))
    at = math.log1p(work_ns)
    i = int(np.clip(np.searchsorted(x, at), 1, len(x) - 1))
    f = float(np.clip((at - x[i - 1]) / (x[i] - x[i - 1]), 0.0, 1.0))
    near = (1 - f) * draws[levels.index[i - 1]] + f * draws[levels.index[i]]
    # A design whose switch is shorter than 08's kernel's has less of it to hide. One whose
    # switch is longer hides no more than 08's switch whole: the core's window of
    # instructions in flight is bounded, and the system call of a switch such as
    # swapcontext's is not overlapped at all.
    kept = np.divide(near, bare, out=np.ones_like(near), where=bare > 0)
    hidden = np.clip(1 - kept, 0.0, 1.0) * np.minimum(np.asarray(own, float), bare)
    return _ev.Term(hidden, f"notebook 08, {len(df)} repeats"), ""


def ring_extra(ev, n: int, size: int):
    """(Term, note): what N contexts on stacks of `size` add to each switch over two, from
    the ring of notebook 01 at the measured stack size nearest `size`."""
    df = _ring_rows(ev)
    if df.empty and ev.local and n > 2:
        contexts = (2, 64) if ev.quick else (2, 64, 1024)
        ev.announce(f"asm_fpu's ring of {', '.join(map(str, contexts))} contexts on "
                    f"{size}-byte stacks", "data/01_stack_size.csv has no ring from this "
                    "machine")
        for c in contexts:
            ev.add("01_stack_size", labkit.measure_ring(
                RING_KERNEL, contexts=c, stack_size=size, laps=20 if ev.quick else 200,
                colour_step=LINE, repeats=3 if ev.quick else 5).assign(colour_step=LINE,
                                                                        prefault=False))
        df = _ring_rows(ev)
    if n <= 2:
        return _ev.Term(np.zeros(_ev.DRAWS), "two contexts"), ""
    if df.empty:
        raise LookupError(f"no ring of many contexts in {ev.source}")
    s = _ev.nearest_size(df, size)
    sub = df[df.stack_size == s]
    cs = np.sort(sub.contexts.unique())
    if cs[0] > 2:
        raise LookupError("the ring has no two-context point to subtract")
    rng = ev.rng(f"ring {s}")
    point = {c: _ev.draws(sub[sub.contexts == c].ns_per_switch, rng).draws for c in cs}
    note = "" if s == size else f"ring at {bytes_label(s)} stacks"
    if n >= cs[-1]:
        hi = lo = cs[-1]
        if n > cs[-1]:
            note = "; ".join(filter(None, [note, f"held flat beyond the {int(cs[-1]):,} contexts "
                                                  "the ring measured"]))
    else:
        hi = cs[np.searchsorted(cs, n)]
        lo = cs[np.searchsorted(cs, n) - 1] if hi != n else hi
    if hi == lo:
        extra = point[hi] - point[cs[0]]
    else:
        f = (math.log2(n) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
        extra = (1 - f) * point[lo] + f * point[hi] - point[cs[0]]
    return _ev.Term(extra, f"{len(sub)} ring repeats"), note


def _interp_draws(points: dict, x: float):
    """Linear interpolation in x between measured points (draws each), extrapolated from
    the last two points beyond the last."""
    xs = np.sort(np.array(list(points)))
    if x <= xs[0]:
        return points[xs[0]], ""
    if x >= xs[-1]:
        a, b = xs[-2], xs[-1]
        note = f"extrapolated beyond {bytes_label(b)}" if x > b else ""
    else:
        b = xs[np.searchsorted(xs, x)]
        a = xs[np.searchsorted(xs, x) - 1]
        note = ""
    f = (x - a) / (b - a)
    return (1 - f) * points[a] + f * points[b], note


def copy_cost(ev, u: int):
    """(Term, note): the copy stack's cost per switch with u bytes in use (notebook 04's
    copy-stack sweep, interpolated in bytes)."""
    df = ev.rows("04_latency_ladder_copy_stack")
    if df.empty and ev.local:
        ev.announce(f"copy_stack with {u} bytes in use", "data/04_latency_ladder_copy_stack.csv "
                    "has no row from this machine")
        for x in sorted({0, u}):
            ev.add("04_latency_ladder_copy_stack", labkit.measure(
                "copy_stack", stack_in_use=x, switches=20_000 if ev.quick else 200_000,
                repeats=3 if ev.quick else 7))
        df = ev.rows("04_latency_ladder_copy_stack")
    if df.empty:
        raise LookupError(f"no copy-stack sweep in {ev.source}")
    rng = ev.rng("copy")
    points = {int(x): _ev.draws(g.ns_per_switch, rng).draws
              for x, g in df.groupby(df.stack_in_use.fillna(0))}
    if len(points) == 1:
        (x, d), = points.items()
        return _ev.Term(d, f"{len(df)} repeats"), f"measured at {x} bytes only"
    d, note = _interp_draws(points, u)
    return _ev.Term(d, f"{len(df)} repeats of the sweep"), note


def fp_control_term(ev, design: str):
    """The design's cost with differing FP control words minus with equal ones (06); for a
    design 06 does not measure, that of the one it is built on (its record's `like`)."""
    df = ev.rows("06_fp_state_and_return")
    if "fp_control" not in df:
        raise LookupError(f"no FP-control measurement in {ev.source}")
    src = design if (df.entry == design).any() else taxonomy.of(design).like
    rng = ev.rng(f"fp {src}")
    a = df[(df.entry == src) & (df.fp_control == "differ")].ns_per_switch
    b = df[(df.entry == src) & (df.fp_control == "same")].ns_per_switch
    if a.empty or b.empty:
        raise LookupError(f"no FP-control measurement of {src} in {ev.source}")
    d = _ev.draws(a, rng).draws - _ev.draws(b, rng).draws
    note = "" if src == design else f"as {src}"
    return _ev.Term(np.asarray(d), f"{len(a)}+{len(b)} repeats"), note


def vector_term(ev, which: str):
    """xsave of dirty minus clean state (06's xstate): "legacy" x87+SSE, "all" every
    component of XCR0, "vector" every component but AMX's tiles."""
    df = ev.rows("06_fp_state_and_return_xstate")
    if df.empty:
        raise LookupError(f"no xstate sweep in {ev.source}")
    df = df[df.instruction == "xsave"]
    comps = sorted(df.components.unique(), key=lambda c: len(c.split()))
    if which == "legacy":
        pick = comps[0]
    elif which == "all":
        pick = comps[-1]
    else:
        pick = [c for c in comps if "tile" not in c][-1]
    rng = ev.rng(f"xstate {pick}")
    sub = df[df.components == pick]
    d = (_ev.draws(sub[sub.state == "dirty"].ns_per_pair, rng).draws
         - _ev.draws(sub[sub.state == "clean"].ns_per_pair, rng).draws)
    return _ev.Term(d, f"xsave of {pick}"), f"xsave of {pick}, dirty against clean"
