"""The analysis of notebooks 01-06 (labkit.lab.analysis), run on the committed data: each
function gives back what the notebook shows, and what it saves keeps the committed names
and columns."""
import math

import pandas as pd
import pytest

from labkit.core import results
from labkit.errors import CountError
from labkit.lab.analysis import (fp_state, kernel_switches, latency_ladder, optimisation_levels,
                                 stack_size, symmetric)


def committed(name):
    path = results.REPO / "data" / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"no committed {path.name}")
    return results.read_csv(path, low_memory=False)


def test_stack_size_labels_and_rings():
    d = committed("01_stack_size")
    pingpong = d[d.pattern == "pingpong"]
    relabelled = stack_size.label_stacks(pingpong.drop(columns="stacks"))
    assert list(relabelled.stacks) == list(pingpong.stacks)
    ring = d[d.pattern == "ring"]
    sizes, counts = sorted(ring.stack_size.unique()), sorted(ring.contexts.unique())
    table = stack_size.rings(ring, sizes, counts)
    assert len(table) == len(sizes)
    n_max = max(counts)
    assert (table[f"N={n_max} aligned ns"] > 0).all()
    assert f"N={n_max}:" in stack_size.ring_reading(table, counts)
    assert stack_size.ring_note(table, counts).startswith(f"; asm_fpu ring of {n_max}")


def test_optimisation_ratios_say_why_a_spread_is_unbounded():
    """A -O2 net within the loop's jitter (medians near 0) leaves the -O0/-O2 ratio without
    a bound: the table says so in words, never '-inf .. inf'."""
    timed = pd.DataFrame({"entry": ["k"] * 8, "build": ["O0"] * 4 + ["O2"] * 4,
                          "ns_per_switch": [8.0, 8.5, 9.0, 8.7, 0.0, 0.2, 0.0, 0.3]})
    r = optimisation_levels.ratios(timed, pd.DataFrame(), ["k"])
    assert r.spread.iloc[0].startswith("unbounded")
    d = committed("02_optimisation_levels")
    r = optimisation_levels.ratios(d, pd.DataFrame(), ["boost_fiber"])
    lo, hi = (float(x) for x in r.spread.iloc[0].split(" .. "))
    assert lo <= r["-O0 / -O2"].iloc[0] <= hi


def test_symmetric_ratio_and_laps():
    d = committed("03_symmetric_vs_asymmetric")
    n = int(d.contexts.max())
    r, lo, hi = symmetric.ratio_at(d, "asm_fpu", n)
    assert lo <= r <= hi
    assert symmetric.laps(4, True, 800) == 100 and symmetric.laps(4, False, 800) == 160
    assert symmetric.laps(1024, True, 10) == 1


def test_kernel_switches_counts_and_saved_columns():
    d = committed("05_kernel_switches")
    # What the notebook holds before it saves: the sweeps' own columns.
    handoffs = d[d.part != "yield"].drop(columns=["what", "switches_per_unit"])
    yields = d[d.part == "yield"].drop(columns=["what", "switches_per_unit", "part"])
    counts = kernel_switches.os_counts(handoffs)
    assert {"handoffs", "vol", "invol", "kernel_per_handoff", "counts_agree",
            "invol_share"} <= set(counts.columns)
    bad = counts.assign(counts_agree=[False] + [True] * (len(counts) - 1))
    warnings = kernel_switches.count_warnings(bad)
    assert len(warnings) == 1 and str(counts.index[0]) in warnings[0]
    assert set(kernel_switches.saved(handoffs, yields).columns) == set(d.columns)


def test_latency_ladder_count_keeps_the_reason_not_valgrinds_log(monkeypatch):
    from labkit.experiments import callgrind

    def fails(kernel, build):
        raise CountError("callgrind run failed (1)", "==123== valgrind's own lines\n")

    monkeypatch.setattr(callgrind, "instructions_per_switch", fails)
    row = latency_ladder.count("asm")
    assert row["error"] == "callgrind run failed (1)" and math.isnan(row["net"])
    assert str(CountError("why", "log")) == "why: log" and str(CountError("why")) == "why"


