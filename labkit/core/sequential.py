"""Group-sequential looks over fresh processes: when to look, and how wide the interval
is at each look so that the error rate holds over all looks together.

The unit of replication is the process (Kalibera and Jones, "Rigorous benchmarking in
reasonable time", ISMM 2013): each fresh process gives one statistic, such as the log of
the ratio of two sides' medians, and the interval is taken over processes. A comparison
is looked at when LOOKS[i] processes have finished. At each look the interval is a
repeated confidence interval (Jennison and Turnbull, "Group Sequential Methods with
Applications to Clinical Trials", 2000, ch. 9): its critical value comes from the
Lan-DeMets spending function of O'Brien-Fleming type,

    alpha(t) = 2 - 2 * Phi(z_{1 - alpha/2} / sqrt(t)),   t = processes / cap,

so that the intervals of all looks cover the truth together with probability at least
1 - ALPHA. A verdict decided at any look, under any stopping rule, is then wrong with
probability at most ALPHA. The variance is estimated, so the normal critical value is
carried to Student's t with n - 1 degrees of freedom at the same tail probability.

The schedules and caps below are the stopping rule, written before measuring.
"""
from __future__ import annotations

import functools
import math
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

ALPHA = 0.05
# Processes at each look: stop at the first look where every claim decides, else at the
# last (the cap). Where a design's calls are cheap (well under a second each) a process
# costs little, so the cap is high; the first look stays at 8 processes.
LOOKS = (8, 16, 32, 64, 96)
QUICK_LOOKS = (4, 8)
# A design whose processes are dear has its own schedule, in its experiment's record
# (labkit.lab.experiment): a process of 05 runs the OS's own hand-offs (about 4 s with every
# side); a replication of 09 is a round of fresh server processes under load (about 0.7 s a
# server). A design also stops at its budget in seconds, at the first look after the budget
# is spent.
DEFAULT_SECONDS = 240
# Repeats of each side inside one process, in whole ABBA passes. Kalibera and Jones's
# best number of repeats per process (notebook 00's table) is between 1 and 3 for most
# entries here, but it assumes normal repeats, and repeats here are heavy-tailed (a
# preempted call lies ten times and more further out than the median call): the median of 4
# sets such a call aside, the median of 2 does not. In 05 a repeat costs half a second.
# Quick mode, a smoke test, keeps one pass.
REPEATS = 4
QUICK_REPEATS = 2


def schedule(*, looks=None, quick_looks=None, seconds=None, repeats=None,
             quick: bool = False) -> dict:
    """The stopping rule of a verdict design: looks (processes at each look), the budget in
    seconds and the repeats of each side inside a process. A design's own values (None:
    the defaults here) come from its experiment's record; quick mode keeps QUICK_REPEATS."""
    chosen = quick_looks if quick else looks
    return {"looks": tuple(chosen if chosen is not None else
                           (QUICK_LOOKS if quick else LOOKS)),
            "seconds": DEFAULT_SECONDS if seconds is None else seconds,
            "repeats": QUICK_REPEATS if quick else (REPEATS if repeats is None else repeats)}


def obf_spending(t: float, alpha: float = ALPHA) -> float:
    """Lan-DeMets O'Brien-Fleming-type alpha spent by information fraction t."""
    from scipy.stats import norm

    if t <= 0:
        return 0.0
    return float(2 - 2 * norm.cdf(norm.ppf(1 - alpha / 2) / math.sqrt(min(t, 1.0))))


def _check_looks(looks) -> tuple[int, ...]:
    looks = tuple(looks)
    if not looks or any(type(n) is not int or n < 2 for n in looks):
        raise ValueError(f"looks must be process counts of at least 2; got {looks!r}")
    if list(looks) != sorted(set(looks)):
        raise ValueError(f"looks must increase strictly; got {looks!r}")
    return looks


