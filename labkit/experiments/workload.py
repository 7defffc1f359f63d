"""A described workload, run for real: N coroutines alive under a round-robin scheduler,
each doing W of work and touching u bytes of its own stack between switches, for one
design (a catalogue entry). The ground truth the advisor's predictions are set beside.

The scheduler resumes coroutine i, which runs one step (u bytes touched: one word of every
64-byte line read and written; then W of a dependent multiply-add chain) and suspends back;
the next resumption goes to i + 1 (mod N), so each coroutine is revisited after the N - 1
others. A request is `switches_per_request` suspensions of one coroutine, so

    ns_per_request = loop time / requests          (W and u included)
    ns_per_switch  = (loop time - baseline time) / switches,  floored at 0

where the baseline runs the very same steps on the very same buffers in the same order,
called in place without switching (interleaved with the loop in the process: baseline,
loop, loop, baseline, half the resumptions each). Both loops advance one cursor, so the
coroutine either visits was last touched N steps ago: the cache cost of many contexts is
in the loop and not in the baseline only where the switch itself causes it.

Memory is read around making and starting the N coroutines (in the worker): VmRSS and
VmPTE deltas, and the mappings added (/proc/self/maps), each also per coroutine. The
stackful designs' stacks are one mapping of N slots, reserved but touched only where used;
with guard="auto" each slot has a guard page below it (two mappings a stack) while 2N
stays well under vm.max_map_count, and none above (the `guard_pages` column says which).

Designs: labkit's kernels (csrc/workload.c), Boost fcontext and fiber and C++20 coroutines
(cxx/workload.cpp), greenlet and asyncio (here, in the worker's Python: W is a spin on the
monotonic clock, u a bytearray the coroutine keeps, its frame's own state, with one byte
of each of its lines written per step).

measure_point runs one grid point over fresh processes, the designs interleaved ABBA in
each (labkit.experiments.verdict_design.run_process); per_process and summary reduce the runs the
way labkit.lab.judging.engine does (one median per process and design, a repeated
confidence interval over processes)."""
from __future__ import annotations

import math
import numbers

from labkit.core import entries as _entries
from labkit.core import machine as _machine
from labkit.core import native as _native
from labkit.core import procfs as _procfs
from labkit.core import sequential as _sequential
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.core.stats import floor_net
from labkit.experiments import verdict_design
from labkit.errors import SwitchCountError
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

# labkit's kernels a workload runs: all but the ones that save the whole FP state (there
# to price that state; csrc/workload.c refuses them).
KERNEL_DESIGNS = tuple(n for n in _entries.KERNEL_NAMES if n not in ("asm_fxsave", "asm_xsave"))
PYTHON_DESIGNS = ("greenlet_switch", "asyncio_task")
BUILD = _native.DEFAULT_BUILD
MAX_ALIVE_STACKFUL = 1_000_000
MAX_ALIVE = 10_000_000
MAX_WORK_NS = 10_000_000
MAX_IN_USE = 1 << 20
MAX_SWITCHES_PER_REQUEST = 1000
MAX_RESUMPTIONS = 10**9
# Guard pages while 2N mappings leave this many of vm.max_map_count for everything else.
GUARD_MARGIN = 5000
CALIBRATION_UNITS = 1 << 20
CALIBRATION_TRIES = 7


def cxx_designs() -> tuple[str, ...]:
    """The C++ designs of the peers library (cxx/workload.h's LKW_DESIGNS), () where it is
    not built."""
    if _native.peers_missing_reason():
        return ()
    lib, names = _native.peers(_native.PEER_BUILD), []
    while (name := lib.lkw_design_name(len(names)).decode()) != "?":
        names.append(name)
    return tuple(names)


def designs() -> tuple[str, ...]:
    """Every design the workload can run here or elsewhere: catalogue entries."""
    return (*KERNEL_DESIGNS, *cxx_designs(), *PYTHON_DESIGNS)


def _library(design: str) -> str:
    if design in KERNEL_DESIGNS:
        return "core"
    return "python" if design in PYTHON_DESIGNS else "peers"


def available() -> list[str]:
    """The designs that run on this machine."""
    return [d for d in designs() if _entries.availability(d)[0]]


def _stackful(design: str) -> bool:
    return _entries.kernel_info(design).kind == "stackful" and design not in PYTHON_DESIGNS


