"""The experiments, one record each: a notebook with its parameters, the schedule of its
verdict design, the sides that design compares, the data files it writes, the article
tables it shows and the claims it judges. Everything else reads these records (the way
labkit.core.systems is read for the systems): the parameters (labkit.lab.running.params),
the designs and their stopping rule (labkit.lab.judging.designs), the rules' data files and
sides (labkit.lab.judging.rules), the claims registry's split notebooks
(labkit.lab.judging.claims), the article tables (labkit.lab.report.articles) and the
notebook size tests.

    from labkit.lab.experiment import STACK_SIZE
    STACK_SIZE.sides.MIB_8          # "8 MiB", the side the notebook measures and C000.2 reads
    STACK_SIZE.verdicts             # "01_stack_size_verdicts", its verdict table's data name
    STACK_SIZE.claims()             # the claims it judges, from data/claims.csv
    experiment.of("01_stack_size")  # the same record by its notebook's name

A notebook is found by its file (notebooks/NN_name.py); its record is the one here with
its name. Its claims are the rows of data/claims.csv whose `experiment` is its name, or,
for a notebook split in two, the claims its part `judges` of the notebook it was
registered as (`registered_as`): claims.csv's rows are never edited.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

from labkit.core import results, sequential
from labkit.core.units import GiB, KiB, MiB
from labkit.lab.running.parameter import (CPU, Param, build, cpu, instructions, integer, ints,
                                          number, repeats, switches)


class Sides:
    """The sides a verdict design compares, as named constants (Sides(MIB_8="8 MiB").MIB_8);
    iterating gives the labels in the order declared."""

    def __init__(self, **labels: str):
        for name, label in labels.items():
            if not isinstance(label, str) or not label:
                raise TypeError(f"side {name} must be a label (text); got {label!r}")
        self.__dict__.update(labels)

    def __iter__(self):
        return iter(self.__dict__.values())

    def __len__(self) -> int:
        return len(self.__dict__)

    def __repr__(self) -> str:
        return "Sides(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


@dataclass(frozen=True)
class Experiment:
    """One experiment: its notebook (notebooks/<name>.py) and what the lab reads of it.
    looks, quick_looks, seconds and repeats are its verdict design's schedule (None:
    labkit.core.sequential's defaults); parts are the data it writes beside
    data/<name>.csv (data/<name>_<part>.csv) and its checkpoints' names; tables are the
    article tables it shows (labkit.lab.report.articles), the first one also showing, in a
    row of its own, each claim of it that no table places."""
    name: str
    title: str
    params: tuple[Param, ...] = ()
    sides: Sides = Sides()
    parts: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    looks: tuple[int, ...] | None = None
    quick_looks: tuple[int, ...] | None = None
    seconds: float | None = None
    repeats: int | None = None
    registered_as: str = ""         # the claims.csv `experiment` of a notebook split in two
    judges: tuple[str, ...] = ()    # ... and which of its claims this part judges
    own_names: tuple[str, ...] = ()  # data it writes under a name of its own (own())

    # ---- the data it writes, each named from the notebook ----
    @property
    def data(self) -> str:
        """Its tidy rows: data/<name>.csv."""
        return self.name

    @property
    def verdicts(self) -> str:
        """Its verdict table: data/<name>_verdicts.csv."""
        return f"{self.name}_verdicts"

    @property
    def verdict_runs(self) -> str:
        """Its verdict design's runs: data/<name>_verdict_runs.csv."""
        return f"{self.name}_verdict_runs"

    @property
    def article_verdicts(self) -> str:
        """The article row claims it judges: data/<name>_article_verdicts.csv."""
        return f"{self.name}_article_verdicts"

    def part(self, part: str) -> str:
        """One of its parts: data/<name>_<part>.csv (or a checkpoint of that name)."""
        if part not in self.parts:
            raise ValueError(f"part must be one of {self.name}'s parts {list(self.parts)}; "
                             f"got {part!r}")
        return f"{self.name}_{part}"

    def own(self, name: str) -> str:
        """A data name of its own, not derived from the notebook's (data/<name>.csv), for a
        file its readers know by that name (data/advisor_calibration.csv)."""
        if name not in self.own_names:
            raise ValueError(f"name must be one of {self.name}'s own data names "
                             f"{list(self.own_names)}; got {name!r}")
        return name

    def written_beside(self) -> list[str]:
        """The data names it writes beside its rows and its verdicts: its parts and the
        names of its own."""
        return [*(f"{self.name}_{p}" for p in self.parts), *self.own_names]

    def files(self) -> list[str]:
        """Every data name it may write."""
        return [self.data, self.verdicts, self.verdict_runs, self.article_verdicts,
                *self.written_beside()]

    # ---- its design's schedule ----
    def schedule(self, *, quick: bool = False) -> dict:
        """Its verdict design's stopping rule (labkit.core.sequential.schedule)."""
        return sequential.schedule(looks=self.looks, quick_looks=self.quick_looks,
                                   seconds=self.seconds, repeats=self.repeats, quick=quick)

    # ---- its claims ----
    def claims(self) -> list[str]:
        """The ids of the claims it judges, in data/claims.csv's order."""
        return [cid for cid, nb in judged_by().items() if nb == self.name]

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise ValueError(f"{self.name} has no parameter {name!r}; its parameters: "
                         f"{[p.name for p in self.params]}")


