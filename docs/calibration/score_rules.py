"""Other interval rules scored on grids already measured (docs/advisor_calibration.md,
"Other rules for the interval, scored on fifteen grids").

Run from the checkout with the lab installed, on grid files or on the committed grid of a
commit: `.venv/bin/python docs/calibration/score_rules.py git:6131269 docs/calibration/grid16_point_by_point.csv`.
Every rule predicts each point of a grid from the grid's other points, as the grid's own
intervals do (grid._intervals); nothing is measured. The rules:
- "as it stands": model.ERROR_RULE with model.ERROR_NEIGHBOURS neighbours;
- "k neighbours": the same with k neighbours;
- "model at its point": the model's value without its own spread, times the neighbours'
  errors (the errors already hold the model's noise at neighbours as steady);
- "within the design" / "within the family": neighbours drawn from the point's design, or
  its family (model.family), only;
- "locally scaled": each error centred on its own neighbours' median and divided by their
  root mean square about it; the point's interval is its neighbours' centre and scale times
  the 2.5% and 97.5% quantiles of those standardised errors over the whole grid.
Last, each grid is scored again under the rule as it stands without the six points the
model misses most often (`asm_fpu` and `boost_fcontext` at 100 cycles among 10,000
contexts): how narrow the intervals would be if the model's one known bias were gone."""
import io
import math
import subprocess
import sys

import numpy as np
import pandas as pd

from labkit.lab.advising import evidence, grid, model

NEED = ("design", "model_ns", "model_low", "model_high", "model_share", "measured_ns")


def read(spec: str) -> pd.DataFrame:
    if spec.startswith("git:"):
        text = subprocess.run(["git", "show", f"{spec[4:]}:data/advisor_calibration.csv"],
                              check=True, capture_output=True, text=True).stdout
        return pd.read_csv(io.StringIO(text))
    return pd.read_csv(spec)


def neighbours(g, i, *, k, within=None, also_out=None):
    r = g.iloc[i]
    out = {g.index[i]} | ({also_out} if also_out is not None else set())
    pool = g.drop(index=list(out))
    if within is not None:
        pool = pool[pool.design.map(within) == within(r.design)]
    saved = model.ERROR_NEIGHBOURS
    model.ERROR_NEIGHBOURS = k
    try:
        return model.request_residuals(pool, r.model_share,
                                       model.own_spread(r.model_low, r.model_high), of="step")
    finally:
        model.ERROR_NEIGHBOURS = saved


def centre_scale(res):
    c = float(np.median(res))
    return c, max(float(np.sqrt(np.mean((res - c) ** 2))), 1e-3)


def intervals(g, *, k=model.ERROR_NEIGHBOURS, own=True, within=None, scaled=False):
    rng = np.random.default_rng(0)
    z = rng.standard_normal(evidence.DRAWS)
    q = [50, 100 * (1 - grid.COVERAGE) / 2, 100 * (1 + grid.COVERAGE) / 2]
    if scaled:
        r = np.log(g.measured_ns.to_numpy(float) / g.model_ns.to_numpy(float))
        cs = [centre_scale(neighbours(g, j, k=k)) for j in range(len(g))]
        std = np.array([(r[j] - c) / s for j, (c, s) in enumerate(cs)])
    mid, low, high = (np.full(len(g), math.nan) for _ in range(3))
    for i in range(len(g)):
        row = g.iloc[i]
        spread = model.own_spread(row.model_low, row.model_high) if own else 0.0
        base = row.model_ns * np.exp(spread * z)
        if scaled:
            c, s = cs[i]
            res = c + s * np.delete(std, i)
        else:
            res = neighbours(g, i, k=k, within=within)
        mid[i], low[i], high[i] = np.percentile(model.with_error(base, res, rng), q)
    return mid, low, high


RULES = {
    "as it stands": {},
    **{f"{k} neighbours": {"k": k} for k in (10, 15, 30, 40, 60)},
    "model at its point": {"own": False},
    "within the design": {"within": lambda d: d},
    "within the family": {"within": model.family},
    "locally scaled": {"scaled": True},
}


def main(specs) -> None:
    rows = []
    for spec in specs:
        g = read(spec)
        if missing := set(NEED) - set(g):
            print(f"{spec}: lacks {sorted(missing)}; skipped", file=sys.stderr)
            continue
        g = g.reset_index(drop=True)
        y = g.measured_ns.to_numpy(float)
        for name, kw in RULES.items():
            mid, low, high = intervals(g, **kw)
            rows.append({"grid": spec, "rule": name,
                         "score": float(np.mean(grid.interval_score(low, high, y))),
                         "coverage": float(np.mean((low <= y) & (y <= high))),
                         "half_width": float(np.median((high - low) / 2 / mid))})
        print(f"{spec}: scored", file=sys.stderr, flush=True)
    d = pd.DataFrame(rows)
    wide = d.pivot(index="grid", columns="rule", values="half_width")[list(RULES)]
    print("median half-width by grid\n", wide.round(3).to_string(), sep="")
    best = d.loc[d.groupby("grid").score.idxmin()].rule.value_counts()
    summary = d.groupby("rule", sort=False).agg(
        score=("score", "mean"), coverage=("coverage", "mean"),
        grids_under_90=("coverage", lambda c: int((c < 0.9).sum())),
        half_width=("half_width", "mean"), grids_at_20=("half_width", lambda h: int((h <= 0.2).sum())))
    summary["best_score_on"] = best.reindex(summary.index).fillna(0).astype(int)
    print(f"\nover {d.grid.nunique()} grids\n", summary.round(3).to_string(), sep="")
    print("\nwithout the six points of the known bias (rule as it stands)")
    for spec in specs:
        g = read(spec)
        if set(NEED) - set(g):
            continue
        biased = (g.design.isin(["asm_fpu", "boost_fcontext"]) & (g.alive == 10_000)
                  & (g.work == "100cycles"))
        for label, x in (("all points", g), ("without them", g[~biased])):
            x = x.reset_index(drop=True)
            mid, low, high = intervals(x)
            y = x.measured_ns.to_numpy(float)
            print(f"{spec} {label}: coverage {np.mean((low <= y) & (y <= high)):.1%}, "
                  f"median half-width {np.median((high - low) / 2 / mid):.1%}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: score_rules.py GRID.csv|git:COMMIT ...")
    main(sys.argv[1:])