def _own_stacks(design: str) -> bool:
    """A stack per coroutine in labkit's mapping (copy_stack's share one run stack)."""
    return _stackful(design) and design not in _entries.COPIES_STACK


# ---- run in the worker process (labkit.core.worker.call) ----

def _memory() -> dict:
    return {"rss_kb": _procfs.status_kb("VmRSS"), "pte_kb": _procfs.status_kb("VmPTE"),
            "maps": _procfs.mappings()}


def worker_run(design: str, library: str, index: int, alive: int, stack_size: int,
               guard: bool, in_use: int, work_cycles: float, work_ns: float,
               resumptions: int, warmup: int, repeats: int) -> dict:
    """Make the workload, read its memory, time it under the OS's counters, undo it."""
    from labkit.core import counters

    core = _native.core(BUILD)
    core.lk_wl_trim()  # what the last workload left in malloc's free lists goes back first
    if library == "python":
        return _py_run(design, alive, in_use, work_ns, resumptions, warmup, repeats, core)
    per_unit = core.lk_wl_ticks_per_unit(CALIBRATION_UNITS, CALIBRATION_TRIES)
    if not per_unit > 0:
        raise RuntimeError("the busy loop's calibration gave no ticks per unit")
    units = round(work_cycles / per_unit) if work_cycles else 0
    lib = core if library == "core" else _native.peers(_native.PEER_BUILD)
    fn = "lk_wl" if library == "core" else "lkw"
    before = _memory()
    _native.check(getattr(lib, f"{fn}_open"), index, alive, stack_size, int(guard), in_use,
                  units)
    try:
        after = _memory()
        depth = getattr(lib, f"{fn}_depth")()
        with counters.count() as c:
            samples = lib.samples(f"{fn}_run", "lk_wl_sample", repeats, resumptions, warmup,
                                  repeats)
    finally:
        getattr(lib, f"{fn}_close")()
    return {"samples": samples, "counters": c.result(), "before": before, "after": after,
            "units": units, "ticks_per_unit": per_unit, "depth": depth}


class _Co:
    __slots__ = ("buf", "marks", "count", "steps")

    def __init__(self):
        self.buf = None
        self.marks = None
        self.count = 0
        self.steps = 0

    def own(self, in_use: int):
        """The coroutine's buffer of in_use bytes (none for 0), made where it first runs,
        and the byte per 64-byte line a step writes into it."""
        if in_use:
            self.buf = bytearray(in_use)
            self.marks = bytearray(len(range(0, in_use, 64)))


def _py_run(design, n, in_use, work_ns, resumptions, warmup, repeats, core) -> dict:
    """greenlet or asyncio, in this Python: the same shape as the C loops."""
    import gc
    import time

    from labkit.core import _core, counters

    clock = time.perf_counter_ns
    work = 0  # ns of spin a step does: none while the coroutines are started

    def step(s):
        buf = s.buf
        if buf is not None:
            # One byte written into every 64-byte line, in place from a buffer of the right
            # length (no allocation); a store needs its line, so every line is brought in.
            buf[::64] = s.marks
        if work:
            end = clock() + work
            while clock() < end:
                pass
        s.steps += 1

    gc.collect()
    gc.disable()  # a collection inside a timed loop would land on whichever ran then
    before = _memory()
    cos = [_Co() for _ in range(n)]
    main = _Co()
    cursor = [0]

    def totals(start, k):
        c = s = 0
        for j in range(min(k, n)):
            co = cos[(start + j) % n]
            c += co.count
            s += co.steps
        return main.count + c, s

    def base(k):
        i = cursor[0]
        for _ in range(k):
            co = cos[i]
            step(co)
            co.count += 1
            main.count += 1
            i += 1
            if i == n:
                i = 0
        cursor[0] = i

    try:
        if design == "greenlet_switch":
            loop, close = _greenlets(cos, main, step, in_use, cursor)
        else:
            loop, close = _asyncio_tasks(cos, main, step, in_use, cursor)
        after = _memory()
        cursor[0] = 0
        work = int(round(work_ns))

        def timed(fn, k):
            start = cursor[0]
            c0, s0 = totals(start, k)
            ns0, t0 = _core.now_ns(), _core.ticks_begin()
            span = fn(k)  # asyncio's loop clocks its own span, inside the event loop
            t1, ns1 = _core.ticks_end(), _core.now_ns()
            c1, s1 = totals(start, k)
            ns, ticks = span if span is not None else (ns1 - ns0, t1 - t0)
            return ns, ticks, c1 - c0, s1 - s0

        first = resumptions // 2 or resumptions
        halves = (first, resumptions - first)
        out = []
        with counters.count() as cnt:
            for r in range(warmup + repeats):
                o = dict.fromkeys(("loop_ns", "loop_ticks", "base_ns", "base_ticks", "counted",
                                   "steps", "base_steps"), 0)
                for h, k in enumerate(halves):
                    if not k:
                        continue
                    order = (base, loop) if h == 0 else (loop, base)
                    for fn in order:
                        ns, ticks, counted, steps = timed(fn, k)
                        kind = "base" if fn is base else "loop"
                        o[f"{kind}_ns"] += ns
                        o[f"{kind}_ticks"] += ticks
                        if fn is base:
                            o["base_steps"] += steps
                        else:
                            o["counted"] += counted
                            o["steps"] += steps
                o.update(resumptions=resumptions, switches=2 * resumptions, minor_faults=None,
                         preemptions=None, copied_bytes=0)
                if r >= warmup:
                    out.append(o)
        close()
    finally:
        gc.enable()
    return {"samples": out, "counters": cnt.result(), "before": before, "after": after,
            "units": None, "ticks_per_unit": None}


