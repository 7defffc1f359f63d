"""What can go wrong with a design under a workload, each hazard a sentence with the lab's
own evidence (a check run, a measured row, this machine's limits). A hazard that makes the
design fail the workload (wrong results, or no way to create the coroutines) is `blocking`,
and the ranking puts such designs last.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import labkit
from labkit.core import procfs, validate
from labkit.lab.advising import taxonomy


@dataclass(frozen=True)
class Hazard:
    sentence: str
    blocking: bool


def _fp_check(ev, design: str):
    """labkit.check_fp_control of a labkit kernel, run once per evidence (a worker, <1 s)."""
    key = f"fp check {design}"
    if key not in ev.frames:
        ev.announce(f"the FP-control check of {design}", "the hazard it names needs the "
                    "lab's own evidence, which data/ does not record")
        ev.frames[key] = labkit.check_fp_control(design)
    return ev.frames[key]


def _words(r, side: str) -> str:
    mx, _ = r[f"{side}_set"]
    mx2, _ = r[f"{side}_after"]
    return f"set MXCSR {mx:#06x} and found {mx2:#06x} after switching back"


def fp_leak(ev, design: str, w) -> Hazard | None:
    d = taxonomy.of(design)
    if w.fp != "control" or d.keeps_fp_control:
        return None
    # a design with no switch of the lab's own to check shares the thread's words, as the
    # lab's kernel of libco's design does
    shown = design if (d.family == "stack" and d.system == "labkit") else "libco_design"
    evidence = ""
    if ev.local:
        r = _fp_check(ev, shown)
        if not r["kept"]:
            evidence = f" (the lab's FP-control check of {shown}: main {_words(r, 'main')})"
    how = ("its switch does not save MXCSR and the x87 control word" if shown == design
           else "its coroutines share the thread's MXCSR and x87 control word, as libco's "
                "design does")
    return Hazard(f"FP control leaks between coroutines: {how}, so a rounding mode or "
                  f"exception mask one sets is what the next one runs with{evidence}.", True)


def copy_pointers(ev, design: str, w) -> Hazard | None:
    d = taxonomy.of(design)
    if not d.copies:
        return None
    df = ev.rows("04_latency_ladder_copy_stack")
    evidence = ""
    # The sweep measures the lab's copy stack, not greenlet's: it is no evidence for greenlet.
    if len(df) and "copied_bytes_per_switch" in df and d.family == "copy":
        i = (df.stack_in_use.fillna(0) - w.stack_in_use).abs().idxmin()
        row = df.loc[i]
        evidence = (f" (notebook 04's copy-stack sweep: {int(row.copied_bytes_per_switch)} "
                    f"bytes copied per switch with {int(row.stack_in_use)} in use)")
    what = ("a switch copies a coroutine's used stack out of the shared run stack"
            if d.family == "copy" else
            "greenlet copies slices of the C stack to the heap when it switches")
    return Hazard(f"Pointers into a suspended coroutine's stack are invalid: {what}, so an "
                  f"address of a local handed to another coroutine points at someone "
                  f"else's data after the switch{evidence}.", False)


def _whose(ev, setting: str) -> str:
    """Whose kernel limit a hazard reads: this machine's, even for another machine's
    bundle, which does not record it."""
    if ev.local:
        return f"this machine's {setting}"
    return (f"{setting} of the machine running labkit (the bundle's machine did not record "
            "its own)")


def mapping_limit(ev, design: str, w, mem: dict) -> Hazard | None:
    if not mem["mappings"]:
        return None
    limit = procfs.max_map_count()
    total = mem["mappings_total"]
    per = mem["mappings"]
    if total <= limit:
        return None
    why = ("a guard-paged stack takes two (the PROT_NONE page and the stack)" if per == 2
           else "malloc mmaps each stack this large as a mapping of its own")
    return Hazard(f"{w.alive} coroutines need {total} memory mappings ({why}), more than "
                  f"{_whose(ev, 'vm.max_map_count')} = {limit}: creating them fails near "
                  f"{limit // per} (libdill's wall at 32.7k is this limit).", True)


def swapcontext_syscalls(ev, design: str, w) -> Hazard | None:
    syscall = taxonomy.of(design).syscall
    if syscall is None:
        return None
    lad = ev.rows("04_latency_ladder")
    evidence = ""
    if "entry" in lad:
        u = lad[lad.entry == design].ns_per_switch.median()
        s = lad[lad.entry == "syscall_getppid"].ns_per_switch.median()
        a = lad[lad.entry == "asm_fpu"].ns_per_switch.median()
        if all(map(math.isfinite, (u, s, a))):
            evidence = (f" (notebook 04's ladder: {u:.0f} ns a switch against {s:.0f} ns "
                        f"for a getppid system call and {a:.1f} ns for asm_fpu)")
    return Hazard(f"{design} makes an {syscall} system call on every switch to save and "
                  f"restore the signal mask{evidence}.", False)


def stack_near_size(ev, design: str, w, mem: dict) -> Hazard | None:
    d = taxonomy.of(design)
    size = mem["stack_size"]
    if size is None:
        return None
    frame = d.frame_bytes
    used = w.stack_in_use + frame
    room = size - used
    # A stack the advisor sized is the smallest that holds the stack in use by design: the
    # header says so once, instead of every stackful design saying it again.
    if room >= validate.page_size() or (w.stack_size is None and room >= 0):
        return None
    after = ("the guard page turns an overflow into a crash (07b's guard check measured "
             "the guard's cost)" if d.guard_page
             else "Boost's fixedsize_stack has no guard page, so an overflow silently "
                  "overwrites the heap")
    if room < 0:
        return Hazard(f"The stack in use and the switch's frame ({used} bytes) do not fit "
                      f"the {size}-byte stack: it overflows; {after}.", True)
    return Hazard(f"The stack in use ({used} bytes with the switch's frame) leaves {room} "
                  f"bytes of the {size}-byte stack given: one call deeper than measured "
                  f"overflows, and {after}.", False)


def threads_max(ev, design: str, w) -> Hazard | None:
    if taxonomy.of(design).family != "thread":
        return None
    value = procfs.read_text(procfs.PROC / "sys" / "kernel" / "threads-max")
    if not value or w.alive <= int(value):
        return None
    return Hazard(f"{w.alive} threads are more than {_whose(ev, 'kernel.threads-max')} = "
                  f"{int(value)}.", True)


def _machines(ev, key: str, here):
    """(value, whose): the evidence's machine's `key` (memory_bytes, cpu_count) where its
    bundle records it, else this one's."""
    there = None if ev.local else ev.machine.get(key)
    try:
        there = float(there)
    except (TypeError, ValueError):
        there = None
    if there is not None and there > 0:
        return there, "the bundle's machine's"
    return float(here), "this machine's" if ev.local else "the machine running labkit's"


