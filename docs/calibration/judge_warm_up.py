"""The judgement of the warm-up (docs/advisor_calibration.md, "A warm-up that reaches the
steady state"): the median of log(last timed loop / first) within a process, over the
cold switches of asm_fpu and boost_fcontext at 10,000 contexts, from a cold-switch file
(notebook 10's data/10_your_workload_cold_switches.csv, or one kept beside this script).

    python docs/calibration/judge_warm_up.py FILE [FILE ...]
"""
import sys

import numpy as np
import pandas as pd

LAYOUTS = ("asm_fpu", "boost_fcontext")
ALIVE = 10_000
BOUND = 0.05


def drifts(path) -> pd.Series:
    c = pd.read_csv(path)
    s = c[(c.contexts == c.alive) & (c.alive == ALIVE) & c.layout.isin(LAYOUTS)]
    return s.groupby(["layout", "stack_in_use", "worker"]).ns_per_request.agg(
        lambda v: float(np.log(v.iloc[-1] / v.iloc[0])))


if __name__ == "__main__":
    for path in sys.argv[1:]:
        d = drifts(path)
        m = float(d.median())
        print(f"{path}: median {m:+.3f} over {len(d)} processes, {int((d < 0).sum())} fell; "
              f"{'within' if abs(m) <= BOUND else 'outside'} ±{BOUND}")
        print(d.unstack("worker").round(3).to_string())
