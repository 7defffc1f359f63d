"""Calibration of the verdict engine on measurements with a known true ratio.

The simulator draws what a shared VM does to a two-sided comparison: each process gives
each side its own lognormal effect (layout, stack placement), a quarter of processes run
in a slow mode at twice the time, and repeats inside a process have heavy tails (Student
t with 3 degrees of freedom on the log scale). The engine (labkit.lab.judging.engine) judges the
rule `reproduced if x >= 1.5; contradicted if x < 1.1` (claim C000.2's rule) under the
stopping rule of labkit.core.sequential; the design it replaced (3 processes, a pooled
bootstrap over repeats, one extension after a straddle) is simulated beside it.

A decided verdict is wrong when the true ratio is not in its region: `reproduced` needs
truth >= 1.5, `contradicted` truth < 1.1, `in-between` truth in [1.1, 1.5).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from labkit.core import sequential
from labkit.lab.judging import engine, verdicts

REPRODUCED_IF, CONTRADICTED_IF = "x >= 1.5", "x < 1.1"
# Truth inside each region, on each bound and in the gap.
SCENARIOS = {"inside reproduced": 2.0, "on the reproduced bound": 1.5, "in the gap": 1.3,
             "on the contradicted bound": 1.1, "inside contradicted": 0.9}
PROCESS_SD = 0.05    # side-specific process effect, log scale
REPEAT_SD = 0.05     # noise inside a process, log scale (t, 3 df, scaled)
SLOW_SHARE, SLOW_FACTOR = 0.25, 2.0


def truth_region(ratio: float) -> str:
    """The verdict that is right for a true ratio."""
    if ratio >= 1.5:
        return "reproduced"
    if ratio < 1.1:
        return "contradicted"
    return "in-between"


def simulate(rng, ratio: float, processes: int, repeats: int):
    """Measurements of `processes` processes: an array (processes, 2 sides, repeats),
    side B's typical value 1 and side A's `ratio`."""
    slow = np.where(rng.random(processes) < SLOW_SHARE, SLOW_FACTOR, 1.0)
    effect = rng.normal(0.0, PROCESS_SD, size=(processes, 2))
    noise = REPEAT_SD * rng.standard_t(3, size=(processes, 2, repeats)) / math.sqrt(3.0)
    centre = np.array([ratio, 1.0])
    return (centre * slow[:, None] * np.exp(effect))[:, :, None] * np.exp(noise)


def _decide(v, lo, hi):
    return verdicts.decide(REPRODUCED_IF, CONTRADICTED_IF, v, lo, hi, null=1.0)


def new_design(rng, ratio: float, *, looks=sequential.LOOKS,
               repeats: int = sequential.REPEATS) -> dict:
    """The engine: per process, the median of the passes' log ratios (the k-th repeat
    of each side, as labkit.lab.judging.engine.log_ratios pairs them), repeated confidence
    intervals at the looks, stop at the first look that decides."""
    x = simulate(rng, ratio, looks[-1], repeats)
    stats = np.median(np.log(x[:, 0] / x[:, 1]), axis=1)
    d, _, n, _ = engine.first_decided_look({"x": stats}, looks, _decide)
    return {"verdict": d["verdict"], "processes": n}


def old_design(rng, ratio: float, *, processes: int = 3, repeats: int = 5,
               n_resamples: int = 1000) -> dict:
    """The replaced design: `processes` processes with `repeats` repeats per side, the
    repeats pooled into one bootstrap BCa interval of the ratio of medians; after a
    straddle, one extension to three times the repeats in as many new processes."""
    def draw(n_workers, per):
        x = simulate(rng, ratio, n_workers, per)
        return x[:, 0].ravel(), x[:, 1].ravel()

    a, b = draw(processes, repeats)
    v, lo, hi = verdicts.ratio_with_spread(a, b, n_resamples=n_resamples)
    d = _decide(v, lo, hi)
    n = processes
    if d["verdict"] == "inconclusive" and d["straddle"]:
        a2, b2 = draw(processes, 2 * repeats)
        a, b = np.concatenate([a, a2]), np.concatenate([b, b2])
        v, lo, hi = verdicts.ratio_with_spread(a, b, n_resamples=n_resamples)
        d = _decide(v, lo, hi)
        n = 2 * processes
    return {"verdict": d["verdict"], "processes": n}


def run(design, runs: int, *, seed: int = 20261201, scenarios=None):
    """Error rates of `design` (new_design or old_design) over `runs` seeded runs per
    scenario: a frame of scenario, true ratio, runs, wrong (decided but outside the
    truth's region), inconclusive and the mean number of processes."""
    rows = []
    for i, (name, ratio) in enumerate((scenarios or SCENARIOS).items()):
        rng = np.random.default_rng([seed, i])
        right = truth_region(ratio)
        got = [design(rng, ratio) for _ in range(runs)]
        verdict = [g["verdict"] for g in got]
        rows.append({
            "scenario": name, "true ratio": ratio, "runs": runs,
            "wrong": sum(v not in ("inconclusive", right) for v in verdict) / runs,
            "inconclusive": verdict.count("inconclusive") / runs,
            "right": verdict.count(right) / runs,
            "mean processes": float(np.mean([g["processes"] for g in got])),
        })
    return pd.DataFrame(rows)


def tolerance(runs: int, alpha: float = sequential.ALPHA) -> float:
    """The Monte-Carlo allowance over alpha: 2.58 standard errors of a rate of alpha in
    `runs` runs (one-sided, 99.5%)."""
    return 2.58 * math.sqrt(alpha * (1 - alpha) / runs)
