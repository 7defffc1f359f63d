"""Every notebook's parameters, declared once: name, type, full value, quick value, what
is allowed and one line of help.

A notebook's `parameters` cell takes its values from here (`resolve`), and `labkit
reproduce` passes the values a run uses into the notebook (papermill's injected cell), so
what an executed notebook records is what it ran with. `-p NAME VALUE` is read by the
parameter's declared type (`parse`) and beats the quick value; a parameters file (`-f
params.yaml`, `read_file`: a YAML mapping NAME: VALUE, as papermill's) gives typed values,
checked the same way, and `-p` beats it.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from labkit.core.native_build import OPT_LEVELS

_SAME = object()  # a parameter whose quick value is its full value


@dataclass(frozen=True)
class Param:
    """One notebook parameter. kind: int, float, bool, str, ints (a list of ints).
    low/high bound a number (or every number of a list), inclusive; `choices` a str;
    `optional` allows None; `length` fixes a list's length."""
    name: str
    kind: str
    full: object
    quick: object = _SAME
    help: str = ""
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    optional: bool = False
    length: int | None = None

    def __post_init__(self):
        if self.quick is _SAME:
            object.__setattr__(self, "quick", self.full)
        for value in (self.full, self.quick):
            self.check(value)  # a table that breaks its own rules fails on import

    def allowed(self) -> str:
        """What the parameter accepts, as a message says it."""
        span = "" if self.low is None and self.high is None else \
            f" in [{_num(self.low)}, {_num(self.high)}]"
        text = {"int": f"an int{span}", "float": f"a number{span}", "bool": "True or False",
                "ints": f"a list of {f'{self.length} ' if self.length else ''}ints{span}",
                "str": ("one of " + ", ".join(map(repr, self.choices)) if self.choices
                        else "a string")}[self.kind]
        return f"None or {text}" if self.optional else text

    def check(self, value):
        """The value, if it is allowed (a tuple becomes a list), else ValueError/TypeError
        naming the parameter."""
        if value is None and self.optional:
            return None
        bad = f"{self.name} must be {self.allowed()}; got {value!r}"
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise TypeError(bad)
            return value
        if self.kind == "str":
            if not isinstance(value, str):
                raise TypeError(bad)
            if self.choices and value not in self.choices:
                raise ValueError(bad)
            return value
        if self.kind == "ints":
            if not isinstance(value, (list, tuple)) or not value:
                raise TypeError(bad)
            if self.length is not None and len(value) != self.length:
                raise ValueError(bad)
            for v in value:
                self._number(v, int, bad)
            return list(value)
        return self._number(value, int if self.kind == "int" else float, bad)

    def _number(self, value, kind, bad):
        accepted = (int, float) if kind is float else int  # an int is a fine float
        if isinstance(value, bool) or not isinstance(value, accepted):
            raise TypeError(bad)
        if not math.isfinite(value):
            raise ValueError(bad)
        if (self.low is not None and value < self.low) or \
                (self.high is not None and value > self.high):
            raise ValueError(bad)
        return kind(value)

    def parse(self, text: str):
        """A command-line value (`-p NAME VALUE`) read as this parameter's type, then
        checked; ValueError says what is allowed."""
        bad = ValueError(f"-p {self.name}: must be {self.allowed()}; got {text!r}")
        if self.optional and text == "None":
            return None
        try:
            if self.kind == "int":
                value = int(text)
            elif self.kind == "float":
                value = float(text)
            elif self.kind == "bool":
                value = {"True": True, "False": False, "true": True, "false": False}[text]
            elif self.kind == "ints":
                value = ast.literal_eval(text)
            else:
                value = text
            return self.check(value)
        except (ValueError, TypeError, KeyError, SyntaxError):
            raise bad from None


def _num(x) -> str:
    if x is None:
        return "..."
    return str(int(x)) if float(x).is_integer() else repr(x)


KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
# The one CPU number a worker is pinned to (checked against this machine by measure()).
_CPU = dict(low=0, high=4095)


def _int(name, full, quick=_SAME, help="", low=1, high=10**9, **kw) -> Param:
    return Param(name, "int", full, quick, help, low=low, high=high, **kw)


def _repeats(full, quick=_SAME, name="repeats", help="timed runs per point") -> Param:
    return _int(name, full, quick, help, high=1000)


def _switches(full, quick=_SAME, name="switches", help="switches per repeat") -> Param:
    return _int(name, full, quick, help, high=10**9)


def _float(name, full, quick=_SAME, help="", low=0.001, high=600.0) -> Param:
    return Param(name, "float", full, quick, help, low=low, high=high)


def _ints(name, full, quick=_SAME, help="", low=0, high=1 << 40, **kw) -> Param:
    return Param(name, "ints", full, quick, help, low=low, high=high, **kw)


