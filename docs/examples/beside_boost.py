"""docs/your_switch.md's comparison: my_switch.c beside Boost's fcontext and the lab's asm
and asm_ret, 1,000,000 switches a call, in 16 fresh processes (the process is the unit),
each measuring the four in ABBA order 4 times. Prints each entry's mean over processes of
the per-process median ns/switch with its 95% interval, and my_switch / boost_fcontext.

    .venv/bin/python docs/examples/beside_boost.py
"""
import math
from pathlib import Path

import numpy as np

import labkit
from labkit.core import sequential
from labkit.experiments import verdict_design

PROCESSES = 16
HERE = Path(__file__).resolve().parent

mine = labkit.add_switch(HERE / "my_switch.c", keeps_fp_control=False)
entries = {e: (lambda e: lambda repeats: labkit.measure(e, switches=1_000_000, repeats=repeats))(e)
           for e in (mine, "boost_fcontext", "asm", "asm_ret")}
runs = [verdict_design.run_process(entries, i, repeats=4, seed=32) for i in range(PROCESSES)]
per = {e: [np.median(r[r.side == e].ns_per_switch) for r in runs] for e in entries}
assert all((r.counted_switches == r.switches).all() for r in runs)
info = labkit.machine_info()
print(f"machine: {info['cpu_model']} ({info['machine_id']}), {runs[0].compiler.iloc[0]}")
print(f"{PROCESSES} fresh processes, 4 ABBA repeats each of 1,000,000 switches")
for e, v in per.items():
    m, lo, hi, _ = sequential.interval(v, looks=(PROCESSES,))
    print(f"{e:16s} {m:6.2f} ns/switch  95% [{lo:.2f}, {hi:.2f}]")
logs = [math.log(a / b) for a, b in zip(per[mine], per["boost_fcontext"])]
m, lo, hi, _ = sequential.interval(logs, looks=(PROCESSES,))
print(f"{mine} / boost_fcontext: {math.exp(m):.2f}x  95% [{math.exp(lo):.2f}, {math.exp(hi):.2f}]")
