"""Notebook 10's analysis: the calibration grid's two figures (predicted against measured,
and the error by design and point), the advisor's curves for one workload (share of time
switching against the work between switches, memory against N up to the mapping limit),
and the widgets that redraw those curves from the measurements already made.

    from labkit.lab.analysis import your_workload as yw
    yw.calibration_figure(grid); yw.error_figure(grid)
    c = yw.curves(alive=10_000, in_use=1024); yw.share_figure(c); yw.memory_figure(c)
"""
from __future__ import annotations

import copy
import math
import re
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display
from matplotlib.ticker import FuncFormatter

from labkit.core import plots, procfs
from labkit.core.systems import colours
from labkit.lab.advising import cold, evidence, inputs, memory, model, taxonomy
from labkit.lab.advising import grid as _grid
from labkit.lab.analysis import findings
from labkit.lab.experiment import YOUR_WORKLOAD
# ipywidgets (the lab extra) is imported where used: it may be absent.

NOTEBOOK = YOUR_WORKLOAD.name
# The calibration grid's rows, data/advisor_calibration.csv: a name of its own, so that
# readers outside the lab find the grid without knowing the notebook.
GRID = YOUR_WORKLOAD.own("advisor_calibration")
WORKS = tuple(float(x) for x in np.logspace(0, 5, 21))   # 1 ns to 100 us between switches
ALIVES = tuple(int(x) for x in np.unique(np.logspace(0, 7, 29).round()))  # 1 to 10 million
MARKERS = dict(zip(_grid.WORK, "os^"))


def _marker(work: str) -> str:
    return MARKERS.get(work, "D")


# A grid's predictions by whose they are: the advice (given the work a user states) and
# the step-fed diagnosis; each (ns, low, high, the model's own low and high).
PREDICTIONS = {"advice": ("advice_ns", "advice_low", "advice_high", "advice_model_low",
                          "advice_model_high"),
               "predicted": ("predicted_ns", "predicted_low", "predicted_high", "model_low",
                             "model_high")}
WHOSE = {"advice": "the advice (given the work in one warm context)",
         "predicted": "the step-fed model (a diagnosis: given the step among the N)"}


def _work_words(work: str) -> str:
    spaced = re.sub(r"(\d)([a-zµ])", r"\1 \2", work)
    return "no work between switches" if work == _grid.WORK[0] else f"{spaced} of work"


def calibration_finding(g, on: str = "advice", targets=None) -> str:
    """What the calibration figure shows, from its rows: the share of measurements inside
    the 95% interval and the median half-width, each against its target."""
    t = targets or _grid.TARGETS
    a = _grid.scores(g, on=on, targets=t).set_index("design").loc["all"]
    return (f"The 95% interval held {plots.percent_label(a.coverage)}% of "
            f"{int(a.points)} measurements (target {plots.percent_label(t['coverage'])}%), "
            f"median half-width {plots.percent_label(a.median_half_width)}% (target "
            f"{plots.percent_label(t['half_width'])}%), median error "
            f"{plots.percent_label(a.median_time_error)}%.")


def design_colour(design) -> str:
    """A design's colour, the same in every figure and apart from every other design's."""
    return colours([*taxonomy.names(), design])[str(design)]


