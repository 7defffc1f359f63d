"""The interactive explorer (notebooks/explore.ipynb): widgets that pick a kernel, a stack
size, a number of contexts, an optimisation level, and show the measurement and its plot.

    from labkit.lab.exploring.explore import Explorer
    ex = Explorer()          # display it in a notebook: ex
    ex.set(entry="asm", contexts=1024)
    ex.sweep("stack_size")   # progress bar, Stop button, every point kept
    ex.results               # every row measured so far, one per repeat

The timed runs happen in labkit's worker process, like every measurement. The explorer
waits for them in a thread of its own, so the notebook's kernel stays free: widgets keep
answering, Stop is heard, and a sweep's points appear one by one. Every point is added to
`results` and written to a CSV file as soon as it is measured, so stopping or an error
loses nothing. (The notebook index the start page shows is labkit.lab.running.notebooks.)
"""
from __future__ import annotations

import datetime
import html
import io
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import labkit
from labkit.core import results
from labkit.core.entries import COPIES_STACK
from labkit.core.plots import bytes_label, dots, log_axis, machine_caption
from labkit.core.results import atomic_path
from labkit.core.systems import SYSTEMS
from labkit.core.units import KiB, MiB
# ipywidgets (the lab extra) is imported where used: it may be absent.

STACK_SIZES = (4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 8 * MiB, 64 * MiB)
CONTEXTS = (2, 4, 16, 64, 256, 1024, 4096)
COLOUR_STEPS = (0, 64)
SWITCHES = (20_000, 100_000, 1_000_000)
EXTENSION = "extension"  # the build menu's name for the extension's own -O2 code
AXES = ("entry", "stack_size", "contexts", "build", "colour_step")
# Columns that name a point in the explorer's frames and tables.
POINT_COLUMNS = ("entry", "stack_size", "contexts", "build", "colour_step", "switches",
                 "repeats")
# What a summary row is grouped by: one row per measured point, in the order measured.
SUMMARY_KEYS = ("seq", "point", "entry", "stack_size", "contexts", "build", "colour_step")


def _bytes_label(n) -> str:
    return "none" if n is None else bytes_label(int(n))


@dataclass(frozen=True)
class Point:
    """One measurement the explorer can make. contexts == 2 is labkit.measure's ping-pong;
    more is labkit.measure_ring's symmetric ring. stack_size is None for kernels without
    a stack of their own; build is EXTENSION or one of labkit.builds()."""
    entry: str
    stack_size: int | None
    contexts: int
    build: str
    colour_step: int
    switches: int
    repeats: int

    @property
    def ring(self) -> bool:
        return self.contexts > 2

    def label(self) -> str:
        parts = [self.entry]
        if self.stack_size is not None:
            parts.append(_bytes_label(self.stack_size))
        parts.append(f"ring of {self.contexts}" if self.ring else "ping-pong")
        if self.ring and self.colour_step:
            parts.append(f"colour {self.colour_step} B")
        if self.build != EXTENSION:
            parts.append(self.build)
        return ", ".join(parts)


def _catalogue():
    return labkit.catalogue().set_index("entry")


def applicable(kernel: str, catalogue=None) -> dict[str, bool]:
    """Which settings mean something for this kernel: a stack size (stackful, and not a
    Python peer, whose stacks CPython manages), a ring (labkit's own stackful kernels
    with a stack per context: not copy_stack), a build (not the Python peers): what the
    kernel's system (labkit.core.systems) says applies to it."""
    cat = _catalogue() if catalogue is None else catalogue
    row = cat.loc[kernel]
    stackful = row["kind"] == "stackful"
    applies = SYSTEMS[row["system"]].applies
    return {
        "stack_size": stackful and "stack_size" in applies,
        "ring": stackful and "ring" in applies and kernel not in COPIES_STACK,
        "build": "build" in applies,
    }


