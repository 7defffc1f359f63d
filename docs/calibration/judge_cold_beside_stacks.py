"""The judgement of "The cold switch beside the work, for stacks only"
(docs/advisor_calibration.md): the committed grid read as measured, with a stack's cold
switch beside the point's busy work, and read again with every cold switch at no work,
both from the cold switches the same run measured (data/10_your_workload_cold_switches.csv);
no switch is measured again (the stack depth, which only memory reads, may be). It reads this
machine's data. The change stands if the first's mean interval score is lower and its
coverage at least 90%.

    python docs/calibration/judge_cold_beside_stacks.py [DATA_DIR]
"""
import sys
from pathlib import Path

import numpy as np

from labkit.core import results
from labkit.lab.advising import evidence, grid, model


def main(data_dir: Path) -> None:
    ev = evidence.load(data_dir=data_dir)
    if not ev.local:
        sys.exit(f"{data_dir} is another machine's data: read it on that machine")
    model._cold_from_rows(ev)  # the run's own cold switches

    def none_again(ev, needs):
        if lacking := [n for n in needs if model._cold_key(*n) not in ev.frames]:
            sys.exit(f"{data_dir} lacks the cold switch {lacking[0]}: its data is not this "
                     "code's")

    model.measure_cold = none_again
    g = results.read_csv(data_dir / "advisor_calibration.csv")
    again = grid.repredict(g, ev)
    cols = ["model_ns", "model_low", "model_high", "model_share"]
    drift = float(np.max(np.abs(again[cols].to_numpy(float) - g[cols].to_numpy(float))
                         / np.abs(g[cols].to_numpy(float)).clip(min=1e-12)))
    if not drift <= 1e-9:
        sys.exit(f"the grid read again differs from {data_dir}'s by {drift:.2g} (relative): "
                 "its data is not this code's")
    readings = {"beside the work (stacks)": g, "no work": grid.cold_at_no_work(g, ev)}
    out = {}
    for name, r in readings.items():
        s = grid.scores(r, on="predicted").set_index("design")
        out[name] = s.loc["all"]
        by_w = r.assign(hw=(r.predicted_high - r.predicted_low) / 2 / r.predicted_ns)
        print(f"{name}: score {s.loc['all', 'interval_score']:.4f}, coverage "
              f"{s.loc['all', 'coverage']:.1%}, median half-width "
              f"{s.loc['all', 'median_half_width']:.1%}, median model error "
              f"{s.loc['all', 'median_model_error']:.1%}")
        print("  by design: " + ", ".join(f"{d} {s.loc[d, 'interval_score']:.3f}"
                                          for d in s.index if d != "all"))
        print("  median half-width by W: " + ", ".join(
            f"{w} {h:.1%}" for w, h in by_w.groupby("work", sort=False).hw.median().items()))
    a, b = out["beside the work (stacks)"], out["no work"]
    stands = a.interval_score < b.interval_score and a.coverage >= grid.TARGETS["coverage"]
    print("the change " + ("stands" if stands else "does not stand"))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("data"))
