"""The workshop's measurements and check cells (notebooks/workshop/).

Each exercise asks the learner to predict a number (or pick an explanation) before
measuring it. The tolerance is written in the exercise before anything is measured. The
check compares the prediction with a fresh measurement from this laptop and says whether
they match. No answer is stored here: the checks take it from the measurement, with the
rules written in the exercises, so different machines can give different answers.

    m = workshop.ratio("asm_fxsave", "asm_fpu", fp_control="same", quick=quick)
    workshop.check_ratio(my_prediction, m, factor=2)
"""
from __future__ import annotations

import html
import io
import math
import os
import sys
from dataclasses import dataclass, field

import pandas as pd

import labkit
from labkit.core import stats
from labkit.core.machine import machine_info
from labkit.core.plots import bytes_label
from labkit.errors import ParameterError
from labkit.experiments import frequency
from labkit.lab import experiment
from labkit.lab.judging import verdicts
from labkit.lab.room import predictions as room_predictions
from labkit.lab.sharing.bundle import read_bundle


@dataclass
class Measured:
    """A ratio measured on this machine: median of a over median of b, and its spread
    (the bootstrap BCa 95% interval of labkit.lab.judging.verdicts.ratio_with_spread)."""
    what: str
    value: float
    low: float
    high: float
    details: object = None  # the summary table the ratio comes from
    notes: list = field(default_factory=list)
    frame: object = None  # every row measured, one per repeat
    ratios: dict = field(default_factory=dict)  # named (ratio, low, high), where several
    where: str = "measured here"  # or "recorded on" another machine, from a bundle

    def __str__(self):
        return f"{self.what} = {self.value:.3g} (spread {self.low:.3g} .. {self.high:.3g})"

    def _repr_html_(self):
        table = "" if self.details is None else self.details.to_html(
            index=False, float_format=lambda v: f"{v:.3g}", border=0)
        notes = "".join(f"<p><i>{html.escape(n)}</i></p>" for n in self.notes)
        return (f"<p>{html.escape(self.where)}: "
                f"<b>{html.escape(self.what)} = {self.value:.3g}</b> "
                f"(spread {self.low:.3g} &ndash; {self.high:.3g})</p>{notes}{table}")


@dataclass
class Check:
    """The verdict of a check cell: ok is True (matches), False (does not) or None (no
    prediction yet, or the measurement cannot decide)."""
    ok: bool | None
    message: str

    def __str__(self):
        mark = {True: "MATCH", False: "NO MATCH", None: "NOT CHECKED"}[self.ok]
        return f"{mark}: {self.message}"

    def __bool__(self):
        return bool(self.ok)

    def _repr_html_(self):
        colour, mark = {True: ("#1a7f37", "&#10004; match"),
                        False: ("#b00020", "&#10008; no match"),
                        None: ("#8a6d00", "&#9888; not checked")}[self.ok]
        return (f"<div style='border-left:6px solid {colour};padding:6px 10px;"
                f"margin:4px 0'><b style='color:{colour}'>{mark}</b><br>"
                f"{html.escape(self.message)}</div>")


# ---- measuring ----

def _sizes(quick: bool, switches: int | None, repeats: int | None, rounds: int | None):
    return (switches or (50_000 if quick else 500_000), repeats or (3 if quick else 5),
            rounds or (1 if quick else 3))


def measure_kernels(kernels, *, quick: bool = False, switches: int | None = None,
                    repeats: int | None = None, rounds: int | None = None, **kwargs):
    """labkit.measure for each kernel, interleaved over `rounds` rounds (a slow drift of
    the machine then hits every kernel alike); one row per repeat."""
    switches, repeats, rounds = _sizes(quick, switches, repeats, rounds)
    frames = []
    for r in range(rounds):
        for k in kernels:
            frames.append(labkit.measure(k, switches=switches, repeats=repeats, **kwargs)
                          .assign(round=r))
    return pd.concat(frames, ignore_index=True)


