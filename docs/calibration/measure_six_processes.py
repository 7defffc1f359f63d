"""How the six-process trial was measured (docs/advisor_calibration.md, "Six processes a
point instead of three"): notebook 10's grid with every point and every cold switch over 6
fresh processes (the cold switches with no work between switches, as the model then read
them), kept process by process in the three files trial_six_processes.py reads.
Nothing is written to data/. About 4 minutes on the EPYC VM.

    python docs/calibration/measure_six_processes.py OUT_FOLDER
"""
import itertools
import sys
from pathlib import Path

import pandas as pd

from labkit.core.machine import machine_info
from labkit.experiments import workload as wl
from labkit.lab.advising import evidence, grid, model

PROCESSES = 6
KEEP = ["design", "work_ns", "alive", "stack_in_use", "guard_pages", "rss_bytes_per_coroutine",
        "page_table_bytes_per_coroutine", "mappings_per_coroutine", "repeat", "ns_per_request",
        "work_only_ns_per_request", "ns_per_switch", "side", "worker", "order", "machine_id",
        "labkit_commit"]


def main(out: Path) -> None:
    model.SPOT_PROCESSES = PROCESSES  # the model's cold switches over 6 processes too
    ev = evidence.load()
    ghz = machine_info()["tsc_ghz"]
    runs, steps = [], []
    for n, u in itertools.product(grid.ALIVE, grid.IN_USE):
        model.measure_cold(ev, grid.cold_needs(grid.DESIGNS, [0.0], [n], [u], ev))
        for work in grid.WORK:
            kw = grid._work(work)
            w_ns = grid._workload_ns(kw, ghz)
            requests = wl.requests_for(w_ns, grid.SUSPENSIONS)
            layouts = list(dict.fromkeys(model.layout_design(d) for d in grid.DESIGNS))
            before = {r: grid.step_cost(r, kw, n, u, requests) for r in layouts}
            point = wl.measure_point(list(grid.DESIGNS), processes=PROCESSES, repeats=1,
                                     samples=3, seed=hash((work, n, u)) % 1000, alive=n,
                                     stack_in_use=u, switches_per_request=grid.SUSPENSIONS,
                                     requests=requests, **kw)
            after = {r: grid.step_cost(r, kw, n, u, requests) for r in layouts}
            runs.append(point[KEEP].assign(work=work))
            steps += [{"work": work, "work_ns": w_ns, "alive": n, "stack_in_use": u,
                       "layout": r, "step_first_ns": before[r], "step_second_ns": after[r]}
                      for r in layouts]
            print(f"{work} {n} {u}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    pd.concat(runs, ignore_index=True).to_csv(out / "six_processes_runs.csv", index=False)
    pd.DataFrame(steps).to_csv(out / "six_processes_steps.csv", index=False)
    model.cold_rows(ev).to_csv(out / "six_processes_cold_switches.csv", index=False)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: measure_six_processes.py OUT_FOLDER")
    main(Path(sys.argv[1]))