def _cpu(full, help="pin the worker to this CPU (None: no pinning)") -> Param:
    return Param("cpu", "int", full, help=help, optional=full is None, **_CPU)


def _build(help: str) -> Param:
    return Param("build", "str", "O2", help=help, choices=tuple(OPT_LEVELS))


def _instructions(help: str) -> Param:
    return Param("count_instructions", "bool", True, help=help)


TABLES: dict[str, tuple[Param, ...]] = {
    "00_claims_ledger": (
        _int("calibration_runs", 1000, 100, "simulated runs of the verdict engine per "
             "scenario (its calibration)", high=100_000),
        _int("replaced_runs", 200, 40, "simulated runs of the replaced design per scenario",
             high=100_000),
    ),
    "01_stack_size": (
        _cpu(None),
        _switches(1_000_000, 100_000, help="switches per repeat, ping-pong"),
        _repeats(7, 5),
        _int("ring_laps_switches", 200_000, 50_000,
             "about this many switches per repeat in a ring"),
        _ints("sizes", [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 8 * MiB, 64 * MiB],
              [4 * KiB, 64 * KiB, 1 * MiB, 8 * MiB], "stack sizes of the ping-pong, bytes",
              low=4 * KiB, high=1 * GiB),
        _ints("ring_sizes", [4 * KiB, 64 * KiB, 1 * MiB, 8 * MiB], [4 * KiB, 1 * MiB],
              "stack sizes of the rings, bytes", low=4 * KiB, high=1 * GiB),
        _ints("ring_counts", [2, 16, 64, 256, 1024, 4096], [2, 64, 256],
              "contexts in a ring", low=2, high=1 << 20),
    ),
    "02_optimisation_levels": (
        _cpu(0, "pin the worker to this CPU"),
        _switches(1_000_000, 100_000),
        _repeats(7, 5),
        _instructions("count instructions with callgrind (about 2 s per kernel and build)"),
        Param("count_builds", "str", "every", "O0 and O2", "the builds callgrind counts "
              "(the counts are exact, so fewer builds lose only rows of the table)",
              choices=("every", "O0 and O2")),
    ),
    "03_symmetric_vs_asymmetric": (
        _cpu(0, "pin the worker to this CPU"),
        _int("switches_per_point", 1_000_000, 100_000, "about this many transfers per repeat"),
        _repeats(5, 3),
        _int("stack_size", 64 * KiB, help="stack size of every context, bytes",
             low=4 * KiB, high=1 * GiB),
        _ints("counts", [1, 2, 4, 16, 64, 256, 1024, 4096], [1, 2, 16, 256, 1024],
              "contexts per ring or scheduler", low=1, high=1 << 20),
    ),
    "04_latency_ladder": (
        _cpu(0, "pin every measurement to this CPU, so the rungs share one core"),
        _switches(2_000_000, 200_000, help="switches per repeat, C kernels and C++ peers"),
        _switches(400_000, 20_000, "py_switches",
                  "switches per repeat, Python peers (asyncio is ~2 us a switch)"),
        _repeats(9, 5),
        _instructions("count instructions with callgrind (about 1.5 s per kernel)"),
        Param("count_only_judged", "bool", False, True,
              "count only the rungs the verdicts use (the ladder's others are left out)"),
        _ints("copy_in_use", [8, 64, 256, 1024, 4096, 8192, 16384], [8, 1024, 8192],
              "copy_stack: bytes in use on the shared stack, swept", low=0, high=1 * MiB),
    ),
    "05_kernel_switches": (
        _cpu(0, "the one CPU of the same-CPU runs (and of the coroutine runs)"),
        _ints("cross_cpus", None, help="(a, b) for the two-CPU runs; None: the first two "
              "usable CPUs", optional=True, length=2, **_CPU),
        _switches(40_000, 4_000, help="hand-offs per repeat, kernel tasks"),
        _switches(1_000_000, 100_000, "coroutine_switches",
                  "switches per repeat, asm and ucontext"),
        _repeats(7, 5),
        _ints("yield_every", [0, 1, 2, 5, 10, 100, 1000],
              help="C002.2: sched_yield every k units (0: never)", high=10**6),
        _int("yield_units", 50_000, 5_000, "~1 us units of work per thread per run"),
        _repeats(5, 3, "yield_repeats", "runs per point of the sched_yield sweep"),
    ),
    "06_fp_state_and_return": (
        _cpu(0, "pin the worker to this CPU"),
        _switches(1_000_000, 100_000),
        _repeats(15, 5),
        _int("xstate_pairs", 20_000, 5_000, "save+restore pairs per repeat of the FP/vector "
             "state sweep", high=10**8),
        _repeats(15, 5, "xstate_repeats", "timed runs per point of the FP/vector state sweep"),
    ),
    "07a_frames_and_allocators": (
        _build("the peers build the timed runs use"),
        _int("pairs", 100_000, 50_000, "allocate+free pairs per repeat (short: a shared "
             "machine preempts a long loop more often)"),
        _repeats(31, 11),
        _int("live_blocks", 100_000, 20_000, "blocks kept allocated in the many-live pattern"),
        _int("memory_budget", 4 * GiB, help="most a run may keep resident (live blocks: a "
             "quarter), bytes", low=16 * MiB, high=1 << 40),
        _int("cycles", 1_000_000, help="create/destroy cycles of the leak check"),
    ),
    "07b_coroutine_memory": (
        _build("the peers build the memory runs use"),
        _int("n_coroutines", 1_000_000, 100_000, "suspended C++20 coroutines at once"),
        _repeats(3, 2, "coroutine_repeats", "runs of the coroutine measurement"),
        _int("n_contexts", 1_000_000, 50_000,
             "stackful contexts asked for (scaled to memory_budget)"),
        _ints("stack_sizes", [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB],
              [4 * KiB, 64 * KiB, 1 * MiB], "stack sizes of the contexts, bytes",
              low=4 * KiB, high=1 * GiB),
        _int("memory_budget", 4 * GiB, 1 * GiB, "most one run may keep resident: pages + "
             "page tables, bytes", low=16 * MiB, high=1 << 40),
        _int("guard_contexts", 20_000, 10_000, "stacks with and without guard pages, compared"),
        _int("n_copy", 1_000_000, 100_000, "suspended copy-stack coroutines (scaled to "
             "memory_budget)"),
        _ints("copy_in_use", [0, 256, 1024, 4096], [0, 1024],
              "bytes each copy-stack coroutine holds on its stack", low=0, high=1 * MiB),
        _ints("reuse_pool_sizes", [1_000, 10_000, 100_000, 1_000_000],
              [100, 1_000, 10_000, 100_000], "P: reused coroutines serving n_coroutines "
              "connections (C004.1d)", low=1, high=10**9),
    ),
    "08_switch_frequency": (
        _cpu(None),
        _int("workers", 64, help="coroutines in the pool", high=1 << 16),
        _int("rounds", 2, 1, "the whole sweep is run this many times, one after the other",
             high=100),
        _repeats(11, 3, help="per point and round: rounds * repeats runs per point in all"),
        _float("loop_seconds", 0.0005, help="about this long per timed loop (short: fewer "
               "runs cut by preemption)", low=1e-6, high=10.0),
        _ints("work_cycles", [0, 10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000],
              [0, 10, 100, 1000, 10000, 100000], "work between two switches, cycles",
              high=10**8),
        _int("judge_work", 100, help="the W of the claim (one of work_cycles)", low=0,
             high=10**8),
    ),
    "09_echo_servers": (
        _int("connections", 1000, help="the article's wrk run: 1000 concurrent connections",
             high=10_000),
        _int("message_bytes", 64, help='"small requests"', high=1 * MiB),
        _float("duration", 0.5, 0.3, "seconds per measured run (an upper bound; a run's "
               "noise here comes from its round, not its length, so short runs and more "
               "rounds)"),
        _int("requests", 2_000_000, 300_000, "requests per measured run (an upper bound)"),
        _ints("sweep_connections", [1, 10, 100], [1, 100],
              "connections of the sweep, plus `connections` from the main runs",
              low=1, high=10_000),
        _float("sweep_duration", 0.5, 0.2, "seconds per run of the sweep"),
        _repeats(2, 1, "sweep_repeats", "runs per point of the sweep"),
        _int("c15_message_bytes", 16384, help="C001.5's rule: 16 KiB messages", high=1 * MiB),
        _ints("c15_chunks", [1024, 4096, 16384, 65536], [1024, 16384],
              "read_some buffers; 1024 B is the article's recv_buf", low=1, high=1 * MiB),
        _int("c15_judge_chunk", 1024, help="the buffer C001.5 is judged at (one of "
             "c15_chunks)", high=1 * MiB),
        _int("c15_connections", 100, 50, "connections of the C001.5 runs", high=10_000),
        _float("c15_duration", 0.3, 0.2, "seconds per C001.5 run (suspensions are counted, "
               "not timed)"),
        _repeats(2, 1, help="runs per C001.5 point", name="c15_repeats"),
        _repeats(3, help="rounds of the robustness check", name="robustness_rounds"),
    ),
    "10_your_workload": (
        _int("processes", 3, 2, "fresh processes per grid point (each runs every design)",
             low=2, high=100),
        _int("samples", 3, 2, "timed samples per design in each process", high=100),
        _int("show_alive", 10_000, help="N of the share figure and the report's section",
             high=10**7),
        _int("show_in_use", 1024, help="stack in use (bytes) of the share and memory figures",
             low=0, high=1 * MiB),
    ),
}


