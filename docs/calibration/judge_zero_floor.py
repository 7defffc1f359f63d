"""The judgement of "Zeros apart" (docs/advisor_calibration.md): each grid's intervals under
the amended rule with its floor as it is now (model.ERROR_FLOORS, 1e-9) and with the floor
it had before (1e-4), from the grid's own model and measurements; nothing is measured. The
change stands on a grid if its mean interval score is lower and its coverage at least 90%.

    python docs/calibration/judge_zero_floor.py data/advisor_calibration.csv [git:COMMIT ...]
"""
import sys

import pandas as pd

from labkit.lab.advising import grid, model
from score_rules import read  # beside this script: a grid file, or git:COMMIT's data/

BEFORE = 1e-4


def under(g, floor: float) -> pd.Series:
    saved = model.ERROR_FLOORS[model.ERROR_RULE]
    model.ERROR_FLOORS[model.ERROR_RULE] = floor
    try:
        return grid.scores(grid.finish(g), on="predicted").set_index("design").loc["all"]
    finally:
        model.ERROR_FLOORS[model.ERROR_RULE] = saved


def main(specs) -> None:
    now = model.ERROR_FLOORS[model.ERROR_RULE]
    for spec in specs:
        g = read(spec)
        a, b = under(g, now), under(g, BEFORE)
        stands = a.interval_score < b.interval_score and a.coverage >= grid.TARGETS["coverage"]
        print(f"{spec}: floor {now:g}: score {a.interval_score:.4f}, coverage {a.coverage:.1%}, "
              f"median half-width {a.median_half_width:.1%}; floor {BEFORE:g}: score "
              f"{b.interval_score:.4f}, coverage {b.coverage:.1%}, median half-width "
              f"{b.median_half_width:.1%}; {'stands' if stands else 'does not stand'}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: judge_zero_floor.py GRID.csv|git:COMMIT ...")
    main(sys.argv[1:])
