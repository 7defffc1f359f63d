"""Timing: labkit.measure times one kernel's ping-pong in a worker process, one row per repeat."""
from __future__ import annotations

from labkit.core import counters as _counters
from labkit.core import entries as _entries
from labkit.core import machine as _machine
from labkit.core import systems as _systems
from labkit.core import validate as _v
from labkit.core import worker as _worker
from labkit.core.stats import floor_net
from labkit.errors import ParameterError, SwitchCountError
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).


def _default_timeout(switches: int, runs: int) -> float:
    # Generous: 5 us a switch is 20x the slowest kernel here (ucontext), plus start-up.
    return 60.0 + runs * switches * 5e-6


def measure(entry: str | None = None, *, source=None, python=None,
            keeps_fp_control: bool | None = None,
            stack_size: int | None = None, switches: int = 1_000_000,
            repeats: int = 10, warmup: int = 1, cpu: int | None = None,
            prefault: bool | None = None, build: str | None = None, fp_control: str = "as-is",
            stack_in_use: int | None = None, timeout: float | None = None):
    """Time `switches` switches between two contexts with `entry` (a kernel or a peer, as
    labkit.catalogue() names them; or, instead of entry, `source`: a user's own switch, a
    .c, .cpp or .so file defining lk_user_make and lk_user_swap, built, checked and added
    as labkit.add_switch(source, keeps_fp_control=...) does; or `python`: a user's
    Python-level switch, "package.module:factory", imported, checked and added as
    labkit.add_switch(python=...) does), `repeats` times after
    `warmup` dropped runs, in a worker process. Returns a DataFrame with one row per repeat:
    ns and cycle-counter ticks per switch with the empty loop's cost subtracted
    (`ns_per_switch`, `ticks_per_switch`; floored at 0, with `below_resolution` True where
    the loop was no slower than its baseline), the raw and baseline figures, page faults,
    the switch counters' check, and the machine and build metadata.

    stack_size is in bytes (None: 64 KiB; must stay None for the stackless kernel);
    it is rounded up to whole pages and the real size is recorded. cpu pins the worker
    to one CPU. prefault touches the whole stack before timing (labkit's stackful kernels:
    default True; must stay None for the others, whose stacks are not labkit's). build picks one of the
    C core's optimisation-level builds (labkit.builds(): "O0" ... "O2-native") instead
    of the extension's own (-O2); the peers (labkit.catalogue().query("system == 'peer'"))
    always come from such a build, "O2" by default. fp_control: "as-is"; "same" (both contexts hold the
    default FP control words); "differ" (main did an inexact division after making the
    other context, so on x86-64 their MXCSRs differ in the sticky PE flag).
    stack_in_use (copy_stack only; None: 0): bytes each coroutine holds on its stack, beyond
    its frames, when it switches; the `copied_bytes_per_switch` column says what the
    switches really copied."""
    if source is not None or python is not None:
        given, switch = ("source", source) if source is not None else ("python", python)
        if entry is not None:
            raise ParameterError("entry", f"must be left unset (None) when {given} is given "
                                 f"(the {given} switch is the entry); got entry={entry!r}, "
                                 f"{given}={switch!r}")
        from labkit.core import user_switch

        # add_switch refuses source with python, and keeps_fp_control with python.
        entry = user_switch.add_switch(source, python=python,
                                       keeps_fp_control=keeps_fp_control, timeout=timeout)
    elif keeps_fp_control is not None:
        raise ParameterError("keeps_fp_control", "must be left unset (None) without source: it "
                             "declares what a user's switch does with the FP control words")
    elif entry is None:
        raise TypeError("measure needs an entry (a catalogue name), a source (a user's "
                        "switch: a .c, .cpp or .so file) or python (a user's Python switch: "
                        "'package.module:factory')")
    kernel = _entries.check_name(entry)
    size = _entries.check_stack_size(kernel, stack_size)
    in_use = _stack_in_use(kernel, size, stack_in_use)
    switches = _v.switches(switches)
    repeats = _v.repeats(repeats)
    warmup = _v.warmup(warmup)
    cpu = _v.cpu(cpu)
    # The one place measure tells the systems apart: each system's record builds its job.
    job = _systems.of(kernel).job(kernel, size, prefault, build, fp_control)
    args = {**job.args, **({} if in_use is None else {"stack_in_use": in_use})}
    timeout = _v.timeout(timeout) or _default_timeout(switches, repeats + warmup)
    # Before the run: TSC calibration uses the worker.
    meta = {**_machine.row_metadata(cflags=job.cflags), **job.meta}
    describe = (f"kernel {kernel!r} (stack_size={size}, switches={switches}, "
                f"repeats={repeats}, cpu={cpu}, build={job.build or 'extension'})")
    out = _worker.call("labkit.core.systems", job.function, pin=cpu, describe=describe,
                       timeout=timeout, stack_size=size or 0, rounds=switches // 2,
                       warmup=warmup, repeats=repeats, **args)
    common = {"entry": kernel, "kind": _entries.kernel_info(kernel).kind,
              "pattern": "pingpong", "contexts": 2, "stack_size_requested": stack_size,
              "stack_size": size, "colour_step": 0, "prefault": job.prefault, "cpu": cpu,
              "build": job.build_column, "fp_control": job.fp_control,
              "stack_in_use": in_use}
    return _frame(out["samples"], switches, describe, common, resumptions=switches // 2,
                  meta=meta, counts=counted_columns(out["counters"], warmup, repeats))