def test_latency_ladder_reads_the_kunpeng_figure_from_the_articles():
    assert latency_ladder.kunpeng_swapcontext_ns() == 814


def test_latency_ladder_says_why_a_rung_has_no_count():
    ns = pd.DataFrame({"entry": ["asm", "greenlet", "virtual_call"],
                       "system": ["labkit", "python", "peer"], "kind": ["stackful"] * 3,
                       "median": [2.0, 50.0, 1.0], "iqr": [0.1] * 3, "median_ticks": [5.0] * 3,
                       "noisy": [False] * 3})
    catalogue = pd.DataFrame({"entry": ns.entry, "saves": ["regs"] * 3})
    instr = pd.DataFrame({"entry": ["asm"], "net": [12.0]})
    cells = list(latency_ladder.ladder_table(ns, catalogue, instr)["instructions (O2)"])
    assert cells == ["12.0", "not counted: a CPython peer", "not counted in a quick run"]
    none = latency_ladder.ladder_table(ns, catalogue, pd.DataFrame(columns=["entry", "net"]))
    assert none["instructions (O2)"].iloc[2] == "not counted (see the note)"


def test_fp_state_effects_from_the_committed_runs():
    d = committed("06_fp_state_and_return")
    runs = fp_state.label_fp_control(d)
    assert runs.fp_control.notna().all()
    effects = fp_state.effects(runs, list(runs.entry.unique()))
    assert effects.effect.iloc[0].startswith("saving the x87/SSE state")
    assert (effects.dropna().ratio > 0).all()


def test_stack_size_findings_say_what_the_numbers_say():
    KiB, MiB = 1 << 10, 1 << 20

    def rows(entry, stacks, times):
        return pd.DataFrame([{"entry": entry, "stacks": stacks, "stack_size": s,
                              "ns_per_switch": t} for s, t in times.items()])

    flat = rows("asm_fpu", "prefaulted", {4 * KiB: 4.0, 8 * MiB: 4.1})
    said = stack_size.pingpong_finding(flat, ["asm_fpu"])
    assert "does not change asm_fpu's switch" in said and "1.02x" in said
    assert "the article saw 5.45x" in said  # C000.2's claimed ratio, read from claims.csv
    rising = rows("boost_fiber", stack_size.BOOST_STACKS, {4 * KiB: 22.0, 8 * MiB: 44.0})
    said = stack_size.pingpong_finding(rising, ["boost_fiber", "asm_fpu"])
    assert "raises boost_fiber's switch" in said and "2.00x" in said
    ring = pd.DataFrame([{"contexts": n, "colour_step": 64, "stack_size": s,
                          "ns_per_switch": t} for n, s, t in
                         [(4096, 4 * KiB, 10.0), (4096, 8 * MiB, 30.0), (64, 8 * MiB, 5.0)]])
    said = stack_size.ring_finding(ring, [64, 4096])
    assert said.startswith("Among 4,096 contexts, 8 MiB stacks cost 3x what 4 KiB")


def test_latency_ladder_finding_names_its_ends_and_landmarks():
    ns = pd.DataFrame({"entry": ["direct_call", "asm_fpu", "syscall_getppid", "asyncio_task"],
                       "median": [0.5, 4.0, 120.0, 1500.0]})
    said = latency_ladder.ladder_finding(ns)
    assert said == ("On this machine one switch costs from 0.5 ns (direct_call) to 1.5 us "
                    "(asyncio_task); asm_fpu 4 ns, syscall_getppid 120 ns.")
    assert latency_ladder.ladder_finding(ns.iloc[:0]) == "No rung was measured here."


def test_symmetric_finding_reads_the_largest_ring():
    pt = pd.DataFrame({"entry": ["asm_fpu"] * 4, "pattern": ["ring", "scheduler"] * 2,
                       "contexts": [2, 2, 64, 64], "median": [4.0, 8.0, 5.0, 2.5]})
    assert symmetric.finding(pt) == ("With 64 contexts, a transfer through a scheduler "
                                     "costs what a direct ring transfer costs times 0.50x "
                                     "for asm_fpu.")
