"""The held-out set (labkit.lab.advising.holdout): its draw, fixed before measuring, and a
quick run's rows, measured and advised as a grid point is."""
import math

import numpy as np
import pytest

from labkit.core import entries, validate
from labkit.lab.advising import grid, holdout, taxonomy


def test_the_draw_is_fixed_and_spans_what_the_issue_asks():
    d = holdout.draw()
    assert d.equals(holdout.draw())  # the seed, not the clock
    assert len(d) == holdout.COUNT >= 20
    assert d.alive.between(*holdout.ALIVE).all() and d.alive.max() > 10_000
    assert d.stack_in_use.between(*holdout.IN_USE).all()
    assert (d.work_ns == 0).any() and d.work_ns.max() <= holdout.WORK_NS[1]
    assert d[d.work_ns > 0].work_ns.min() >= holdout.WORK_NS[0]
    powers = d.stack_size.map(lambda s: s & (s - 1) == 0)
    assert powers.any() and not powers.all()
    # every stack given holds the bytes in use, each grid design's frame and its calls
    for r in d.itertuples():
        for design in grid.DESIGNS:
            if taxonomy.of(design).family == "stack":
                assert r.stack_size >= (r.stack_in_use + entries.frame_bytes(design)
                                        + validate.ENTRY_HEADROOM), (r, design)
    # off the grid: no workload sits at a grid point
    on = {(w, n, u) for w in (0.0,) for n in grid.ALIVE for u in grid.IN_USE}
    assert not any((r.work_ns, r.alive, r.stack_in_use) in on for r in d.itertuples())
    with pytest.raises(ValueError, match="count"):
        holdout.draw(count=0)


def test_a_quick_holdout_measures_and_advises_each_workload():
    g = holdout.run(quick=True, processes=2, samples=1)
    q = holdout.QUICK
    assert len(g) == q["count"] * len(q["designs"]) and set(g.design) == set(q["designs"])
    for col in ("advice_ns", "advice_low", "advice_high", "measured_ns", "advice_bytes",
                "measured_bytes", "warm_step_ns"):
        assert np.isfinite(g[col]).all() and (g[col] > 0).all(), col
    assert ((g.advice_low <= g.advice_ns) & (g.advice_ns <= g.advice_high)).all()
    assert (g.advice_model_ns >= g.warm_step_ns).all()  # the work stated, and what N and u add
    stack = g[g.design == "asm_fpu"]
    assert (stack.run_stack_size == stack.stack_size).all()
    assert g[g.design == "cxx20_generator"].run_stack_size.isna().all()
    s = holdout.scores(g).set_index("design")
    assert s.loc["all", "points"] == len(g)
    assert s.loc["all", "coverage"] == pytest.approx(g.advice_covered.mean())
    assert math.isclose(s.loc["all", "median_time_error"], np.median(np.abs(g.advice_error)))


def test_holdout_rejects_a_bad_argument():
    with pytest.raises(TypeError, match="quick"):
        holdout.run(quick="yes")
    with pytest.raises(ValueError, match="design"):
        holdout.run(quick=True, designs=["no_such_design"])


def test_labkit_holdout_draw_prints_the_set(capsys):
    from labkit.lab import cli

    assert cli.main(["holdout", "--draw"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["workload", "work_ns", "alive", "stack_in_use", "stack_size"]
    assert len(out) == holdout.COUNT + 1
