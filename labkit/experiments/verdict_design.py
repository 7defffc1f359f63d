"""The verdict design: how an experiment measures the sides its claims compare, with the
process as the unit of replication.

Layout, ASLR, stack placement and a VM's slow mode differ from one process to the next,
so repeats inside one process share its luck and are not independent (Mytkowicz et al.,
ASPLOS 2009; Kalibera and Jones, ISMM 2013). Each replication here is a fresh worker
process. Inside it the compared entries alternate ABBA (the order and its mirror image,
`repeats` times each side), the leading entry drawn at random per process, so that drift
inside a process falls on every side alike. Each process then gives one number per
entry, and the verdict engine (labkit.lab.judging.engine) takes its interval over processes.

Stopping rule, written before measuring (labkit.core.sequential): the design looks when
the schedule's process counts are reached (8, 16, 32, 64, 96 in a full run) and stops at
the first look where no claim's interval straddles a bound, or at the last look, or at the
first look after its time budget is spent. After a look, processes measure only the
entries the undecided claims still read. The repeated confidence intervals keep the
error rate over all looks together.
"""
from __future__ import annotations

import contextlib
import random
import time

from labkit.core import sequential as schedules
from labkit.core import worker as _worker
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).

MAX_REPEATS = 50


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


def process_order(labels, *, repeats: int, rng: random.Random) -> list[str]:
    """The calls of one process: the entries in an order that starts at a random entry,
    then the mirror image of that order, `repeats` times in all for each entry (ABBA
    for two entries; with an odd `repeats` the last pass is the plain order)."""
    labels = list(labels)
    if not labels or len(set(labels)) != len(labels):
        raise ValueError(f"entries must name at least one entry, each once; got {labels}")
    if not isinstance(repeats, int) or isinstance(repeats, bool):
        raise TypeError(f"repeats must be an int, not {type(repeats).__name__}")
    if not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be in [1, {MAX_REPEATS}]; got {repeats}")
    k = rng.randrange(len(labels))
    first = labels[k:] + labels[:k]
    out = []
    for j in range(repeats):
        out += first if j % 2 == 0 else first[::-1]
    return out


def _check_entries(entries):
    if not isinstance(entries, dict) or not entries:
        raise TypeError("entries must be a non-empty dict of label -> measuring function")
    for label, fn in entries.items():
        if not isinstance(label, str):
            raise TypeError(f"entries' labels must be str, not {type(label).__name__}")
        if not callable(fn):
            raise TypeError(f"entries[{label!r}] must be callable (taking repeats=)")


def _check_rules(rules, schedule):
    if not isinstance(rules, (list, tuple)) or not rules or not all(callable(r) for r in rules):
        raise TypeError("rules must be a non-empty list of functions from a frame to a row")
    if not isinstance(schedule, dict) or "looks" not in schedule:
        raise TypeError("schedule must be a dict with `looks` (labkit.core.sequential.schedule)")
    looks = tuple(schedule["looks"])
    schedules.z_boundaries(looks)  # checks the looks
    seconds = schedule.get("seconds", schedules.DEFAULT_SECONDS)
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds <= 0:
        raise ValueError(f"schedule's seconds must be a positive number; got {seconds!r}")
    return looks, float(seconds)


def run_process(entries: dict, index: int, *, repeats: int, seed: int):
    """One replication: a fresh worker measures every entry `repeats` times in ABBA order.
    Returns the tidy rows with `side` (the entry's label), `worker` (this process's index),
    `worker_pid` and `order` (the call's position in the process)."""
    import pandas as pd

    order = process_order(entries, repeats=repeats, rng=random.Random(seed * 100_003 + index))
    frames = []
    began = time.perf_counter()
    with fresh_worker() as proc:
        for pos, label in enumerate(order):
            t0 = time.perf_counter()
            df = entries[label](repeats=1)
            frames.append(df.assign(side=label, worker=index, worker_pid=proc.pid, order=pos,
                                    call_s=time.perf_counter() - t0))
    # What a process costs beyond its calls (start, imports, exit): Kalibera and Jones's
    # cost of one more process, against call_s, the cost of one more repeat.
    out = pd.concat(frames, ignore_index=True)
    return out.assign(process_s=time.perf_counter() - began)


