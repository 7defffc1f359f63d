"""A replication of notebook 10's grid with the code as it stands, nothing written to data/:
the lab's data/ is copied to DIR, the grid and the cold switches it measured are written
there as notebook 10 writes them, and judge_cold_beside_stacks.py can read DIR as it reads
data/.

    python docs/calibration/replicate_grid.py DIR
"""
import shutil
import sys
import time
from pathlib import Path

from labkit.lab.advising import evidence, grid, model
from labkit.lab.analysis import your_workload as yw


def main(out: Path) -> None:
    if out.exists():
        sys.exit(f"{out} exists: give a new directory")
    shutil.copytree("data", out, ignore=shutil.ignore_patterns("checkpoints"))
    ev = evidence.load(data_dir=out)
    began = time.time()
    g = grid.run_grid(ev=ev, progress=print)
    print(f"grid: {time.time() - began:.0f} s")
    g.to_csv(out / f"{yw.GRID}.csv", index=False)
    model.cold_rows(ev).to_csv(out / f"{evidence.COLD_SWITCHES}.csv", index=False)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: replicate_grid.py DIR")
    main(Path(sys.argv[1]))