def _summary(df, by):
    s = labkit.summarize(df, by=by)
    return s[[*([by] if isinstance(by, str) else by), "median", "q1", "q3", "repeats",
              "noisy"]]


def recorded(bundle, kernels, *, fp_control: str = "as-is", stack_size: int = 64 << 10):
    """The ping-pong rows of `kernels` in another machine's bundle (`labkit bundle`), taken
    from the one notebook and build that ran them all under the same conditions: a laptop
    that cannot run the kernels works on a recorded machine's numbers instead."""
    df = read_bundle(bundle)["measurements"]
    df = df[df.entry.isin(kernels)]
    # A small bundle may lack a condition's column; then it did not vary there.
    for column, value in (("pattern", "pingpong"), ("stack_size", stack_size),
                          ("fp_control", fp_control)):
        if column in df:
            df = df[df[column] == value]
    keys = [k for k in ("notebook", "build") if k in df]
    best, rows = None, 0
    for key, g in df.groupby(keys):
        counts = g.entry.value_counts()
        if set(kernels) <= set(counts.index) and counts.min() > rows:
            best, rows = key, counts.min()
    if best is None:
        raise ParameterError("bundle", f"{bundle} holds no ping-pong of {', '.join(kernels)} "
                             f"together (fp_control {fp_control!r}, stack {stack_size} bytes)")
    chosen = (df[keys] == pd.Series(dict(zip(keys, best)))).all(axis=1)
    return df[chosen].assign(round=0)


def _recorded_note(bundle) -> str:
    m = read_bundle(bundle)["machine"]
    return (f"recorded, not measured here: {m.get('cpu_model')} ({m.get('arch')}), "
            f"from the bundle {bundle}")


def _lacks(bundle, what: str, notebook: str) -> ParameterError:
    """A bundle without what an exercise reads: which data, and what makes it."""
    return ParameterError("bundle", f"{bundle} holds no {what}: notebook {notebook} "
                          f"measures it in a full run (`make reproduce ONLY={notebook}`, "
                          f"then `labkit bundle -o <name>` on a machine that runs the "
                          f"kernels; a quick run may leave it out)")


def _said_recorded(m: Measured, bundle, noisy: bool) -> Measured:
    """Mark a Measured read from a bundle: whose machine, and its noise as recorded."""
    m.where = "recorded on another machine"
    m.notes.insert(0, _recorded_note(bundle))
    if noisy:
        m.notes.append("noisy: on that machine the standard deviation was 10% of the "
                       "mean or more")
    return m


def ratio(a: str, b: str, *, quick: bool = False, bundle=None, **kwargs) -> Measured:
    """Measure kernels a and b here (interleaved) and return median(a) / median(b); with a
    `bundle`, read them from that machine's recorded measurements instead."""
    if bundle is None:
        df = measure_kernels([a, b], quick=quick, **kwargs)
    else:
        df = recorded(bundle, [a, b], **kwargs)
    r, lo, hi = verdicts.ratio_with_spread(df[df.entry == a].ns_per_switch,
                                           df[df.entry == b].ns_per_switch)
    s = _summary(df, "entry").rename(columns={"median": "median ns"})
    m = Measured(f"{a} / {b}", r, lo, hi, s)
    m.frame = df
    if bundle is not None:
        _said_recorded(m, bundle, s.noisy.any())
    elif s.noisy.any():
        m.notes.append("noisy: the standard deviation is 10% of the mean or more; close "
                       "other programs, plug the laptop in, and run the cell again")
    return m