def calibration_figure(g, info=None, on: str = "advice", name: str = "calibration",
                       title: str | None = None, targets=None):
    """Predicted against measured ns per request, log axes: the measurement's 95%
    interval over fresh processes (horizontal), the prediction interval (thin, vertical:
    with the model's cross-validated error) and the model's own interval (thick: its terms'
    measurement noise only). `on`: the advice's columns or the step-fed diagnosis's."""
    ns, low, high, own_low, own_high = PREDICTIONS[on]
    fig, ax = plt.subplots(figsize=(7.5, 6))
    for i, (d, x) in enumerate(g.groupby("design", sort=False)):
        colour = design_colour(d)
        for wk, y in x.groupby("work", sort=False):
            y = {c: y[c].to_numpy(float) for c in ("measured_ns", "measured_low",
                                                   "measured_high", ns, low, high, own_low,
                                                   own_high)}  # arrays: a group may be one row
            ax.errorbar(y["measured_ns"], y[ns],
                        xerr=[y["measured_ns"] - y["measured_low"],
                              y["measured_high"] - y["measured_ns"]],
                        yerr=[y[ns] - y[low], y[high] - y[ns]],
                        fmt=_marker(wk), color=colour, ms=4, elinewidth=0.6, capsize=0,
                        alpha=0.8, label=d if wk == x.work.iloc[0] else None)
            ax.vlines(y["measured_ns"], y[own_low], y[own_high], color=colour, lw=2.5)
    lo = min(g.measured_low.min(), g[low].min()) / 1.5
    hi = max(g.measured_high.max(), g[high].max()) * 1.5
    xs = np.array([lo, hi])
    ax.plot(xs, xs, "k-", lw=0.8)
    band = _grid.TARGETS["time_error"]
    for f in (1 - band, 1 + band):
        ax.plot(xs, xs * f, "k:", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured ns per request (95% interval over fresh processes)")
    ax.set_ylabel("predicted ns per request (thin: prediction interval; thick: the "
                  "model's terms alone)")
    ax.set_title((title or f"{WHOSE[on]} against the workload experiment") + "\n"
                 + textwrap.fill(calibration_finding(g, on, targets), 90)
                 + f" Dotted: ±{band:.0%}.", fontsize=9)
    handles, _ = ax.get_legend_handles_labels()
    handles += [plt.Line2D([], [], color="k", marker=m, ls="", mfc="none",
                           label=_work_words(w)) for w, m in MARKERS.items() if w in set(g.work)]
    ax.legend(handles=handles, fontsize="small", loc="upper left")
    ax.grid(True, which="both", alpha=0.3)
    return plots.finish(fig, f"{NOTEBOOK}-{name}", caption=plots.machine_caption(info))


def error_finding(g, targets=None) -> str:
    """What the error figure shows, one sentence from the grid's rows: how many points'
    advice fell within the time and the memory targets, and the median errors."""
    t = targets or _grid.TARGETS
    time, mem = g.advice_error.dropna().abs(), g.advice_memory_error.dropna().abs()
    if time.empty:
        return "The grid has no point with an advice here."
    said = (f"The advice's time was within ±{plots.percent_label(t['time_error'])}% of the "
            f"measurement at {int((time <= t['time_error']).sum())} of {len(time)} points "
            f"(median error {plots.percent_label(time.median())}%)")
    if len(mem):
        said += (f"; its memory within ±{plots.percent_label(t['memory_error'])}% at "
                 f"{int((mem <= t['memory_error']).sum())} of {len(mem)} (median "
                 f"{plots.percent_label(mem.median())}%)")
    return said + "."


def error_figure(g, info=None):
    """The advice / measurement - 1 for time (with the measurement's interval carried
    through) and memory, by design, each point coloured by N and shaped by W;
    error_finding as the title."""
    fig, (at, am) = plt.subplots(1, 2, figsize=(11, 4.9), sharex=True)
    findings.title(fig, error_finding(g))
    designs = list(dict.fromkeys(g.design))
    alives = sorted(g.alive.unique())
    tint = colours(f"N = {n:,}" for n in alives)
    for _, r in g.iterrows():
        x = designs.index(r.design) + (alives.index(r.alive) - 1) * 0.25 \
            + 0.06 * _grid.IN_USE.index(r.stack_in_use) if r.stack_in_use in _grid.IN_USE \
            else designs.index(r.design)
        c = tint[f"N = {r.alive:,}"]
        e = 100 * r.advice_error
        lo, hi = 100 * (r.advice_ns / r.measured_high - 1), 100 * (r.advice_ns / r.measured_low - 1)
        at.errorbar([x], [e], yerr=[[max(e - lo, 0)], [max(hi - e, 0)]], fmt=_marker(r.work),
                    color=c, ms=4, elinewidth=0.6, mfc="none" if not r.advice_covered else c)
        am.plot([x], [100 * r.advice_memory_error], _marker(r.work), color=c, ms=4)
    bands = {"time": 100 * _grid.TARGETS["time_error"],
             "memory": 100 * _grid.TARGETS["memory_error"]}
    for ax, what in ((at, "time"), (am, "memory")):
        band = bands[what]
        ax.axhspan(-band, band, color="0.9", zorder=0)
        ax.axhline(0, color="k", lw=0.6)
        ax.set_xticks(range(len(designs)), designs, rotation=20, fontsize=8)
        ax.set_ylabel(f"{what}: advice / measured - 1 (%)")
        ax.set_yscale("symlog", linthresh=10)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.grid(True, axis="y", alpha=0.3)
    at.set_title(f"time (grey: the ±{bands['time']:g}% target; bar: the measurement's 95% "
                 "interval; hollow: outside the prediction interval)", fontsize=8)
    am.set_title(f"memory (grey: the ±{bands['memory']:g}% target)", fontsize=8)
    handles = [plt.Line2D([], [], color=c, marker="o", ls="", label=n) for n, c in tint.items()]
    handles += [plt.Line2D([], [], color="k", marker=m, ls="", mfc="none",
                           label=_work_words(w)) for w, m in MARKERS.items()]
    am.legend(handles=handles, fontsize="small")
    return plots.finish(fig, f"{NOTEBOOK}-errors", caption=plots.machine_caption(info))


def _local_only(ev):
    """The evidence as it stands, measuring nothing more (what the widgets redraw from)."""
    out = copy.copy(ev)
    out.local = False
    return out


def curves(designs=_grid.DESIGNS, *, alive: int = 10_000, in_use: int = 0, fp: str = "none",
           work_ns: float = 0.0, ev=None, measure: bool = True):
    """The advisor's share of time switching at each of WORKS (with its interval) for
    `alive` coroutines, and memory at each of ALIVES up to the design's mapping limit, for
    `in_use` bytes and `fp`; `measure`=False uses only what was measured already. One row
    per (kind, design, x); the workload chosen (work_ns, alive) is in the `chosen` column.
    What the chosen workload reads is measured if missing, and a stack's cold switch at no
    work and at the most it is measured beside too (cold.COLD_WORK_CAP_NS); the other works
    read it at the nearest of those (cold._nearest), not one each."""
    ev = ev or evidence.load()
    if measure:
        if ev.local:
            cold.measure_cold(ev, _grid.cold_needs(
                designs, (0.0, float(work_ns), cold.COLD_WORK_CAP_NS), [alive], [in_use], ev))
        for d in designs:
            model.predict_full(d, inputs.workload(work=work_ns, alive=alive, stack_in_use=in_use,
                                                 fp=fp, stack_size=_grid.stack_size_for(d)), ev)
    ev = _local_only(ev)
    limit = _max_map_count()
    rows = []
    for d in designs:
        size = _grid.stack_size_for(d)
        for wn in sorted({*WORKS, *([float(work_ns)] if work_ns > 0 else [])}):
            w = inputs.workload(work=wn, alive=alive, stack_in_use=in_use, fp=fp, stack_size=size)
            p = model.predict_full(d, w, ev)["switch_share"]
            rows.append({"kind": "share", "design": d, "x": wn, "value": p["value"],
                         "low": p["low"], "high": p["high"], "chosen": wn == work_ns})
        for n in sorted({*ALIVES, int(alive)}):
            w = inputs.workload(work=work_ns, alive=n, stack_in_use=in_use, fp=fp, stack_size=size)
            try:
                m = memory.memory(ev, d, w)
            except LookupError:  # nothing measured for it: no line, said by its absence
                m = {"total": math.nan, "mappings_total": 0}
            rows.append({"kind": "memory", "design": d, "x": n, "value": m["total"],
                         "low": math.nan, "high": math.nan, "chosen": n == alive,
                         "mappings": m["mappings_total"],
                         "past_limit": m["mappings_total"] > limit})
    return pd.DataFrame(rows).assign(alive=alive, stack_in_use=in_use, fp=fp)


def _max_map_count() -> int:
    return procfs.max_map_count()


def share_finding(c) -> str:
    """What the share figure shows, one sentence from the advisor's curves: at the least
    and the most work drawn, the designs that switch the least and the most of the time,
    each with its 95% interval."""
    s = c[c.kind == "share"].dropna(subset=["value"])
    if s.empty:
        return "The advisor predicted no share here."

    def ends(x):
        at = s[s.x == x].sort_values("value")

        def said(r):
            return (f"{plots.percent_label(r.value)}% [{plots.percent_label(r.low)}, "
                    f"{plots.percent_label(r.high)}] ({r.design})")

        return (f"at {plots.ns_label(x)} of work between switches, switching takes "
                f"{said(at.iloc[0])} to {said(at.iloc[-1])} of the time")

    return f"For N = {int(c.alive.iloc[0]):,}, {ends(s.x.min())}; {ends(s.x.max())}."


def share_figure(c, g=None, info=None, save: bool = True):
    """Each design's share of time switching against the work between switches, with the
    advisor's 95% interval; the grid's measured shares (N and u nearest) on top;
    share_finding as the title."""
    s = c[c.kind == "share"]
    fig, ax = plt.subplots(figsize=(7, 5.2))
    findings.title(fig, share_finding(c), 80)
    for i, (d, x) in enumerate(s.groupby("design", sort=False)):
        ax.plot(x.x, 100 * x.value, color=design_colour(d), label=d)
        ax.fill_between(x.x, 100 * x.low, 100 * x.high, color=design_colour(d), alpha=0.25)
        if g is not None and len(g):
            n = min(g.alive.unique(), key=lambda a: abs(math.log(a / c.alive.iloc[0])))
            u = min(g.stack_in_use.unique(), key=lambda b: abs(b - c.stack_in_use.iloc[0]))
            m = g[(g.design == d) & (g.alive == n) & (g.stack_in_use == u)]
            if len(m):
                per = model.SWITCHES_PER_SUSPENSION * _grid.SUSPENSIONS / m.measured_ns
                sh, lo, hi = (per * m[c] for c in ("measured_switch_ns", "measured_switch_low",
                                                    "measured_switch_high"))
                at = m.warm_step_ns if "warm_step_ns" in m else m.step_ns
                ax.errorbar(at, 100 * sh, yerr=[100 * (sh - lo).clip(lower=0),
                                                       100 * (hi - sh).clip(lower=0)],
                            fmt="o", color=design_colour(d), mfc="none", capsize=2)
    chosen = s[s.chosen].x
    if len(chosen):
        ax.axvline(chosen.iloc[0], color="k", ls=":", lw=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, 100)
    ax.set_xlabel("work between switches, in one warm context (ns)")
    ax.set_ylabel("share of time switching (%)")
    r = c.iloc[0]
    ax.set_title(f"N = {r.alive:,} alive, {r.stack_in_use} B of stack in use, FP {r.fp}: "
                 "advisor (band: 95%), grid measured (o, 95%)", fontsize=9)
    ax.legend(fontsize="small")
    ax.grid(True, which="both", alpha=0.3)
    return _done(fig, "share", info, save)


def memory_finding(c) -> str:
    """What the memory figure shows, one sentence from the advisor's curves: at the N
    chosen, the designs that need the least and the most memory (within the mapping
    limit)."""
    m = c[(c.kind == "memory") & c.chosen & ~c.past_limit.astype(bool)].dropna(
        subset=["value"]).sort_values("value")
    n = int(c.alive.iloc[0])
    if m.empty:
        return f"No design's memory for N = {n:,} is known here."
    low, high = m.iloc[0], m.iloc[-1]
    return (f"For N = {n:,} coroutines, {low.design} needs the least memory, "
            f"{plots.bytes_label(low.value)}, and {high.design} the most, "
            f"{plots.bytes_label(high.value)}.")


def memory_figure(c, g=None, info=None, save: bool = True):
    """Each design's memory for N coroutines (resident + page tables), each line ending at
    the mapping limit (vm.max_map_count) where the design maps per coroutine; the grid's
    measured bytes on top; memory_finding as the title."""
    m = c[c.kind == "memory"]
    fig, ax = plt.subplots(figsize=(7, 5))
    findings.title(fig, memory_finding(c), 80)
    for i, (d, x) in enumerate(m.groupby("design", sort=False)):
        ok = x[~x.past_limit.astype(bool)]
        ax.plot(ok.x, ok.value, color=design_colour(d), label=d)
        if len(ok) < len(x):
            ax.plot(ok.x.iloc[-1:], ok.value.iloc[-1:], "x", color=design_colour(d), ms=9)
        if g is not None and len(g):
            u = min(g.stack_in_use.unique(), key=lambda b: abs(b - c.stack_in_use.iloc[0]))
            gm = g[(g.design == d) & (g.stack_in_use == u)].groupby("alive").measured_bytes.median()
            ax.plot(gm.index, gm.values, "o", color=design_colour(d), mfc="none")
    chosen = m[m.chosen].x
    if len(chosen):
        ax.axvline(chosen.iloc[0], color="k", ls=":", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("coroutines alive (N)")
    ax.set_ylabel("resident + page-table bytes")
    ax.set_title(f"{c.stack_in_use.iloc[0]} B in use: advisor (lines; x: the mapping limit, "
                 f"vm.max_map_count = {_max_map_count()}), grid measured (o)", fontsize=9)
    ax.legend(fontsize="small")
    ax.grid(True, which="both", alpha=0.3)
    return _done(fig, "memory", info, save)


def _done(fig, what, info, save):
    if save:
        return plots.finish(fig, f"{NOTEBOOK}-{what}", caption=plots.machine_caption(info))
    fig.text(0.01, -0.02, plots.machine_caption(info), fontsize=7, ha="left", va="top",
             wrap=True)
    fig.tight_layout()
    return fig


def controls(g=None, designs=_grid.DESIGNS, ev=None):
    """ipywidgets for W, N, u and FP that redraw the share and memory figures from the
    measurements already made (nothing is measured again). Returns the widget box; without
    ipywidgets (the `lab` extra), None and a line saying how to get them: the figures
    above stand without them."""
    try:
        import ipywidgets as widgets
    except ImportError:
        print("the controls need ipywidgets: pip install 'labkit[lab]' (the figures above "
              "are drawn without them)")
        return None

    ev = _local_only(ev or evidence.load())
    work = widgets.FloatLogSlider(value=20_000, base=10, min=0, max=6, description="W (ns)")
    alive = widgets.SelectionSlider(options=[1, 64, 1000, 10_000, 32_000, 100_000, 1_000_000],
                                    value=10_000, description="N alive")
    in_use = widgets.SelectionSlider(options=[0, 256, 1024, 4096, 16384], value=1024,
                                     description="u (bytes)")
    fp = widgets.Dropdown(options=list(inputs.FP_MODES), value="none", description="FP")
    out = widgets.Output()

    def redraw(*_):
        out.clear_output(wait=True)
        with out:
            c = curves(designs, alive=alive.value, in_use=in_use.value, fp=fp.value,
                       work_ns=work.value, ev=ev, measure=False)
            for f in (share_figure(c, g, save=False), memory_figure(c, g, save=False)):
                display(f)
                plt.close(f)

    for wdg in (work, alive, in_use, fp):
        wdg.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox([work, alive]), widgets.HBox([in_use, fp]), out])
