"""How grids 17 and 18 judged the cold switch measured beside the busy work
(docs/advisor_calibration.md).

Run from the checkout with the lab installed:
`.venv/bin/python docs/calibration/judge_cold_beside_work.py grid17`. It runs the grid
(the cold switches of each N and u beside each W's busy work, up to 2 µs), predicts the
same measurements again with every cold switch read as measured with no work, and writes
the two grids beside this file, named after the argument."""
import pathlib
import sys
import time

from labkit.lab.advising import evidence, grid

here = pathlib.Path(__file__).parent
name = sys.argv[1] if len(sys.argv) > 1 else "grid"
t0 = time.perf_counter()
ev = evidence.from_data()
g = grid.run_grid(ev=ev, progress=print)
print(f"grid: {time.perf_counter() - t0:.1f} s", flush=True)
none = grid.cold_beside_no_work(g, ev)
g.to_csv(here / f"{name}_beside_work.csv", index=False)
none.to_csv(here / f"{name}_no_work.csv", index=False)
for label, x in (("beside the work", g), ("no work", none)):
    every = grid.scores(x).set_index("design").loc["all"]
    print(f"{label}: interval score {every.interval_score:.3f}, coverage {every.coverage:.1%}, "
          f"median half-width {every.median_half_width:.1%}")
