"""The design advisor (labkit.lab.advising): the model against simulated measurements of
known truth, its bad input, `labkit advise --json`, machine_id gating, and the path that
measures what data/ lacks."""
import dataclasses
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from labkit.core import results
from labkit.lab.advising import (cold, evidence, inputs, memory, model, model_error, switch_terms,
                                 taxonomy)

PAGE = 4096


def _machine():
    from labkit.core.machine import machine_info

    return machine_info()


def _simulated(rng, *, c=3.0, extra=40.0, proc_sd=0.3, rep_sd=0.4, processes=16, repeats=9):
    """Frames whose truth is known: asm switches in c ns (per-process offsets and repeat
    noise around it), a ring whose 1024 contexts add `extra` ns over two (64 a quarter of
    that), asm's switches among 64, 1024 and 100,000 contexts measured in its layout as
    cold by `extra` / 4, `extra` and 2 * `extra` ns, and stack memory of one page untouched, the whole stack touched."""
    rows = []
    for w in range(processes):
        mu = c + rng.normal(0, proc_sd)
        for k in range(repeats):
            rows.append({"entry": "asm", "side": "asm", "pattern": "pingpong", "contexts": 2,
                         "fp_control": "as-is", "worker": w, "order": k,
                         "ns_per_switch": mu + rng.normal(0, rep_sd)})
    ring = []
    for n, add in ((2, 0.0), (64, extra / 4), (1024, extra)):
        for k in range(repeats):
            ring.append({"entry": "asm_fpu", "pattern": "ring", "contexts": n,
                         "stack_size": 65536, "colour_step": 0, "prefault": False,
                         "ns_per_switch": 3.0 + add + rng.normal(0, rep_sd)})
    mem = [{"part": "stackful", "kind": "stackful", "stack_size": 65536,
            "touched": t, "bytes_per_object": b, "pte_bytes_per_object": 128.0}
           for t, b in ((False, PAGE + 16.0), (True, 65536 + 16.0))]
    frames = {"04_latency_ladder_verdict_runs": pd.DataFrame(rows),
              "01_stack_size": pd.DataFrame(ring), "07b_coroutine_memory": pd.DataFrame(mem)}
    # asm's switching loop less its steps: 2 warm switches (6 ns) at 2 contexts, and a
    # resumption of one of n contexts `extra` / 4, `extra` and 2 * `extra` ns more at 64,
    # 1024 and 100,000
    for n, add in ((64, extra / 4), (1024, extra), (100_000, 2 * extra)):
        frames[f"cold switch asm {n} 0 65536 0"] = {
            (2, 0): _loops(pd.Series(6.0 + rng.normal(0, rep_sd, repeats))),
            (n, 0): _loops(pd.Series(6.0 + add + rng.normal(0, rep_sd, repeats)))}
    return frames


def _loops(beyond, steps=2.0):
    """A cold switch's timed loops (cold.COLD_LOOP) that cost `beyond` (a Series by process)
    more than their `steps` ns of steps without switching."""
    return pd.DataFrame({"ns_per_request": beyond + steps, "work_only_ns_per_request": steps},
                        index=beyond.index)


def _ev(frames, seed=0):
    return evidence.Evidence("simulated", {"tsc_ghz": 2.0}, frames, local=False, seed=seed)


def test_prediction_is_the_formula_on_known_truth():
    ev = _ev(_simulated(np.random.default_rng(1), proc_sd=0.0, rep_sd=1e-9))
    w = inputs.workload("1us", 3, 1024, "10000", stack_size="64KiB")
    value, low, high = model.predict("asm", w, ev)
    # s * (W + 2 * (c + ring term / 2)): of a suspension's two switches one resumes a
    # cold coroutine, the other the warm scheduler; asm's frame is one line
    truth = 3 * (1000 + 2 * (3.0 + 40.0 / 2))
    assert value == pytest.approx(truth, rel=1e-6)
    assert low <= value <= high
    # Memory: one page untouched plus one page per further page of the 10000 bytes in use.
    mem = model.predict_full("asm", w, ev)["memory"]
    assert mem["resident"] == pytest.approx(PAGE + 16 + 2 * (65536 - PAGE) / 15)
    assert mem["mappings"] == memory.GUARD_MAPPINGS
    assert mem["total"] == pytest.approx(1024 * (mem["resident"] + 128.0))


def test_cycles_use_the_tsc_rate_and_another_machines_cold_switch_is_the_nearest_measured():
    ev = _ev(_simulated(np.random.default_rng(2), proc_sd=0.0, rep_sd=1e-9))
    w = inputs.workload("100cycles", 1, 100, 0, stack_size="64KiB")
    value, _, _ = model.predict("asm", w, ev)
    # 100 contexts: the nearest measured in log n is 64, cold by 10; one cold resumption in
    # a suspension's two switches
    assert value == pytest.approx(100 / 2.0 + 2 * (3.0 + 10.0 / 2), rel=1e-6)


def test_the_cold_switch_is_measured_in_the_layout_and_held_beyond_what_is_made():
    ev = _ev(_simulated(np.random.default_rng(8), proc_sd=0.0, rep_sd=1e-9))
    term, note = cold.cold_resume(ev, "asm", 100_000, 65536)
    assert term.value == pytest.approx(80.0, rel=1e-6) and note == ""
    # another machine's data: 50,000 takes the nearest measured, 100,000
    assert cold.cold_resume(ev, "asm", 50_000, 65536)[0].value == pytest.approx(80.0, rel=1e-6)
    assert cold.cold_resume(ev, "asm", 2, 65536)[0].value == 0.0
    # a million contexts are not made on the spot: held at the most the advisor measures
    term, note = cold.cold_resume(ev, "asm", 1_000_000, 65536)
    assert cold.COLD_CONTEXTS == 100_000 and term.value == pytest.approx(80.0, rel=1e-6)
    assert "held at the 100,000 contexts measured" in note