def _stack_in_use(kernel, size, value) -> int | None:
    """stack_in_use checked: None for the kernels that copy no stack, else bytes that fit
    on the run stack beside the frame and the entry's own headroom."""
    if kernel not in _entries.COPIES_STACK:
        if value is not None:
            raise ParameterError("stack_in_use", f"must be left unset (None) for {kernel!r}: "
                                 f"only {', '.join(_entries.COPIES_STACK)} copies its stack; "
                                 f"got {value!r}")
        return None
    hi = size - _entries.frame_bytes(kernel) - _v.ENTRY_HEADROOM
    return _v.integer_in("stack_in_use", 0 if value is None else value, 0, hi,
                         f" bytes (the {size}-byte stack_size less the frame and headroom)")




def counted_columns(counts: dict, warmup: int, repeats: int, baseline: bool = True) -> dict:
    """The OS's counters of one measurement (labkit.core.counters), as row columns,
    with what they cover: the whole worker call, so every row of it shows the same."""
    cover = (f"whole measurement: {warmup} warm-up + {repeats} repeat{'s' * (repeats != 1)}"
             + (", with baseline loops" if baseline else ""))
    return {**counts, "counters_cover": cover}


def _frame(samples, expected, describe, common, resumptions, meta, counts):
    """One row per repeat, net of the empty loop; refuses runs whose counters disagree.
    counts: the OS's counters of the measurement, put beside the lab's own count."""
    import pandas as pd

    rows = []
    for i, s in enumerate(samples):
        n = s["switches"]
        if s["counted"] != n or n != expected:
            raise SwitchCountError(
                f"{describe}: repeat {i} expected {expected} switches, the loop made {n} "
                f"and the contexts counted {s['counted']}"
            )
        net_ns, below = floor_net(s["loop_ns"], s["base_ns"])
        net_ticks, _ = floor_net(s["loop_ticks"], s["base_ticks"])
        rows.append({
            **common,
            "repeat": i,
            "switches": n,
            "ns_per_switch": net_ns / n,
            "ticks_per_switch": net_ticks / n,
            "ns_per_resumption": net_ns / resumptions,
            # The loop came out no slower than its empty baseline: ns_per_switch is 0
            # here and means "below what one run can resolve"; raw and baseline say more.
            "below_resolution": below,
            "ns_per_switch_raw": s["loop_ns"] / n,
            "baseline_ns_per_switch": s["base_ns"] / n,
            "ticks_per_ns": s["loop_ticks"] / s["loop_ns"] if s["loop_ns"] else float("nan"),
            "minor_faults": s["minor_faults"],
            "copied_bytes_per_switch": s.get("copied_bytes", 0) / n,  # Python peers: none
            # FP/SIMD state components in use after the loop (x86-64 XINUSE), as hex.
            "xinuse": None if s.get("xinuse") in (None, -1) else f"{s['xinuse']:#x}",
            "counted_switches": s["counted"],
            **counts,
            **meta,
        })
    return pd.DataFrame(rows)


MAX_CONTEXTS = 65536


def ring_switches_per_lap(contexts: int, asymmetric: bool) -> int:
    """Transfers in one lap of `contexts` contexts: a symmetric ring makes contexts + 1, a
    scheduler resuming each in turn (asymmetric) 2 * contexts. Read from the C core, which
    counts its laps by the same function."""
    from labkit.core import _core

    return int(_core.ring_switches_per_lap(contexts, asymmetric))


