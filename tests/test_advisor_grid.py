"""The calibration grid (labkit.lab.advising.grid): the quick grid's rows, and its scores
and prediction intervals on synthetic grids of known truth."""

import math

import numpy as np
import pandas as pd
import pytest

from labkit.lab.advising import cold, evidence, grid, inputs, model, model_error

NEEDED = {"design", "work_ns", "alive", "stack_in_use", "predicted_ns", "predicted_low",
          "predicted_high", "measured_ns", "measured_low", "measured_high", "processes",
          "predicted_bytes", "measured_bytes", "error", "covered", "warm_step_ns", "advice_ns",
          "advice_low", "advice_high", "advice_error", "advice_covered", "advice_bytes"}


@pytest.fixture(scope="module")
def quick_ev():
    return evidence.load(quick=True)


@pytest.fixture(scope="module")
def quick_grid(quick_ev):
    return grid.run_grid(quick=True, processes=2, samples=1, ev=quick_ev)


def test_the_quick_grid_read_with_every_cold_switch_at_no_work(quick_grid, quick_ev):
    """The grid measures a stack's cold switch beside each W and with none; read at none,
    only the stack's predictions with work move, and nothing is measured again."""
    before = len(quick_ev.measured_now)
    other = grid.cold_at_no_work(quick_grid, quick_ev)
    assert len(quick_ev.measured_now) == before
    assert (other.work_ns == quick_grid.work_ns).all()
    moved = (quick_grid.design == "asm_fpu") & (quick_grid.work_ns > 0)
    assert np.isclose(other.model_ns, quick_grid.model_ns)[~moved].all()
    # both of the stack's readings were measured, before the points (at 64 contexts
    # either may floor at 0, so their values are not compared)
    rows = cold.cold_rows(quick_ev)
    stated = {float(f"{min(x, cold.COLD_WORK_CAP_NS):g}")  # as a cold switch's key keeps it
              for x in quick_grid[quick_grid.design == "asm_fpu"].warm_step_ns}
    # and beside the work the advice is given, the point's in one warm context
    assert set(rows[rows.layout == "asm_fpu"].work_ns) == {0.0, cold.COLD_WORK_CAP_NS,
                                                           *stated}
    assert set(rows[rows.layout == "cxx20_generator"].work_ns) == {0.0}


def test_quick_grid_has_every_column_and_one_row_per_point_and_design(quick_grid, tmp_path):
    g = quick_grid
    q = grid.QUICK
    assert NEEDED <= set(g.columns)
    assert len(g) == len(q["designs"]) * len(q["work"]) * len(q["alive"]) * len(q["in_use"])
    assert set(g.design) == set(q["designs"])
    assert not g.duplicated(["design", "work_ns", "alive", "stack_in_use"]).any()
    assert (g.processes == 2).all()
    for col in ("predicted_ns", "measured_ns", "measured_bytes", "predicted_bytes", "step_ns",
                "advice_ns", "advice_bytes", "warm_step_ns"):
        assert (g[col] > 0).all() and np.isfinite(g[col]).all(), col
    assert ((g.predicted_low <= g.predicted_ns) & (g.predicted_ns <= g.predicted_high)).all()
    assert ((g.advice_low <= g.advice_ns) & (g.advice_ns <= g.advice_high)).all()
    # the advice is given the work in one warm context: its centre never falls under it
    assert (g.advice_model_ns >= g.warm_step_ns).all()
    assert (g.advice_touch_ns >= 0).all() and np.isfinite(g.advice_touch_ns).all()
    inside = (g.advice_low <= g.measured_ns) & (g.measured_ns <= g.advice_high)
    assert g.advice_covered.dtype == bool and (g.advice_covered == inside).all()
    # the advice's scores are the headline; the step-fed diagnosis's are kept beside them
    s = grid.scores(g)
    assert s.set_index("design").loc["all", "coverage"] == pytest.approx(inside.mean())
    assert grid.scores(g, on="predicted").set_index("design").loc["all", "coverage"] == \
        pytest.approx(g.covered.mean())
    assert ((g.measured_low <= g.measured_ns) & (g.measured_ns <= g.measured_high)).all()
    # Each point carries the W it asked for (whether a request took longer than W is a
    # timing, which a shared machine cannot promise in a test).
    assert sorted(set(g.work)) == sorted(q["work"]) and g.work_ns.nunique() == len(q["work"])
    assert np.allclose(g.error, g.predicted_ns / g.measured_ns - 1)
    assert np.allclose(g.step_ns, np.minimum(g.step_first_ns, g.step_second_ns))
    inside = (g.predicted_low <= g.measured_ns) & (g.measured_ns <= g.predicted_high)
    assert g.covered.dtype == bool and (g.covered == inside).all()
    path = tmp_path / "advisor_calibration.csv"
    g.to_csv(path, index=False)
    back = pd.read_csv(path)
    assert NEEDED <= set(back.columns) and back.covered.dtype == bool