def test_intervals_cover_the_truth_at_about_their_rate():
    w = inputs.workload("200ns", 2, 1024, 0, stack_size="64KiB")
    truth = 2 * (200 + 2 * (3.0 + 40.0 / 2))
    hits = []
    for seed in range(120):
        ev = _ev(_simulated(np.random.default_rng(100 + seed)), seed=seed)
        _, low, high = model.predict("asm", w, ev)
        hits.append(low <= truth <= high)
    rate = np.mean(hits)
    # Nominal 95%: a percentile bootstrap of a few processes and repeats runs a little short.
    assert 0.85 <= rate <= 1.0, rate


def test_ring_with_spread_tops_is_preferred():
    frames = _simulated(np.random.default_rng(3), proc_sd=0.0, rep_sd=1e-9)
    ring = frames["01_stack_size"]
    spread = ring.assign(colour_step=64, ns_per_switch=3.0 + (ring.ns_per_switch - 3.0) / 4)
    frames["01_stack_size"] = pd.concat([ring, spread], ignore_index=True)
    ev = _ev(frames)
    assert switch_terms.ring_extra(ev, 1024, 65536)[0].value == pytest.approx(10.0, rel=1e-6)


def test_each_design_has_one_record_derived_from_the_catalogue():
    from labkit.core import entries

    recs = {d: taxonomy.of(d) for d in taxonomy.names()}
    assert {r.family for r in recs.values()} <= set(taxonomy.FRAME_LIVES)
    for d, r in recs.items():
        assert r.name == d and r.frame == taxonomy.FRAME_LIVES[r.family]
        assert r.memory == taxonomy.MEMORY_PROBE[r.family]
        if r.system == "labkit":
            assert r.keeps_fp_control == entries.keeps_fp_control(d)
            assert r.frame_bytes == (entries.frame_bytes(d) if r.family == "stack" else 0)
        # a design the workload experiment runs is laid out as itself
        if r.layout is not None and r.family in ("stack", "frame", "copy"):
            assert r.layout in (d, r.like)
    # labkit mmaps its stacks with a guard page; Boost's fixedsize_stack is malloc
    assert recs["asm_fpu"].guard_page and not recs["boost_fcontext"].guard_page
    # Coroutine2 switches with fcontext on Boost's stacks: laid out as boost_fcontext
    assert recs["boost_coroutine2"].layout == cold.layout_of("boost_fcontext") == "boost_fcontext"
    assert recs["asm_xsave"].vectors == "all" and recs["asm_fxsave"].vectors == "legacy"
    assert recs["asm_fpu"].vectors is None and recs["thread_futex"].vectors == "vector"
    assert recs["copy_stack"].copies and recs["greenlet_switch"].copies
    assert not recs["boost_fcontext"].copies
    assert recs["ucontext"].syscall == "rt_sigprocmask" and recs["asm_fpu"].syscall is None
    with pytest.raises(ValueError, match="no layout of contexts"):
        cold.layout_of("thread_futex")
    with pytest.raises(ValueError, match="design must be one of"):
        taxonomy.of("asm_fpux")
    with pytest.raises(TypeError, match="design must be a str"):
        taxonomy.of(3)


def test_work_hides_a_fraction_of_a_switch_but_no_more_ns_than_notebook_08s_kernel_hid():
    # 08's kernel: 10 ns a switch with no work, 6 ns beside 100 ns of work (0.4 hidden)
    sw = pd.DataFrame({"entry": "asm_fpu", "batch": 1, "stack_size": 65536,
                       "work_units": [0] * 5 + [100] * 5, "work_ns_per_task": [0.0] * 5 + [100.0] * 5,
                       "ns_per_switch": [10.0] * 5 + [6.0] * 5})
    ev = _ev({"08_switch_frequency": sw})
    shorter, _ = switch_terms.overlap(ev, 100.0, 65536, np.full(evidence.DRAWS, 5.0))
    longer, _ = switch_terms.overlap(ev, 100.0, 65536, np.full(evidence.DRAWS, 300.0))
    assert shorter.value == pytest.approx(2.0)  # 0.4 of its own 5 ns
    assert longer.value == pytest.approx(4.0)   # 0.4 of 08's 10 ns, not of 300
    none, note = switch_terms.overlap(_ev({}), 100.0, 65536, np.full(evidence.DRAWS, 5.0))
    assert none is None and "no switch-frequency data" in note


def test_fp_control_cost_is_the_designs_own_where_notebook_06_measured_it():
    def rows(entry, differ, same):
        return pd.DataFrame({"entry": entry, "fp_control": ["differ"] * 5 + ["same"] * 5,
                             "ns_per_switch": [differ] * 5 + [same] * 5})

    ev = _ev({"06_fp_state_and_return": pd.concat([rows("asm_fpu", 9.0, 4.0),
                                                    rows("asm_xsave", 30.0, 10.0)])})
    assert switch_terms.fp_control_term(ev, "asm_xsave")[0].value == pytest.approx(20.0)
    # ucontext, which 06 does not measure, reloads the words as asm_fpu does
    term, note = switch_terms.fp_control_term(ev, "ucontext")
    assert term.value == pytest.approx(5.0) and note == "as asm_fpu"


def test_another_machines_cold_switch_is_the_nearest_measured_in_contexts_and_bytes():
    ev = _ev({})
    ev.frames["cold switch copy_stack 10000 1024 65536 0"] = {
        (2, 1024): _loops(pd.Series([10.0] * 5)), (10000, 1024): _loops(pd.Series([50.0] * 5))}
    ev.frames["cold switch copy_stack 10000 0 65536 0"] = {
        (2, 0): _loops(pd.Series([10.0] * 5)), (10000, 0): _loops(pd.Series([20.0] * 5))}
    assert cold.cold_resume(ev, "copy_stack", 10000, 65536, 1024)[0].value == pytest.approx(40.0)
    # nearest in contexts and bytes, not scaled: a cold switch is no multiple of the bytes
    term, _ = cold.cold_resume(ev, "copy_stack", 20000, 65536, 4096)
    assert term.value == pytest.approx(40.0) and "from 10000 contexts and 1024 bytes" in term.basis
    assert cold.cold_resume(ev, "copy_stack", 10000, 65536, 0)[0].value == pytest.approx(10.0)
    with pytest.raises(LookupError):
        cold.cold_resume(_ev({}), "copy_stack", 100, 65536, 64)