def table(notebook: str) -> tuple[Param, ...]:
    """The declared parameters of one notebook (ValueError for an unknown notebook)."""
    try:
        return TABLES[notebook]
    except KeyError:
        raise ValueError(f"notebook must be one of {sorted(TABLES)}; got {notebook!r}") from None


def resolve(notebook: str, *, quick: bool = False, **overrides) -> dict:
    """Every parameter's value for one run of `notebook`, in the table's order: the quick
    or the full value, and any override beats both. An unknown name or a value outside
    what the table allows raises ValueError/TypeError naming the parameter."""
    if not isinstance(quick, bool):
        raise TypeError(f"quick must be True or False; got {quick!r}")
    params = {p.name: p for p in table(notebook)}
    unknown = sorted(set(overrides) - set(params))
    if unknown:
        raise ValueError(f"{notebook} has no parameter {unknown[0]!r}; its parameters: "
                         f"{list(params)}")
    return {name: p.check(overrides[name]) if name in overrides else
            (p.quick if quick else p.full) for name, p in params.items()}


def read_file(path) -> dict:
    """A parameters file: a YAML mapping NAME: VALUE (read with yaml.safe_load), as
    papermill's -f takes. ValueError, naming the file, for one that cannot be read, is not
    YAML, or is not such a mapping; an empty file sets nothing."""
    import yaml

    try:
        text = open(path, encoding="utf-8").read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"-f {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") \
            from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"-f {path}: not valid YAML: {what}{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"-f {path}: must be a YAML mapping of NAME: VALUE; got a "
                         f"{type(data).__name__}")
    for name in data:
        if not isinstance(name, str):
            raise ValueError(f"-f {path}: every name must be a parameter's name (text); "
                             f"got {name!r}")
    return data