def test_a_grid_just_run_gives_the_advisor_its_error(quick_grid):
    ev = evidence.Evidence("a copy", {}, dict(evidence.load(quick=True).frames), local=False)
    grid.calibrate(ev, quick_grid)
    w = inputs.workload("0ns", 1, 64, 0, stack_size="64KiB")
    p = model.predict_full("asm_fpu", w, ev)
    n = min(model_error.ERROR_NEIGHBOURS, len(quick_grid))
    assert any(f"model's error at {n} points" in note for note in p["notes"]), p["notes"]
    bare = model.predict_full("asm_fpu", w, ev, model_error=False)["ns_per_request"]
    assert p["ns_per_request"]["high"] - p["ns_per_request"]["low"] > bare["high"] - bare["low"]


def _synthetic(errors_a, errors_b, half=0.1):
    rows = []
    for d, errs in (("A", errors_a), ("B", errors_b)):
        for i, e in enumerate(errs):
            truth = 100.0 * (i + 1)
            rows.append({"design": d, "work_ns": 0.0, "predicted_ns": truth,
                         "predicted_low": truth * (1 - half), "predicted_high": truth * (1 + half),
                         "measured_ns": truth / (1 + e), "measured_low": truth / (1 + e) * 0.9,
                         "measured_high": truth / (1 + e) * 1.1,
                         "predicted_bytes": 1000.0, "measured_bytes": 1000.0 / (1 + e / 2)})
    return pd.DataFrame(rows)


def test_scores_on_a_grid_of_known_truth():
    # prediction / measurement - 1 is e by construction; the interval is ±10%
    a = [0.0, 0.05, -0.05, 0.2, -0.3]
    b = [0.01, 0.02, 0.5, -0.04, 0.08]
    s = grid.scores(_synthetic(a, b), on="predicted").set_index("design")
    for d, errs in (("A", a), ("B", b)):
        covered = np.mean([1 / (1 + e) >= 0.9 and 1 / (1 + e) <= 1.1 for e in errs])
        assert s.loc[d, "coverage"] == pytest.approx(covered)
        assert s.loc[d, "median_time_error"] == pytest.approx(np.median(np.abs(errs)))
        assert s.loc[d, "median_memory_error"] == pytest.approx(
            np.median(np.abs(np.array(errs) / 2)))
        assert s.loc[d, "median_half_width"] == pytest.approx(0.1)
    assert s.loc["all", "points"] == 10
    assert s.loc["all", "median_time_error"] == pytest.approx(np.median(np.abs(a + b)))
    # A: covered 3 of 5 (0.2 and -0.3 fall outside ±10%): the coverage target fails
    assert not s.loc["A", "targets_met"]
    exact = grid.scores(_synthetic([0.0] * 5, [0.0] * 5), on="predicted")
    assert exact.targets_met.all() and (exact.coverage == 1).all()


def _known(rng, points=200, sd=0.15):
    """Model predictions (with a 1% interval of their own) and measurements that differ from
    them by exp(N(0, sd)) where switching is half the request or more, by exp(N(0, sd/5))
    below."""
    share = 10 ** rng.uniform(-3, 0, points)
    model_ns = 100.0 * (1 + np.arange(points) % 9)
    e = rng.normal(0, np.where(share >= 0.5, sd, sd / 5))
    return pd.DataFrame({"design": [f"D{i % 4}" for i in range(points)], "model_ns": model_ns,
                         "model_low": model_ns * 0.99, "model_high": model_ns * 1.01,
                         "model_share": share, "measured_ns": model_ns * np.exp(e),
                         "predicted_bytes": 1.0, "measured_bytes": 1.0})


