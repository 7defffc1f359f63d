"""The cold switch among N contexts against 2 at several works between switches, as
model.measure_cold measures it (docs/advisor_calibration.md), over 3 fresh processes.

`.venv/bin/python docs/calibration/sweep_cold_by_work.py boost_fcontext,asm_fpu \
    0,38.5,500,2000,5000,20000 1000,10000,100000`
prints, per layout and work, the median over processes of each N's cold switch (ns) and
each process's own."""
import sys

import numpy as np
import pandas as pd

from labkit.experiments import design, workload
from labkit.lab.advising import grid

layouts = sys.argv[1].split(",")
works = [float(x) for x in sys.argv[2].split(",")]
alive = [int(x) for x in sys.argv[3].split(",")]


def run(layout, c, w):
    return lambda repeats: workload.run_workload(
        layout, work_ns=w, alive=c, stack_in_use=0, switches_per_request=1,
        requests=workload.requests_for(w, 1), stack_size=grid.stack_size_for(layout),
        repeats=3 * repeats)


entries = {f"{lay} {c} {w}": run(lay, c, w) for lay in layouts for w in works
           for c in [2, *alive]}
runs = pd.concat([design.run_process(entries, i, repeats=1, seed=7) for i in range(3)],
                 ignore_index=True)
beyond = (runs.ns_per_request - runs.work_only_ns_per_request).rename("beyond")
per = runs.assign(beyond=beyond).groupby(["side", "worker"]).beyond.median().unstack()
for lay in layouts:
    for w in works:
        cells = []
        for n in alive:
            d = per.loc[f"{lay} {n} {w}"] - per.loc[f"{lay} 2 {w}"]
            cells.append(f"N={n}: {np.median(d):6.1f} ({', '.join(f'{x:.0f}' for x in d)})")
        print(f"{lay:15s} W={w:8.1f}  " + "  ".join(cells))