def z_boundaries(looks, alpha: float = ALPHA, cap: int | None = None) -> tuple[float, ...]:
    """Two-sided critical values |Z_k| >= c_k of the looks (processes) under the spending
    function, the last planned look `cap` (default: the last look) taking t = 1.

    Computed by the recursive numerical integration of Armitage, McPherson and Rowe: the
    sub-density of the running sum over the continuation region, look by look."""
    return _z_boundaries(_check_looks(looks), float(alpha), cap)


@functools.lru_cache(maxsize=64)
def _z_boundaries(looks: tuple[int, ...], alpha: float, cap: int | None,
                  grid: int = 1201) -> tuple[float, ...]:
    import numpy as np
    from scipy.optimize import brentq
    from scipy.stats import norm

    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")
    cap = looks[-1] if cap is None else cap
    if cap < looks[-1]:
        raise ValueError(f"cap must be at least the last look ({looks[-1]}); got {cap}")
    spent = [obf_spending(n / cap, alpha) for n in looks]
    out = []
    s = dens = None  # grid of the running sum S_k and its sub-density (not yet stopped)
    prev_n = 0
    for k, n in enumerate(looks):
        target = spent[k] - (spent[k - 1] if k else 0.0)
        var = n - prev_n
        if k == 0:
            def cross(c):
                return 2 * norm.sf(c) - target
        else:
            ds = s[1] - s[0]

            def cross(c, s=s, dens=dens, var=var, n=n, ds=ds):
                edge = c * math.sqrt(n)
                sd = math.sqrt(var)
                p = norm.sf((edge - s) / sd) + norm.cdf((-edge - s) / sd)
                return float(np.sum(dens * p) * ds) - target
        c = brentq(cross, 0.0, 40.0) if target > 1e-15 else 40.0
        out.append(float(c))
        edge = c * math.sqrt(n)
        new_s = np.linspace(-edge, edge, grid)
        if k == 0:
            new_dens = norm.pdf(new_s / math.sqrt(n)) / math.sqrt(n)
        else:
            sd = math.sqrt(var)
            kern = norm.pdf((new_s[:, None] - s[None, :]) / sd) / sd
            new_dens = kern @ dens * (s[1] - s[0])
        s, dens, prev_n = new_s, new_dens, n
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _critical_value(n: int, looks: tuple, alpha: float, cap: int | None) -> float:
    from scipy.stats import norm, t

    cap = looks[-1] if cap is None else cap
    done = tuple(m for m in looks if m < n) + (n,)
    z = _z_boundaries(done, alpha, max(cap, n))[-1]
    return float(t.ppf(norm.cdf(z), df=n - 1))


def critical_value(n: int, looks, alpha: float = ALPHA, cap: int | None = None) -> float:
    """The t critical value of the repeated confidence interval at a look of n processes
    (n one of `looks`, or a look taken early at the time budget: it is added to the
    schedule in its place)."""
    return _critical_value(int(n), _check_looks(looks), float(alpha), cap)


def interval(values, looks, alpha: float = ALPHA, cap: int | None = None):
    """(mean, low, high, critical value) of per-process statistics: the repeated
    confidence interval at the look of len(values) processes."""
    import numpy as np

    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    n = v.size
    if n < 2:
        return (float(v.mean()) if n else math.nan), -math.inf, math.inf, math.inf
    c = critical_value(n, looks, alpha, cap)
    m, se = float(v.mean()), float(v.std(ddof=1) / math.sqrt(n))
    return m, m - c * se, m + c * se, c


def look_sizes(n_processes: int, looks) -> list[int]:
    """The looks a design with n_processes finished processes has passed, in order; a
    design stopped by its time budget between looks ends with a look at what it has."""
    looks = _check_looks(looks)
    out = [m for m in looks if m <= n_processes]
    if n_processes >= 2 and (not out or out[-1] < n_processes) and n_processes < looks[-1]:
        out.append(n_processes)
    return out