def _greenlets(cos, main, step, in_use, cursor):
    import greenlet

    hub = greenlet.getcurrent()

    def body(s):
        s.own(in_use)
        while True:
            step(s)
            s.count += 1
            hub.switch()

    gs = []
    for s in cos:
        g = greenlet.greenlet(body)
        gs.append(g)
        g.switch(s)  # started: its buffer made and touched
        main.count += 1
    n = len(gs)

    def loop(k):
        i = cursor[0]
        for _ in range(k):
            gs[i].switch()
            main.count += 1
            i += 1
            if i == n:
                i = 0
        cursor[0] = i

    def close():
        for g in gs:
            g.throw(greenlet.GreenletExit)

    return loop, close


def _asyncio_tasks(cos, main, step, in_use, cursor):
    """Each task waits on a future of its own (its connection's next event); the driver,
    a task too, resolves task i's future and yields to the event loop, which runs task i's
    step, then the driver again."""
    import asyncio

    from labkit.core import _core

    ev = asyncio.new_event_loop()
    n = len(cos)
    futs = [None] * n

    async def body(i, s):
        s.own(in_use)
        while True:
            step(s)
            s.count += 1
            futs[i] = ev.create_future()
            await futs[i]

    async def start():
        tasks = [ev.create_task(body(i, s)) for i, s in enumerate(cos)]
        await asyncio.sleep(0)  # every task runs to its first wait
        main.count += n
        return tasks

    tasks = ev.run_until_complete(start())

    async def drive(k):
        i = cursor[0]
        ns0, t0 = _core.now_ns(), _core.ticks_begin()
        for _ in range(k):
            futs[i].set_result(None)
            await asyncio.sleep(0)
            main.count += 1
            i += 1
            if i == n:
                i = 0
        t1, ns1 = _core.ticks_end(), _core.now_ns()
        cursor[0] = i
        return ns1 - ns0, t1 - t0

    def loop(k):
        return ev.run_until_complete(drive(k))

    def close():
        for t in tasks:
            t.cancel()
        ev.run_until_complete(asyncio.sleep(0))
        ev.close()

    return loop, close


# ---- the caller's side ----

def _work(work_ns, work_cycles, ghz: float) -> tuple[float, float]:
    """(ns, cycle-counter ticks) of work per step, from exactly one of the two."""
    if (work_ns is None) == (work_cycles is None):
        raise TypeError("give exactly one of work_ns and work_cycles (the work per switch)")
    name, value = ("work_ns", work_ns) if work_ns is not None else ("work_cycles", work_cycles)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{name} must be a number, not {type(value).__name__} ({value!r})")
    top = MAX_WORK_NS * (ghz if name == "work_cycles" else 1)
    if not 0 <= value <= top:
        raise ValueError(f"{name} must be from 0 to {top:g}; got {value}")
    return (float(value), value * ghz) if name == "work_ns" else (value / ghz, float(value))