def memory_wall(ev, design: str, w, mem: dict) -> Hazard | None:
    total = mem["total"]
    phys, whose = _machines(ev, "memory_bytes", validate.physical_memory())
    if not math.isfinite(total) or total <= phys:
        return None
    return Hazard(f"{w.alive} coroutines keep {total / 2**30:.1f} GiB resident, more than "
                  f"{whose} {phys / 2**30:.1f} GiB.", True)


def cpu_load(ev, design: str, w, pred: dict) -> Hazard | None:
    load = pred.get("cpu_load")
    cpus, whose = _machines(ev, "cpu_count", os.cpu_count() or 1)
    if not load or not math.isfinite(load["value"]) or load["value"] <= cpus:
        return None
    return Hazard(f"{w.rate:g} requests a second need {load['value']:.1f} CPUs of "
                  f"{whose} {cpus:g}.", True)


def of(ev, design: str, w, pred: dict) -> list[Hazard]:
    """Every hazard that applies to the design under the workload."""
    mem = pred["memory"]
    found = [fp_leak(ev, design, w), copy_pointers(ev, design, w),
             mapping_limit(ev, design, w, mem), swapcontext_syscalls(ev, design, w),
             stack_near_size(ev, design, w, mem), threads_max(ev, design, w),
             memory_wall(ev, design, w, mem), cpu_load(ev, design, w, pred)]
    return [h for h in found if h is not None]
