"""The six-process trial (docs/advisor_calibration.md, "Six processes a point instead of
three: a trial, not a change") read five ways, by which of the six processes each side
keeps. It reads the trial's measurements beside it (made by measure_six_processes.py) and
measures nothing. Its cold switches were measured with no work between switches, so it
reads every one so (busy_ns=0). The model's other terms come from a data/ folder: the table
in the docs used run 22's (`git archive 52adc4c data | tar -x -C /tmp/r22`):

    python docs/calibration/trial_six_processes.py [/tmp/r22/data]
"""
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from labkit.experiments import workload as wl
from labkit.lab.advising import evidence, grid, model

HERE = Path(__file__).parent
READINGS = {"first 3 + first 3": ([0, 1, 2], [0, 1, 2]),
            "last 3 + last 3": ([3, 4, 5], [3, 4, 5]),
            "3 cold + 6 grid": ([0, 1, 2], range(6)),
            "6 cold + 3 grid": (range(6), [0, 1, 2]),
            "6 + 6": (range(6), range(6))}


def with_cold(ev0, cold, workers):
    """ev0 with the cold switches of `workers` only, read as a bundle's are
    (model._cold_from_rows)."""
    frames = {k: v for k, v in ev0.frames.items() if not k.startswith("cold switch ")}
    frames[evidence.COLD_SWITCHES] = cold[cold.worker.isin(list(workers))]
    ev = evidence.Evidence(**{**ev0.__dict__, "frames": frames})
    model._cold_from_rows(ev)
    return ev


def reading(ev0, runs, steps, cold, cold_w, grid_w):
    ev = with_cold(ev0, cold, cold_w)
    rows = []
    for (work, alive, u), point in runs[runs.worker.isin(list(grid_w))].groupby(
            ["work", "alive", "stack_in_use"], sort=False):
        summ = wl.summary(point).set_index("design")
        st = steps[(steps.work == work) & (steps.alive == alive) & (steps.stack_in_use == u)]
        st = st.set_index("layout")
        for d in grid.DESIGNS:
            s = st.loc[model.layout_design(d)]
            step = grid.step_estimate(s.step_first_ns, s.step_second_ns)
            m = summ.loc[d]
            rows.append({"design": d, "work": work, "alive": alive, "stack_in_use": u,
                         "step_ns": step, **grid.prediction(d, step, alive, u, ev, busy_ns=0.0),
                         "measured_ns": m.ns_per_request, "measured_low": m.ns_per_request_low,
                         "measured_high": m.ns_per_request_high,
                         "measured_bytes": (m.rss_bytes_per_coroutine
                                            + m.page_table_bytes_per_coroutine) * alive})
    return grid.finish(pd.DataFrame(rows))


def main(data_dir=None) -> None:
    runs = pd.read_csv(HERE / "six_processes_runs.csv")
    steps = pd.read_csv(HERE / "six_processes_steps.csv")
    cold = pd.read_csv(HERE / "six_processes_cold_switches.csv")
    ev0 = evidence.load(data_dir=data_dir)
    for name, (cw, gw) in READINGS.items():
        g = reading(ev0, runs, steps, cold, cw, gw)
        a = grid.scores(g, on="predicted").set_index("design").loc["all"]
        half = (g.predicted_high - g.predicted_low) / 2 / g.predicted_ns
        by_w = half.groupby(g.work).median()
        meas = np.median((g.measured_high - g.measured_low) / 2 / g.measured_ns)
        print(f"{name:18s} coverage {a.coverage:.1%}  median half-width {a.median_half_width:.1%}"
              f"  score {a.interval_score:.3f}  time error {a.median_time_error:.1%}"
              f"  half-width at W = 0 / 100 cycles / 20 us {by_w['0ns']:.1%} /"
              f" {by_w['100cycles']:.1%} / {by_w['20us']:.1%}  measurement's own {meas:.1%}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