def test_a_stacks_cold_switch_is_read_beside_the_work_and_the_others_with_none():
    """Known truth: asm among 1000 contexts 20 ns colder with no work between switches and
    50 ns with 100 ns of it; copy_stack 10 ns with none. A stack reads the one beside its
    busy work, held at COLD_WORK_CAP_NS; a copy stack reads the one with none whatever the
    work; the grid's busy part (Workload.busy_ns) stands for the work when given."""
    ev = _ev({})
    for layout, work, add in (("asm", 0, 20.0), ("asm", 100, 50.0), ("copy_stack", 0, 10.0)):
        ev.frames[f"cold switch {layout} 1000 0 65536 {work}"] = {
            (2, 0): _loops(pd.Series([6.0] * 3)), (1000, 0): _loops(pd.Series([6.0 + add] * 3))}
    assert cold.cold_resume(ev, "asm", 1000, 65536, 0, 0.0)[0].value == pytest.approx(20.0)
    term, _ = cold.cold_resume(ev, "asm", 1000, 65536, 0, 100.0)
    assert term.value == pytest.approx(50.0) and "with 100 ns of work between" in term.basis
    # 20 µs is read as 2 µs, whose nearest measured work is 100 ns
    assert cold.cold_work("asm", 20_000) == cold.COLD_WORK_CAP_NS
    assert cold.cold_resume(ev, "asm", 1000, 65536, 0, 20_000.0)[0].value == pytest.approx(50.0)
    assert cold.cold_work("copy_stack", 100) == 0.0
    term, _ = cold.cold_resume(ev, "copy_stack", 1000, 65536, 0, 100.0)
    assert term.value == pytest.approx(10.0)
    w = inputs.workload("100ns", 1, 1000, 0, stack_size="64KiB")
    assert cold.cold_need("asm", w, ev)[4] == 100.0
    assert cold.cold_need("asm", dataclasses.replace(w, busy_ns=0.0), ev)[4] == 0.0
    # the rows a bundle carries keep the work, and read back as the same terms
    there = _ev({evidence.COLD_SWITCHES: cold.cold_rows(ev)})
    assert set(cold.cold_rows(ev).work_ns) == {0.0, 100.0}
    assert cold.cold_resume(there, "asm", 1000, 65536, 0, 100.0)[0].value == pytest.approx(50.0)
    assert cold.cold_resume(there, "asm", 1000, 65536, 0, 0.0)[0].value == pytest.approx(20.0)
    # nearest in contexts and bytes first, then in work: 10,000 contexts measured at 2 µs
    # do not stand for 1,000 at 2 µs when 1,000 were measured at 100 ns
    ev.frames["cold switch asm 10000 0 65536 2000"] = {
        (2, 0): _loops(pd.Series([6.0] * 3)), (10000, 0): _loops(pd.Series([206.0] * 3))}
    term, note = cold.cold_resume(ev, "asm", 1000, 65536, 0, 20_000.0)
    assert term.value == pytest.approx(50.0) and "from 1000 contexts" in term.basis
    assert "held beyond" in note


def test_a_cold_switch_pairs_the_two_points_inside_each_process():
    """Each process's layout moves both points together; the difference is taken in each
    process before resampling over processes, never across them."""
    ev = _ev({})
    slow = pd.Series([100.0, 100.0, 400.0, 400.0], index=[0, 0, 1, 1])
    ev.frames["cold switch asm 1000 0 65536 0"] = {(2, 0): _loops(slow),
                                                 (1000, 0): _loops(slow + 30.0)}
    term, _ = cold.cold_resume(ev, "asm", 1000, 65536)
    assert np.allclose(term.draws, 30.0) and "2 processes" in term.basis


def _grid(rng, points=90, sd=0.2):
    """A calibration grid whose truth is known: each measurement is the model's prediction
    times exp(N(0, sd)) where switching is a third of the request or more, exactly it
    below."""
    rows = []
    for i in range(points):
        share = 10 ** rng.uniform(-4, 0)
        model_ns = 100.0 * (1 + i % 7)
        e = rng.normal(0, sd) if share >= 1 / 3 else 0.0
        rows.append({"design": f"D{i % 3}", "advice_model_ns": model_ns, "advice_share": share,
                     "measured_ns": model_ns * math.exp(e)})
    return pd.DataFrame(rows)


def test_request_residuals_come_from_the_nearest_shares_and_leave_a_point_out():
    g = _grid(np.random.default_rng(4))
    r = model_error.request_residuals(g, 0.5)
    assert len(r) == model_error.ERROR_NEIGHBOURS
    near = g.iloc[np.argsort(np.abs(np.log(g.advice_share) - math.log(0.5)))[:len(r)]]
    assert np.allclose(np.sort(r), np.sort(np.log(near.measured_ns / near.advice_model_ns)))
    # where switching weighs little the model was exact: its neighbours say so
    assert np.allclose(model_error.request_residuals(g, 1e-4), 0.0)
    first = near.index[0]
    assert first not in g.drop(index=first).index
    left = model_error.request_residuals(g, 0.5, leave_out=first)
    assert len(left) == len(r) and not np.allclose(np.sort(left), np.sort(r))
    assert len(model_error.request_residuals(None, 0.5)) == 0
    # the step-fed diagnosis's columns are its own: a grid of the advice has none of them
    assert len(model_error.request_residuals(g, 0.5, of="step")) == 0
    step = g.rename(columns={"advice_model_ns": "model_ns", "advice_share": "model_share"})
    assert np.allclose(model_error.request_residuals(step, 0.5, of="step"), r)
    assert len(model_error.request_residuals(step, 0.5)) == 0