CLAIMS_LEDGER = Experiment(
    "00_claims_ledger", "The claims ledger",
    params=(
        integer("calibration_runs", 1000, 100, "simulated runs of the verdict engine per "
             "scenario (its calibration)", high=100_000),
        integer("replaced_runs", 200, 40, "simulated runs of the replaced design per scenario",
             high=100_000),
    ))

STACK_SIZE = Experiment(
    "01_stack_size", "Does a bigger stack make a switch slower?",
    params=(
        cpu(None),
        switches(1_000_000, 100_000, help="switches per repeat, ping-pong"),
        repeats(7, 5),
        integer("ring_laps_switches", 200_000, 50_000,
             "about this many switches per repeat in a ring"),
        ints("sizes", [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 8 * MiB, 64 * MiB],
              [4 * KiB, 64 * KiB, 1 * MiB, 8 * MiB], "stack sizes of the ping-pong, bytes",
              low=4 * KiB, high=1 * GiB),
        ints("ring_sizes", [4 * KiB, 64 * KiB, 1 * MiB, 8 * MiB], [4 * KiB, 1 * MiB],
              "stack sizes of the rings, bytes", low=4 * KiB, high=1 * GiB),
        ints("ring_counts", [2, 16, 64, 256, 1024, 4096], [2, 64, 256],
              "contexts in a ring", low=2, high=1 << 20),
    ),
    sides=Sides(KIB_4="4 KiB", KIB_16="16 KiB", KIB_64="64 KiB", KIB_256="256 KiB",
                MIB_1="1 MiB", MIB_8="8 MiB"),
    parts=("pingpong", "ring"),
    tables=("t01",))

OPTIMISATION_LEVELS = Experiment(
    "02_optimisation_levels", "What does -O2 change in a context switch?",
    params=(
        cpu(0, "pin the worker to this CPU"),
        switches(1_000_000, 100_000),
        repeats(7, 5),
        instructions("count instructions with callgrind (about 2 s per kernel and build)"),
        Param("count_builds", "str", "every", "O0 and O2", "the builds callgrind counts "
              "(the counts are exact, so fewer builds lose only rows of the table)",
              choices=("every", "O0 and O2")),
    ),
    sides=Sides(O0="O0", O2="O2", O3="O3"),
    tables=("t02",))

SYMMETRIC_VS_ASYMMETRIC = Experiment(
    "03_symmetric_vs_asymmetric", "Symmetric or asymmetric: does the shape of the switching matter?",
    params=(
        cpu(0, "pin the worker to this CPU"),
        integer("switches_per_point", 1_000_000, 100_000, "about this many transfers per repeat"),
        repeats(5, 3),
        integer("stack_size", 64 * KiB, help="stack size of every context, bytes",
             low=4 * KiB, high=1 * GiB),
        ints("counts", [1, 2, 4, 16, 64, 256, 1024, 4096], [1, 2, 16, 256, 1024],
              "contexts per ring or scheduler", low=1, high=1 << 20),
    ),
    sides=Sides(SCHEDULER_1024="scheduler 1024", RING_1="ring 1", RING_1024="ring 1024",
                SCHEDULER_2="scheduler 2", RING_2="ring 2"),
    tables=("t03",))

