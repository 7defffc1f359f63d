"""The advisor's model: a workload, the designs, and for each design its predicted time per
request (with an interval) and its memory, every term read from measurements
(labkit.lab.advising.evidence).

    t_request = s * (W + touch(design, N, u) + c_switch(design, N, u, fp) * 2)

s is the suspensions per request; a suspension is a switch out and a switch back in, so two
switches (the 2 above). W is what the work between suspensions costs in one warm context,
its u bytes touched in one stack: what a user can profile. touch is what touching those u
bytes costs more in one of N contexts, each last run N suspensions ago, in the design's own
layout (touch_cost: the workload experiment's steps without switching among N contexts
against 2, in the loops the cold switch is measured in). c_switch is

    the ladder's ping-pong cost of the design (notebook 04; threads: notebook 05's hand-off)
    less the fraction of it that hides in the shadow of W (overlap: notebook 08's switch
    cost with work between switches against without; not for threads)
  + the cold resumption of one of N contexts, once per suspension (of its two switches one
    resumes the coroutine, the other the warm scheduler), cold_resume: the switching loop
    of the design's layout (the workload experiment's, less its steps) among N contexts
    holding u bytes each against 2, measured now over fresh processes, for a stack with
    W of busy work between switches (held beyond 2 µs), for the others with none; for
    threads, notebook 01's ring instead
  + for the copy stack, its sweep by bytes in use (notebook 04) instead of the ladder figure
  + fp="control": the design's cost with differing FP control words minus with equal ones
    (notebook 06); fp="vector": the xsave of dirty against clean state (06's xstate) for the
    designs that save the whole state (asm_fxsave, asm_xsave, threads). A design that
    follows the ABI keeps no vector register across a call: the compiler spills the live
    ones around the switch, and that spill is part of W.

Terms are independent resampled draws (evidence.draws); their sums give the model's own
interval. The advisor's interval adds the model's error, log(measured / model) at this
machine's calibration grid points nearest in share of switching and in the model's own
spread (request_residuals), and gives its 2.5 and 97.5 percentiles. Memory comes from notebook 07b.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

from labkit.core.plots import bytes_label, ns_label
from labkit.core.units import parse_size, parse_time
from labkit.errors import ParameterError
from labkit.lab.advising import evidence as _ev

FP_MODES = ("none", "control", "vector")
SWITCHES_PER_SUSPENSION = 2  # out and back in
GUARD_MAPPINGS = 2           # a guard-paged stack: the PROT_NONE page and the stack
MMAP_THRESHOLD = 128 << 10   # glibc malloc's default M_MMAP_THRESHOLD: larger blocks are mmapped
THREAD_PREFIX = "thread_"
# Whose FP-control measurement stands for a design that has none of its own: the switch it
# is built on (copy_stack and ucontext reload MXCSR as asm_fpu does; Boost.Fiber and
# Coroutine2 switch with fcontext).
FP_SOURCE = {"copy_stack": "asm_fpu", "ucontext": "asm_fpu", "boost_fiber": "boost_fcontext",
             "boost_fibers_yield": "boost_fcontext", "boost_coroutine2": "boost_fcontext"}
# Designs that save the whole vector state on each switch, and which components.
SAVES_VECTORS = {"asm_fxsave": "legacy", "asm_xsave": "all"}

@dataclass(frozen=True)
class Workload:
    """What the user's program does: `work` between suspensions (ns, or `work_unit`
    "cycles"), `suspensions` per request, `alive` coroutines, `stack_in_use` bytes at a
    switch, FP/SIMD use `fp`, an optional fixed `stack_size`, request `rate` per second.
    `work` is what the work between two suspensions costs in one warm context, its u bytes
    touched in one stack (what a profiler of a one-request loop shows); the model adds what
    the N contexts and the design add to it. `step`: the work is instead the calibration
    grid's step, timed among the N contexts in the design's layout, which already holds
    the cost of touching u bytes in each of them (the diagnosis the grid keeps beside the
    advice). `busy_ns`: the part of the work that is busy computing, beside which a stack's
    cold switch is read (None: all of it; the grid's step also holds the bytes touched,
    which the cold switch's own loop touches)."""
    work: float
    work_unit: str
    suspensions: float
    alive: int
    stack_in_use: int
    fp: str
    stack_size: int | None = None
    rate: float | None = None
    busy_ns: float | None = None
    step: bool = False

    def work_ns(self, ev) -> float:
        return self.work if self.work_unit == "ns" else self.work / ev.ticks_per_ns()

    def busy(self, ev) -> float:
        return self.work_ns(ev) if self.busy_ns is None else self.busy_ns


def workload(work="0ns", suspensions=1, alive=None, stack_in_use=0, fp="none",
             stack_size=None, rate=None, connections=None) -> Workload:
    """A checked Workload; a ValueError or TypeError names the parameter. `connections`
    stands for `alive` when that is not given (one coroutine per connection)."""
    amount, unit = parse_time("work", work)
    if isinstance(suspensions, bool) or not isinstance(suspensions, (int, float)):
        raise TypeError(f"suspensions must be a number, not {type(suspensions).__name__}")
    if not math.isfinite(suspensions) or suspensions <= 0:
        raise ParameterError("suspensions",
                             f"must be more than 0 per request; got {suspensions:g}")
    if connections is not None:
        if isinstance(connections, bool) or not isinstance(connections, int):
            raise TypeError(f"connections must be an int, not {type(connections).__name__}")
        if connections < 1:
            raise ParameterError("connections", f"must be at least 1; got {connections}")
        if alive is None:
            alive = connections
    if alive is None:
        alive = 1
    if isinstance(alive, bool) or not isinstance(alive, int):
        raise TypeError(f"alive must be an int (coroutines alive), not {type(alive).__name__}")
    if alive < 1:
        raise ParameterError("alive", f"must be at least 1 coroutine; got {alive}")
    u = parse_size("stack_in_use", stack_in_use)
    if fp not in FP_MODES:
        raise ParameterError("fp", f"must be one of {', '.join(FP_MODES)}; got {fp!r}")
    size = None
    if stack_size is not None:
        size = parse_size("stack_size", stack_size)
        if size < _page():
            raise ParameterError("stack_size", f"must be at least one page ({_page()} bytes); "
                                 f"got {size}")
        if u > size:
            raise ParameterError("stack_in_use", f"({u} bytes) is larger than stack_size "
                                 f"({size} bytes)")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise TypeError(f"rate must be requests per second (a number), not "
                            f"{type(rate).__name__}")
        if not math.isfinite(rate) or rate <= 0:
            raise ParameterError("rate", f"must be more than 0 requests per second; got {rate!r}")
    return Workload(amount, unit, float(suspensions), alive, u, fp, size,
                    None if rate is None else float(rate))


def _page() -> int:
    from labkit.core import validate

    return validate.page_size()


# ---- the designs ----

def designs() -> list[str]:
    """Every design the advisor judges: the catalogue's entries that switch (its baselines
    left out) and the OS threads' hand-offs of notebook 05."""
    import labkit

    cat = labkit.catalogue()
    threads = [m for m in labkit.HANDOFF_MODES if m.startswith(THREAD_PREFIX)]
    return [*cat.entry[cat.kind != "baseline"], *threads]


def check_design(design) -> str:
    if not isinstance(design, str):
        raise TypeError(f"design must be a str, not {type(design).__name__}")
    known = designs()
    if design not in known:
        raise ParameterError("design", f"must be one of {', '.join(known)}; got {design!r}")
    return design


def family(design: str) -> str:
    """How a design keeps a suspended coroutine: "stack" (a stack of its own), "copy" (its
    used stack copied out), "frame" (a heap frame), "python", or "thread"."""
    from labkit.core import entries, systems

    if design.startswith(THREAD_PREFIX):
        return "thread"
    if entries.system(design) in systems.PYTHON_LEVEL:
        return "python"
    if design in entries.COPIES_STACK:
        return "copy"
    return "stack" if entries.kernel_info(design).kind == "stackful" else "frame"


def guarded(design: str) -> bool:
    """Whether each stack has a guard page: labkit's kernels and threads mmap one; the
    Boost peers' fixedsize_stack is plain malloc."""
    from labkit.core import entries

    return family(design) == "thread" or (family(design) == "stack"
                                          and entries.system(design) == "labkit")


def keeps_fp_control(design: str) -> bool:
    """Whether each coroutine has its own FP control words across a switch."""
    from labkit.core import entries

    fam = family(design)
    if fam == "thread":
        return True
    if fam in ("frame", "python"):
        return False  # one thread's MXCSR, shared by every coroutine on it
    if entries.system(design) == "labkit":
        return entries.keeps_fp_control(design)
    return True  # Boost's fcontext saves MXCSR and the x87 control word by default


def stack_size(design: str, w: Workload) -> int | None:
    """The stack a design gets: the workload's, or the smallest whole-page size that holds
    the stack in use, the design's saved frame and the calls made from the switch's entry
    (validate.ENTRY_HEADROOM; at least the design's minimum). None for designs without a
    stack of their own."""
    from labkit.core import entries, validate

    fam = family(design)
    if fam not in ("stack", "thread"):
        return None
    if w.stack_size is not None:
        return validate.round_to_pages(w.stack_size)
    frame = entries.frame_bytes(design) + validate.ENTRY_HEADROOM if fam == "stack" else 0
    size = validate.round_to_pages(max(w.stack_in_use + frame, 1))
    if fam == "stack" and entries.system(design) == "labkit":
        size = max(size, entries.min_stack_size(design))
    if fam == "thread":
        size = max(size, os.sysconf("SC_THREAD_STACK_MIN"))
    return size


# ---- the switch terms ----

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
        import labkit

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
        import labkit

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
# Whose work-only steps stand for a design the workload experiment does not run, by the
# way it lays contexts out: stacks in one mapping of slots, heap frames, copied-out stacks
# run on one shared stack.
LAYOUT_DESIGN = {"stack": "asm_fpu", "frame": "cxx20_generator", "copy": "copy_stack"}


def layout_design(design: str) -> str:
    """The design whose work-only steps (the workload experiment's steps without switching)
    lay contexts out as `design` does: itself where the experiment runs it."""
    from labkit.experiments import workload

    if design in workload.designs():
        return design
    fam = family(design)
    if fam not in LAYOUT_DESIGN:
        raise ValueError(f"design {design!r} has no layout of contexts the workload "
                         f"experiment runs (a {fam} design)")
    return LAYOUT_DESIGN[fam]


SPOT_PROCESSES = 3  # fresh processes a cold switch measured now goes over (quick: 2)
SPOT_SAMPLES = 3    # timed loops of each of its points in each of them


# A stack's cold switch is measured beside the workload's busy work between switches, up
# to this many ns and held beyond: a timed loop of a few ms then resumes only a few hundred
# of the contexts, and the term, a few hundred ns at most, is a percent of the request.
COLD_WORK_CAP_NS = 2000.0
# The families whose cold switch grows with the work between switches: a stack's resumption
# loads its saved frame and return address, which with no work the core overlaps with the
# next resumption's and which behind work stand alone. A copy stack's or a heap frame's did
# not move with the work up to 500 ns (docs/advisor_calibration.md), so theirs is measured
# with none, where it is steadiest.
COLD_BESIDE_WORK = ("stack",)


def cold_work(design: str, busy_ns: float) -> float:
    """The busy work (ns) beside which `design`'s cold switch is measured for `busy_ns`."""
    if family(design) not in COLD_BESIDE_WORK:
        return 0.0
    return min(float(busy_ns), COLD_WORK_CAP_NS)


COLD_PREFIX = "cold switch "


def _cold_key(layout: str, n: int, u: int, size, work: float) -> str:
    return f"{COLD_PREFIX}{layout} {n} {u} {size} {work:g}"


def _cold_fields(key: str) -> tuple:
    """_cold_key's (layout, contexts, bytes in use, stack size or None, ns of work)."""
    layout, n, u, size, work = key.removeprefix(COLD_PREFIX).split()
    return layout, int(n), int(u), None if size == "None" else int(size), float(work)


def _between(work: float) -> str:
    return f"{ns_label(work)} of work" if work > 0 else "no work"


def measure_cold(ev, needs) -> None:
    """Measure now every cold switch of `needs` ((layout, contexts, bytes in use, stack
    size, ns of busy work) as cold_need gives them) that `ev` lacks, all in one set of
    fresh processes (SPOT_PROCESSES; quick: 2): the workload experiment's switching loop of
    the layout, with that work between switches, beyond its steps called without
    switching, at n and at 2 contexts. Each process runs every point once, in an order
    drawn for it, and lays the contexts out anew: on a shared VM that layout alone moves a
    cold switch by several times. A new process costs more than most of these points, so
    one set serves them all."""
    import pandas as pd

    from labkit.experiments import design as _design
    from labkit.experiments import workload

    todo = {}
    for need in needs:
        key = _cold_key(*need)
        if key not in ev.frames and key not in todo:
            todo[key] = need
    if not todo:
        return
    if not ev.local:
        raise LookupError(f"no measurement of {next(iter(todo))} in {ev.source}")

    def run(layout, c, u, size, work):
        return lambda repeats: workload.run_workload(
            layout, work_ns=work, alive=c, stack_in_use=u, switches_per_request=1,
            requests=workload.requests_for(work, 1), stack_size=size,
            repeats=SPOT_SAMPLES * repeats)

    entries = {}
    for layout, n, u, size, work in todo.values():
        where = f" on {bytes_label(size)} stacks" if size else ""
        ev.announce(f"{layout}'s switches among {n} contexts against 2{where}, {u} bytes in "
                    f"use and {_between(work)} between them",
                    "the lab's data has no switching loop over many contexts")
        for c in (2, n):
            entries.setdefault(_cold_key(layout, c, u, size, work),
                               run(layout, c, u, size, work))
    import zlib

    seed = zlib.crc32(" ".join(sorted(entries)).encode())
    runs = pd.concat([_design.run_process(entries, i, repeats=1, seed=seed)
                      for i in range(2 if ev.quick else SPOT_PROCESSES)], ignore_index=True)

    def at(side):
        return runs[runs.side == side].set_index("worker")[list(COLD_LOOP)]

    for key, (layout, n, u, size, work) in todo.items():
        ev.frames[key] = {(c, u): at(_cold_key(layout, c, u, size, work)) for c in (2, n)}


# What a cold switch keeps of each timed loop: the switching loop's time per request and,
# in the same call, its steps' without switching (the baseline: the same work, no switch).
COLD_LOOP = ("ns_per_request", "work_only_ns_per_request")


def cold_rows(ev):
    """Every cold switch `ev` holds, one row per timed loop: the layout, the contexts of the
    pair's far side (`alive`) and of this side (`contexts`: 2 or alive), stack_in_use,
    stack_size (0: heap frames), the busy work between switches (`work_ns`), the fresh
    process (`worker`) and the loop's two times (COLD_LOOP). Notebook 10 keeps its grid's
    (evidence.COLD_SWITCHES), so that a bundle carries them to another machine's
    `labkit advise --bundle`."""
    import pandas as pd

    rows = []
    for key, got in ev.frames.items():
        if not key.startswith(COLD_PREFIX):
            continue
        layout, n, u, size, work = _cold_fields(key)
        for (c, _), loops in got.items():
            rows.append(loops.rename_axis("worker").reset_index().assign(
                layout=layout, alive=n, contexts=int(c), stack_in_use=u,
                stack_size=size or 0, work_ns=work))
    cols = ["layout", "alive", "contexts", "stack_in_use", "stack_size", "work_ns", "worker",
            *COLD_LOOP]
    return pd.concat(rows, ignore_index=True)[cols] if rows else pd.DataFrame(columns=cols)


def _cold_from_rows(ev) -> None:
    """Another machine's cold switches (cold_rows, as its bundle carries them) as the keys
    _cold_switch reads; once. Rows without `work_ns` were measured with no work."""
    df = ev.rows(_ev.COLD_SWITCHES)
    if df.empty or any(k.startswith(COLD_PREFIX) for k in ev.frames):
        return
    df = df.assign(work_ns=df.reindex(columns=["work_ns"]).work_ns.fillna(0.0))
    for (layout, n, u, size, work), pair in df.groupby(["layout", "alive", "stack_in_use",
                                                        "stack_size", "work_ns"]):
        key = _cold_key(layout, int(n), int(u), int(size) or None, float(work))
        ev.frames[key] = {(int(c), int(u)): side.set_index("worker")[list(COLD_LOOP)]
                          for c, side in pair.groupby("contexts")}


def _nearest(ev, layout: str, n: int, u: int, work: float) -> tuple[str, str, float]:
    """Without measuring: the keys of `layout`'s cold switch nearest (n, u) that bracket
    `work` in log(1 + ns), and how far between them it lies (0: the first; the nearest
    measured work, with itself, outside them): a cold switch moves more with n than with
    the work, and between two works it is joined by a straight line, so that a curve
    against the work has no step or bump its measurements do not show."""
    have = [(k, *f[1:3], f[4]) for k in ev.frames if k.startswith(COLD_PREFIX)
            for f in [_cold_fields(k)] if f[0] == layout]
    if not have:
        raise LookupError(f"no {COLD_PREFIX}{layout} measurement of {n} contexts in "
                          f"{ev.source}" + (f" ({ev.lacks})" if ev.lacks else ""))
    near = min(abs(math.log(p[1] / n)) + abs(math.log(max(p[2], 1) / max(u, 1))) for p in have)
    same = sorted((math.log1p(p[3]), p[0]) for p in have
                  if abs(math.log(p[1] / n)) + abs(math.log(max(p[2], 1) / max(u, 1))) == near)
    at = math.log1p(work)
    below = [x for x in same if x[0] <= at] or same[:1]
    above = [x for x in same if x[0] >= at] or same[-1:]
    (a, ka), (b, kb) = below[-1], above[0]
    return ka, kb, 0.0 if b == a else (at - a) / (b - a)


def _switching(loops):
    """Per timed loop: what the switching loop costs beyond its steps."""
    return loops.ns_per_request - loops.work_only_ns_per_request


def _steps(loops):
    """Per timed loop: its steps called without switching (the work and the bytes touched)."""
    return loops.work_only_ns_per_request


def _difference(ev, key: str, got: dict, far, near, basis: str, of=_switching) -> _ev.Term:
    """What `of` (_switching or _steps) of a loop of got[far] costs less that of one of
    got[near], each process's medians paired, resampled over processes and floored at 0."""
    import numpy as np

    def beyond(loops):
        return of(loops).groupby(level=0).median()

    per = (beyond(got[far]) - beyond(got[near])).dropna()
    if per.empty:
        raise LookupError(f"no process measured both points of {key}")
    d = _ev.draws(per.to_numpy(float), ev.rng(f"{key} {of.__name__}"),
                  processes=per.index.to_numpy()).draws
    return _ev.Term(np.maximum(d, 0.0), f"{per.size} processes, {basis}")


OVERLAP_KERNEL = "asm_fpu"  # the kernel notebook 08's switch-frequency sweep runs


def _nearest_size(df, size: int) -> int:
    """The stack_size of df's rows nearest `size` in log2."""
    import numpy as np

    sizes = np.sort(df.stack_size.unique())
    return sizes[np.argmin(np.abs(np.log2(sizes) - math.log2(size)))]


def overlap(ev, work_ns: float, size: int | None):
    """(Term, note): the fraction of a switch hidden in the shadow of `work_ns` of work
    between suspensions (the out-of-order core runs the one beside the other): 1 less
    notebook 08's ns per switch at that work over at no work (one task per switch,
    interpolated in log work, the stack size nearest `size`), between 0 and 1."""
    import numpy as np

    from labkit.core import validate

    df = ev.rows("08_switch_frequency")
    if "work_ns_per_task" in df:
        df = df[(df.entry == OVERLAP_KERNEL) & (df.batch == 1) & df.ns_per_switch.notna()]
    if df.empty or "work_ns_per_task" not in df:
        return None, "the switch at its full cost whatever the work (no switch-frequency data)"
    s = _nearest_size(df, size or validate.DEFAULT_STACK_SIZE)
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
    # A fraction of 08's switch, applied to the design's own: a design whose switch is
    # shorter than 08's kernel has less of it to hide, and only a measured whole hides whole.
    kept = np.divide(near, bare, out=np.ones_like(near), where=bare > 0)
    return _ev.Term(np.clip(1 - kept, 0.0, 1.0), f"notebook 08, {len(df)} repeats"), ""


# The most contexts the advisor makes to measure a cold switch on the spot: 100,000 stacks
# of 64 KiB reserve 6.4 GB of address space and commit a page or two each; a million would
# commit several GB on a laptop for one term.
COLD_CONTEXTS = 100_000


def _holding(layout: str, u: int, size):
    """`size`, raised to a stack that holds u bytes in use above `layout`'s frame, as the
    workload experiment needs (None, for heap frames, stays None)."""
    from labkit.core import entries, validate

    if size is None:
        return None
    return max(size, validate.round_to_pages(u + entries.frame_bytes(layout)
                                             + validate.ENTRY_HEADROOM))


def cold_need(design: str, w, ev) -> tuple | None:
    """(layout, contexts, bytes in use, stack size, ns of busy work) of the cold switch a
    prediction for `design` under `w` reads (measure_cold takes a list of them), or None."""
    if family(design) not in ("stack", "frame", "copy") or w.alive <= 2:
        return None
    layout = layout_design(design)
    u = w.stack_in_use
    return (layout, min(w.alive, COLD_CONTEXTS), u, _holding(layout, u, stack_size(design, w)),
            cold_work(design, w.busy(ev)))


def _cold_switch(ev, layout: str, n: int, u: int, size, work: float,
                 of=_switching) -> _ev.Term:
    """What resuming one of n contexts of `layout` (at most COLD_CONTEXTS), each holding
    u bytes in use, costs beyond resuming one of 2, with `work` ns of busy work between
    switches: the workload experiment's switching loop less its steps, at n against 2
    contexts, measured now (measure_cold; another machine's data: the nearest work, n and
    u measured). of=_steps: what the steps alone cost more among n contexts than among 2,
    from the same loops."""
    n = min(n, COLD_CONTEXTS)
    size = _holding(layout, u, size)
    key = _cold_key(layout, n, u, size, work)
    if ev.local:
        measure_cold(ev, [(layout, n, u, size, work)])
        return _difference(ev, key, ev.frames[key], (n, u), (2, u), "measured now", of)
    _cold_from_rows(ev)
    first, second, f = (key, key, 0.0) if key in ev.frames else _nearest(ev, layout, n, u, work)
    terms = []
    for k in dict.fromkeys((first, second)):
        _, m, v, there, at = _cold_fields(k)
        basis = (f"from {m} contexts and {v} bytes in use on "
                 f"{bytes_label(there) + ' stacks' if there else 'heap frames'}"
                 f" with {_between(at)} between switches")
        terms.append(_difference(ev, k, ev.frames[k], (m, v), (2, v), basis, of))
    if len(terms) == 1:
        return terms[0]
    return _ev.Term((1 - f) * terms[0].draws + f * terms[1].draws,
                    f"{terms[0].basis}, joined in log work to {_between(work)}")


def cold_resume(ev, design: str, n: int, size: int | None, u: int = 0, busy: float = 0.0):
    """(Term, note): ns a resumption of one of n contexts, each with u bytes in use and
    `busy` ns of busy work between switches, adds to a switch for reaching a context last
    run n resumptions ago: the switching loop of the design's layout among n contexts
    against 2 (_cold_switch), beside that work for a stack (cold_work). It holds what a
    cold context costs the design: a stack's saved frame and return address, a copy
    stack's saved bytes, a heap frame's resume point, the page walks to them, and the lines
    the bytes in use evicted."""
    import numpy as np

    if n <= 2:
        return _ev.Term(np.zeros(_ev.DRAWS), "two contexts"), ""
    work = cold_work(design, busy)
    held = "; ".join(filter(None, [
        f"held at the {COLD_CONTEXTS:,} contexts measured" if n > COLD_CONTEXTS else "",
        f"the cold switch measured with {_between(work)} between switches, held beyond"
        if work < busy and work > 0 else ""]))
    return _cold_switch(ev, layout_design(design), n, u, size, work), held


def touch_cost(ev, design: str, w: Workload):
    """(Term, note): ns per suspension that touching the u bytes in use in one of N
    contexts, each last run N suspensions ago, costs beyond touching them in one warm
    context, in the design's own layout (stacks with or without guard pages, a copy
    stack's saved bytes, heap frames): the workload experiment's steps without switching
    among N contexts against 2, from the loops the cold switch is measured in. Zero for a
    step measured among the N (Workload.step) and for designs the lab lays out no
    contexts of."""
    import numpy as np

    need = cold_need(design, w, ev)
    if w.step or need is None:
        return _ev.Term(np.zeros(_ev.DRAWS), "none"), ""
    layout, n, u, size, work = need
    note = f"held at the {COLD_CONTEXTS:,} contexts measured" if w.alive > COLD_CONTEXTS else ""
    return _cold_switch(ev, layout, n, u, size, work, of=_steps), note


def ring_extra(ev, n: int, size: int):
    """(Term, note): what N contexts on stacks of `size` add to each switch over two, from
    the ring of notebook 01 at the measured stack size nearest `size`."""
    import numpy as np

    df = _ring_rows(ev)
    if df.empty and ev.local and n > 2:
        import labkit

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
    s = _nearest_size(df, size)
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
    import numpy as np

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
        import labkit

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
    """The design's cost with differing FP control words minus with equal ones (06)."""
    import numpy as np

    src = FP_SOURCE.get(design, design)
    df = ev.rows("06_fp_state_and_return")
    if "fp_control" not in df:
        raise LookupError(f"no FP-control measurement in {ev.source}")
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


# ---- memory ----

def _stackful_rows(ev):
    df = ev.rows("07b_coroutine_memory")
    if "part" not in df:
        return df.iloc[0:0]
    return df[df.part == "stackful"]


def stack_memory(ev, size: int, touched_bytes: int) -> dict:
    """Resident bytes and page tables of one stack of `size` with `touched_bytes` written:
    07b's untouched stack (one page) plus, per further page written, the slope from its
    wholly touched stack, at the measured size nearest `size`; page tables scaled by size."""
    page = _page()
    df = _stackful_rows(ev)
    if df.empty and ev.local:
        from labkit.experiments import frames

        n = 500 if ev.quick else 5000
        ev.announce(f"memory of {n} stacks of {size} bytes, touched and not",
                    "data/07b_coroutine_memory.csv has no stackful row from this machine")
        for t in (False, True):
            ev.add("07b_coroutine_memory", frames.stackful(size, touched=t, n=n)
                   .assign(part="stackful"))
        df = _stackful_rows(ev)
    if df.empty:
        raise LookupError(f"no stackful memory rows in {ev.source}")
    s = _nearest_size(df, size)
    sub = df[df.stack_size == s]
    untouched = sub[sub.touched.astype(str) == "False"]
    touched = sub[sub.touched.astype(str) == "True"]
    base = float(untouched.bytes_per_object.median())
    pte = float(untouched.pte_bytes_per_object.median()) * size / s
    pages = max(1, math.ceil(touched_bytes / page))
    slope = page  # one page per page, until a fully touched stack says otherwise
    if len(touched) and s > page:
        slope = (float(touched.bytes_per_object.median()) - base) / (s / page - 1)
    return {"resident": base + (min(pages, size // page) - 1) * slope, "page_tables": pte,
            "note": "" if s == size else f"memory from {bytes_label(s)} stacks"}


def copy_memory(ev, u: int) -> dict:
    import numpy as np

    df = ev.rows("07b_coroutine_memory_copy_stack")
    if df.empty and ev.local:
        from labkit.experiments import frames

        n = 2000 if ev.quick else 20_000
        ev.announce(f"memory of {n} copy-stack coroutines with {u} bytes in use",
                    "data/07b_coroutine_memory_copy_stack.csv has no row from this machine")
        for x in sorted({0, u}):
            ev.add("07b_coroutine_memory_copy_stack", frames.copy_stack(x, n=n))
        df = ev.rows("07b_coroutine_memory_copy_stack")
    if df.empty:
        raise LookupError(f"no copy-stack memory in {ev.source}")
    pts = df.groupby("stack_in_use").bytes_per_object.median()
    xs, ys = pts.index.to_numpy(float), pts.to_numpy(float)
    if len(xs) == 1 or u <= xs[-1]:
        v = float(np.interp(u, xs, ys))
        note = ""
    else:
        v = ys[-1] + (u - xs[-1]) * (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        note = f"extrapolated beyond {bytes_label(xs[-1])} in use"
    return {"resident": v, "page_tables": math.nan, "note": note}


# The C++20 frames measured now where the data has none: the smallest and two sizes of a
# connection's frame, for the straight line by frame size (notebook 07b measures these).
FRAME_VARIANTS = ("empty", "conn192", "conn256")


def frame_memory(ev, frame: int) -> dict:
    """A heap frame holding `frame` bytes alive across a suspension beside the smallest
    (empty) coroutine's frame: a straight line through 07b's C++20 frames (heap allocator)
    by frame size."""
    import numpy as np

    def heap_frames():
        df = ev.rows("07b_coroutine_memory")
        # the stackful rows measured now have a kind but no allocator
        return (df[(df.kind == "cxx20") & (df.allocator == "heap")]
                if {"kind", "allocator"} <= set(df.columns) else df.iloc[0:0])

    df = heap_frames()
    if df.empty and ev.local:
        from labkit.experiments import frames

        n = 20_000 if ev.quick else 200_000
        ev.announce(f"memory of {n} C++20 coroutines of each of the frames "
                    f"{', '.join(FRAME_VARIANTS)} (heap)",
                    "data/07b_coroutine_memory.csv has no C++20 frame from this machine")
        for v in FRAME_VARIANTS:
            ev.add("07b_coroutine_memory", frames.coroutines(v, "heap", n=n))
        df = heap_frames()
    if df.empty:
        raise LookupError(f"no C++20 frame memory in {ev.source}")
    g = df.groupby("frame_bytes")[["bytes_per_object", "pte_bytes_per_object"]].median()
    x = g.index.to_numpy(float)
    frame = x.min() + frame  # the empty coroutine's own fields, and what stays alive
    if len(x) < 2:
        raise LookupError("C++20 frame memory at one frame size only")
    fit = np.polyfit(x, g.bytes_per_object.to_numpy(float), 1)
    pfit = np.polyfit(x, g.pte_bytes_per_object.to_numpy(float), 1)
    note = f"extrapolated beyond {int(x.max())}-byte frames" if frame > x.max() else ""
    return {"resident": float(np.polyval(fit, frame)),
            "page_tables": max(0.0, float(np.polyval(pfit, frame))), "note": note}


def python_memory(ev, design: str) -> dict:
    """Python heap bytes per suspended greenlet, generator or asyncio task, or context of a
    user's Python switch, measured now with tracemalloc (the lab's data has none)."""
    from labkit.core import systems

    if not ev.local:
        raise LookupError(f"no memory of {design} in {ev.source}")
    key = f"python memory {design}"
    if key not in ev.frames:
        n = 1000 if ev.quick else 10_000
        ev.announce(f"Python heap of {n} suspended {design} objects (tracemalloc)",
                    "the lab's data has no memory figure for Python's designs")
        if design in systems.USER_PY_SWITCHES:  # the user's code runs in a worker only
            from labkit.core import user_pyswitch

            ev.frames[key] = user_pyswitch.memory(design, n)
        else:
            # In a thread of its own: asyncio's measurement runs an event loop, which a
            # Jupyter kernel's thread already has running.
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(1) as pool:
                ev.frames[key] = pool.submit(_python_bytes, design, n).result()
    return {"resident": ev.frames[key], "page_tables": math.nan,
            "note": "Python heap (tracemalloc), measured now"}


def _python_bytes(design: str, n: int) -> float:
    import asyncio
    import gc
    import tracemalloc

    def gen():
        yield 1
        yield 2

    held = []
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    if design == "generator_send":
        for _ in range(n):
            g = gen()
            next(g)
            held.append(g)
    elif design == "greenlet_switch":
        import greenlet

        main = greenlet.getcurrent()
        for _ in range(n):
            g = greenlet.greenlet(lambda: main.switch())
            g.switch()
            held.append(g)
    elif design == "asyncio_task":
        loop = asyncio.new_event_loop()
        fut = loop.create_future()

        async def task():
            await fut

        held = [loop.create_task(task()) for _ in range(n)]
        loop.run_until_complete(asyncio.sleep(0))
    else:
        raise ValueError(f"design {design!r} is not a Python design")
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    if design == "asyncio_task":
        fut.cancel()
        loop.run_until_complete(asyncio.gather(*held, return_exceptions=True))
        loop.close()
    elif design == "greenlet_switch":
        for g in held:
            g.throw(greenlet.GreenletExit)
    return (after - before) / n


def stack_depth(ev, design: str, u: int, size: int) -> tuple[int, str]:
    """(bytes, note): from the top of one of the design's stacks down to the start of its u
    bytes in use, which the stack holds resident. The workload experiment's coroutine in the
    design's layout, made now (a peer's own record at the top of the stack is counted
    only so), less the layout's declared frame plus the design's; with nothing in use, or
    another machine's data, the declared frame plus u."""
    from labkit.core import entries

    frame = entries.frame_bytes(design)
    if u == 0:
        return frame, ""
    layout = layout_design(design)
    size = _holding(layout, u, size)
    key = f"depth {layout} {u} {size}"
    if key not in ev.frames:
        if not ev.local:
            return u + frame, "stack depth: the bytes in use and the declared frame"
        from labkit.experiments import workload

        ev.announce(f"how deep {layout}'s {u} bytes in use sit on a {bytes_label(size)} "
                    "stack", "the lab's data has no stack depth")
        df = workload.run_workload(layout, work_ns=0, alive=1, stack_in_use=u,
                                   switches_per_request=1, requests=1, stack_size=size,
                                   repeats=1)
        ev.frames[key] = int(df.stack_depth_bytes.iloc[0])
    return ev.frames[key] - entries.frame_bytes(layout) + frame, ""


def mappings(design: str, w: Workload) -> int:
    """Memory mappings one coroutine of the design takes, from its layout alone."""
    size = stack_size(design, w)
    if size is None:
        return 0
    # A malloc'd stack (Boost's fixedsize_stack) is a mapping of its own only when malloc
    # mmaps it.
    return GUARD_MAPPINGS if guarded(design) else int(size >= MMAP_THRESHOLD)


def memory(ev, design: str, w: Workload) -> dict:
    """Per coroutine: reserved, resident and page-table bytes and memory mappings; the
    total for N (resident + page tables); the stack size it assumed; notes."""
    fam, size = family(design), stack_size(design, w)
    page = _page()
    if fam in ("stack", "thread"):
        held, note = (stack_depth(ev, design, w.stack_in_use, size) if fam == "stack"
                      else (w.stack_in_use, ""))
        m = stack_memory(ev, size, held)
        m["note"] = "; ".join(filter(None, [m["note"], note]))
        reserved = size + (page if guarded(design) else 0)
    elif fam == "copy":
        m = copy_memory(ev, w.stack_in_use)
        reserved = m["resident"]
    elif fam == "frame":
        m = frame_memory(ev, w.stack_in_use)
        reserved = m["resident"]
    else:
        m = python_memory(ev, design)
        reserved = m["resident"]
    maps = mappings(design, w)
    per = m["resident"] + (0.0 if math.isnan(m["page_tables"]) else m["page_tables"])
    return {"stack_size": size, "reserved": reserved, "resident": m["resident"],
            "page_tables": m["page_tables"], "mappings": maps, "per_coroutine": per,
            "total": per * w.alive, "mappings_total": maps * w.alive, "note": m["note"]}


# ---- the prediction ----

def switch_cost(ev, design: str, w: Workload):
    """(Term of ns per switch, notes) for the design under the workload."""
    import numpy as np

    fam = family(design)
    notes = []
    if fam == "thread":
        c = handoff(ev, design)
    elif fam == "copy":
        c, note = copy_cost(ev, w.stack_in_use)
        notes.append(note)
    else:
        c = ladder(ev, design)
    total = np.array(c.draws, float)
    basis = c.basis
    if fam in ("stack", "copy", "frame") and w.work_ns(ev) > 0:
        # Of the warm switch: a cache miss of many contexts is added below, unhidden.
        hidden, note = overlap(ev, w.work_ns(ev), stack_size(design, w))
        if hidden is not None:
            total = total * (1 - hidden.draws)
        notes.append(note)
    # Of a suspension's two switches one resumes the coroutine, cold when it is one of
    # many, and the other the scheduler, warm: one cold term per suspension.
    if fam in ("stack", "frame", "copy") and w.alive > 2:
        cold, note = cold_resume(ev, design, w.alive, stack_size(design, w), w.stack_in_use,
                                 w.busy(ev))
        total = total + cold.draws / SWITCHES_PER_SUSPENSION
        notes.append(note)
    elif fam == "thread" and w.alive > 2:
        # The ring is symmetric: each of its switches resumes a cold context.
        extra, note = ring_extra(ev, w.alive, stack_size(design, w))
        total = total + extra.draws / SWITCHES_PER_SUSPENSION
        notes.append(note)
    elif w.alive > 2:
        notes.append("no many-contexts term (the lab measures none for this design)")
    if w.fp == "control" and keeps_fp_control(design) and fam != "thread":
        t, note = fp_control_term(ev, design)
        total = total + t.draws
        notes.append(note and f"FP control {note}")
    if w.fp == "vector" and (design in SAVES_VECTORS or fam == "thread"):
        t, note = vector_term(ev, SAVES_VECTORS.get(design, "vector"))
        total = total + t.draws
        notes.append(note)
    return _ev.Term(np.maximum(total, 0.0), basis), [n for n in notes if n]


# ---- the model's error ----

ERROR_NEIGHBOURS = 20  # calibration points whose errors a prediction carries
CALIBRATION = "advisor_calibration"  # evidence's name for the calibration grid's rows
# How a prediction picks its neighbours on the calibration grid: nearest in log share of
# switching and in log own spread, each axis in units of its standard deviation over the
# grid (L1). The original rule, nearest in log share alone, is kept beside it
# (docs/advisor_calibration.md: why, and how the two were judged).
ERROR_RULES = ("share and spread", "share")
ERROR_RULE = ERROR_RULES[0]
# Each rule's floor of a share or a spread before its log. A floor above the smallest real
# shares and spreads ties a zero (a switch the work hides whole) with them, and argsort
# breaks the tie by the grid's order; the amended rule's is below any but a zero
# (docs/advisor_calibration.md, "Zeros apart").
ERROR_FLOORS = {"share and spread": 1e-9, "share": 1e-4}


def own_spread(low: float, high: float) -> float:
    """The model's own spread: the log-normal sigma of its 95% interval [low, high] (the
    noise of the measurements its terms stand on), 0 without a positive low end."""
    return math.log(high / low) / (2 * 1.96) if low > 0 and high > 0 else 0.0


# The calibration grid's two models, each by its columns (ns, share, low, high): the
# advice, given the work a user states, and the step-fed diagnosis (Workload.step).
MODEL_COLUMNS = {"advice": ("advice_model_ns", "advice_share", "advice_model_low",
                            "advice_model_high"),
                 "step": ("model_ns", "model_share", "model_low", "model_high")}


def request_residuals(grid, share: float, spread: float | None = None, leave_out=None,
                      rule: str = ERROR_RULE, of: str = "advice"):
    """log(measured / model's ns per request) at the ERROR_NEIGHBOURS points of a
    calibration grid nearest this prediction under `rule` (ERROR_RULES): in the model's
    share of time switching and its own spread (own_spread), or in share alone; without
    the point labelled `leave_out`. `of`: whose model, the advice's or the step-fed
    diagnosis's (MODEL_COLUMNS). The model's error where the switch weighs as much and
    its inputs were as steady as here. A grid without the model's interval is read by
    share alone; one without the model's columns gives no residuals."""
    import numpy as np

    if rule not in ERROR_RULES:
        raise ParameterError("rule", f"must be one of {', '.join(ERROR_RULES)}; got {rule!r}")
    if of not in MODEL_COLUMNS:
        raise ParameterError("of", f"must be one of {', '.join(MODEL_COLUMNS)}; got {of!r}")
    ns, sh, low, high = MODEL_COLUMNS[of]
    if grid is None or len(grid) == 0 or not {ns, sh, "measured_ns"} <= set(grid.columns):
        return np.array([])
    g = grid.drop(index=leave_out) if leave_out is not None else grid
    r = np.log(g.measured_ns.to_numpy(float) / g[ns].to_numpy(float))
    floor = ERROR_FLOORS[rule]
    axes = [(np.log(np.maximum(g[sh].to_numpy(float), floor)),
             math.log(max(share, floor)))]
    if rule == "share and spread" and spread is not None and {low, high} <= set(g):
        theirs = [own_spread(lo, hi) for lo, hi in zip(g[low].to_numpy(float),
                                                     g[high].to_numpy(float))]
        axes.append((np.log(np.maximum(theirs, floor)), math.log(max(spread, floor))))
    far = np.zeros(len(g))
    for x, at in axes:
        scale = float(np.nanstd(x[np.isfinite(x)])) if len(axes) > 1 else 1.0
        far = far + np.abs(x - at) / (scale if scale > 0 else 1.0)
    ok = np.isfinite(r) & np.isfinite(far)
    r, far = r[ok], far[ok]
    return r[np.argsort(far, kind="stable")[:ERROR_NEIGHBOURS]]


def with_error(draws, residuals, rng):
    """Draws each times exp of a residual drawn at random (no residuals: unchanged)."""
    import numpy as np

    if len(residuals) == 0:
        return draws
    return draws * np.exp(rng.choice(np.asarray(residuals), size=len(draws)))


def _interval(d) -> dict:
    import numpy as np

    lo, mid, hi = np.percentile(d, [2.5, 50, 97.5])
    return {"value": float(mid), "low": float(lo), "high": float(hi)}


def predict_full(design: str, w: Workload, ev=None, *, model_error: bool = True) -> dict:
    """Everything the advisor says of one design, hazards aside. With model_error, the
    switch's draws carry the model's error measured by this machine's calibration grid
    (request_residuals), where there is one."""
    ev = ev or _ev.load()
    design = check_design(design)
    if not isinstance(w, Workload):
        raise TypeError(f"workload must be a Workload (advising.model.workload(...)), "
                        f"not {type(w).__name__}")
    out = {"design": design, "family": family(design), "notes": []}
    given, need = stack_size(design, w), cold_need(design, w, ev)
    if given is not None and need is not None and need[3] != given:
        from labkit.core import validate

        out["notes"].append(
            f"its switches and stack depth measured on {bytes_label(need[3])} stacks, not "
            f"the {bytes_label(given)} given: the workload experiment keeps "
            f"{bytes_label(validate.ENTRY_HEADROOM)} above the bytes in use and the "
            "switch's frame for its own calls")
    try:
        c, notes = switch_cost(ev, design, w)
        touch, note = touch_cost(ev, design, w)
        out["notes"] += [*notes, note] if note else notes
        wns = w.work_ns(ev)
        switching = w.suspensions * SWITCHES_PER_SUSPENSION * c.draws
        steps = w.suspensions * (wns + touch.draws)
        bare = steps + switching
        share = switching / bare.clip(min=1e-300)
        t = bare
        if model_error:
            import numpy as np

            own = _interval(bare)
            res = request_residuals(ev.rows(CALIBRATION), float(np.median(share)),
                                    own_spread(own["low"], own["high"]),
                                    of="step" if w.step else "advice")
            # The grid's error scales the whole request, but the work stated is exact: no
            # request takes less than its work.
            t = np.maximum(with_error(bare, res, ev.rng(f"error {design}")),
                           w.suspensions * wns)
            whose = "this machine's" if ev.local else "the source machine's"
            out["notes"].append(f"interval with the model's error at {len(res)} points of "
                                f"{whose} calibration grid" if len(res) else
                                "interval without the model's error: no calibration grid "
                                f"of this model in {whose} data (notebook 10 makes one)")
        out["ns_per_request"] = _interval(t)
        out["ns_per_switch"] = _interval(c.draws)
        out["touch_ns"] = _interval(touch.draws)
        out["switch_share"] = _interval(share)
        out["basis"] = c.basis
        if w.rate is not None:
            out["cpu_load"] = _interval(t * w.rate / 1e9)
    except LookupError as exc:
        nan = {"value": math.nan, "low": math.nan, "high": math.nan}
        out.update(ns_per_request=nan, ns_per_switch=nan, touch_ns=nan, switch_share=nan,
                   basis="")
        out["notes"].append(f"no time: {exc}")
    try:
        out["memory"] = memory(ev, design, w)
        if out["memory"]["note"]:
            out["notes"].append(out["memory"]["note"])
    except LookupError as exc:
        maps = mappings(design, w)
        out["memory"] = {"stack_size": stack_size(design, w), "reserved": math.nan,
                         "resident": math.nan, "page_tables": math.nan, "mappings": maps,
                         "per_coroutine": math.nan, "total": math.nan,
                         "mappings_total": maps * w.alive, "note": ""}
        out["notes"].append(f"no memory: {exc}")
    return out


def predict(design: str, w: Workload, ev=None) -> tuple[float, float, float]:
    """(value, low, high) ns per request: what the calibration grid sets beside its
    measurement."""
    p = predict_full(design, w, ev)["ns_per_request"]
    return p["value"], p["low"], p["high"]


def predict_bytes(design: str, w: Workload, ev=None) -> float:
    """Resident plus page-table bytes of `w.alive` suspended coroutines of the design."""
    return predict_full(design, w, ev)["memory"]["total"]
