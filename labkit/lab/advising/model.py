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
    less what of it hides in the shadow of W (overlap: the fraction of notebook 08's
    switch hidden with work between switches against without, of the design's switch
    but never more than 08's switch whole; not for threads)
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

import numpy as np

from labkit.core import validate
from labkit.core.plots import bytes_label
from labkit.lab.advising import taxonomy
from labkit.lab.advising import evidence as _ev
from labkit.lab.advising.cold import cold_need, cold_resume, touch_cost
from labkit.lab.advising.inputs import Workload
from labkit.lab.advising.memory import mappings, memory
from labkit.lab.advising.model_error import CALIBRATION, own_spread, request_residuals, with_error
from labkit.lab.advising.switch_terms import (copy_cost, fp_control_term, handoff, ladder, overlap,
                                              ring_extra, vector_term)

SWITCHES_PER_SUSPENSION = 2  # out and back in


def switch_cost(ev, design: str, w: Workload):
    """(Term of ns per switch, notes) for the design under the workload."""
    d = taxonomy.of(design)
    fam = d.family
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
    size = taxonomy.stack_size(design, w)
    if fam in ("stack", "copy", "frame") and w.work_ns(ev) > 0:
        # Of the warm switch: a cache miss of many contexts is added below, unhidden.
        hidden, note = overlap(ev, w.work_ns(ev), size, total)
        if hidden is not None:
            total = total - hidden.draws
        notes.append(note)
    # Of a suspension's two switches one resumes the coroutine, cold when it is one of
    # many, and the other the scheduler, warm: one cold term per suspension.
    if fam in ("stack", "frame", "copy") and w.alive > 2:
        cold, note = cold_resume(ev, design, w.alive, size, w.stack_in_use, w.busy(ev))
        total = total + cold.draws / SWITCHES_PER_SUSPENSION
        notes.append(note)
    elif fam == "thread" and w.alive > 2:
        # The ring is symmetric: each of its switches resumes a cold context.
        extra, note = ring_extra(ev, w.alive, size)
        total = total + extra.draws / SWITCHES_PER_SUSPENSION
        notes.append(note)
    elif w.alive > 2:
        notes.append("no many-contexts term (the lab measures none for this design)")
    if w.fp == "control" and d.keeps_fp_control and fam != "thread":
        t, note = fp_control_term(ev, design)
        total = total + t.draws
        notes.append(note and f"FP control {note}")
    if w.fp == "vector" and d.vectors:
        t, note = vector_term(ev, d.vectors)
        total = total + t.draws
        notes.append(note)
    return _ev.Term(np.maximum(total, 0.0), basis), [n for n in notes if n]


def _interval(d) -> dict:
    lo, mid, hi = np.percentile(d, [2.5, 50, 97.5])
    return {"value": float(mid), "low": float(lo), "high": float(hi)}


def predict_full(design: str, w: Workload, ev=None, *, model_error: bool = True) -> dict:
    """Everything the advisor says of one design, hazards aside. With model_error, the
    switch's draws carry the model's error measured by this machine's calibration grid
    (request_residuals), where there is one."""
    ev = ev or _ev.load()
    design = taxonomy.check(design)
    if not isinstance(w, Workload):
        raise TypeError(f"workload must be a Workload (advising.inputs.workload(...)), "
                        f"not {type(w).__name__}")
    out = {"design": design, "family": taxonomy.of(design).family, "notes": []}
    given, need = taxonomy.stack_size(design, w), cold_need(design, w, ev)
    if given is not None and need is not None and need[3] != given:
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
            own = _interval(bare)
            res = request_residuals(ev.rows(CALIBRATION), float(np.median(share)),
                                    own_spread(own["low"], own["high"]),
                                    of="step" if w.step else "advice")
            # The grid's error scales the whole request, the work stated included: a user's
            # work is a measurement too, and a request timed in other processes runs up to a
            # few percent under it.
            t = with_error(bare, res, ev.rng(f"error {design}"))
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
        out["memory"] = {"stack_size": taxonomy.stack_size(design, w), "reserved": math.nan,
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