LATENCY_LADDER = Experiment(
    "04_latency_ladder", "The latency ladder: every switch on one CPU, side by side",
    params=(
        cpu(0, "pin every measurement to this CPU, so the rungs share one core"),
        switches(2_000_000, 200_000, help="switches per repeat, C kernels and C++ peers"),
        switches(400_000, 20_000, "py_switches",
                  "switches per repeat, Python peers (asyncio is ~2 us a switch)"),
        repeats(9, 5),
        instructions("count instructions with callgrind (about 1.5 s per kernel)"),
        Param("count_only_judged", "bool", False, True,
              "count only the rungs the verdicts use (the ladder's others are left out)"),
        ints("copy_in_use", [8, 64, 256, 1024, 4096, 8192, 16384], [8, 1024, 8192],
              "copy_stack: bytes in use on the shared stack, swept", low=0, high=1 * MiB),
    ),
    sides=Sides(VIRTUAL_CALL="virtual_call", BOOST_FIBER="boost_fiber",
                SYSCALL="syscall_getppid", CXX20_GENERATOR="cxx20_generator"),
    parts=("runs", "instructions", "copy_stack"),
    tables=("t04",))

KERNEL_SWITCHES = Experiment(
    "05_kernel_switches", "OS threads and processes: what one hand-off costs",
    params=(
        cpu(0, "the one CPU of the same-CPU runs (and of the coroutine runs)"),
        ints("cross_cpus", None, help="(a, b) for the two-CPU runs; None: the first two "
              "usable CPUs", optional=True, length=2, **CPU),
        switches(40_000, 4_000, help="hand-offs per repeat, OS tasks"),
        switches(1_000_000, 100_000, "coroutine_switches",
                  "switches per repeat, asm and ucontext"),
        repeats(7, 5),
        ints("yield_every", [0, 1, 2, 5, 10, 100, 1000],
              help="C002.2: sched_yield every k units (0: never)", high=10**6),
        integer("yield_units", 50_000, 5_000, "~1 us units of work per thread per run"),
        repeats(5, 3, "yield_repeats", "runs per point of the sched_yield sweep"),
    ),
    sides=Sides(ASM="asm", UCONTEXT="ucontext", YIELD_NEVER="yield k=0", YIELD_EVERY="yield k=1",
                FUTEX_SAME_CPU="thread_futex same-cpu",
                CONDVAR_SAME_CPU="thread_condvar same-cpu",
                PROCESS_PIPE_SAME_CPU="process_pipe same-cpu",
                THREAD_PIPE_SAME_CPU="thread_pipe same-cpu",
                CONDVAR_CROSS_CPU="thread_condvar cross-cpu"),
    parts=("handoffs", "yield"),
    tables=("t09", "t10"),
    looks=(8, 16, 32, 48, 64), seconds=300, repeats=2)

FP_STATE_AND_RETURN = Experiment(
    "06_fp_state_and_return", "Floating-point state, and how a switch returns",
    params=(
        cpu(0, "pin the worker to this CPU"),
        switches(1_000_000, 100_000),
        repeats(15, 5),
        integer("xstate_pairs", 20_000, 5_000, "save+restore pairs per repeat of the FP/vector "
             "state sweep", high=10**8),
        repeats(15, 5, "xstate_repeats", "timed runs per point of the FP/vector state sweep"),
    ),
    sides=Sides(ASM_FXSAVE="asm_fxsave", ASM_FPU="asm_fpu", ASM_XSAVE="asm_xsave"),
    parts=("xstate", "anatomy"),
    tables=("t05",))

FRAMES_AND_ALLOCATORS = Experiment(
    "07a_frames_and_allocators", "Coroutine frames: how big, what allocating one costs, does the pool give it back",
    params=(
        build("the peers build the timed runs use"),
        integer("pairs", 100_000, 50_000, "allocate+free pairs per repeat (short: a shared "
             "machine preempts a long loop more often)"),
        repeats(31, 11),
        integer("live_blocks", 100_000, 20_000, "blocks kept allocated in the many-live pattern"),
        integer("memory_budget", 4 * GiB, help="most a run may keep resident (live blocks: a "
             "quarter), bytes", low=16 * MiB, high=1 << 40),
        integer("cycles", 1_000_000, help="create/destroy cycles of the leak check"),
    ),
    sides=Sides(HEAP="heap", POOL="pool"),
    parts=("alloc",),
    tables=("t08",),
    registered_as="07_coroutine_frames", judges=("C001.2", "C004.3", "C004.4"))

