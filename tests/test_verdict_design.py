"""The verdict design: ABBA inside fresh processes, looks at the schedule's process
counts, and a stop at the first look that decides."""
import functools
import random

import pandas as pd
import pytest

import labkit
from labkit.core import sequential
from labkit.experiments import verdict_design


def test_process_order_is_abba_with_a_random_leader():
    leaders = set()
    for seed in range(20):
        order = verdict_design.process_order(["a", "b"], repeats=2, rng=random.Random(seed))
        assert order in (["a", "b", "b", "a"], ["b", "a", "a", "b"])
        leaders.add(order[0])
    assert leaders == {"a", "b"}
    order = verdict_design.process_order(list("abc"), repeats=3, rng=random.Random(1))
    assert sorted(order) == sorted(list("abc") * 3)
    assert order[3:6] == order[0:3][::-1]


@pytest.mark.parametrize("kwargs, err", [
    ({"repeats": 0}, ValueError), ({"repeats": 2.0}, TypeError),
    ({"repeats": verdict_design.MAX_REPEATS + 1}, ValueError),
])
def test_process_order_rejects_bad_input(kwargs, err):
    with pytest.raises(err, match="repeats"):
        verdict_design.process_order(["a", "b"], rng=random.Random(0), **kwargs)
    with pytest.raises(ValueError, match="entries"):
        verdict_design.process_order(["a", "a"], repeats=2, rng=random.Random(0))


def test_every_process_is_a_fresh_worker():
    entries = {k: functools.partial(labkit.measure, k, switches=10_000, warmup=0)
               for k in ("asm", "asm_fpu")}
    a = verdict_design.run_process(entries, 0, repeats=2, seed=0)
    b = verdict_design.run_process(entries, 1, repeats=2, seed=0)
    assert a.groupby("side").size().to_dict() == {"asm": 2, "asm_fpu": 2}
    assert a.worker_pid.nunique() == 1 and b.worker_pid.nunique() == 1
    assert a.worker_pid.iloc[0] != b.worker_pid.iloc[0]
    assert list(a.order) == [0, 1, 2, 3]


def _fake(calls):
    def one(i, entries=None):
        calls.append(i)
        labels = ["a", "b"] if entries is None else list(entries)
        return pd.DataFrame({"side": labels, "ns_per_switch": [2.0] * len(labels)})
    return one


def test_the_design_stops_at_the_first_look_without_a_straddle():
    calls = []

    def decided(runs):
        return {"claim_id": "C0", "verdict": "reproduced", "straddle": "", "note": ""}

    runs, rows, looks = verdict_design.sequential(_fake(calls), [decided],
                                          schedule={"looks": (4, 8)})
    assert looks == 1 and calls == [0, 1, 2, 3]
    assert set(runs.worker) == {0, 1, 2, 3} and set(runs.looks) == {"4 8"}


def test_a_straddle_goes_on_to_the_cap_and_no_further():
    calls, seen = [], []

    def straddling(runs):
        seen.append(runs.worker.nunique())
        return {"claim_id": "C0", "verdict": "inconclusive", "straddle": "x >= 2", "note": ""}

    runs, rows, looks = verdict_design.sequential(_fake(calls), [straddling],
                                          schedule={"looks": (4, 8, 12)})
    assert looks == 3 and sorted(set(seen)) == [4, 8, 12] and len(calls) == 12


def test_an_interrupted_design_goes_on_from_its_finished_processes():
    calls = []
    finished = pd.concat([_fake([])(i).assign(worker=i) for i in range(3)])

    def straddling(runs):
        return {"claim_id": "C0", "verdict": "inconclusive", "straddle": "x", "note": ""}

    runs, _, _ = verdict_design.sequential(_fake(calls), [straddling], schedule={"looks": (4,)},
                                   finished=finished)
    assert calls == [3] and runs.worker.nunique() == 4


def test_the_design_rejects_bad_input():
    ok = {"looks": (4, 8)}
    with pytest.raises(TypeError, match="rules"):
        verdict_design.sequential(_fake([]), [], schedule=ok)
    with pytest.raises(ValueError, match="looks"):
        verdict_design.sequential(_fake([]), [len], schedule={"looks": (8, 4)})
    with pytest.raises(ValueError, match="seconds"):
        verdict_design.sequential(_fake([]), [len], schedule={"looks": (4,), "seconds": -1})
    with pytest.raises(TypeError, match="entries"):
        verdict_design.measure_for_verdicts({"a": 3}, [len], schedule=ok)
    from labkit.lab import experiment

    assert experiment.ECHO_SERVERS.schedule()["looks"] == experiment.ECHO_SERVERS.looks
    assert experiment.STACK_SIZE.schedule(quick=True)["looks"] == sequential.QUICK_LOOKS
    assert experiment.STACK_SIZE.schedule()["repeats"] == sequential.REPEATS


def test_after_a_look_only_the_entries_of_open_claims_are_measured():
    asked = []

    def one(i, entries=None):
        asked.append(entries)
        labels = ["a", "b", "c"] if entries is None else list(entries)
        return pd.DataFrame({"side": labels, "ns_per_switch": [1.0] * len(labels)})

    def reads(label, verdict):
        def rule(runs):
            n = int((runs.side == label).sum())
            return {"claim_id": label, "verdict": verdict, "n": n,
                    "straddle": "x >= 2" if verdict == "inconclusive" else ""}
        return rule

    runs, rows, looks = verdict_design.sequential(
        one, [reads("a", "reproduced"), reads("b", "inconclusive")],
        schedule={"looks": (2, 4)})
    assert asked == [None, None, ["b"], ["b"]]
    assert looks == 2 and runs[runs.worker >= 2].side.tolist() == ["b", "b"]
    # what the decided claim read is kept as measured: its row is the same at every look
    assert rows[0]["n"] == 2 and rows[1]["n"] == 4