def check_runs(runs):
    """ValueError unless `runs` has the `worker` and `side` columns run_process makes."""
    if "worker" not in runs or "side" not in runs:
        raise ValueError("runs must have `worker` and `side` columns (a design's runs)")


def per_process(runs, col: str):
    """A frame with one row per process (`worker`) and one column per side: the median
    of that process's repeats of that side in column `col`, in process order."""
    check_runs(runs)
    return (runs.assign(_v=runs[col].astype(float)).groupby(["worker", "side"])._v.median()
            .unstack("side").sort_index())


def _open(row) -> bool:
    return row["verdict"] == "inconclusive" and bool(row.get("straddle"))


def _same(a, b) -> bool:
    return repr(sorted(a.items())) == repr(sorted(b.items()))


def still_needed(rules: list, rows: list, runs) -> list:
    """The entries some undecided claim still reads: an entry is needed by a rule when
    the rule's row changes (or the rule fails) once the entry's runs are taken away.
    A claim's verdict is taken at the first look that decides it, so a decided claim
    needs nothing more, and later processes measure only what the open claims read."""
    import warnings

    labels = sorted(set(runs.side))
    keep = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rule, row in zip(rules, rows):
            if not _open(row):
                continue
            for label in labels:
                if label in keep:
                    continue
                try:
                    changed = not _same(rule(runs[runs.side != label]), row)
                except Exception:  # noqa: BLE001 - a rule that needs the entry may fail without it
                    changed = True
                if changed:
                    keep.add(label)
    return [label for label in labels if label in keep] or labels


def sequential(run_one, rules: list, *, schedule: dict, progress=None, finished=None):
    """Replications one at a time, judged at each look of `schedule`
    (labkit.core.sequential.schedule) by `rules` (functions from the runs so far to a
    verdict row, labkit.lab.judging.rules), stopping as this module's docstring says.

    run_one(i, entries) measures replication i (a fresh process, or a round of fresh
    server processes) and returns its tidy rows; entries is None (all of them) until the
    first look, then the entries the undecided claims still read (still_needed).
    Returns (runs, rows, looks_taken); the runs carry `worker` (the replication) and
    `looks` (the schedule), so that every verdict can be recomputed from them alone.
    progress(runs) is called after every replication (a checkpoint); `finished`, the
    runs of an interrupted design, supplies its first replications."""
    import pandas as pd

    if not callable(run_one):
        raise TypeError("run_one must be a function of the replication's index and entries")
    looks, seconds = _check_rules(rules, schedule)
    started = time.monotonic()
    frames, rows, taken, entries = [], [], 0, None
    if finished is not None and len(finished):
        frames = [g.assign(worker=i) for i, (_, g) in
                  enumerate(finished.groupby("worker", sort=True)) if i < looks[-1]]
    for look in looks:
        while len(frames) < look:
            frames.append(run_one(len(frames), entries).assign(worker=len(frames)))
            if progress:
                progress(pd.concat(frames, ignore_index=True))
        runs = pd.concat(frames, ignore_index=True).assign(looks=" ".join(map(str, looks)))
        rows = [rule(runs) for rule in rules]
        taken += 1
        if not any(_open(r) for r in rows) or time.monotonic() - started > seconds:
            break
        entries = still_needed(rules, rows, runs)
    return runs, rows, taken


def measure_for_verdicts(entries: dict, rules: list, *, schedule: dict, seed: int = 0,
                         progress=None, finished=None):
    """`sequential` over fresh worker processes, each measuring every entry the schedule's
    `repeats` times (labkit.core.sequential's REPEATS where it names none) in ABBA order
    (run_process). entries maps a label to a measuring function that takes `repeats=` and
    returns a tidy frame."""
    _check_entries(entries)
    repeats = schedule.get("repeats", schedules.REPEATS)

    def one(i, labels):
        some = entries if labels is None else {k: entries[k] for k in labels}
        return run_process(some, i, repeats=repeats, seed=seed)

    return sequential(one, rules,
                      schedule=schedule, progress=progress, finished=finished)
