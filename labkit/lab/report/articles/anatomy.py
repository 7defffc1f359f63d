"""jump_fcontext's anatomy without timing: its stores, loads and instructions counted in
the disassembly of the Boost.Context library installed here (objdump)."""
from __future__ import annotations

import glob
import re
import shutil
import subprocess

import pandas as pd

from labkit.core import results
from labkit.lab.experiment import FP_STATE_AND_RETURN
from labkit.lab.report.articles.measured import _csv


def jump_fcontext_memory_ops(library: str | None = None) -> dict:
    """Stores, loads and instructions in Boost's jump_fcontext, counted in its disassembly
    (objdump): {'stores', 'loads', 'instructions', 'library'}; {} when objdump or the
    library is missing. A static count: what one call executes, as the routine is
    straight-line code."""
    lib = library or next(iter(sorted(glob.glob("/usr/lib/*/libboost_context.so*"))), None)
    if not lib or not shutil.which("objdump"):
        return {}
    try:
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn",
                              "--disassemble=jump_fcontext", lib], capture_output=True,
                             text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return {**count_memory_ops(out), "library": lib}


def count_memory_ops(disassembly: str) -> dict:
    """Count instructions, memory writes and memory reads in objdump's AT&T output of one
    routine. push/stmxcsr/fnstcw and a mov to (...) write; pop/ret/ldmxcsr/fldcw and a mov
    from (...) read; lea touches no memory."""
    stores = loads = n = 0
    for line in disassembly.splitlines():
        m = re.match(r"\s*[0-9a-f]+:\s+([a-z0-9]+)\s*(.*)$", line)
        if not m:
            continue
        op, args = m.group(1), m.group(2).split("#")[0].strip()
        n += 1
        if op.startswith("push") or op in ("stmxcsr", "fnstcw"):
            stores += 1
        elif op.startswith("pop") or op in ("ret", "ldmxcsr", "fldcw"):
            loads += 1
        elif op.startswith("lea") or op.startswith("nop") or op.startswith("endbr"):
            continue
        elif "(" in args:
            # AT&T: the destination is last; memory there is a write, elsewhere a read.
            last = args.rsplit(",", 1)[-1]
            if "(" in last:
                stores += 1
            else:
                loads += 1
    return {"stores": stores, "loads": loads, "instructions": n}


def _anatomy():
    d = _csv(FP_STATE_AND_RETURN.part("anatomy"))
    if d is not None and len(d):
        return d.iloc[0].to_dict()
    return jump_fcontext_memory_ops()


def save_anatomy():
    """Count jump_fcontext's stores, loads and instructions (objdump) and save them as
    data/06_fp_state_and_return_anatomy.csv; returns the counts ({} when objdump or
    Boost.Context is missing: then nothing is saved)."""
    a = jump_fcontext_memory_ops()
    if a:
        results.save_csv(pd.DataFrame([a]), FP_STATE_AND_RETURN.part("anatomy"))
    return a