def _design(value) -> str:
    if not isinstance(value, str):
        raise TypeError(f"design must be a str naming a catalogue entry, not "
                        f"{type(value).__name__}")
    if value not in designs():
        raise ValueError(f"design must be one of {', '.join(designs())}; got {value!r}")
    return _entries.check_name(value)


def guard_pages(alive: int) -> bool:
    """Whether N guarded stacks (two mappings each) fit under vm.max_map_count with room."""
    return 2 * alive + GUARD_MARGIN <= _procfs.max_map_count()


def run_workload(design: str, *, work_ns: float | None = None, work_cycles: float | None = None,
                 alive: int, stack_in_use: int, switches_per_request: int, requests: int,
                 stack_size: int | None = None, guard: str | bool = "auto", repeats: int = 5,
                 warmup: int = 1, cpu: int | None = None, timeout: float | None = None):
    """Run the workload for `design` in a worker process: `alive` coroutines, each step
    `work_ns` (or `work_cycles` cycle-counter ticks) of work and `stack_in_use` bytes of its
    stack touched, `requests` requests of `switches_per_request` suspensions each per repeat.
    One row per repeat: ns_per_request, ns_per_switch (net of the same steps without
    switching, floored at 0), resident memory, page tables and mappings (total and per
    coroutine), the counted switches and steps (SwitchCountError when they disagree with
    what was planned) and the kernel's software counters, with the machine's metadata.

    stack_size: bytes per stack of a stackful design (None: 64 KiB); must stay None for
    the stackless ones. guard: True, False, or "auto" (guard pages while they fit under
    vm.max_map_count)."""
    design = _design(design)
    ghz = _machine.machine_info()["tsc_ghz"]
    w_ns, w_cycles = _work(work_ns, work_cycles, ghz)
    stackful = _stackful(design)
    alive = _v.integer_in("alive", alive, 1, MAX_ALIVE_STACKFUL if stackful else MAX_ALIVE)
    per_request = _v.integer_in("switches_per_request", switches_per_request, 1,
                                MAX_SWITCHES_PER_REQUEST, " suspensions")
    requests = _v.integer_in("requests", requests, 1, MAX_RESUMPTIONS // per_request)
    repeats, warmup = _v.repeats(repeats), _v.warmup(warmup)
    cpu = _v.cpu(cpu)
    if stackful:
        if stack_size is None:
            stack_size = _v.DEFAULT_STACK_SIZE
        size = _v.integer_in("stack_size", stack_size, _entries.min_stack_size(design),
                             _v.physical_memory(), " bytes")
        size = _v.round_to_pages(size)
        room = size - _entries.frame_bytes(design) - _v.ENTRY_HEADROOM
        in_use = _v.integer("stack_in_use", stack_in_use)
        if not 0 <= in_use <= room:
            raise ValueError(f"stack_in_use must be from 0 to {room} bytes (the {size}-byte "
                             f"stack_size less the {design} frame and the entry's "
                             f"{_v.ENTRY_HEADROOM}-byte headroom); got {in_use}")
        if alive * (size + _v.page_size()) > 1 << 46:
            raise ValueError(f"alive * stack_size = {alive * size} bytes of address space is "
                             "more than this lab reserves (64 TiB): fewer or smaller stacks")
    else:
        if stack_size is not None:
            raise ValueError(f"stack_size must be left unset (None) for the stackless design "
                             f"{design!r}: it has no stack of its own; got {stack_size!r}")
        size = 0
        in_use = _v.integer_in("stack_in_use", stack_in_use, 0, MAX_IN_USE, " bytes")
    if alive * max(in_use, 64) > _v.physical_memory() // 2:
        raise ValueError(f"alive * stack_in_use = {alive * in_use} bytes would be touched, "
                         "more than half of this machine's memory: fewer coroutines or less in use")
    if guard == "auto":
        guarded = _own_stacks(design) and guard_pages(alive)
    else:
        guarded = _v.flag("guard", guard)
        if guarded and not _own_stacks(design):
            raise ValueError(f"guard must be False or 'auto' for {design!r}: its coroutines "
                             "have no stack of their own in labkit's mapping")
        if guarded and not guard_pages(alive):
            raise ValueError(f"guard=True needs 2 * alive = {2 * alive} mappings, more than "
                             f"vm.max_map_count ({_procfs.max_map_count()}) less "
                             f"{GUARD_MARGIN}: use guard=False or 'auto'")
    resumptions = requests * per_request
    library = _library(design)
    index = (_entries.kernel_index(design) if library == "core"
             else cxx_designs().index(design) if library == "peers" else -1)
    if timeout is None:
        per = w_ns + 20_000 if library == "python" else w_ns + 5_000
        timeout = 120 + alive * 5e-5 + (warmup + repeats) * 2 * resumptions * per * 1e-9
    timeout = _v.timeout(timeout)
    if library == "peers":
        meta = _machine.row_metadata(cflags=_native.peers_cflags(_native.PEER_BUILD))
    else:
        meta = _machine.row_metadata(BUILD)
    describe = (f"workload {design!r} (alive={alive}, work_ns={w_ns:g}, stack_in_use={in_use}, "
                f"switches_per_request={per_request}, requests={requests}, stack_size={size}, "
                f"guard={guarded}, repeats={repeats})")
    got = _worker.call("labkit.experiments.workload", "worker_run", pin=cpu, describe=describe,
                       timeout=timeout, design=design, library=library, index=index,
                       alive=alive, stack_size=size, guard=guarded, in_use=in_use,
                       work_cycles=w_cycles, work_ns=w_ns, resumptions=resumptions,
                       warmup=warmup, repeats=repeats)
    b, a = got["before"], got["after"]
    memory = {
        "rss_bytes": (a["rss_kb"] - b["rss_kb"]) * 1024,
        "page_table_bytes": (a["pte_kb"] - b["pte_kb"]) * 1024,
        "mappings_added": a["maps"] - b["maps"],
    }
    memory.update({f"{k.replace('_added', '')}_per_coroutine": v / alive
                   for k, v in list(memory.items())})
    common = {
        "design": design, "entry": design, "system": _entries.system(design),
        "kind": _entries.kernel_info(design).kind, "work_ns": w_ns, "work_cycles": w_cycles,
        "work_units": got["units"], "ticks_per_unit": got["ticks_per_unit"], "alive": alive,
        "stack_in_use": in_use, "switches_per_request": per_request, "requests": requests,
        "resumptions": resumptions, "stack_size": size or None, "guard_pages": guarded,
        "reserved_bytes_per_coroutine": (size + (_v.page_size() if guarded else 0))
        if _own_stacks(design) else None,
        # from the top of a coroutine's stack to the start of its bytes in use
        "stack_depth_bytes": got.get("depth") or None,
        "cpu": cpu, **memory, **got["counters"],
    }
    return _frame(got["samples"], common, describe, meta)


def _frame(samples, common, describe, meta):
    import pandas as pd

    resumptions = common["resumptions"]
    rows = []
    for i, s in enumerate(samples):
        if (s["resumptions"] != resumptions or s["switches"] != 2 * resumptions
                or s["counted"] != s["switches"] or s["steps"] != resumptions
                or s["base_steps"] != resumptions):
            raise SwitchCountError(
                f"{describe}: repeat {i} expected {2 * resumptions} switches and "
                f"{resumptions} steps; the loop made {s['switches']} switches, the contexts "
                f"counted {s['counted']} and ran {s['steps']} steps, the baseline "
                f"{s['base_steps']}")
        net, below = floor_net(s["loop_ns"], s["base_ns"])
        rows.append({
            **common, "repeat": i,
            "ns_per_request": s["loop_ns"] / common["requests"],
            "work_only_ns_per_request": s["base_ns"] / common["requests"],
            "ns_per_switch": net / s["switches"],
            # The loop came out no slower than its baseline: "below what one run resolves".
            "below_resolution": below,
            "loop_ns": s["loop_ns"], "loop_ticks": s["loop_ticks"],
            "work_only_ns": s["base_ns"], "work_only_ticks": s["base_ticks"],
            "switches": s["switches"], "counted_switches": s["counted"],
            "steps_counted": s["steps"], "minor_faults": s["minor_faults"],
            "preemptions": s["preemptions"],
            "copied_bytes_per_switch": s["copied_bytes"] / s["switches"],
            **meta,
        })
    return pd.DataFrame(rows)


def requests_for(work_ns: float, switches_per_request: int, *, seconds: float = 0.002,
                 overhead_ns: float = 50.0) -> int:
    """Requests for a timed loop of about `seconds` at work_ns per step (overhead_ns: a guess
    at a step's cost beyond its work, used for sizing only, never in a result)."""
    per = _v.integer_in("switches_per_request", switches_per_request, 1, MAX_SWITCHES_PER_REQUEST)
    s = _v.seconds("seconds", seconds, 60)
    w, _ = _work(work_ns, None, 1.0)
    return max(1, round(s * 1e9 / ((w + overhead_ns) * per)))


def measure_point(designs_, *, processes: int = 3, repeats: int = 2, samples: int = 5,
                  seed: int = 0, stack_sizes=None, **workload):
    """One grid point over `processes` fresh worker processes, each running every design of
    `designs_` `repeats` times in ABBA order (labkit.experiments.verdict_design.run_process; each
    call makes the workload, takes `samples` timed samples of it and undoes it: making N
    coroutines costs far more than a sample, and the median of several sets a preempted
    sample aside). `workload`: run_workload's keywords (requests, alive, ...), the same for
    every design but the stack size, which `stack_sizes` ({design: bytes or None}) may give
    each. Returns the runs (one row per sample, with `side` = design and `worker` =
    process)."""
    if not isinstance(designs_, (list, tuple)) or not designs_:
        raise TypeError("designs_ must be a non-empty list of design names")
    names = [_design(d) for d in designs_]
    n = _v.integer_in("processes", processes, 2, 1000)
    k = _v.integer_in("samples", samples, 1, 1000)
    workload.pop("repeats", None)
    if stack_sizes is not None and not isinstance(stack_sizes, dict):
        raise TypeError(f"stack_sizes must be a dict of design to bytes, not "
                        f"{type(stack_sizes).__name__}")
    sizes = {d: (stack_sizes or {}).get(d, workload.get("stack_size")) for d in names}
    common = {key: v for key, v in workload.items() if key != "stack_size"}
    # run_process asks each call for one repeat of its side: here that is one call
    entries = {d: (lambda repeats, d=d: run_workload(d, repeats=k * repeats,
                                                     stack_size=sizes[d], **common))
               for d in names}
    import pandas as pd

    return pd.concat([verdict_design.run_process(entries, i, repeats=repeats, seed=seed)
                      for i in range(n)], ignore_index=True)


def per_process(runs, col: str = "ns_per_request"):
    """One row per process, one column per design: the median of its calls (what
    labkit.experiments.verdict_design.per_process, as the verdict engine takes it)."""
    return verdict_design.per_process(runs, col)


def summary(runs):
    """Per design: ns_per_request on the log scale and ns_per_switch on the linear one, each
    the mean of the per-process medians with its 95% confidence interval over processes
    (labkit.core.sequential.interval at one look of all of them), and the memory per
    coroutine (median over calls)."""
    import numpy as np
    import pandas as pd

    rows = []
    req, sw = per_process(runs, "ns_per_request"), per_process(runs, "ns_per_switch")
    for d in req.columns:
        r = req[d].dropna().to_numpy(float)
        s = sw[d].dropna().to_numpy(float)
        looks = (len(r),)
        if len(r) >= 2:
            m, lo, hi, _ = _sequential.interval(np.log(r[r > 0]), looks)
            m, lo, hi = math.exp(m), math.exp(lo), math.exp(hi)
            sm, slo, shi, _ = _sequential.interval(s, looks)
        else:
            m = lo = hi = sm = slo = shi = math.nan
        g = runs[runs.side == d]
        rows.append({"design": d, "processes": len(r), "ns_per_request": m,
                     "ns_per_request_low": lo, "ns_per_request_high": hi,
                     "ns_per_switch": max(sm, 0.0), "ns_per_switch_low": max(slo, 0.0),
                     "ns_per_switch_high": max(shi, 0.0),
                     "rss_bytes_per_coroutine": float(g.rss_bytes_per_coroutine.median()),
                     "page_table_bytes_per_coroutine":
                         float(g.page_table_bytes_per_coroutine.median()),
                     "mappings_per_coroutine": float(g.mappings_per_coroutine.median()),
                     "guard_pages": bool(g.guard_pages.iloc[0])})
    return pd.DataFrame(rows)
