"""The terms of many contexts: resuming one of N cold contexts, and touching the bytes in
use in one of them, each measured in the workload experiment's loops of the design's layout
at N contexts against 2 (on the spot, over fresh processes, or another machine's rows)."""
from __future__ import annotations

import math
import zlib

import numpy as np
import pandas as pd

from labkit.core import entries, validate
from labkit.core.plots import bytes_label, ns_label
from labkit.experiments import verdict_design, workload
from labkit.lab.advising import taxonomy
from labkit.lab.advising import evidence as _ev
from labkit.lab.advising.inputs import Workload

def layout_of(design: str) -> str:
    """The workload experiment's design whose layout of contexts `design` has (its record's
    layout); a ValueError for a design the experiment lays out no contexts of."""
    d = taxonomy.of(design)
    if d.layout is None:
        raise ValueError(f"design {design!r} has no layout of contexts the workload "
                         f"experiment runs (a {d.family} design)")
    return d.layout


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
    if taxonomy.of(design).family not in COLD_BESIDE_WORK:
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

    seed = zlib.crc32(" ".join(sorted(entries)).encode())
    runs = pd.concat([verdict_design.run_process(entries, i, repeats=1, seed=seed)
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
    def beyond(loops):
        return of(loops).groupby(level=0).median()

    per = (beyond(got[far]) - beyond(got[near])).dropna()
    if per.empty:
        raise LookupError(f"no process measured both points of {key}")
    d = _ev.draws(per.to_numpy(float), ev.rng(f"{key} {of.__name__}"),
                  processes=per.index.to_numpy()).draws
    return _ev.Term(np.maximum(d, 0.0), f"{per.size} processes, {basis}")


# The most contexts the advisor makes to measure a cold switch on the spot: 100,000 stacks
# of 64 KiB reserve 6.4 GB of address space and commit a page or two each; a million would
# commit several GB on a laptop for one term.
COLD_CONTEXTS = 100_000


def holding(layout: str, u: int, size):
    """`size`, raised to a stack that holds u bytes in use above `layout`'s frame, as the
    workload experiment needs (None, for heap frames, stays None)."""
    if size is None:
        return None
    return max(size, validate.round_to_pages(u + entries.frame_bytes(layout)
                                             + validate.ENTRY_HEADROOM))


def cold_need(design: str, w, ev) -> tuple | None:
    """(layout, contexts, bytes in use, stack size, ns of busy work) of the cold switch a
    prediction for `design` under `w` reads (measure_cold takes a list of them), or None."""
    if taxonomy.of(design).family not in ("stack", "frame", "copy") or w.alive <= 2:
        return None
    layout = layout_of(design)
    u = w.stack_in_use
    return (layout, min(w.alive, COLD_CONTEXTS), u,
            holding(layout, u, taxonomy.stack_size(design, w)),
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
    size = holding(layout, u, size)
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
    if n <= 2:
        return _ev.Term(np.zeros(_ev.DRAWS), "two contexts"), ""
    work = cold_work(design, busy)
    held = "; ".join(filter(None, [
        f"held at the {COLD_CONTEXTS:,} contexts measured" if n > COLD_CONTEXTS else "",
        f"the cold switch measured with {_between(work)} between switches, held beyond"
        if work < busy and work > 0 else ""]))
    return _cold_switch(ev, layout_of(design), n, u, size, work), held


def touch_cost(ev, design: str, w: Workload):
    """(Term, note): ns per suspension that touching the u bytes in use in one of N
    contexts, each last run N suspensions ago, costs beyond touching them in one warm
    context, in the design's own layout (stacks with or without guard pages, a copy
    stack's saved bytes, heap frames): the workload experiment's steps without switching
    among N contexts against 2, from the loops the cold switch is measured in. Zero for a
    step measured among the N (Workload.step) and for designs the lab lays out no
    contexts of."""
    need = cold_need(design, w, ev)
    if w.step or need is None:
        return _ev.Term(np.zeros(_ev.DRAWS), "none"), ""
    layout, n, u, size, work = need
    note = f"held at the {COLD_CONTEXTS:,} contexts measured" if w.alive > COLD_CONTEXTS else ""
    return _cold_switch(ev, layout, n, u, size, work, of=_steps), note