def parse(notebooks: list[str], given: list[tuple[str, str]],
          others: dict[str, set[str]] | None = None, *, file_values: dict | None = None,
          file=None) -> dict:
    """The values a run of `notebooks` is given, each checked by its declared type before
    anything runs: `file_values` from a parameters file (`file`, typed already), then the
    `-p NAME VALUE` pairs (`given`, text read by the declared type), which beat them. A
    name must be a parameter of at least one of the notebooks; a notebook without a table
    (`others`: its parameters cell's names) takes the value as papermill would. ValueError
    names the file or -p, the parameter and what is allowed."""
    others = others or {}
    declared = {p.name: p for nb in notebooks if nb in TABLES for p in TABLES[nb]}
    known = set(declared).union(*others.values())
    out = {}
    for name, value in (file_values or {}).items():
        out[name] = _one(notebooks, declared, known, name, value, f"-f {file}: {name}: ",
                         lambda p, v: _file_value(p, v, file), lambda v: v)
    for name, text in given:
        out[name] = _one(notebooks, declared, known, name, text, f"-p {name}: ",
                         lambda p, t: p.parse(t), papermill_value)
    return out


def _file_value(p: Param, value, file):
    try:
        return p.check(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"-f {file}: {exc}") from None


def _one(notebooks, declared, known, name, value, where, read, undeclared):
    """One value for `name`: read(p, value) for every declared parameter of that name (its
    ValueError says where), undeclared(value) for a notebook without a table; `where`
    starts the other messages."""
    if name == "quick":
        raise ValueError(f"{where}use --quick (it also keeps the results apart)")
    if name not in known:
        raise ValueError(f"{where}no notebook run here has that parameter; "
                         f"known: {sorted(known - {'quick'})}")
    if name not in declared:
        return undeclared(value)
    # One value goes to every notebook that has the name: each must accept it.
    having = [(nb, p) for nb in notebooks for p in TABLES.get(nb, ()) if p.name == name]
    for nb, p in having:
        try:
            out = read(p, value)
        except ValueError as exc:
            if len({q.allowed() for _, q in having}) == 1:
                raise
            raise ValueError(f"{exc} (in {nb})") from None
    return out


def papermill_value(text: str):
    """A -p value as papermill's command line reads it: int, float, True/False, None,
    else the text itself (for a notebook that declares no table)."""
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def describe(notebook: str, *, quick: bool = False):
    """The table of one notebook as a frame: name, value this mode, full, quick, allowed,
    help (what `params.describe("01_stack_size")` shows in JupyterLab)."""
    import pandas as pd

    return pd.DataFrame([{"name": p.name, "value": p.quick if quick else p.full,
                          "full": p.full, "quick": p.quick, "allowed": p.allowed(),
                          "help": p.help} for p in table(notebook)])