def _recorded_handoff(bundle, mode: str, kernel: str) -> pd.DataFrame:
    """`mode`'s hand-offs on one CPU from a bundle's notebook 05, and `kernel`'s ping-pong
    from the notebook that ran it most (recorded); the notes say they were not interleaved."""
    notebook = experiment.KERNEL_SWITCHES.name
    df = read_bundle(bundle)["measurements"]
    if {"notebook", "mode", "placement"} <= set(df.columns):
        df = df[(df.notebook == notebook) & (df["mode"] == mode) &
                (df.placement == "same-cpu")]
    else:
        df = df.iloc[:0]
    if df.ns_per_switch.dropna().empty:
        raise _lacks(bundle, f"{mode} hand-offs between two OS threads on one CPU", notebook)
    return pd.concat([df.assign(entry=mode, round=0), recorded(bundle, [kernel])],
                     ignore_index=True)


def thread_vs_coroutine(*, quick: bool = False, kernel: str = "asm_fpu",
                        mode: str = "thread_futex", cpu: int = 0, bundle=None) -> Measured:
    """One hand-off between two OS threads on one CPU (a real context switch, through
    the scheduler) over one coroutine switch with `kernel`, both pinned to `cpu`; with a
    `bundle`, both read from that machine's recorded measurements instead."""
    if bundle is None:
        switches, repeats, rounds = _sizes(quick, None, None, None)
        frames = []
        for r in range(rounds):
            frames.append(labkit.measure_handoff(mode, cpus=(cpu, cpu),
                                                 switches=switches // 25, repeats=repeats)
                          .assign(entry=mode, round=r))
            frames.append(labkit.measure(kernel, switches=switches, repeats=repeats, cpu=cpu)
                          .assign(round=r))
        df = pd.concat(frames, ignore_index=True)
    else:
        df = _recorded_handoff(bundle, mode, kernel)
    r, lo, hi = verdicts.ratio_with_spread(df[df.entry == mode].ns_per_switch,
                                           df[df.entry == kernel].ns_per_switch)
    s = _summary(df, "entry").rename(columns={"median": "median ns"})
    m = Measured(f"{mode} (one CPU) / {kernel}", r, lo, hi, s)
    m.frame = df
    if bundle is not None:
        where = df.groupby("entry").notebook.first()
        m.notes.append(f"{mode} from notebook {where[mode]}, {kernel} from notebook "
                       f"{where[kernel]}: recorded apart, not interleaved")
        _said_recorded(m, bundle, s.noisy.any())
    return m


# The stack-ring exercise (notebooks/workshop/04_stack_ring.ipynb): its rule, written there
# before measuring, and here in code. A ratio of at least BOUND counts as a slowdown.
BOUND = 1.5
EXPLANATIONS = {
    "A": "the switch itself does more work with a bigger stack (it copies or touches more "
         "of it)",
    "B": "cache-set aliasing: with power-of-two stacks every top sits at the same offset, so "
         "the hot frames compete for the same cache sets",
    "C": "address translation: every top is on its own page, far from the others, so the "
         "TLB cannot hold them all and each miss walks page tables that are spread out too",
    "D": f"the big stacks cost less than {BOUND:g} times the small ones on this machine at "
         f"this size of ring (no slowdown, by the rule)",
}


def _measured_ring(quick: bool, contexts: int, kernel: str, small: int,
                   big: int) -> pd.DataFrame:
    switches = 100_000 if quick else 400_000
    repeats = 3 if quick else 7
    laps = max(1, switches // (contexts + 1))
    rows = []
    for size in (small, big):
        for step in (0, 64):
            rows.append(labkit.measure_ring(kernel, contexts=contexts, stack_size=size,
                                            colour_step=step, laps=laps, repeats=repeats)
                        .assign(test=f"ring of {contexts}", tops="coloured" if step else
                                "aligned"))
        rows.append(labkit.measure(kernel, stack_size=size, switches=switches,
                                   repeats=repeats).assign(test="ping-pong", tops="-"))
    return pd.concat(rows, ignore_index=True)


def _recorded_ring(bundle, contexts: int, kernel: str, small: int,
                   big: int) -> pd.DataFrame:
    """The same six measurements from a bundle's notebook 01 (its rings and ping-pongs)."""
    notebook = experiment.STACK_SIZE.name
    df = read_bundle(bundle)["measurements"]
    if not {"notebook", "pattern", "contexts", "colour_step", "stack_size"} <= set(df.columns):
        raise _lacks(bundle, f"{kernel} rings of {contexts}", notebook)
    df = df[(df.notebook == notebook) & (df.entry == kernel) & df.stack_size.isin([small, big])]
    ring = df[(df.pattern == "ring") & (df.contexts == contexts)]
    ring = ring.assign(test=f"ring of {contexts}",
                       tops=ring.colour_step.gt(0).map({True: "coloured", False: "aligned"}))
    pingpong = df[df.pattern == "pingpong"].assign(test="ping-pong", tops="-")
    df = pd.concat([ring, pingpong], ignore_index=True)
    for test, tops in ((f"ring of {contexts}", "aligned"), (f"ring of {contexts}", "coloured"),
                       ("ping-pong", "-")):
        for size in (small, big):
            if df[(df.test == test) & (df.tops == tops) & (df.stack_size == size)].empty:
                tops_said = "" if tops == "-" else f", tops {tops}"
                raise _lacks(bundle, f"{kernel} {test} with {bytes_label(size)} "
                             f"stacks{tops_said}", notebook)
    return df


def stack_ring(*, quick: bool = False, contexts: int = 4096, kernel: str = "asm_fpu",
               small: int = 4096, big: int = 8 << 20, bundle=None) -> Measured:
    """The measurements that tell the four explanations apart: rings of `contexts` with
    small and big stacks, tops aligned and coloured (64-byte steps), and the two-context
    ping-pong with the same two stack sizes (with a `bundle`, that machine's recorded
    ones). The Measured value is the ring's slowdown (big / small, tops aligned);
    `ratios` holds the three ratios the rule uses."""
    df = (_measured_ring(quick, contexts, kernel, small, big) if bundle is None else
          _recorded_ring(bundle, contexts, kernel, small, big))
    df["stack"] = df.stack_size.map(bytes_label)

    def r(test, tops):
        sel = df[(df.test == test) & (df.tops == tops)]
        return verdicts.ratio_with_spread(sel[sel.stack_size == big].ns_per_switch,
                                          sel[sel.stack_size == small].ns_per_switch)

    ratios = {"ring, tops aligned": r(f"ring of {contexts}", "aligned"),
              "ring, tops coloured": r(f"ring of {contexts}", "coloured"),
              "ping-pong": r("ping-pong", "-")}
    s = labkit.summarize(df, by=["test", "tops", "stack"])[
        ["test", "tops", "stack", "median", "q1", "q3", "noisy"]].rename(
        columns={"median": "median ns"})
    v, lo, hi = ratios["ring, tops aligned"]
    m = Measured(f"ring of {contexts}, {bytes_label(big)} / {bytes_label(small)} stacks",
                 v, lo, hi, s)
    m.ratios = ratios
    m.frame = df
    m.notes.append("big / small, each: " + "; ".join(
        f"{k} {x:.2f} ({a:.2f} .. {b:.2f})" for k, (x, a, b) in ratios.items()))
    if bundle is not None:
        _said_recorded(m, bundle, s.noisy.any())
    return m


def supported_explanation(m: Measured) -> tuple[str, bool]:
    """Which explanation the stack-ring measurements support, by the exercise's rule, and
    whether a spread straddles the bound (then the data cannot decide firmly):
    the aligned ring slows down by less than BOUND: D; else the ping-pong slows down too: A;
    else colouring the tops removes the slowdown: B; else C."""
    ring, coloured, pingpong = (m.ratios[k] for k in
                                ("ring, tops aligned", "ring, tops coloured", "ping-pong"))

    def straddles(x):
        return x[1] < BOUND <= x[2]

    if ring[0] < BOUND:
        return "D", straddles(ring)
    if pingpong[0] >= BOUND:
        return "A", straddles(ring) or straddles(pingpong)
    if coloured[0] < BOUND:
        return "B", straddles(ring) or straddles(pingpong) or straddles(coloured)
    return "C", straddles(ring) or straddles(pingpong) or straddles(coloured)


# The share of the time below which switching stops mattering, in exercise 6.
SHARE = 0.05


def _recorded_probe(bundle, probe_cycles: int, stack_size: int):
    """Notebook 08's independent-work runs at `probe_cycles` from a bundle's parts (64
    coroutines, one task per resumption), and that machine's TSC in GHz."""
    notebook = experiment.SWITCH_FREQUENCY
    got = read_bundle(bundle)
    parts = got["parts"]
    need = {"data", "work_cycles", "stack_size", "batch", "coroutines", "total_ns"}
    if parts is None or not need <= set(parts.columns):
        parts = pd.DataFrame(columns=sorted(need))
    probe = parts[(parts.data == notebook.part("independent")) &
                  (parts.work_cycles == probe_cycles) & (parts.stack_size == stack_size) &
                  (parts.batch == 1) & (parts.coroutines == 64)]
    if probe.empty:
        raise _lacks(bundle, f"scheduler runs with independent work at {probe_cycles} ticks "
                     f"and {bytes_label(stack_size)} stacks", notebook.name)
    return probe, float(got["machine"]["tsc_ghz"])


def work_for_share(*, quick: bool = False, share: float = SHARE, probe_cycles: int = 100,
                   stack_size: int = 64 << 10, bundle=None) -> Measured:
    """The work per task, in cycle-counter ticks, at which switching is `share` of the
    time: notebook 08's scheduler (asm_fpu, 64 coroutines, one task per resumption,
    independent work, so no switch hides behind it) measured at `probe_cycles`; its
    switching time per task s gives W = s (1 - share) / share. The notes give the share
    measured again at that W. With a `bundle`, the probe is that machine's recorded
    notebook 08 runs, and the share at W is left to a machine that measures."""
    if not 0 < share < 1:
        raise ValueError(f"share must be between 0 and 1; got {share!r}")
    repeats = 5 if quick else 15
    if bundle is None:
        ghz = machine_info()["tsc_ghz"]
        probe = frequency.measure(probe_cycles, stack_size=stack_size, repeats=repeats,
                                  work="independent")
    else:
        probe, ghz = _recorded_probe(bundle, probe_cycles, stack_size)
    s = stats.net(probe.total_ns, probe.work_only_ns, per=float(probe.tasks.iloc[0]))
    scale = (1 - share) / share * ghz  # ns of switching per task -> ticks of work
    value, low, high = (s[k] * scale for k in ("median", "low", "high"))
    rows = [{"work per task (ticks)": probe_cycles, "switching per task (ns)":
             stats.net_text(s), "share switching": stats.net_text(
                 stats.share(probe.total_ns, probe.work_only_ns), "%", scale=100)}]
    m = Measured(f"ticks of work per task for {share:.0%} switching", value, low, high)
    m.frame = probe
    m.ratios = {"switching ns per task": (s["median"], s["low"], s["high"])}
    if value >= 1 and bundle is None:
        at = frequency.measure(round(value), stack_size=stack_size, repeats=repeats,
                               work="independent")
        got = stats.share(at.total_ns, at.work_only_ns)
        rows.append({"work per task (ticks)": round(value), "switching per task (ns)":
                     stats.net_text(stats.net(at.total_ns, at.work_only_ns,
                                              per=float(at.tasks.iloc[0]))),
                     "share switching": stats.net_text(got, "%", scale=100)})
        m.frame = pd.concat([probe, at], ignore_index=True)
    m.details = pd.DataFrame(rows)
    m.notes.append(f"W = {(1 - share) / share:.3g} x the switching per task at {probe_cycles} "
                   f"ticks, in ticks of the cycle counter ({ghz:.2f} GHz)"
                   + ("; the second row measures the share at that W" if len(rows) > 1 else ""))
    if bundle is not None:
        m.notes.append("the share at that W is not in the bundle: only a machine that "
                       "measures runs the scheduler there")
        _said_recorded(m, bundle, False)
    return m


# The designs exercise 7 chooses among: one of each kind the advisor knows.
ADVISOR_DESIGNS = {
    "asm_fpu": "labkit's switch, one stack per coroutine",
    "ucontext": "glibc's swapcontext, a system call on every switch",
    "copy_stack": "one shared run stack, the used part copied out and back",
    "thread_futex": "one OS thread per connection, a futex hand-off",
}


def advisor_first(work="20us", suspensions=2, connections=10_000, *, stack_in_use="1KiB",
                  fp="none", designs=ADVISOR_DESIGNS, quick: bool = False, bundle=None):
    """The advisor's first design for a workload, among `designs`, and whether the data
    cannot decide it (the second design's interval reaches the first's). With a `bundle`
    the advice reads that machine's measurements. Returns (design, uncertain, advice)."""
    # The advisor's progress lines go to a buffer: the exercise shows its table instead.
    advice = labkit.advise(work, suspensions, stack_in_use=stack_in_use, fp=fp,
                           connections=connections, designs=list(designs), quick=quick,
                           bundle=bundle, status=io.StringIO())
    ranked = sorted(advice.predictions, key=lambda p: p["rank"])
    first = ranked[0]
    uncertain = False
    if len(ranked) > 1 and not any(h.blocking for h in ranked[1]["hazards"]):
        a, b = first["ns_per_request"], ranked[1]["ns_per_request"]
        if math.isfinite(a["high"]) and math.isfinite(b["low"]):
            uncertain = bool(b["low"] <= a["high"])
    return first["design"], uncertain, advice


# ---- checking ----

def _as_number(prediction):
    if isinstance(prediction, bool) or not isinstance(prediction, (int, float)):
        return None
    x = float(prediction)
    return x if math.isfinite(x) and x > 0 else None


def check_ratio(prediction, measured: Measured, *, factor: float) -> Check:
    """Does the prediction match the measured ratio within a factor of `factor`? The whole
    spread counts: a prediction matches if it is within `factor` of some value between the
    spread's ends (low / factor <= prediction <= high * factor)."""
    if not factor > 1:
        raise ValueError(f"factor must be greater than 1; got {factor!r}")
    if prediction is None:
        return Check(None, "No prediction yet: write your number in the prediction cell, run "
                           "it, then run this cell again. (Predict before you look at the "
                           "measurement!)")
    x = _as_number(prediction)
    if x is None:
        return Check(None, f"The prediction must be a positive number, the ratio "
                           f"{measured.what} (3 means three times as long); got "
                           f"{prediction!r}")
    if not all(math.isfinite(v) for v in (measured.value, measured.low, measured.high)):
        return Check(None, f"The measurement of {measured.what} is too noisy to check a "
                           f"prediction against (its spread reaches zero or below): close "
                           f"other programs and run the measuring cell again.")
    lo, hi = min(measured.low, measured.value), max(measured.high, measured.value)
    measured_text = (f"measured {measured.what} = {measured.value:.3g} "
                     f"(spread {measured.low:.3g} .. {measured.high:.3g})")
    if lo / factor <= x <= hi * factor:
        return Check(True, f"Your prediction {x:g} matches: {measured_text}, and the "
                           f"tolerance is a factor of {factor:g}.")
    off = x / measured.value
    way = "too high" if off > 1 else "too low"
    off = off if off > 1 else 1 / off
    return Check(False, f"Your prediction {x:g} is {way} by a factor of {off:.2g}: "
                        f"{measured_text}, and the tolerance is a factor of {factor:g}. "
                        f"What did your reasoning leave out?")


def check_choice(choice, supported: str, *, uncertain: bool = False,
                 options: dict | None = None, undecided: str | None = None) -> Check:
    """Does the learner's choice (a letter, or a name of `options`) match the one the
    measurement supports? `undecided` says why the data cannot decide, when uncertain."""
    options = EXPLANATIONS if options is None else options
    undecided = undecided or f"a spread straddles the bound {BOUND}"
    if choice is None:
        return Check(None, f"No choice yet: set it to one of {', '.join(options)} and run "
                           "the cell, then this one.")
    c = str(choice).strip()
    c = c.upper() if c.upper() in options else c
    if c not in options:
        return Check(None, f"The choice must be one of {', '.join(options)}; got {choice!r}")
    why = f"the measurements support {supported}: {options[supported]}"
    if uncertain:
        return Check(None, f"You chose {c}; {why}, but the data cannot decide: {undecided}. "
                           "Run the measurement again (more repeats, a quieter machine) "
                           "before deciding.")
    if c == supported:
        return Check(True, f"You chose {c}, and {why}.")
    return Check(False, f"You chose {c}, but {why}. Which number in the table rules out "
                        f"{c}?")


# ---- the room ----

def to_room(room_file, name, exercise: str, prediction, measured, check=None) -> str:
    """Send a prediction with its measurement and check to the teacher's room
    (labkit.lab.room.predictions); without a room file, say how to."""
    if room_file is None:
        return ("Not sent to a room: set room_file (the file the teacher handed out) and "
                "my_name in the parameters cell to share your prediction.")
    rec = room_predictions.send(room_file, exercise, name, prediction, measured, check)
    return f"Sent to the room as {rec['name']}: exercise {rec['exercise']}."


# ---- is this laptop ready? ----

def ready():
    """The set-up checks a learner runs first: the lab's kernel, the extension, the
    optimisation-level builds, the peers, and one short measurement. A table with a
    status and what to do for each line."""
    rows = []

    def add(what, ok, detail, fix="", *, optional=False):
        status = "yes" if ok else "optional: no" if optional else "NO"
        rows.append({"check": what, "ok": status, "detail": detail,
                     "what to do": "" if ok else fix})

    venv = os.path.basename(os.path.dirname(os.path.dirname(sys.executable)))
    add("Python of the lab's environment", venv == ".venv", sys.executable,
        "Kernel > Change Kernel... > 'labkit (Python 3)' (made by `make setup`)")
    try:
        add("labkit imports, extension built", True, labkit.__version__)
    except Exception as exc:  # the whole point is to say what is wrong
        add("labkit imports, extension built", False, f"{type(exc).__name__}: {exc}",
            "run `make setup` in a terminal, then restart the kernel")
        return pd.DataFrame(rows)
    builds = labkit.builds()
    add("optimisation-level builds", len(builds) >= 3, ", ".join(builds) or "none",
        "run `make setup` (it builds -O0 ... -O2-native beside the extension)")
    cat = labkit.catalogue()
    missing = cat[~cat.available]
    add("kernels and peers available", missing.empty,
        f"{int(cat.available.sum())} of {len(cat)}" + ("" if missing.empty else
                                                         f"; missing: {', '.join(missing.entry)}"),
        "`sudo make system-deps` installs Boost and the other peers' packages; the "
        "exercises run without them", optional=True)
    try:
        df = labkit.measure("asm_fpu", switches=20_000, repeats=3)
        add("a measurement runs", True, f"asm_fpu: {df.ns_per_switch.median():.2f} ns per switch")
    except Exception as exc:
        add("a measurement runs", False, f"{type(exc).__name__}: {exc}",
            "ask the teacher; `make test` shows what fails")
    info = labkit.machine_info()
    add("machine", True, f"{info['cpu_model']} ({info['arch']}, {info['cpu_count']} CPUs, "
                         f"{info['virtualization']})")
    return pd.DataFrame(rows)