def test_prediction_interval_covers_a_grid_of_known_error_and_leaves_the_point_out():
    rng = np.random.default_rng(11)
    g = grid.finish(_known(rng))
    assert 0.88 <= g.covered.mean() <= 1.0, g.covered.mean()
    half = (g.predicted_high - g.predicted_low) / 2 / g.predicted_ns
    wide = g.model_share >= 0.5
    # the interval follows the error where the switch weighs as much
    assert half[wide].median() > 2 * half[~wide].median()
    assert half[wide].median() == pytest.approx(math.sinh(1.96 * 0.15), rel=0.35)
    # a point's own measurement never widens its own interval
    k = int(np.flatnonzero(wide.to_numpy())[0])
    moved = _known(np.random.default_rng(11))
    moved.loc[k, "measured_ns"] *= 50
    m = grid.finish(moved)
    assert m.predicted_low.iloc[k] == pytest.approx(g.predicted_low.iloc[k])
    assert m.predicted_high.iloc[k] == pytest.approx(g.predicted_high.iloc[k])
    assert not m.covered.iloc[k]


def _steady_and_not(rng, points=160, sd=0.3):
    """Points of one share of switching: half with a steady model (a 1% interval of its
    own) measured exactly, half with an unsteady one (±40%) measured off by exp(N(0, sd))."""
    model_ns = 100.0 * (1 + np.arange(points) % 5)
    steady = np.arange(points) % 2 == 0
    own = np.where(steady, 1.01, 1.4)
    e = np.where(steady, 0.0, rng.normal(0, sd, points))
    return pd.DataFrame({"design": "D", "model_ns": model_ns, "model_low": model_ns / own,
                         "model_high": model_ns * own, "model_share": 0.5,
                         "measured_ns": model_ns * np.exp(e), "predicted_bytes": 1.0,
                         "measured_bytes": 1.0})


def test_the_error_rule_takes_neighbours_as_steady_as_the_prediction():
    g = _steady_and_not(np.random.default_rng(21))
    steady = model_error.own_spread(1 / 1.01, 1.01)
    assert steady == pytest.approx(math.log(1.01) / 1.96)
    assert np.allclose(model_error.request_residuals(g, 0.5, steady, of="step"), 0.0)
    unsteady = model_error.own_spread(1 / 1.4, 1.4)
    assert np.std(model_error.request_residuals(g, 0.5, unsteady, of="step")) > 0.15
    # the original rule sees one share and takes the first points whatever their spread
    by_share = model_error.request_residuals(g, 0.5, steady, rule="share", of="step")
    assert len(by_share) == model_error.ERROR_NEIGHBOURS and np.std(by_share) > 0.1
    with pytest.raises(ValueError, match="rule"):
        model_error.request_residuals(g, 0.5, steady, rule="nearest", of="step")
    f = grid.finish(g)
    half = (f.predicted_high - f.predicted_low) / 2 / f.predicted_ns
    half0 = (f.original_high - f.original_low) / 2 / f.original_ns
    quiet = f.model_high / f.model_low < 1.1
    # where the model's inputs were steady its interval is its own, and still covers
    assert half[quiet].median() < 0.05 < half0[quiet].median()
    assert f.covered[quiet].all() and f.original_covered.dtype == bool
    s = grid.scores(f, on="predicted").set_index("design")
    assert s.loc["all", "interval_score"] < s.loc["all", "original_interval_score"]


def test_the_interval_score_is_width_plus_the_penalised_miss():
    # [1, e] on the log scale is one wide; a miss by 1.5 past it costs 2 / 0.05 times that
    score = grid.interval_score([1.0, 1.0, 1.0], [math.e, math.e, math.e],
                                [math.exp(0.5), math.exp(2.5), math.exp(-1.0)])
    assert np.allclose(score, [1.0, 1.0 + 40 * 1.5, 1.0 + 40 * 1.0])


def test_the_step_of_two_workers_recovers_a_busy_loop_that_only_interruptions_slow():
    # a busy loop of known length, each worker's timing lengthened by what else ran
    rng = np.random.default_rng(7)
    truth = 300.0
    pairs = truth + rng.exponential(30.0, size=(4000, 2))
    est = np.array([grid.step_estimate(a, b) for a, b in pairs])
    assert (est >= truth).all()
    assert np.median(est - truth) < np.median(pairs[:, 0] - truth)
    assert grid.step_estimate(100.0, 400.0) == 100.0
    assert grid.step_estimate(400.0, 100.0) == 100.0


