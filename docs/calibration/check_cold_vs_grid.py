"""Follow-ups of the six-process trial (docs/advisor_calibration.md): is the grid's loop at
N contexts and W = 0 dearer in the grid's processes (every design at N) than in the model's
cold-switch processes (every layout at 2 and at N)? Per process, the median ns per request
at N.
- `kind`: one process of each kind per pair, alternating which goes first; prints the mean
  log(grid / cold) by design.
- `order`: per round, 3 processes of each kind in the grid's own order (cold switches, the
  steps' worker calls, grid) or with the steps first, rounds alternating; prints the mean
  log(grid / cold) by order.

    python docs/calibration/check_cold_vs_grid.py kind|order N BYTES_IN_USE REPEATS OUT.csv
"""
import sys
import zlib

import numpy as np
import pandas as pd

from labkit.experiments import design
from labkit.experiments import workload as wl
from labkit.lab.advising import grid, model


def entries(n: int, u: int):
    """(the cold-switch processes' entries, the grid processes' entries) at W = 0."""
    requests = wl.requests_for(0, 1)

    def run(d, c):
        return lambda repeats: wl.run_workload(
            d, work_ns=0, alive=c, stack_in_use=u, switches_per_request=1, requests=requests,
            stack_size=grid.stack_size_for(d), repeats=3 * repeats)

    return ({f"{d} {c}": run(d, c) for d in grid.DESIGNS for c in (2, n)},
            {d: run(d, n) for d in grid.DESIGNS})


def process(sides, kind: str, index: int, n: int, salt: str) -> list[dict]:
    """One fresh process of `sides`: each design's median ns per request at n contexts."""
    x = design.run_process(sides, index, repeats=1, seed=zlib.crc32(salt.encode()))
    out = []
    for side, y in x.groupby("side"):
        d, *c = side.split()
        if not c or int(c[0]) == n:
            out.append({"kind": kind, "design": d, "ns": y.ns_per_request.median()})
    return out


def geo(v):
    return np.exp(np.log(v).mean())


def by_kind(n: int, u: int, pairs: int) -> pd.DataFrame:
    cold, grid_like = entries(n, u)
    rows = []
    for i in range(pairs):
        both = [("cold", cold), ("grid", grid_like)]
        for kind, sides in both if i % 2 == 0 else both[::-1]:
            rows += [dict(r, pair=i) for r in process(sides, kind, i, n, kind)]
    df = pd.DataFrame(rows)
    p = df.pivot_table(index=["design", "pair"], columns="kind", values="ns")
    r = np.log(p.grid / p.cold).groupby(level=0)
    print(pd.DataFrame({"mean log(grid/cold)": r.mean(), "sd": r.std(), "n": r.count(),
                        "grid": p.grid.groupby(level=0).apply(geo),
                        "cold": p.cold.groupby(level=0).apply(geo)}).round(3))
    return df


def by_order(n: int, u: int, rounds: int) -> pd.DataFrame:
    cold, grid_like = entries(n, u)
    rows = []
    for r in range(rounds):
        order = "cold steps grid" if r % 2 == 0 else "steps cold grid"
        for part in order.split():
            if part == "steps":
                for d in grid.DESIGNS:
                    grid.step_cost(model.layout_design(d), {"work_ns": 0}, n, u,
                                   wl.requests_for(0, 1))
                continue
            for i in range(3):
                rows += [dict(x, order=order, round=r, worker=i) for x in process(
                    cold if part == "cold" else grid_like, part, i, n, f"{part}{r}")]
    df = pd.DataFrame(rows)
    m = df.groupby(["order", "round", "design", "kind"]).ns.apply(geo).unstack("kind")
    m["log_ratio"] = np.log(m.grid / m.cold)
    print(m.groupby(["order", "design"]).log_ratio.agg(["mean", "std", "count"]).round(3))
    print(m.groupby("order").log_ratio.agg(["mean", "std", "count"]).round(3))
    return df


if __name__ == "__main__":
    if len(sys.argv) != 6 or sys.argv[1] not in ("kind", "order"):
        sys.exit("usage: check_cold_vs_grid.py kind|order N BYTES_IN_USE REPEATS OUT.csv")
    check = by_kind if sys.argv[1] == "kind" else by_order
    check(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])).to_csv(sys.argv[5], index=False)
