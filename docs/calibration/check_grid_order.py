"""A follow-up of the six-process trial (docs/advisor_calibration.md): the grid's own order
at one N and u and W = 0 (3 cold-switch processes, the steps' worker calls, 3 grid
processes) against the steps first, then the cold switches, then the grid; rounds
alternate. Prints the mean log(grid / cold) of each design's loop at N, by order.

    python docs/calibration/check_grid_order.py N BYTES_IN_USE ROUNDS OUT.csv
"""
import sys, zlib, time
import numpy as np, pandas as pd
from labkit.experiments import design as D, workload as wl
from labkit.lab.advising import grid as G, model
N, U, ROUNDS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
req = wl.requests_for(0, 1)
def run(d, c):
    return lambda repeats: wl.run_workload(d, work_ns=0, alive=c, stack_in_use=U, switches_per_request=1,
                                           requests=req, stack_size=G.stack_size_for(d), repeats=3 * repeats)
cold = {f"{d} {c}": run(d, c) for d in G.DESIGNS for c in (2, N)}
gridlike = {d: run(d, N) for d in G.DESIGNS}
def procs(entries, kind, r):
    out = []
    for i in range(3):
        x = D.run_process(entries, i, repeats=1, seed=zlib.crc32(f"{kind}{r}".encode()))
        for side, y in x.groupby("side"):
            d, *c = side.split()
            if c and int(c[0]) != N:
                continue
            out.append({"kind": kind, "round": r, "design": d, "worker": i, "ns": y.ns_per_request.median()})
    return out
def steps():
    for d in G.DESIGNS:
        G.step_cost(model.layout_design(d), {"work_ns": 0}, N, U, req)
rows = []
for r in range(ROUNDS):
    order = "cold steps grid" if r % 2 == 0 else "steps cold grid"
    for part in order.split():
        if part == "steps":
            steps()
        else:
            rows += [dict(x, order=order) for x in procs(cold if part == "cold" else gridlike, part, r)]
    print(r, order, flush=True)
df = pd.DataFrame(rows); df.to_csv(sys.argv[4], index=False)
m = df.groupby(["order", "round", "design", "kind"]).ns.apply(lambda v: np.exp(np.log(v).mean())).unstack("kind")
m["log_ratio"] = np.log(m.grid / m.cold)
print(m.groupby(["order", "design"]).log_ratio.agg(["mean", "std", "count"]).round(3))
print(m.groupby("order").log_ratio.agg(["mean", "std", "count"]).round(3))