def test_scores_refuse_a_frame_without_the_grid_columns():
    with pytest.raises(ValueError, match="measured_ns"):
        grid.scores(pd.DataFrame({"design": ["A"], "predicted_ns": [1.0]}), on="predicted")
    with pytest.raises(ValueError, match="advice_ns"):
        grid.scores(_synthetic([0.0], [0.0]))
    with pytest.raises(ValueError, match="on must be one of"):
        grid.scores(_synthetic([0.0], [0.0]), on="model")


def test_the_advice_is_scored_on_its_own_columns():
    """The headline scores read the advice's columns, whatever the step-fed ones say."""
    g = _synthetic([0.0] * 5, [0.0] * 5)
    g = g.assign(advice_ns=g.predicted_ns * 2, advice_low=g.predicted_low * 2,
                 advice_high=g.predicted_high * 2, advice_model_ns=g.predicted_ns * 2,
                 advice_model_low=g.predicted_low * 2, advice_model_high=g.predicted_high * 2,
                 advice_bytes=g.predicted_bytes, model_ns=g.predicted_ns,
                 model_low=g.predicted_low, model_high=g.predicted_high)
    s = grid.scores(g).set_index("design")
    assert s.loc["all", "coverage"] == 0 and s.loc["all", "median_time_error"] == pytest.approx(1)
    assert grid.scores(g, on="predicted").set_index("design").loc["all", "coverage"] == 1


def test_each_n_and_u_has_its_cold_switches_measured_just_before_its_points(monkeypatch):
    calls = []
    monkeypatch.setattr(cold, "measure_cold",
                        lambda ev, needs: calls.append(("cold", {(n, u) for _, n, u, _, _ in needs},
                                                        needs)))

    def point(designs, work, alive, in_use, **kw):
        calls.append(("point", work, alive, in_use))
        return [{"design": d, "work": work, "alive": alive, "stack_in_use": in_use,
                 "seconds": 0.0} for d in designs]

    monkeypatch.setattr(grid, "point", point)
    monkeypatch.setattr(grid, "finish", lambda df: df)
    # the work a user states: 5 ns in one warm context at every W and u (no N)
    monkeypatch.setattr(grid, "warm_step", lambda design, kw, u, requests: 5.0)
    ev = evidence.Evidence("test", {}, {}, local=True)
    g = grid.run_grid(designs=["asm_fpu", "cxx20_generator"], work=("0ns", "20us"),
                      alive=(64, 1000), in_use=(0, 1024), ev=ev)
    assert calls[0][:2] == ("cold", {(64, 0)})
    # a stack's cold switch beside each W's busy work (20 µs held at 2 µs) and beside the
    # work the advice is given (5 ns), the heap frame's with none
    assert sorted((layout, work) for layout, *_, work in calls[0][2]) == [
        ("asm_fpu", 0.0), ("asm_fpu", 5.0), ("asm_fpu", cold.COLD_WORK_CAP_NS),
        ("cxx20_generator", 0.0)]
    for i, c in enumerate(calls):
        if c[0] == "point":  # the last cold measured before it is its own N and u's
            last = next(x for x in reversed(calls[:i]) if x[0] == "cold")
            assert last[1] == {(c[2], c[3])}, (c, last)
    assert sum(c[0] == "cold" for c in calls) == 4
    # the frame keeps W outermost, as the grid has always been laid out
    assert list(g.work[::2]) == ["0ns"] * 4 + ["20us"] * 4
    assert list(zip(g.alive[::2], g.stack_in_use[::2]))[:4] == [(64, 0), (64, 1024), (1000, 0),
                                                               (1000, 1024)]


def test_run_grid_names_a_bad_argument():
    with pytest.raises(TypeError, match="quick"):
        grid.run_grid(quick="yes")
    with pytest.raises(ValueError, match="design"):
        grid.run_grid(quick=True, designs=["no_such_design"])