def plan(entry: str, stack_size: int, contexts: int, build: str, colour_step: int,
         switches: int, repeats: int, catalogue=None) -> tuple[Point, list[str]]:
    """The point that will be measured for these widget values, and notes on the values
    that do not apply to this entry (and what is measured instead)."""
    ok = applicable(entry, catalogue)
    notes = []
    if not ok["stack_size"]:
        notes.append(f"{entry} has no stack of its own in labkit: stack size not used")
        stack_size = None
    if contexts > 2 and not ok["ring"]:
        notes.append(f"{entry} runs only the two-context ping-pong (rings are made of "
                     "labkit's stackful kernels): measuring 2 contexts")
        contexts = 2
    if contexts > 2 and build != EXTENSION:
        notes.append("rings run on the extension's own -O2 build: build not used")
        build = EXTENSION
    if not ok["build"] and build != EXTENSION:
        notes.append(f"{entry} runs in CPython: build not used")
        build = EXTENSION
    if contexts == 2 and colour_step:
        notes.append("stack colouring moves the tops of a ring's stacks: not used in a "
                     "ping-pong")
        colour_step = 0
    return Point(entry, stack_size, int(contexts), build, int(colour_step), int(switches),
                 int(repeats)), notes


def measure_point(p: Point):
    """Measure one point through labkit's public API (in the worker process): one row per
    repeat, as labkit.measure / labkit.measure_ring return them."""
    if p.ring:
        # About `switches` switches a repeat, whatever the ring's size: N + 1 a lap.
        laps = max(1, p.switches // (p.contexts + 1))
        return labkit.measure_ring(p.entry, contexts=p.contexts, stack_size=p.stack_size,
                                   colour_step=p.colour_step, laps=laps, repeats=p.repeats)
    return labkit.measure(p.entry, stack_size=p.stack_size, switches=p.switches,
                          repeats=p.repeats, build=None if p.build == EXTENSION else p.build)


def summarize_points(frame):
    """Median, quartiles and noise flag per explorer point, in the order measured."""
    if frame is None or frame.empty:
        return None
    return labkit.summarize(frame, by=list(SUMMARY_KEYS))


def _default_save_path() -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return results.root() / "reports" / "explore" / f"explore-{stamp}.csv"


@dataclass
class _Job:
    kind: str  # "measure" or "sweep"
    points: list
    axis: str | None = None


class Explorer:
    """Widgets to choose what to measure, a plot and a table of what was measured.

    background=True (the notebook): measurements run while the kernel stays free, one
    job at a time; a request made while one runs waits (only the latest). False: each
    request runs before the call returns (scripts, tests).
    auto: measure again whenever a widget changes.
    measure: the function that measures a Point (default measure_point).
    save_to: CSV file rewritten after every point (default reports/explore/explore-<time>.csv
    under the results root); None keeps results in memory only."""

    def __init__(self, *, quick: bool = False, background: bool = True, auto: bool = True,
                 measure: Callable | None = None, save_to: str | Path | None | bool = True,
                 entry: str = "asm_fpu", show_machine: bool = True):
        self.background = background
        self._measure = measure or measure_point
        self.save_to = (_default_save_path() if save_to is True
                        else None if save_to in (False, None) else Path(save_to))
        self.catalogue = _catalogue()
        cat = self.catalogue
        names = [k for k in cat.index if cat.loc[k, "available"]]
        if entry not in names:
            raise ValueError(f"entry must be one of the entries available here {names}; "
                             f"got {entry!r}")
        self._make_widgets(names, entry, quick, auto)
        self._wire()
        self._reset_state()
        self.ui = self._layout(show_machine)
        self._refresh_applicable()

    # ---- building the widgets ----

    def _make_widgets(self, names: list[str], entry: str, quick: bool, auto: bool):
        import ipywidgets as w

        cat = self.catalogue
        style = {"description_width": "110px"}
        wide = w.Layout(width="420px")
        self.entry = w.Dropdown(
            options=[(f"{k} ({cat.loc[k, 'system']}, {cat.loc[k, 'kind']})", k) for k in names],
            value=entry, description="entry", style=style, layout=wide)
        self.stack_size = w.SelectionSlider(
            options=[(_bytes_label(s), s) for s in STACK_SIZES], value=64 * KiB,
            description="stack size", continuous_update=False, style=style, layout=wide)
        self.contexts = w.SelectionSlider(
            options=list(CONTEXTS), value=2, description="contexts", continuous_update=False,
            style=style, layout=wide)
        self.build = w.Dropdown(
            options=[("extension (-O2)", EXTENSION)] + [(b, b) for b in labkit.builds()],
            value=EXTENSION, description="optimisation", style=style, layout=wide)
        self.colour_step = w.Dropdown(
            options=[(f"{c} B" if c else "none (tops aligned)", c) for c in COLOUR_STEPS],
            value=0, description="stack colouring", style=style, layout=wide)
        self.switches = w.Dropdown(
            options=[(f"{s:,}", s) for s in SWITCHES], value=SWITCHES[0 if quick else 1],
            description="switches/repeat", style=style, layout=wide)
        self.repeats = w.IntSlider(value=3 if quick else 7, min=3, max=30,
                                   description="repeats", continuous_update=False,
                                   style=style, layout=wide)
        self.auto = w.Checkbox(value=auto, description="measure on every change", indent=False)
        self.measure_button = w.Button(description="Measure", button_style="primary",
                                       icon="play")
        self.sweep_axis = w.Dropdown(
            options=[("entries", "entry"), ("stack sizes", "stack_size"),
                     ("contexts", "contexts"), ("optimisation levels", "build"),
                     ("stack colouring", "colour_step")],
            value="stack_size", description="sweep over", layout=w.Layout(width="230px"))
        self.sweep_button = w.Button(description="Sweep", icon="forward")
        self.stop_button = w.Button(description="Stop", icon="stop", button_style="danger",
                                    disabled=True)
        self.progress = w.IntProgress(value=0, min=0, max=1, description="idle",
                                      bar_style="", layout=w.Layout(width="420px"))
        self.notes = w.HTML()
        self.status = w.HTML("<i>nothing measured yet</i>")
        self.plot = w.Image(format="png", layout=w.Layout(max_width="640px"))
        self.table = w.HTML()

    def _wire(self):
        self._params = (self.entry, self.stack_size, self.contexts, self.build,
                        self.colour_step, self.switches, self.repeats)
        for widget in self._params:
            widget.observe(self.on_change, names="value")
        self.measure_button.on_click(self.on_measure_click)
        self.sweep_button.on_click(self.on_sweep_click)
        self.stop_button.on_click(self.on_stop_click)

    def _reset_state(self):
        self._frames: list = []
        self._seq = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._busy = False
        self._pending: _Job | None = None
        self.last_point: Point | None = None
        self._last_requested: Point | None = None
        self.last_error: str | None = None

    def _layout(self, show_machine: bool):
        import ipywidgets as w

        caption = ""
        if show_machine:
            caption = f"<small>{html.escape(machine_caption())}</small>"
        return w.VBox([
            w.HTML(f"<b>labkit explorer</b><br>{caption}"),
            w.HBox([w.VBox([self.entry, self.stack_size, self.contexts, self.colour_step]),
                    w.VBox([self.build, self.switches, self.repeats, self.auto])]),
            w.HBox([self.measure_button, self.sweep_axis, self.sweep_button, self.stop_button]),
            self.progress, self.notes, self.status,
            w.HBox([self.plot, self.table]),
        ])

    # ---- what is shown ----

    def _repr_mimebundle_(self, **kwargs):
        return self.ui._repr_mimebundle_(**kwargs)

    @property
    def results(self):
        """Every row measured by this explorer, one per repeat, with a `point` label, a
        `seq` number (one per measured point) and a `job` column (measure / sweep axis)."""
        with self._lock:
            frames = list(self._frames)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def summary(self, full: bool = False):
        """One row per measured point: median ns per switch, quartiles, ticks, noise flag
        (full=True: every column of labkit.summarize, spread and machine included)."""
        s = summarize_points(self.results)
        if s is None:
            return pd.DataFrame(columns=[*SUMMARY_KEYS, "median", "q1", "q3", "noisy"])
        if full:
            return s
        return s[[*SUMMARY_KEYS, "repeats", "median", "q1", "q3", "median_ticks", "noisy"]]

    # ---- the parameters ----

    def point(self) -> Point:
        """What would be measured now, from the widgets' values."""
        return self._plan()[0]

    def _plan(self):
        return plan(self.entry.value, self.stack_size.value, self.contexts.value,
                    self.build.value, self.colour_step.value, self.switches.value,
                    self.repeats.value, catalogue=self.catalogue)

    def _refresh_applicable(self):
        ok = applicable(self.entry.value, self.catalogue)
        ring = self.contexts.value > 2 and ok["ring"]
        self.stack_size.disabled = not ok["stack_size"]
        self.contexts.disabled = not ok["ring"]
        self.colour_step.disabled = not ring
        self.build.disabled = ring or not ok["build"]
        notes = self._plan()[1]
        self.notes.value = "".join(f"<div style='color:#666'>&#9432; {html.escape(n)}</div>"
                                   for n in notes)

    def set(self, **values):
        """Set several widgets at once (entry=..., stack_size=..., contexts=..., build=...,
        colour_step=..., switches=..., repeats=...); measures once after, if auto."""
        unknown = set(values) - set(POINT_COLUMNS)
        if unknown:
            raise ValueError(f"set() takes {', '.join(POINT_COLUMNS)}; got {sorted(unknown)}")
        auto, self.auto.value = self.auto.value, False
        try:
            for name, value in values.items():
                getattr(self, name).value = value
        finally:
            self.auto.value = auto
        if auto:
            self.measure()

    # ---- the handlers ----

    def on_change(self, change=None):
        """A widget changed: update which settings apply, and measure again if auto."""
        self._refresh_applicable()
        # A setting that does not apply to this kernel leaves the point as it was.
        if self.auto.value and self.point() != self._last_requested:
            self.measure()

    def on_measure_click(self, _button=None):
        self.measure()

    def on_sweep_click(self, _button=None):
        self.sweep(self.sweep_axis.value)

    def on_stop_click(self, _button=None):
        self.stop()

    # ---- requests ----

    def measure(self):
        """Measure the widgets' current point."""
        p = self.point()
        self._last_requested = p
        self._submit(_Job("measure", [p]))

    def sweep_points(self, axis: str) -> list[Point]:
        """The points of a sweep over one axis, the other settings as the widgets say."""
        if axis not in AXES:
            raise ValueError(f"axis must be one of {AXES}; got {axis!r}")
        values = {
            "entry": [v for _, v in self.entry.options],
            "stack_size": list(STACK_SIZES),
            "contexts": list(CONTEXTS),
            "build": [v for _, v in self.build.options],
            "colour_step": list(COLOUR_STEPS),
        }[axis]
        base = {"entry": self.entry.value, "stack_size": self.stack_size.value,
                "contexts": self.contexts.value, "build": self.build.value,
                "colour_step": self.colour_step.value, "switches": self.switches.value,
                "repeats": self.repeats.value}
        here = self.point()
        points = []
        for v in values:
            p, _ = plan(**{**base, axis: v}, catalogue=self.catalogue)
            # A value this kernel cannot use (a stack size for a stackless kernel) would
            # only measure the same point again; a kernel that cannot make a ring would
            # put a ping-pong among the rings.
            if axis == "entry":
                keep = p.contexts == here.contexts
            else:
                keep = getattr(p, axis) == v
            if keep and p not in points:
                points.append(p)
        return points

    def sweep(self, axis: str):
        """Measure every value of one axis (kernel, stack_size, contexts, build,
        colour_step) with the other settings fixed; progress shows, Stop ends it after the
        current point, and every point measured is kept."""
        points = self.sweep_points(axis)
        if len(points) < 2:
            self.status.value = (f"<b style='color:#b00'>nothing to sweep:</b> "
                                 f"{html.escape(self.entry.value)} takes only one value of "
                                 f"{html.escape(axis)} here")
            return
        self._submit(_Job("sweep", points, axis))

    def stop(self):
        """Stop after the point being measured (its result is kept), and drop any request
        waiting its turn."""
        with self._lock:
            self._pending = None
            if self._busy:
                self._stop.set()
                self.status.value += " <b>&mdash; stopping after this point</b>"

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the running and waiting requests to finish; False on timeout."""
        return self._idle.wait(timeout)

    def _submit(self, job: _Job):
        if not self.background:
            self._stop.clear()
            self._run(job)
            return
        with self._lock:
            if self._busy:
                self._pending = job  # latest wins: a slider dragged over 5 values measures 2
                return
            self._busy = True
            self._idle.clear()
            self._stop.clear()
        threading.Thread(target=self._loop, args=(job,), name="labkit-explorer",
                         daemon=True).start()

    def _loop(self, job: _Job):
        try:
            while True:
                try:
                    self._run(job)
                except Exception as exc:
                    # Nobody would see a traceback from this thread: show it, and go on.
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    self.status.value = (f"<b style='color:#b00'>explorer error</b> "
                                         f"{html.escape(self.last_error)}")
                with self._lock:
                    # Idle in the same step that finds nothing waiting: a request made
                    # meanwhile either is taken here or starts a thread of its own.
                    job, self._pending = self._pending, None
                    if job is None:
                        self._busy = False
                        self._idle.set()
                        return
                    self._stop.clear()
        except BaseException:
            with self._lock:
                self._busy = False
                self._pending = None
                self._idle.set()
            raise

    # ---- running ----

    def _run(self, job: _Job):
        n = len(job.points)
        self.progress.max, self.progress.value = n, 0
        self.progress.bar_style = "info"
        self.progress.description = f"0 / {n}"
        self.stop_button.disabled = False
        self.last_error = None
        done = []
        try:
            for i, p in enumerate(job.points):
                if self._stop.is_set():
                    break
                self.status.value = (f"measuring {i + 1} of {n}: <b>{html.escape(p.label())}"
                                     f"</b> &hellip;")
                try:
                    df = self._measure(p)
                except KeyboardInterrupt:
                    # Ctrl-C in a synchronous run: keep what was measured, like sweep().
                    self._stop.set()
                    break
                except Exception as exc:
                    self.last_error = f"{p.label()}: {type(exc).__name__}: {exc}"
                    self.status.value = (f"<b style='color:#b00'>{html.escape(type(exc).__name__)}"
                                         f"</b> for {html.escape(p.label())}: "
                                         f"<pre style='white-space:pre-wrap'>"
                                         f"{html.escape(str(exc))}</pre>")
                    if job.kind == "measure":
                        break
                    continue
                df = self._tag(df, p, job)
                with self._lock:
                    self._frames.append(df)
                done.append(df)
                self.last_point = p
                self._save()
                self.progress.value = i + 1
                self.progress.description = f"{i + 1} / {n}"
                self._show(job, done)
        finally:
            self.stop_button.disabled = True
            stopped = self._stop.is_set() and len(done) < n
            self.progress.bar_style = ("warning" if stopped or self.last_error
                                       else "success")
            if stopped:
                self.status.value = (f"<b>stopped</b>: kept {len(done)} of {n} points"
                                     + self._saved_note())
            elif done:
                failed = ("" if not self.last_error else
                          f"<br><b style='color:#b00'>a point failed:</b> "
                          f"{html.escape(self.last_error)}")
                self.status.value = self._result_line(done[-1]) + failed + self._saved_note()

    def _tag(self, df, p: Point, job: _Job):
        self._seq += 1
        df = df.copy()
        df.insert(0, "point", p.label())
        df.insert(1, "seq", self._seq)
        df.insert(2, "job", job.kind if job.axis is None else f"sweep {job.axis}")
        # The API's own columns win where it has them (stack_size rounded to pages, the
        # build a peer really ran with); the explorer fills in the rest.
        for k, v in asdict(p).items():
            if k not in df.columns:
                df[k] = v
        df["switches_requested"] = p.switches
        return df

    def _save(self):
        if self.save_to is None:
            return

        frame = self.results
        with atomic_path(self.save_to) as tmp:
            frame.to_csv(tmp, index=False)

    def _saved_note(self) -> str:
        if self.save_to is None:
            return ""
        return f"<br><small>saved to {html.escape(str(self.save_to))}</small>"

    @staticmethod
    def _result_line(df) -> str:
        s = labkit.summarize(df).iloc[0]
        noisy = (" <b style='color:#b60'>noisy</b> (std &ge; 10% of the mean: more repeats?)"
                 if s["noisy"] else "")
        return (f"<b>{html.escape(df['point'].iloc[0])}</b>: "
                f"<b style='font-size:130%'>{s['median']:.2f} ns</b> per switch "
                f"(quartiles {s['q1']:.2f} &ndash; {s['q3']:.2f}), "
                f"{s.get('median_ticks', float('nan')):.1f} ticks, "
                f"{int(s['repeats'])} repeats{noisy}")

    def _show(self, job: _Job, done: list):
        if job.kind == "sweep":
            frame = pd.concat(done, ignore_index=True)
            png = render_sweep(summarize_points(frame), job.axis)
            table = summarize_points(frame)
        else:
            hist = summarize_points(self.results)
            png = render_history(hist)
            table = hist.tail(8)
        self.plot.value = png
        self.table.value = _table_html(table)


def _table_html(summary) -> str:
    if summary is None or summary.empty:
        return ""
    t = summary[["point", "median", "q1", "q3", "median_ticks", "noisy"]].copy()
    t.columns = ["point", "median ns", "q1", "q3", "ticks", "noisy"]
    return t.to_html(index=False, float_format=lambda v: f"{v:.2f}", border=0,
                     classes="labkit-explore")


def _quartile_err(s):
    med = s["median"].to_numpy(float)
    return np.vstack([np.clip(med - s["q1"].to_numpy(float), 0, None),
                      np.clip(s["q3"].to_numpy(float) - med, 0, None)])


def _png(fig) -> bytes:
    # A Figure on the Agg canvas, no pyplot: safe to draw from the explorer's thread.
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return buf.getvalue()


def _spans_decades(s) -> bool:
    return bool(s["median"].gt(0).all() and s["median"].max() / s["median"].min() > 20)


def render_history(summary, last: int = 12) -> bytes:
    """The last points measured, median ns per switch with quartile bars; newest in orange."""
    fig = Figure(figsize=(6.4, 0.5 + 0.32 * min(last, len(summary))))
    ax = fig.add_subplot()
    s = summary.tail(last).reset_index(drop=True)
    y = range(len(s))
    colours = ["#1f77b4"] * (len(s) - 1) + ["#ff7f0e"]
    if _spans_decades(s):
        for i, c in zip(y, colours):
            dots(ax, [i], s["median"].iloc[i:i + 1], s["q1"].iloc[i:i + 1],
                       s["q3"].iloc[i:i + 1], horizontal=True, color=c)
    else:
        ax.barh(list(y), s["median"].to_numpy(float), color=colours,
                xerr=_quartile_err(s), capsize=3)
    ax.set_yticks(list(y), s["point"], fontsize=8)
    ax.invert_yaxis()
    if _spans_decades(s):
        log_axis(ax, "x")
    ax.set_xlabel("ns per switch (median, quartile bars)")
    ax.set_title("measured so far (newest in orange)", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return _png(fig)


def render_sweep(summary, axis: str) -> bytes:
    """A sweep: median ns per switch with quartile bars against the swept value."""
    fig = Figure(figsize=(6.4, 3.6))
    ax = fig.add_subplot()
    s = summary
    err = _quartile_err(s)
    if axis in ("stack_size", "contexts"):
        ax.errorbar(s[axis].to_numpy(float), s["median"].to_numpy(float), yerr=err,
                    marker="o", capsize=3)
        ax.set_xscale("log", base=2)
        ticks = [int(v) for v in s[axis]]
        ax.set_xticks(ticks, [_bytes_label(v) if axis == "stack_size" else str(v)
                              for v in ticks], rotation=45)
    else:
        labels = [str(v) for v in s[axis]]
        if _spans_decades(s):
            dots(ax, range(len(s)), s["median"], s["q1"], s["q3"])
        else:
            ax.bar(range(len(s)), s["median"].to_numpy(float), yerr=err, capsize=3)
        ax.set_xticks(range(len(s)), labels, rotation=45, ha="right", fontsize=8)
    if _spans_decades(s):
        log_axis(ax, "y")
    ax.set_xlabel({"stack_size": "stack size", "colour_step": "stack colouring step (bytes)",
                   "build": "optimisation level"}.get(axis, axis))
    ax.set_ylabel("ns per switch")
    first = s.iloc[0]
    fixed = [c for c in ("entry", "stack_size", "contexts", "build") if c != axis]
    ax.set_title("sweep: " + ", ".join(
        f"{c}={_bytes_label(first[c]) if c == 'stack_size' else first[c]}" for c in fixed),
        fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    return _png(fig)
