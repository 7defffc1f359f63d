"""How grids 14 and 16 judged the cold switches measured point by point
(docs/advisor_calibration.md).

Run from the checkout with the lab installed:
`.venv/bin/python docs/calibration/judge_point_by_point.py grid16`. It measures the model's
cold switches in one block first (as the grid did before), then the grid with its cold
switches point by point, predicts the same measurements from both, and writes the two
grids beside this file, named after the argument."""
import pathlib
import sys
import time

from labkit.lab.advising import evidence, grid, model

here = pathlib.Path(__file__).parent
name = sys.argv[1] if len(sys.argv) > 1 else "grid"
t0 = time.perf_counter()
block = evidence.from_data()
# every work the grid reads a cold switch at (a stack's beside each W: since grid 24)
busy = [0.0, *(grid.work_in_ns(w) for w in grid.WORK)]
model.measure_cold(block, grid.cold_needs(grid.DESIGNS, busy, grid.ALIVE, grid.IN_USE, block))
print(f"block: {time.perf_counter() - t0:.1f} s", flush=True)
g = grid.run_grid(ev=evidence.from_data(), progress=print)
old = grid.repredict(g, block)
g.to_csv(here / f"{name}_point_by_point.csv", index=False)
old.to_csv(here / f"{name}_block.csv", index=False)
for label, x in (("point by point", g), ("block", old)):
    every = grid.scores(x, on="predicted").set_index("design").loc["all"]
    print(f"{label}: interval score {every.interval_score:.3f}, coverage {every.coverage:.1%}, "
          f"median half-width {every.median_half_width:.1%}")
