"""A measurement design for comparisons: the compared entries interleave, and repeats
are spread over several fresh worker processes.

Drift between blocks (frequency, a neighbour's load, the page cache) biases every
comparison whose two sides run in separate blocks; layout and ASLR differ from one
process to the next, so one process's luck becomes every repeat's (Mytkowicz et al.,
"Producing wrong data without doing anything obviously wrong", ASPLOS 2009; Kalibera and
Jones, "Rigorous benchmarking in reasonable time", ISMM 2013). `interleaved` runs the
entries round by round, each round visiting every entry once (ABAB... or a shuffled
order per round), and hands the rounds to `workers` fresh processes in turn.

Stopping rule (`extend_if_straddling`), fixed before measuring: a comparison first runs
`repeats` repeats of each entry and is judged once. Only if that verdict is inconclusive
because the interval straddles a bound does it run once more, up to `max_repeats` in all
(default: three times `repeats`), and is judged a second and last time on every repeat.
It never stops before `max_repeats` because a verdict appeared partway through the
extension, and never looks a third time.
"""
from __future__ import annotations

import contextlib
import random

from labkit.core import worker as _worker

ORDERS = ("abab", "shuffle")
MAX_WORKERS = 16
EXTEND_FACTOR = 3


@contextlib.contextmanager
def fresh_worker():
    """Run labkit's measurements inside this block in a new worker process (its own
    address-space layout), closed at the end; the previous shared worker is restored."""
    w = _worker.Worker()
    try:
        with _worker.shared_as(w):
            yield w
    finally:
        w.close()


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(parts)]


def plan(labels, *, repeats: int, workers: int, rounds_per_worker: int = 2,
         order: str = "abab", seed: int = 0) -> list[dict]:
    """The schedule `interleaved` follows: one dict per call (worker, round, position,
    label, repeats), in the order the calls run. Every label gets exactly `repeats`."""
    labels = list(labels)
    if not labels or len(set(labels)) != len(labels):
        raise ValueError(f"entries must name at least one entry, each once; got {labels}")
    for name, v, lo, hi in (("repeats", repeats, 1, 10_000), ("workers", workers, 1, MAX_WORKERS),
                            ("rounds_per_worker", rounds_per_worker, 1, 1000)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"{name} must be an int, not {type(v).__name__}")
        if not lo <= v <= hi:
            raise ValueError(f"{name} must be in [{lo}, {hi}]; got {v}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}; got {order!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, not {type(seed).__name__}")
    n_rounds = min(repeats, workers * rounds_per_worker)
    sizes = _split(repeats, n_rounds)
    rng = random.Random(seed)
    calls = []
    for w in range(min(workers, n_rounds)):
        for k, r in enumerate(range(w, n_rounds, workers)):
            seq = list(labels)
            if order == "shuffle":
                rng.shuffle(seq)
            elif (k + w) % 2:  # ABBA...: alternate which side leads, in and across workers
                seq.reverse()
            calls += [{"worker": w, "round": r, "position": i, "label": lab,
                       "repeats": sizes[r]} for i, lab in enumerate(seq)]
    return calls