COROUTINE_MEMORY = Experiment(
    "07b_coroutine_memory", "Coroutine memory: a million suspended coroutines, a million stackful contexts",
    params=(
        build("the peers build the memory runs use"),
        integer("n_coroutines", 1_000_000, 100_000, "suspended C++20 coroutines at once"),
        repeats(3, 2, "coroutine_repeats", "runs of the coroutine measurement"),
        integer("n_contexts", 1_000_000, 50_000,
             "stackful contexts asked for (scaled to memory_budget)"),
        ints("stack_sizes", [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB],
              [4 * KiB, 64 * KiB, 1 * MiB], "stack sizes of the contexts, bytes",
              low=4 * KiB, high=1 * GiB),
        integer("memory_budget", 4 * GiB, 1 * GiB, "most one run may keep resident: pages + "
             "page tables, bytes", low=16 * MiB, high=1 << 40),
        integer("guard_contexts", 20_000, 10_000, "stacks with and without guard pages, compared"),
        integer("n_copy", 1_000_000, 100_000, "suspended copy-stack coroutines (scaled to "
             "memory_budget)"),
        ints("copy_in_use", [0, 256, 1024, 4096], [0, 1024],
              "bytes each copy-stack coroutine holds on its stack", low=0, high=1 * MiB),
        ints("reuse_pool_sizes", [1_000, 10_000, 100_000, 1_000_000],
              [100, 1_000, 10_000, 100_000], "P: reused coroutines serving n_coroutines "
              "connections (C004.1d)", low=1, high=10**9),
    ),
    parts=("coroutines", "pool_reuse", "copy_stack", "stackful"),
    tables=("t11",),
    registered_as="07_coroutine_frames",
    judges=("C004.1", "C004.2", "C004.1a", "C004.1b", "C004.1c", "C004.1d"))

SWITCH_FREQUENCY = Experiment(
    "08_switch_frequency", "How often can a coroutine switch before switching eats the CPU?",
    params=(
        cpu(None),
        integer("coroutines", 64, help="coroutines in the pool", high=1 << 16),
        integer("rounds", 2, 1, "the whole sweep is run this many times, one after the other",
             high=100),
        repeats(11, 3, help="per point and round: rounds * repeats runs per point in all"),
        number("loop_seconds", 0.0005, help="about this long per timed loop (short: fewer "
               "runs cut by preemption)", low=1e-6, high=10.0),
        ints("work_cycles", [0, 10, 30, 100, 300, 1000, 3000, 10000, 30000, 100000],
              [0, 10, 100, 1000, 10000, 100000], "work between two switches, cycles",
              high=10**8),
        integer("judge_work", 100, help="the W of the claim (one of work_cycles)", low=0,
             high=10**8),
    ),
    sides=Sides(BEFORE_DEPENDENT="before dependent", BEFORE_INDEPENDENT="before independent",
                AFTER_DEPENDENT="after dependent", AFTER_INDEPENDENT="after independent"),
    parts=("independent",),
    tables=("t06",))