def test_the_advisors_interval_carries_the_calibration_grids_error():
    rng = np.random.default_rng(5)
    frames = _simulated(rng, proc_sd=0.0, rep_sd=1e-9)
    w = inputs.workload("0ns", 1, 1024, 0, stack_size="64KiB")
    bare = model.predict_full("asm", w, _ev(frames))
    assert any("without the model's error" in n for n in bare["notes"])
    frames[model_error.CALIBRATION] = _grid(rng, points=400, sd=0.3)
    full = model.predict_full("asm", w, _ev(frames))
    assert any(f"model's error at {model_error.ERROR_NEIGHBOURS} points" in n for n in full["notes"])
    b, f = bare["ns_per_request"], full["ns_per_request"]
    # the switch is the whole request here: exp(±1.96 * 0.3) around the same centre
    assert f["high"] / f["value"] == pytest.approx(math.exp(1.96 * 0.3), rel=0.25)
    assert f["value"] == pytest.approx(b["value"], rel=0.15)
    assert (b["high"] - b["low"]) < 0.1 * (f["high"] - f["low"])


def test_the_grids_error_scales_the_whole_request_the_work_stated_included():
    rng = np.random.default_rng(6)
    frames = _simulated(rng, proc_sd=0.0, rep_sd=1e-9)
    frames[model_error.CALIBRATION] = pd.DataFrame(
        {"design": "D", "advice_model_ns": 100.0, "advice_share": 10 ** rng.uniform(-4, 0, 400),
         "measured_ns": 100.0 * np.exp(rng.normal(0, 0.4, 400))})
    w = inputs.workload("200ns", 2, 1024, 0, stack_size="64KiB")
    bare = model.predict_full("asm", w, _ev(frames), model_error=False)["ns_per_request"]
    full = model.predict_full("asm", w, _ev(frames))["ns_per_request"]
    # the grid's error puts the low end near exp(-1.96 * 0.4) = 0.46 of the centre: the work
    # a user states is a measurement too, and is not taken as a floor
    assert full["low"] == pytest.approx(bare["value"] * math.exp(-1.96 * 0.4), rel=0.15)
    assert full["low"] < 400.0 < bare["low"] and full["high"] > bare["high"]


@pytest.mark.parametrize("kwargs, name", [
    ({"work": "-5us"}, "work"), ({"work": "5 parsecs"}, "work"), ({"work": True}, "work"),
    ({"suspensions": 0}, "suspensions"), ({"suspensions": "2"}, "suspensions"),
    ({"alive": 0}, "alive"), ({"alive": 2.5}, "alive"), ({"stack_in_use": "1QB"}, "stack_in_use"),
    ({"stack_in_use": -1}, "stack_in_use"), ({"fp": "sometimes"}, "fp"),
    ({"stack_size": 100}, "stack_size"),
    ({"stack_in_use": "8KiB", "stack_size": "4KiB"}, "stack_in_use"),
    ({"rate": -1.0}, "rate"), ({"connections": 0}, "connections"),
])
def test_bad_workload_names_the_parameter(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=rf"^{name}\b"):
        inputs.workload(**kwargs)


def test_unknown_design_is_refused():
    import labkit

    with pytest.raises(ValueError, match="^design must be one of"):
        labkit.advise("1us", designs=["no_such_design"])
    with pytest.raises(TypeError, match="^designs"):
        labkit.advise("1us", designs="asm")


def test_parsers():
    from labkit.core.units import parse_size, parse_time
    assert parse_time("work", "20us") == (20_000.0, "ns")
    assert parse_time("work", "1.5ms") == (1_500_000.0, "ns")
    assert parse_time("work", "100cycles") == (100.0, "cycles")
    assert parse_size("s", "1KiB") == parse_size("s", "1K") == 1024
    assert parse_size("s", "64KB") == 65536 and parse_size("s", 7) == 7


def _files(frames) -> dict:
    """The frames a data/ folder or a bundle holds (not the measured-now ones)."""
    return {k: v for k, v in frames.items() if isinstance(v, pd.DataFrame)}


def _write_data(tmp_path, machine_id):
    """A results folder whose data/ holds simulated ladder, ring and memory rows."""
    data = tmp_path / "data"
    data.mkdir(parents=True)
    frames = _simulated(np.random.default_rng(5))
    for name, df in _files(frames).items():
        df.assign(machine_id=machine_id).to_csv(data / f"{name}.csv", index=False)
    return data


def test_rows_of_another_machine_are_not_used(tmp_path):
    data = _write_data(tmp_path, "not-this-machine")
    err = io.StringIO()
    ev = evidence.from_data(data, status=err)
    assert ev.rows("04_latency_ladder_verdict_runs").empty
    assert "another machine" in err.getvalue()
    mine = _write_data(tmp_path / "mine", _machine()["machine_id"])
    assert len(evidence.from_data(mine, status=err).rows("04_latency_ladder_verdict_runs"))


