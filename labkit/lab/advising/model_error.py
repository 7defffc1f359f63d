"""The model's error: log(measured / model) at the calibration grid's points nearest a
prediction, which the advice's interval carries."""
from __future__ import annotations

import math

import numpy as np

from labkit.errors import ParameterError

ERROR_NEIGHBOURS = 20  # calibration points whose errors a prediction carries
CALIBRATION = "advisor_calibration"  # evidence's name for the calibration grid's rows


# How a prediction picks its neighbours on the calibration grid: nearest in log share of
# switching and in log own spread, each axis in units of its standard deviation over the
# grid (L1). The original rule, nearest in log share alone, is kept beside it
# (docs/advisor_calibration.md: why, and how the two were judged).
ERROR_RULES = ("share and spread", "share")
ERROR_RULE = ERROR_RULES[0]


# Each rule's floor of a share or a spread before its log. A floor above the smallest real
# shares and spreads ties a zero (a switch the work hides whole) with them, and argsort
# breaks the tie by the grid's order; the amended rule's is below any but a zero
# (docs/advisor_calibration.md, "Zeros apart").
ERROR_FLOORS = {"share and spread": 1e-9, "share": 1e-4}


def own_spread(low: float, high: float) -> float:
    """The model's own spread: the log-normal sigma of its 95% interval [low, high] (the
    noise of the measurements its terms stand on), 0 without a positive low end."""
    return math.log(high / low) / (2 * 1.96) if low > 0 and high > 0 else 0.0


# The calibration grid's two models, each by its columns (ns, share, low, high): the
# advice, given the work a user states, and the step-fed diagnosis (Workload.step).
MODEL_COLUMNS = {"advice": ("advice_model_ns", "advice_share", "advice_model_low",
                            "advice_model_high"),
                 "step": ("model_ns", "model_share", "model_low", "model_high")}


def request_residuals(grid, share: float, spread: float | None = None, leave_out=None,
                      rule: str = ERROR_RULE, of: str = "advice"):
    """log(measured / model's ns per request) at the ERROR_NEIGHBOURS points of a
    calibration grid nearest this prediction under `rule` (ERROR_RULES): in the model's
    share of time switching and its own spread (own_spread), or in share alone; without
    the point labelled `leave_out`. `of`: whose model, the advice's or the step-fed
    diagnosis's (MODEL_COLUMNS). The model's error where the switch weighs as much and
    its inputs were as steady as here. A grid without the model's interval is read by
    share alone; one without the model's columns gives no residuals."""
    if rule not in ERROR_RULES:
        raise ParameterError("rule", f"must be one of {', '.join(ERROR_RULES)}; got {rule!r}")
    if of not in MODEL_COLUMNS:
        raise ParameterError("of", f"must be one of {', '.join(MODEL_COLUMNS)}; got {of!r}")
    ns, sh, low, high = MODEL_COLUMNS[of]
    if grid is None or len(grid) == 0 or not {ns, sh, "measured_ns"} <= set(grid.columns):
        return np.array([])
    g = grid.drop(index=leave_out) if leave_out is not None else grid
    r = np.log(g.measured_ns.to_numpy(float) / g[ns].to_numpy(float))
    floor = ERROR_FLOORS[rule]
    axes = [(np.log(np.maximum(g[sh].to_numpy(float), floor)),
             math.log(max(share, floor)))]
    if rule == "share and spread" and spread is not None and {low, high} <= set(g):
        theirs = [own_spread(lo, hi) for lo, hi in zip(g[low].to_numpy(float),
                                                     g[high].to_numpy(float))]
        axes.append((np.log(np.maximum(theirs, floor)), math.log(max(spread, floor))))
    far = np.zeros(len(g))
    for x, at in axes:
        scale = float(np.nanstd(x[np.isfinite(x)])) if len(axes) > 1 else 1.0
        far = far + np.abs(x - at) / (scale if scale > 0 else 1.0)
    ok = np.isfinite(r) & np.isfinite(far)
    r, far = r[ok], far[ok]
    return r[np.argsort(far, kind="stable")[:ERROR_NEIGHBOURS]]


def with_error(draws, residuals, rng):
    """Draws each times exp of a residual drawn at random (no residuals: unchanged)."""
    if len(residuals) == 0:
        return draws
    return draws * np.exp(rng.choice(np.asarray(residuals), size=len(draws)))