def interleaved(entries: dict, *, repeats: int = 9, workers: int = 3,
                rounds_per_worker: int = 2, order: str = "abab", seed: int = 0):
    """Measure the compared entries interleaved, over `workers` fresh worker processes.

    entries maps a label to a measuring function that takes `repeats=` and returns a
    tidy frame, e.g. {"O0": functools.partial(labkit.measure, "boost_fiber", build="O0"),
    "O2": ...}. Each entry gets exactly `repeats` repeats, in rounds that visit every
    entry once (order "abab": alternating which goes first; "shuffle": a seeded shuffle
    per round). Returns the frames concatenated, with `entry`, `worker` (0-based),
    `worker_pid`, `round`, `order` (position within the round) and `repeat` renumbered
    0..repeats-1 per entry."""
    import pandas as pd

    if not isinstance(entries, dict) or not entries:
        raise TypeError("entries must be a non-empty dict of label -> measuring function")
    for label, fn in entries.items():
        if not isinstance(label, str):
            raise TypeError(f"entries' labels must be str, not {type(label).__name__}")
        if not callable(fn):
            raise TypeError(f"entries[{label!r}] must be callable (taking repeats=)")
    calls = plan(entries, repeats=repeats, workers=workers,
                 rounds_per_worker=rounds_per_worker, order=order, seed=seed)
    frames = []
    for w in sorted({c["worker"] for c in calls}):
        with fresh_worker() as proc:
            for c in (c for c in calls if c["worker"] == w):
                df = entries[c["label"]](repeats=c["repeats"])
                frames.append(df.assign(entry=c["label"], worker=w, worker_pid=proc.pid,
                                        round=c["round"], order=c["position"]))
    out = pd.concat(frames, ignore_index=True)
    out["repeat"] = out.groupby("entry").cumcount()
    return out


def extend_if_straddling(run, decide, *, repeats: int, max_repeats: int | None = None):
    """The stopping rule of this module's docstring. run(repeats=k) measures k more
    repeats of every entry (a frame); decide(frame) returns (verdict, why). Returns
    (frame, verdict, why, looks): one look at `repeats`, and only after a straddle a
    second, last one at `max_repeats` (default EXTEND_FACTOR * repeats)."""
    import pandas as pd

    if max_repeats is None:
        max_repeats = EXTEND_FACTOR * repeats
    if not isinstance(max_repeats, int) or max_repeats < repeats:
        raise ValueError(f"max_repeats must be an int >= repeats ({repeats}); got {max_repeats!r}")
    frame = run(repeats=repeats)
    verdict, why = decide(frame)
    if verdict != "inconclusive" or "straddles" not in why or max_repeats == repeats:
        return frame, verdict, why, 1
    more = run(repeats=max_repeats - repeats)
    if "repeat" in more and "entry" in more:
        more = more.assign(repeat=more.repeat + repeats)
    frame = pd.concat([frame, more], ignore_index=True)
    verdict, why = decide(frame)
    return frame, verdict, why, 2


def measure_for_verdicts(entries: dict, rules: list, *, repeats: int,
                         max_repeats: int | None = None, workers: int = 3,
                         order: str = "abab", seed: int = 0):
    """Measure `entries` interleaved (see `interleaved`) and judge them with `rules`
    (functions from the frame to a verdict row, labkit.lab.claim_rules), under this module's
    stopping rule: if any row is inconclusive because its interval straddles a bound, the
    entries get one extension up to max_repeats (default EXTEND_FACTOR * repeats) and
    every rule is applied once more to all repeats. Returns (frame, rows, looks); each
    row's note says how many repeats it stands on."""
    if not isinstance(rules, (list, tuple)) or not rules or not all(callable(r) for r in rules):
        raise TypeError("rules must be a non-empty list of functions from a frame to a row")
    state = {}

    def run(repeats):
        state["round"] = state.get("round", -1) + 1
        return interleaved(entries, repeats=repeats, workers=workers, order=order,
                           seed=seed + state["round"])

    def decide(frame):
        rows = [rule(frame) for rule in rules]
        state["rows"] = rows
        open_ = [r for r in rows if r["verdict"] == "inconclusive" and "straddles" in r["note"]]
        if open_:
            return "inconclusive", "; ".join(f"{r['claim_id']} straddles" for r in open_)
        return "decided", ""

    frame, _, _, looks = extend_if_straddling(run, decide, repeats=repeats,
                                              max_repeats=max_repeats)
    n = int(frame.groupby("entry").size().min())
    say = (f"{n} repeats per side, one look" if looks == 1 else
           f"{n} repeats per side: extended once after a straddle at {repeats} "
           "(stopping rule of labkit.experiments.design)")
    for row in state["rows"]:
        row["note"] = f"{row['note']}; {say}" if row["note"] else say
    return frame, state["rows"], looks
