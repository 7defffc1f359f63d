"""Live sides compared by the lab's verdict design (labkit.experiments.verdict_design): fresh
worker processes, every side in ABBA order inside each, looks at the schedule's process
counts (written before measuring, labkit.core.sequential), stopping at the first look at
which every pair is decided (labkit.lab.comparing.answer)."""
from __future__ import annotations

import itertools

from labkit.core import sequential
from labkit.errors import ParameterError
from labkit.experiments import verdict_design
from labkit.lab.comparing import answer
from labkit.lab.judging import engine

SWITCHES = 200_000  # per call: a verdict's interval is over processes, not long calls


def pairs_of(sides) -> list[tuple[str, str]]:
    """Every pair of sides, in the order given."""
    return list(itertools.combinations([s.label for s in sides], 2))


def schedule(*, looks=None, repeats=None, seconds=None, quick: bool = False) -> dict:
    """The stopping rule: labkit.core.sequential's schedule with these values."""
    if looks is not None:
        try:
            sequential.z_boundaries(tuple(looks))
        except (TypeError, ValueError) as exc:
            raise ParameterError("looks", str(exc).removeprefix("looks ")) from exc
    if repeats is not None and (type(repeats) is not int or not 1 <= repeats <= verdict_design.MAX_REPEATS):
        raise ParameterError("repeats", f"must be an int in [1, {verdict_design.MAX_REPEATS}]; "
                             f"got {repeats!r}")
    if seconds is not None and not seconds > 0:
        raise ParameterError("seconds", f"must be positive; got {seconds!r}")
    looks = None if looks is None else tuple(looks)
    return sequential.schedule(looks=looks, quick_looks=looks, seconds=seconds,
                               repeats=repeats, quick=quick) | (
        {"repeats": repeats} if repeats is not None else {})


def _pair_rule(a: str, b: str, looks, level: float, margin: float):
    """The design's rule for one pair: open while its interval at `level` decides nothing."""

    def rule(runs):
        _, lo, hi, _ = sequential.interval(engine.log_ratios(runs, a, b), looks, level)
        said = answer.classify(lo, hi, margin)
        # The interval is in the row so that the design sees which sides it reads
        # (verdict_design.still_needed: a side is needed when taking it away changes the row).
        return {"claim_id": f"{a} vs {b}",
                "verdict": "inconclusive" if said == answer.UNDECIDED else said,
                "straddle": said == answer.UNDECIDED, "low": lo, "high": hi}

    rule.__name__ = f"compare {a} vs {b}"
    return rule


def run(sides, *, switches: int = SWITCHES, cpu=None, plan: dict | None = None,
        margin: float = answer.MARGIN, alpha: float = sequential.ALPHA, seed: int = 0,
        progress=None) -> dict:
    """Measure the live sides under `plan` (schedule()) and answer every pair:
    {runs, answers, stats (pair -> per-process log ratios), schedule, looks_taken}."""
    margin = answer.check_margin(margin)
    if type(switches) is not int or switches < 1:
        raise ParameterError("switches", f"must be a positive int; got {switches!r}")
    plan = plan or schedule()
    looks = tuple(plan["looks"])
    pairs = pairs_of(sides)
    level = alpha / len(pairs)
    rules = [_pair_rule(a, b, looks, level, margin) for a, b in pairs]
    entries = {s.label: s.measuring(switches=switches, cpu=cpu) for s in sides}
    runs, _, taken = verdict_design.measure_for_verdicts(entries, rules, schedule=plan, seed=seed,
                                                 progress=progress)
    stats = {p: engine.log_ratios(runs, *p) for p in pairs}
    return {"runs": runs, "stats": stats, "schedule": plan, "looks_taken": taken,
            "answers": answer.decide(stats, looks, alpha=alpha, margin=margin)}
