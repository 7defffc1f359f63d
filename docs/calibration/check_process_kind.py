"""A follow-up of the six-process trial (docs/advisor_calibration.md): processes like the
model's cold switches' (every layout at 2 and at N contexts) against processes like the
grid's (every design at N), alternating, at W = 0; per process, the median ns per request
at N. Prints the mean log(grid-like / cold-like) by design.

    python docs/calibration/check_process_kind.py N BYTES_IN_USE PAIRS OUT.csv
"""
import sys, zlib, time
import numpy as np, pandas as pd
from labkit.experiments import design as D, workload as wl
from labkit.lab.advising import grid as G, model
N, U, PAIRS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
req = wl.requests_for(0, 1)
def run(d, c):
    return lambda repeats: wl.run_workload(d, work_ns=0, alive=c, stack_in_use=U, switches_per_request=1,
                                           requests=req, stack_size=G.stack_size_for(d), repeats=3 * repeats)
cold = {}
for d in G.DESIGNS:
    for c in (2, N):
        cold[f"{d} {c}"] = run(d, c)
gridlike = {d: run(d, N) for d in G.DESIGNS}
rows = []
t0 = time.time()
for i in range(PAIRS):
    for kind, entries in (("cold", cold), ("grid", gridlike)) if i % 2 == 0 else (("grid", gridlike), ("cold", cold)):
        r = D.run_process(entries, i, repeats=1, seed=zlib.crc32(kind.encode()))
        for side, x in r.groupby("side"):
            d, *c = side.split()
            if c and int(c[0]) != N:
                continue
            rows.append({"kind": kind, "pair": i, "design": d, "ns": x.ns_per_request.median()})
    print(i, round(time.time() - t0), flush=True)
df = pd.DataFrame(rows)
df.to_csv(sys.argv[4], index=False)
p = df.pivot_table(index=["design", "pair"], columns="kind", values="ns")
r = np.log(p.grid / p.cold).groupby(level=0)
print(pd.DataFrame({"mean log(grid/cold)": r.mean(), "sd": r.std(), "n": r.count(),
                    "grid": p.grid.groupby(level=0).apply(lambda v: np.exp(np.log(v).mean())),
                    "cold": p.cold.groupby(level=0).apply(lambda v: np.exp(np.log(v).mean()))}).round(3))