def test_a_bundle_of_another_machine_is_used(tmp_path):
    pytest.importorskip("pyarrow")
    frames = _simulated(np.random.default_rng(6))
    parts = [df.assign(notebook=name, machine_id="elsewhere")
             for name, df in _files(frames).items()]
    b = tmp_path / "other.labkit"
    b.mkdir()
    pd.concat(parts, ignore_index=True).to_parquet(b / "measurements.parquet", index=False)
    pd.DataFrame({"claim": ["C000.1"]}).to_parquet(b / "verdicts.parquet", index=False)
    machine = {"machine_id": "elsewhere", "cpu_model": "Other CPU", "arch": "x86_64-sysv",
               "tsc_ghz": 3.0}
    (b / "machine.json").write_text(json.dumps({"machine": machine, "format": 3}))
    ev = evidence.from_bundle(b)
    assert not ev.local and ev.machine["machine_id"] == "elsewhere"
    w = inputs.workload("30cycles", 1, 2, 0, stack_size="64KiB")
    value, low, high = model.predict("asm", w, ev)
    assert math.isfinite(value) and low <= value <= high
    # Cycles convert at the bundle machine's TSC rate, not this machine's.
    assert value == pytest.approx(10 + 2 * ev.rows(
        "04_latency_ladder_verdict_runs").groupby("worker").ns_per_switch.median().mean(),
        rel=0.05)


def test_cli_json_shape(tmp_path):
    from labkit.lab import cli

    _write_data(tmp_path, _machine()["machine_id"])
    out = io.StringIO()
    import contextlib

    try:
        with contextlib.redirect_stdout(out):
            rc = cli.main(["--results", str(tmp_path), "advise", "--work", "20us", "--switches",
                           "2", "--alive", "1024", "--stack-in-use", "1KiB", "--stack-size",
                           "64KiB", "--design", "asm", "--json"])
    finally:
        results.set_home(None)  # --results sets the process's results home
    assert rc == 0
    rows = json.loads(out.getvalue())["records"]
    assert [r["design"] for r in rows] == ["asm"]
    r = rows[0]
    assert set(r) >= {"design", "ns_per_request", "switch_share", "bytes_per_coroutine",
                      "bytes_total", "hazards", "rank"}
    assert set(r["ns_per_request"]) == {"value", "low", "high"}
    assert r["ns_per_request"]["low"] <= r["ns_per_request"]["value"] <= r["ns_per_request"]["high"]
    assert r["rank"] == 1 and isinstance(r["hazards"], list)
    assert r["bytes_total"] == pytest.approx(1024 * r["bytes_per_coroutine"])