def test_the_controls_say_how_to_get_ipywidgets_when_it_is_missing(monkeypatch, capsys):
    """A core install (no `lab` extra) runs notebook 10 too: the controls step aside with a
    line instead of failing the notebook."""
    import sys

    from labkit.lab.analysis import your_workload

    monkeypatch.setitem(sys.modules, "ipywidgets", None)  # import raises ImportError
    assert your_workload.controls() is None
    assert "pip install 'labkit[lab]'" in capsys.readouterr().out


def _small_shares_and_a_zero(rng, points=40):
    """Points where work hides the switch almost whole: distinct shares between 2e-5 and
    9e-5 and spreads between 1e-5 and 5e-5, each measured off by under 1%; ten where the
    switch weighs more (shares near 1e-2), measured 30% off; and first in the grid one point
    whose switch the work hides whole (share 0, spread 0), measured 40% off."""
    share = np.r_[rng.uniform(2e-5, 9e-5, points), rng.uniform(8e-3, 1.2e-2, 10)]
    spread = np.r_[rng.uniform(1e-5, 5e-5, points), rng.uniform(1e-3, 2e-3, 10)]
    model_ns = 20_000.0 * np.ones(points + 10)
    off = np.r_[rng.uniform(-0.01, 0.01, points), np.full(10, 0.3)]
    rows = pd.DataFrame({"design": "D", "model_ns": model_ns,
                         "model_low": model_ns * np.exp(-1.96 * spread),
                         "model_high": model_ns * np.exp(1.96 * spread), "model_share": share,
                         "measured_ns": model_ns * np.exp(off)})
    zero = pd.DataFrame({"design": "D", "model_ns": [8.0], "model_low": [8.0],
                         "model_high": [8.0], "model_share": [0.0],
                         "measured_ns": [8.0 * math.exp(0.4)]})
    return pd.concat([zero, rows], ignore_index=True)


def test_a_zero_share_is_not_the_neighbour_of_small_ones(monkeypatch):
    g = _small_shares_and_a_zero(np.random.default_rng(8))
    at = g.iloc[1]
    spread = model_error.own_spread(at.model_low, at.model_high)
    r = model_error.request_residuals(g, at.model_share, spread, leave_out=g.index[1], of="step")
    assert len(r) == model_error.ERROR_NEIGHBOURS and np.abs(r).max() < 0.011
    # the zero itself finds the small shares nearest it, not the larger ones
    z = model_error.request_residuals(g, 0.0, 0.0, leave_out=g.index[0], of="step")
    assert len(z) == model_error.ERROR_NEIGHBOURS and np.abs(z).max() < 0.011
    # under a floor of 1e-4 the zero and the small shares sit on one spot, and the first
    # in the grid are taken
    monkeypatch.setitem(model_error.ERROR_FLOORS, model_error.ERROR_RULE, 1e-4)
    tied = model_error.request_residuals(g, at.model_share, spread, leave_out=g.index[1], of="step")
    assert tied.max() == pytest.approx(0.4)


def test_the_calibration_figure_states_its_finding_from_the_scores():
    import pandas as pd

    from labkit.core.plots import percent_label
    from labkit.lab.advising import grid
    from labkit.lab.analysis import your_workload as yw

    g = pd.DataFrame({"design": ["asm_fpu"] * 4, "measured_ns": [10.0, 20, 30, 40],
                      "measured_low": [9.0, 18, 27, 36], "measured_high": [11.0, 22, 33, 44],
                      "advice_ns": [10.0, 21, 36, 40], "advice_low": [9.0, 20.5, 33, 35],
                      "advice_high": [11.0, 23, 39, 45], "advice_error": [0, .05, .2, 0],
                      "advice_covered": [True, False, False, True],
                      "advice_memory_error": [0.0] * 4, "advice_bytes": [1.0] * 4,
                      "measured_bytes": [1.0] * 4, "advice_model_ns": [10.0, 21, 36, 40],
                      "advice_model_low": [9.5, 20, 35, 38],
                      "advice_model_high": [10.5, 22, 37, 42]})
    said = yw.calibration_finding(g)
    a = grid.scores(g, on="advice").set_index("design").loc["all"]
    assert f"held {percent_label(a.coverage)}% of 4 measurements (target 90%)" in said
    assert a.coverage == 0.5
    assert f"median half-width {percent_label(a.median_half_width)}%" in said