ECHO_SERVERS = Experiment(
    "09_echo_servers", "Echo servers: callbacks, coroutines, pooled coroutines; epoll and io_uring",
    params=(
        integer("connections", 1000, help="the article's wrk run: 1000 concurrent connections",
             high=10_000),
        integer("message_bytes", 64, help='"small requests"', high=1 * MiB),
        number("duration", 0.5, 0.3, "seconds per measured run (an upper bound; a run's "
               "noise here comes from its round, not its length, so short runs and more "
               "rounds)"),
        integer("requests", 2_000_000, 300_000, "requests per measured run (an upper bound)"),
        ints("sweep_connections", [1, 10, 100], [1, 100],
              "connections of the sweep, plus `connections` from the main runs",
              low=1, high=10_000),
        number("sweep_duration", 0.5, 0.2, "seconds per run of the sweep"),
        repeats(2, 1, "sweep_repeats", "runs per point of the sweep"),
        integer("c15_message_bytes", 16384, help="C001.5's rule: 16 KiB messages", high=1 * MiB),
        ints("c15_chunks", [1024, 4096, 16384, 65536], [1024, 16384],
              "read_some buffers; 1024 B is the article's recv_buf", low=1, high=1 * MiB),
        integer("c15_judge_chunk", 1024, help="the buffer C001.5 is judged at (one of "
             "c15_chunks)", high=1 * MiB),
        integer("c15_connections", 100, 50, "connections of the C001.5 runs", high=10_000),
        number("c15_duration", 0.3, 0.2, "seconds per C001.5 run (suspensions are counted, "
               "not timed)"),
        repeats(2, 1, help="runs per C001.5 point", name="c15_repeats"),
        repeats(3, help="rounds of the robustness check", name="robustness_rounds"),
    ),
    sides=Sides(CXX20_POOL_SYM="cxx20_pool_sym", CALLBACK_EPOLL="callback_epoll",
                CXX20_NEW="cxx20_new", CXX20_POOL="cxx20_pool", CXX20_LEAN="cxx20_lean",
                CXX20_REUSE="cxx20_reuse", ASIO_EPOLL="asio_epoll", ASIO_URING="asio_uring",
                CALLBACK_URING="callback_uring"),
    parts=("table", "c004", "robustness", "connections", "reads"),
    tables=("t07", "t08", "t11"),
    looks=(8, 16, 32, 48), quick_looks=(3,), seconds=240)


YOUR_WORKLOAD = Experiment(
    "10_your_workload", "Your workload: which design, what it costs, and how well the advisor "
    "predicts it",
    params=(
        integer("processes", 3, 2, "fresh processes per grid point (each runs every design)",
                low=2, high=100),
        integer("samples", 3, 2, "timed samples per design in each process", high=100),
        integer("show_alive", 10_000, help="N of the share figure and the report's section",
                high=10**7),
        integer("show_in_use", 1024, help="stack in use (bytes) of the share and memory "
                "figures", low=0, high=1 * MiB),
    ),
    parts=("cold_switches",),
    own_names=("advisor_calibration", "advisor_holdout"))


RECORDS: dict[str, Experiment] = {e.name: e for e in (v for v in dict(globals()).values()
                                                      if isinstance(v, Experiment))}


def of(name) -> Experiment:
    """The record of a notebook, by its name (a record is returned as it is); ValueError
    for a notebook without one."""
    if isinstance(name, Experiment):
        return name
    if not isinstance(name, str):
        raise TypeError(f"notebook must be a notebook name such as '01_stack_size', not "
                        f"{type(name).__name__}")
    try:
        return RECORDS[name]
    except KeyError:
        raise ValueError(f"notebook must be one of {sorted(RECORDS)}; got {name!r}") from None


def names() -> list[str]:
    """Every notebook with a record, in order."""
    return sorted(RECORDS)


def notebook_of(claim_id: str, registered: str) -> str:
    """The notebook that judges a claim registered to `registered` (claims.csv's
    `experiment`): the same one, unless that notebook was split in two, when it is the part
    whose record `judges` the claim."""
    parts = [e for e in RECORDS.values() if e.registered_as == registered]
    if not parts:
        return registered
    for e in parts:
        if claim_id in e.judges:
            return e.name
    raise ValueError(f"{claim_id} is registered to {registered}, which was split into "
                     f"{[e.name for e in parts]}: name it in one part's `judges` "
                     "(labkit.lab.experiment)")


def judged_by() -> dict[str, str]:
    """Claim id -> the notebook that judges it, for every row of data/claims.csv."""
    with open(results.claims_csv(), newline="", encoding="utf-8") as f:
        return {r["claim_id"]: notebook_of(r["claim_id"], r["experiment"])
                for r in csv.DictReader(f)}


def of_claim(claim_id: str) -> Experiment:
    """The record of the notebook that judges a claim."""
    nb = judged_by().get(claim_id)
    if nb is None:
        raise ValueError(f"claim_id must be one of the ids in data/claims.csv; got {claim_id!r}")
    return of(nb)