def measure_ring(kernel: str, *, contexts: int, asymmetric: bool = False, laps: int = 1000,
                 stack_size: int | None = None, colour_step: int = 0, repeats: int = 10,
                 warmup: int = 1, cpu: int | None = None, prefault: bool = False,
                 timeout: float | None = None):
    """Time `contexts` stackful contexts switching `laps` times around a symmetric ring
    (main -> c0 -> ... -> c(N-1) -> main: N+1 switches a lap) or, with asymmetric=True,
    resumed in turn by a scheduler (main -> c(i) -> main: 2N switches a lap).
    One row per repeat: ns per switch and per useful resumption (N a lap), net of the
    empty loop. colour_step > 0 moves stack i's top down by (i mod 1024) * colour_step
    bytes (stack colouring). Stacks are not prefaulted by default: only the pages the
    contexts touch are committed."""
    kernel = _entries.check_name(kernel)
    system = _systems.of(kernel)
    if "ring" not in system.applies:
        raise ParameterError("kernel", f"must be one of labkit's own kernels or a user switch "
                             f"for a ring; {kernel!r} is a {system.what}")
    if _entries.kernel_info(kernel).kind != "stackful":
        raise ParameterError("kernel", f"must be stackful for a ring; {kernel!r} is stackless")
    if kernel in _entries.COPIES_STACK:
        raise ParameterError("kernel", f"must have a stack of its own per context for a ring; "
                             f"{kernel!r} contexts share one run stack (use labkit.measure)")
    n = _v.integer_in("contexts", contexts, 1, MAX_CONTEXTS)
    asymmetric = _v.flag("asymmetric", asymmetric)
    laps = _v.integer_in("laps", laps, 1, _v.MAX_SWITCHES)
    size = _entries.check_stack_size(kernel, stack_size)
    step = _v.integer_in("colour_step", colour_step, 0, 4096, " bytes")
    repeats, warmup = _v.repeats(repeats), _v.warmup(warmup)
    cpu = _v.cpu(cpu)
    prefault = _v.flag("prefault", prefault)
    span = size + 1024 * step
    if prefault and n * span > _v.physical_memory() // 2:
        raise ValueError(
            f"contexts * stack_size = {n * span} bytes would be prefaulted, more than half of "
            f"this machine's memory ({_v.physical_memory()} bytes): use prefault=False "
            "(only touched pages are committed) or fewer/smaller stacks")
    switches = laps * ring_switches_per_lap(n, asymmetric)
    if switches > _v.MAX_SWITCHES:
        raise ValueError(f"laps * switches per lap must be at most {_v.MAX_SWITCHES}; "
                         f"got {switches}")
    timeout = _v.timeout(timeout) or _default_timeout(switches, repeats + warmup) + n * 0.01
    # The build's flags and metadata, as measure records them for this entry.
    job = system.job(kernel, size, False, None, "as-is")
    meta = {**_machine.row_metadata(cflags=job.cflags), **job.meta}
    pattern = "scheduler" if asymmetric else "ring"
    describe = (f"kernel {kernel!r} {pattern} of {n} (stack_size={size}, "
                f"colour_step={step}, laps={laps}, repeats={repeats}, cpu={cpu})")
    module, function, args = system.ring(kernel)
    out = _worker.call(
        module, function, pin=cpu, n=n, asymmetric=asymmetric, stack_size=size,
        colour_step=step, prefault=prefault, laps=laps, warmup=warmup, repeats=repeats,
        describe=describe, timeout=timeout, **args)
    common = {"entry": kernel, "kind": "stackful", "pattern": pattern, "contexts": n,
              "stack_size_requested": stack_size, "stack_size": size, "colour_step": step,
              "prefault": prefault, "cpu": cpu, "laps": laps}
    return _frame(out["samples"], switches, describe, common, resumptions=laps * n, meta=meta,
                  counts=counted_columns(out["counters"], warmup, repeats))


# ---- run in the worker process (labkit.core.worker.call) ----

def worker_ring(kernel: int, n: int, asymmetric: bool, stack_size: int, colour_step: int,
                prefault: bool, laps: int, warmup: int, repeats: int) -> dict:
    """A ring (or, asymmetric, a scheduler) of n contexts."""
    from labkit.core import _core

    return _counters.counted(lambda: _core.ring(kernel, n, asymmetric, stack_size,
                                                colour_step, prefault, laps, warmup, repeats))
