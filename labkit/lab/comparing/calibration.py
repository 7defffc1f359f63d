"""`labkit compare`'s answers on simulated measurements of known truth, as the verdict
engine is calibrated (labkit.lab.judging.calibration, whose model of a shared VM this
reuses: a lognormal effect per process and side, a quarter of processes in a slow mode at
twice the time, heavy-tailed repeats). Each simulated process measures every side
`repeats` times; its statistic is the engine's, the median over its passes of the log
ratio of the k-th repeats."""
from __future__ import annotations

import itertools
import math

import numpy as np

from labkit.core import sequential
from labkit.lab.comparing import answer
from labkit.lab.judging import calibration as engine_calibration


def simulate(rng, times, processes: int, repeats: int):
    """An array (processes, sides, repeats) of times, side i's typical time times[i]."""
    k = len(times)
    c = engine_calibration
    slow = np.where(rng.random(processes) < c.SLOW_SHARE, c.SLOW_FACTOR, 1.0)
    effect = rng.normal(0.0, c.PROCESS_SD, size=(processes, k))
    noise = c.REPEAT_SD * rng.standard_t(3, size=(processes, k, repeats)) / math.sqrt(3.0)
    return (np.asarray(times, float) * slow[:, None] * np.exp(effect))[:, :, None] * np.exp(noise)


def answers(rng, times, *, looks=sequential.LOOKS, repeats: int = sequential.REPEATS,
            margin: float = answer.MARGIN) -> list[dict]:
    """The answers of one simulated comparison of len(times) sides (named s0, s1, ...)."""
    x = simulate(rng, times, looks[-1], repeats)
    names = [f"s{i}" for i in range(len(times))]
    stats = {(names[i], names[j]): np.median(np.log(x[:, i] / x[:, j]), axis=1)
             for i, j in itertools.combinations(range(len(times)), 2)}
    return answer.decide(stats, looks, margin=margin)


# The cases docs/compare.md states and tests/test_compare.py holds: each side's typical time.
CASES = {"two sides at equal speed": (1.0, 1.0),
         "three sides at equal speed (3 pairs, Holm)": (1.0, 1.0, 1.0),
         "A 10% faster": (1 / 1.1, 1.0),
         "A 8% slower (beyond the ±5% margin)": (1.08, 1.0),
         "A 2% slower (inside the ±5% margin)": (1.02, 1.0)}
RUNS = 1000
SEED = 20261205
OUTCOMES = (answer.FASTER, answer.SLOWER, answer.SAME, answer.UNDECIDED)
Z95 = 1.959964


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a share of k in n (95% by default)."""
    if n <= 0:
        return math.nan, math.nan
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)


def table(runs: int = RUNS, *, seed: int = SEED, cases=None, **kw) -> list[dict]:
    """Every case of CASES simulated `runs` times (seeded per case; kw as answers()):
    rates() with each share's 95% interval beside it (`<share>_interval`) and the case's
    name and times."""
    rows = []
    for i, (name, times) in enumerate((cases or CASES).items()):
        got = rates(list(times), runs, seed=[seed, i], **kw)
        # The false difference is a share of runs (familywise), an outcome one of pairs.
        intervals = {f"{k}_interval": wilson(got[f"{k}_count"], got["runs"])
                     for k in ("false_difference",)}
        intervals |= {f"{k}_interval": wilson(got[f"{k}_count"], got["pairs"]) for k in OUTCOMES}
        rows.append({"case": name, "times": list(times), **got, **intervals})
    return rows


def rates(times, runs: int, *, seed=SEED, **kw) -> dict:
    """Over `runs` seeded comparisons: the share in which some pair is said to differ
    wrongly (`false_difference`: a difference said where the truth has none, or the wrong
    way round), the share of pairs per outcome (with the counts, `<share>_count`, of runs
    and of pairs), and the mean processes."""
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(OUTCOMES, 0)
    wrong, procs, pairs = 0, [], 0
    for _ in range(runs):
        got = answers(rng, times, **kw)
        bad = False
        for row in got:
            i, j = int(row["a"][1:]), int(row["b"][1:])
            truth = times[i] / times[j]
            counts[row["outcome"]] += 1
            if (row["outcome"] == answer.FASTER and truth >= 1) or \
                    (row["outcome"] == answer.SLOWER and truth <= 1):
                bad = True
            procs.append(row["processes"])
            pairs += 1
        wrong += bad
    return {"false_difference": wrong / runs, **{k: v / pairs for k, v in counts.items()},
            "false_difference_count": wrong, **{f"{k}_count": v for k, v in counts.items()},
            "mean_processes": float(np.mean(procs)), "runs": runs, "pairs": pairs}
