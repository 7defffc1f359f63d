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


def rates(times, runs: int, *, seed: int = 20261205, **kw) -> dict:
    """Over `runs` seeded comparisons: the share in which some pair is said to differ
    wrongly (`false_difference`: a difference said where the truth has none, or the wrong
    way round), the share of pairs per outcome, and the mean processes."""
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys((answer.FASTER, answer.SLOWER, answer.SAME, answer.UNDECIDED), 0)
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
            "mean_processes": float(np.mean(procs)), "runs": runs}