@pytest.mark.parametrize("args, option", [
    (["--work", "5us", "--alive", "0"], "--alive"),
    (["--work", "5us", "--design", "nope"], "--design"),
    (["--work", "5us", "--stack-in-use", "8KiB", "--stack-size", "4KiB"], "--stack-in-use"),
    (["--work", "5xs"], "--work"), (["--work=-5us"], "--work"), (["--work", "-5us"], "--work"),
    (["--work", "5us", "--switches", "-1"], "--switches"),
    (["--work", "5us", "--fp", "maybe"], "--fp"),
    (["--work", "5us", "--bundle", "/nonexistent.labkit"], "--bundle"),
])
def test_cli_bad_input_exits_2_naming_the_option(args, option, capsys):
    from labkit.lab import cli

    assert cli.main(["advise", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and option in err[0]


def test_a_cold_switch_is_measured_now_on_a_stack_that_holds_the_frame():
    """ucontext's context object (over 1 KiB) on the smallest stack the advisor gives it:
    its switches among many contexts are measured on a stack large enough for it."""
    err = io.StringIO()
    ev = evidence.Evidence("empty", _machine(), {}, local=True, quick=True, status=err)
    term, note = cold.cold_resume(ev, "ucontext", 3000, 4096)
    assert np.isfinite(term.draws).all() and (term.draws >= 0).all() and note == ""
    assert "measuring now ucontext's switches among 3000 contexts against 2 on " in err.getvalue()
    assert cold.cold_resume(ev, "ucontext", 3000, 4096)[0].value == term.value  # kept
    assert err.getvalue().count("measuring now") == 1


def test_a_stack_holds_what_its_design_keeps_above_the_bytes_in_use():
    """A page in use and the record above it span two pages: the depth is measured in the
    design's own layout, a peer's record included (the lab declares no frame for it)."""
    from conftest import PEERS

    from labkit.core.entries import frame_bytes

    err = io.StringIO()
    ev = evidence.Evidence("empty", _machine(), {}, local=True, quick=True, status=err)
    for design in ["asm_fpu"] + [d for d in ("boost_fcontext", "boost_fiber") if d in PEERS]:
        depth, note = memory.stack_depth(ev, design, PAGE, 65536)
        assert depth > PAGE and note == "", design
        assert f"how deep {design}'s 4096 bytes in use sit" in err.getvalue()
    elsewhere = _ev({})
    assert memory.stack_depth(elsewhere, "asm_fpu", 100, 65536)[0] == 100 + frame_bytes("asm_fpu")
    assert memory.stack_depth(ev, "asm_fpu", 0, 65536) == (frame_bytes("asm_fpu"), "")


def test_missing_rows_are_measured_now_and_said(tmp_path):
    err = io.StringIO()
    ev = evidence.Evidence("empty", _machine(), {}, local=True, quick=True, status=err)
    term = switch_terms.ladder(ev, "asm")
    assert np.isfinite(term.draws).all() and (term.draws >= 0).all()
    assert "measuring now asm's ping-pong" in err.getvalue()
    assert len(ev.rows("04_latency_ladder")) == 3  # the quick measurement's repeats, kept
    switch_terms.ladder(ev, "asm")  # a second call reads what was measured
    assert err.getvalue().count("measuring now") == 1


def test_the_advice_says_what_it_measured_now_one_line_per_reason():
    ev = _ev(_simulated(np.random.default_rng(7), proc_sd=0.0))
    ev.status = io.StringIO()
    ev.announce("a ring", "no ring here")
    ev.announce("a ladder", "no ladder here")
    ev.announce("another ring", "no ring here")
    from labkit.lab.advising import present

    w = inputs.workload("1us", 1, 64, 0)
    head = [line for line in present.Advice(w, [], ev, since=1).text().splitlines()
            if line.startswith("measured now")]
    assert head == ["measured now, as no ladder here: a ladder",
                    "measured now, as no ring here: another ring"]
    assert "1 suspension (2 switches each)" in present.Advice(w, [], ev).text()


def test_advice_ranks_blocking_hazards_last_and_shows_html():
    ev = _ev(_simulated(np.random.default_rng(7), proc_sd=0.0))
    from labkit.lab.advising import hazards, present

    w = inputs.workload("1us", 1, 100_000, 0, stack_size="64KiB")
    p = model.predict_full("asm", w, ev)
    p["hazards"] = hazards.of(ev, "asm", w, p)
    from labkit.core import procfs

    limit = procfs.max_map_count()
    assert any(h.blocking for h in p["hazards"]) == (2 * 100_000 > limit)
    ok = dict(p, design="asm_copy", hazards=[])
    ranked = present.rank([p, ok])
    assert ranked[-1]["design"] == ("asm" if 2 * 100_000 > limit else "asm_copy")
    html = present.Advice(w, ranked, ev)._repr_html_()
    assert "<table>" in html and "asm" in html


def test_mappings_come_from_the_layout_when_memory_has_no_rows():
    """Without memory rows (another machine's bundle), a guard-paged stack still takes two
    mappings, so the mapping limit is still judged; heap frames take none."""
    from labkit.core import procfs
    from labkit.lab.advising import hazards

    frames = _simulated(np.random.default_rng(11), proc_sd=0.0)
    del frames["07b_coroutine_memory"]
    ev = _ev(frames)
    w = inputs.workload("1us", 1, 1_000_000, 0, stack_size="64KiB")
    p = model.predict_full("asm", w, ev)
    assert math.isnan(p["memory"]["resident"])
    assert (p["memory"]["mappings"], p["memory"]["mappings_total"]) == (2, 2_000_000)
    h = hazards.mapping_limit(ev, "asm", w, p["memory"])
    assert (h is not None and h.blocking) == (2_000_000 > procfs.max_map_count())
    assert model.predict_full("cxx20_generator", w, ev)["memory"]["mappings_total"] == 0


def test_a_bundles_limit_says_it_is_this_machines():
    """A bundle does not record its machine's vm.max_map_count: the hazard and the header
    say the limit read is the one of the machine running labkit."""
    from dataclasses import replace

    from labkit.lab.advising import hazards, present

    bundle = _ev(_simulated(np.random.default_rng(11), proc_sd=0.0))
    w = inputs.workload("1us", 1, 1_000_000, 0, stack_size="64KiB")
    p = model.predict_full("asm", w, bundle)
    # more mappings than any kernel allows, so the hazard is always there to read
    mem = dict(p["memory"], mappings_total=1 << 62)
    for local, says in ((True, "this machine's vm.max_map_count = "),
                        (False, "vm.max_map_count of the machine running labkit (the "
                                "bundle's machine did not record its own) = ")):
        ev = replace(bundle, local=local)
        assert says in hazards.mapping_limit(ev, "asm", w, mem).sentence
        header = "\n".join(present.Advice(w, [dict(p, hazards=[])], ev)._header())
        assert ("bundle does not record" in header) == (not local)



def test_a_bundles_memory_and_cpus_are_its_own():
    """The memory and CPU walls read the bundle's machine where its bundle records them."""
    from dataclasses import replace

    from labkit.lab.advising import hazards

    bundle = _ev(_simulated(np.random.default_rng(11), proc_sd=0.0))
    w = inputs.workload("1us", 1, 1000, 0, stack_size="64KiB", rate=1e6)
    small = replace(bundle, machine={"memory_bytes": 2**30, "cpu_count": 2})
    h = hazards.memory_wall(small, "asm", w, {"total": 1.5 * 2**30})
    assert h.sentence.endswith("more than the bundle's machine's 1.0 GiB.")
    h = hazards.cpu_load(small, "asm", w, {"cpu_load": {"value": 3.0}})
    assert h.sentence.endswith("CPUs of the bundle's machine's 2.")
    big = replace(bundle, machine={"memory_bytes": 2**50, "cpu_count": 4096})
    assert hazards.memory_wall(big, "asm", w, {"total": 2**45}) is None
    assert hazards.cpu_load(big, "asm", w, {"cpu_load": {"value": 3000.0}}) is None


def test_the_fastest_says_how_many_designs_had_no_time():
    from labkit.lab.advising import present

    ev = _ev(_simulated(np.random.default_rng(12), proc_sd=0.0))
    w = inputs.workload("1us", 1, 64, 0, stack_size="64KiB")
    timed = dict(model.predict_full("asm", w, ev), hazards=[])
    nan = {"value": math.nan, "low": math.nan, "high": math.nan}
    untimed = [dict(timed, design=d, ns_per_request=nan, hazards=[], notes=["no time: x"])
               for d in ("asm_fpu", "ucontext")]
    ranked = present.rank([*untimed, timed])
    assert ranked[0]["design"] == "asm"
    assert "of the designs with a time (2 have none)" in ranked[0]["reason"]
    alone = present.rank([dict(timed)])[0]["reason"]
    assert alone.startswith("Fastest without a blocking hazard: ")


def test_a_stack_raised_for_the_experiment_is_said():
    """ucontext's context object and 1 KiB in use fit the 4 KiB stack the user gives, but
    not the workload experiment's headroom: the advice says its cold switch was measured
    on a larger stack."""
    frames = _simulated(np.random.default_rng(13), proc_sd=0.0)
    ev = _ev(frames)
    w = inputs.workload("1us", 1, 64, "1KiB", stack_size="4KiB")
    layout, n, u, size, work = cold.cold_need("ucontext", w, ev)
    assert work == 1000.0  # a stack's cold switch is read beside the work
    assert size > 4096
    notes = model.predict_full("ucontext", w, ev)["notes"]
    assert any(f"on {size // 1024} KiB stacks, not the 4 KiB given" in n for n in notes)
    roomy = inputs.workload("1us", 1, 64, "1KiB", stack_size="64KiB")
    assert not any("not the" in n for n in model.predict_full("ucontext", roomy, ev)["notes"])


def test_a_stack_near_its_size_is_a_hazard_only_when_the_size_was_given():
    from labkit.lab.advising import hazards

    ev = _ev(_simulated(np.random.default_rng(10), proc_sd=0.0))
    tight = inputs.workload("1us", 1, 64, 3000, stack_size="4KiB")
    p = model.predict_full("asm", tight, ev)
    h = hazards.stack_near_size(ev, "asm", tight, p["memory"])
    assert h is not None and "4096-byte stack given" in h.sentence and not h.blocking
    auto = inputs.workload("1us", 1, 64, 3000)
    mem = model.predict_full("asm", auto, ev)["memory"]
    assert hazards.stack_near_size(ev, "asm", auto, mem) is None
    roomy = inputs.workload("1us", 1, 64, 1000, stack_size="64KiB")
    mem = model.predict_full("asm", roomy, ev)["memory"]
    assert hazards.stack_near_size(ev, "asm", roomy, mem) is None


def test_an_advice_says_what_it_measured_itself_and_that_earlier_ones_are_kept(tmp_path):
    """The evidence is kept for the process: a second advice lists only its own
    measurements, and says that earlier ones exist."""
    import labkit

    _write_data(tmp_path, _machine()["machine_id"])
    err = io.StringIO()
    kw = dict(work="1us", stack_size="64KiB", designs=["asm"], data_dir=tmp_path, quick=True,
              status=err)
    first = labkit.advise(alive=8, **kw).text()
    second = labkit.advise(alive=16, **kw).text()
    assert "among 8 contexts" in first and "earlier in this process" not in first
    assert "among 16 contexts" in second and "among 8 contexts" not in second
    assert "measurements made earlier in this process" in second


def test_the_cold_switches_measured_here_travel_as_rows_and_read_back_there():
    """Known truth: asm among 1000 contexts 30 ns dearer than among 2 in each of 3 processes
    on 64 KiB stacks, cxx20_generator's heap frames 5 ns; as rows (what notebook 10 keeps
    and a bundle carries) they give another machine's evidence the same terms."""
    here = _ev({})
    here.frames["cold switch asm 1000 0 65536 0"] = {
        (2, 0): _loops(pd.Series([6.0, 7.0, 8.0], index=[0, 1, 2])),
        (1000, 0): _loops(pd.Series([36.0, 37.0, 38.0], index=[0, 1, 2]))}
    here.frames["cold switch cxx20_generator 1000 64 None 0"] = {
        (2, 64): _loops(pd.Series([2.0, 2.0], index=[0, 1])),
        (1000, 64): _loops(pd.Series([7.0, 7.0], index=[0, 1]))}
    rows = cold.cold_rows(here)
    assert len(rows) == 10 and set(rows.stack_size) == {65536, 0}
    there = _ev({evidence.COLD_SWITCHES: rows})
    term, _ = cold.cold_resume(there, "asm", 1000, 65536)
    assert np.allclose(term.draws, 30.0)
    assert "3 processes, from 1000 contexts and 0 bytes in use on 64 KiB stacks" in term.basis
    term, _ = cold.cold_resume(there, "cxx20_generator", 5000, None, 64)
    assert np.allclose(term.draws, 5.0) and "on heap frames" in term.basis
    # rows from before the work was kept were measured with none
    old = _ev({evidence.COLD_SWITCHES: rows.drop(columns="work_ns")})
    term, _ = cold.cold_resume(old, "asm", 1000, 65536, 0, 500.0)
    assert np.allclose(term.draws, 30.0) and "with no work between switches" in term.basis
    assert cold.cold_rows(_ev({})).empty


def test_advice_from_a_bundle_reads_that_machines_cold_switches_and_grid(tmp_path):
    """A bundle of a data folder whose notebook 10 kept its cold switches: the advice from
    it predicts a stackful design among 10,000 contexts with that machine's cold switch
    (known truth: 40 ns), its grid giving the model's error; without them, no time."""
    import shutil
    from pathlib import Path

    from labkit.lab.sharing import bundle

    repo = Path(__file__).resolve().parent.parent
    data = tmp_path / "data"
    shutil.copytree(repo / "data", data, ignore=shutil.ignore_patterns(
        "checkpoints", f"{evidence.COLD_SWITCHES}.csv"))
    before = bundle.pack_folder(data, tmp_path / "before")
    ladder = results.read_csv(data / "04_latency_ladder.csv", low_memory=False)
    machine = ladder.iloc[0][[c for c in bundle.ROW_MACHINE_FIELDS if c in ladder]]
    worker = np.repeat([0, 1, 2], 3)
    rows = pd.concat([pd.DataFrame({
        "layout": "asm_fpu", "alive": 10_000, "contexts": c, "stack_in_use": 1024,
        "stack_size": 65536, "worker": worker, "ns_per_request": 12.0 + add + worker,
        "work_only_ns_per_request": 2.0})
        for c, add in ((2, 0.0), (10_000, 40.0))], ignore_index=True)
    rows.assign(**machine.to_dict()).to_csv(data / f"{evidence.COLD_SWITCHES}.csv", index=False)
    after = bundle.pack_folder(data, tmp_path / "after")

    ev = evidence.from_bundle(after)
    assert not ev.local and not ev.rows("advisor_calibration").empty
    assert not ev.rows("04_latency_ladder_verdict_runs").empty
    term, _ = cold.cold_resume(ev, "asm_fpu", 10_000, 4096, 1024)
    assert np.allclose(term.draws, 40.0)
    w = dict(work="100ns", alive=10_000, stack_in_use="1KiB", designs=["asm_fpu"])
    with_cold = labkit_advise(bundle=after, **w).records()[0]
    assert with_cold["ns_per_request"]["value"] > 100
    assert not any("without the model's error" in n for n in with_cold["notes"])
    assert labkit_advise(bundle=before, **w).records()[0]["ns_per_request"]["value"] is None

    # A bundle of a format before the parts says so where the cold switch is missed.
    old = tmp_path / "old.labkit"
    shutil.copytree(before, old)
    (old / "parts.parquet").unlink()
    meta = json.loads((old / "machine.json").read_text())
    (old / "machine.json").write_text(json.dumps(dict(meta, format=bundle.PARTS_FROM - 1)))
    notes = labkit_advise(bundle=old, **w).records()[0]["notes"]
    assert any(f"predates the cold switches, which bundles carry from format "
               f"{bundle.PARTS_FROM}" in n for n in notes)


def labkit_advise(**kw):
    import labkit

    return labkit.advise(**kw)


def test_the_share_curve_joins_a_stacks_cold_switch_between_the_works_measured():
    """Known truth: asm among 1000 contexts 20 ns colder with no work between switches and
    60 ns with 1 µs of it. The curve's works between read a straight line in log(1 + ns)
    between the two, beyond 1 µs the last: no step or bump the measurements do not show;
    nothing is measured for them. The touch term is 0 here (the steps cost the same)."""
    from labkit.lab.analysis import your_workload as yw

    ev = _ev(_simulated(np.random.default_rng(21), proc_sd=0.0, rep_sd=1e-9))
    for work, add in ((0, 20.0), (1000, 60.0)):
        ev.frames[f"cold switch asm 1000 0 65536 {work}"] = {
            (2, 0): _loops(pd.Series([6.0] * 3)), (1000, 0): _loops(pd.Series([6.0 + add] * 3))}
    c = yw.curves(["asm"], alive=1000, in_use=0, ev=ev)
    share = c[c.kind == "share"].set_index("x").value
    assert list(share.index) == sorted(yw.WORKS)
    # share = 2c / (W + 2c) with c = 3 + cold / 2 (no overlap data: the switch unhidden)
    for w, s in share.items():
        f = min(math.log1p(w) / math.log1p(1000), 1.0)
        cold = 20.0 + f * 40.0
        c_switch = 3.0 + cold / 2
        assert s == pytest.approx(2 * c_switch / (w + 2 * c_switch), rel=1e-6), w


def test_the_advice_adds_what_touching_the_bytes_costs_among_n_contexts():
    """Known truth: asm's steps cost 2 ns among 2 contexts and 2 + 30 ns among 1000 (the
    bytes in use each last touched 1000 suspensions ago), its switching 20 ns more. Given
    the work in one warm context, the advice adds both; given the grid's step among the
    N (Workload.step), which holds the 30 ns already, only the switch's."""
    ev = _ev(_simulated(np.random.default_rng(22), proc_sd=0.0, rep_sd=1e-9))
    ev.frames["cold switch asm 1000 1024 65536 100"] = {
        (2, 1024): _loops(pd.Series([6.0] * 3)),
        (1000, 1024): _loops(pd.Series([26.0] * 3), steps=32.0)}
    w = inputs.workload("100ns", 1, 1000, "1KiB", stack_size="64KiB")
    touch, _ = cold.touch_cost(ev, "asm", w)
    assert np.allclose(touch.draws, 30.0)
    p = model.predict_full("asm", w, ev, model_error=False)
    assert p["touch_ns"]["value"] == pytest.approx(30.0)
    # W + touch + 2 * (c + cold / 2), no overlap data: the switch unhidden
    assert p["ns_per_request"]["value"] == pytest.approx(100 + 30 + 2 * (3.0 + 20.0 / 2))
    step = model.predict_full("asm", dataclasses.replace(w, step=True, busy_ns=100.0), ev,
                              model_error=False)
    assert step["touch_ns"]["value"] == 0.0
    assert step["ns_per_request"]["value"] == pytest.approx(100 + 2 * (3.0 + 20.0 / 2))
    # two contexts: nothing is cold and nothing is far
    two = model.predict_full("asm", dataclasses.replace(w, alive=2), ev, model_error=False)
    assert two["touch_ns"]["value"] == 0.0


@pytest.mark.parametrize("u", [0, 1000, 4096, 8192])
def test_a_recommended_stack_holds_the_bytes_in_use_and_the_switchs_calls(u):
    """With no stack size given, each stackful design's stack holds the bytes in use, its
    saved frame and the entry's calls: it runs its u bytes under a guard page without a
    fault (the workload experiment, two contexts, its stacks guarded)."""
    from conftest import PEERS

    from labkit.core import entries, validate
    from labkit.experiments import workload

    w = inputs.workload("0ns", 1, 2, u)
    ran = []
    for design in taxonomy.names():
        if taxonomy.of(design).family != "stack" or design not in workload.designs():
            continue
        if entries.system(design) != "labkit" and design not in PEERS:
            continue
        size = taxonomy.stack_size(design, w)
        assert size >= u + entries.frame_bytes(design) + validate.ENTRY_HEADROOM, design
        df = workload.run_workload(design, work_ns=0, alive=2, stack_in_use=u,
                                   switches_per_request=1, requests=100, stack_size=size,
                                   guard=True, repeats=1)
        assert bool(df.guard_pages.iloc[0]) and (df.stack_size == size).all(), design
        ran.append(design)
    assert "asm_fpu" in ran and "ucontext" in ran


def test_percent_label_gives_plain_numbers_never_powers_of_ten():
    from labkit.core.plots import percent_label

    assert [percent_label(x) for x in (0.9996, 0.123, 0.0123, 0.00012, 0.0)] == \
        ["100", "12", "1.2", "0.012", "0"]
    assert percent_label(float("nan")) == "n/a"
    assert "e+" not in percent_label(9.99) and "e-" not in percent_label(1e-7)
