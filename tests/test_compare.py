"""`labkit compare`: its answers calibrated on simulated measurements of known truth (no
timing), a small live comparison through the command line (entries, a build, a user's
switch), two saved runs of one machine compared per claim and ladder entry (real runs of
another EPYC, tests/fixtures/epyc-7461bd-runs), and bad input refused in one line."""
import json
import math
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labkit.core import sequential
from labkit.lab import cli
from labkit.lab.comparing import answer, calibration, saved
from labkit.lab.judging import calibration as engine_calibration

from conftest import EXAMPLES

REPO = Path(__file__).resolve().parent.parent
RUNS = REPO / "tests" / "fixtures" / "epyc-7461bd-runs"
SIMS = 1000
LIMIT = sequential.ALPHA + engine_calibration.tolerance(SIMS)


# ---- calibration: simulated data of known truth ----

@pytest.fixture(scope="module")
def cases():
    """calibration.table: every case docs/compare.md states, by its name."""
    return {r["case"]: r for r in calibration.table(SIMS)}


def test_equal_speeds_are_rarely_called_different(cases):
    equal = cases["two sides at equal speed"]
    # The allowance over alpha is Monte-Carlo error only (2.58 standard errors).
    assert equal["false_difference"] <= LIMIT, equal
    # and mostly said to be the same: a calibration that never decides would pass the above
    assert equal[answer.SAME] >= 0.9, equal


def test_three_equal_sides_keep_the_familywise_rate_under_holm(cases):
    got = cases["three sides at equal speed (3 pairs, Holm)"]
    assert got["pairs"] == 3 * got["runs"]
    assert got["false_difference"] <= LIMIT, got


def test_power_for_a_ten_percent_difference(cases):
    # A takes 1/1.1 of B's time: A is 10% faster. docs/compare.md states this power.
    got = cases["A 10% faster"]
    assert got[answer.FASTER] >= 0.95, got
    assert got["false_difference"] <= LIMIT, got


def test_no_difference_is_not_said_when_the_truth_is_beyond_the_margin(cases):
    got = cases["A 8% slower (beyond the ±5% margin)"]
    assert got[answer.SAME] <= LIMIT, got
    assert got["false_difference"] <= LIMIT, got


def test_each_share_has_its_interval(cases):
    assert calibration.wilson(0, 10)[0] == 0 and calibration.wilson(10, 10)[1] == 1
    assert calibration.wilson(50, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    for r in cases.values():
        for k in ("false_difference", *calibration.OUTCOMES):
            lo, hi = r[f"{k}_interval"]
            assert lo <= r[k] <= hi, (r["case"], k)
        assert sum(r[k] for k in calibration.OUTCOMES) == pytest.approx(1)


def test_the_answer_reads_as_a_speed_ratio():
    stats = {("a", "b"): np.log(1 / 1.25) + np.random.default_rng(1).normal(0, 0.01, 96)}
    (row,) = answer.decide(stats, sequential.LOOKS)
    assert row["outcome"] == answer.FASTER and row["processes"] == 8  # the first look decides
    assert re.match(r"a is faster than b by 2\d\.\d% \[", row["text"]), row["text"]
    assert row["low"] <= row["ratio"] <= row["high"] < 1
    (row,) = answer.decide({("a", "b"): -stats[("a", "b")]}, sequential.LOOKS)
    assert row["outcome"] == answer.SLOWER
    assert re.match(r"b is faster than a by 2\d\.\d% \[", row["text"]), row["text"]
    flat = {("a", "b"): np.random.default_rng(2).normal(0, 0.4, 96)}
    (row,) = answer.decide(flat, sequential.LOOKS)
    assert row["outcome"] == answer.UNDECIDED and row["processes"] == 96
    assert row["text"].startswith("undecided at the cap")
    (row,) = answer.decide({("a", "b"): flat[("a", "b")][:20]}, sequential.LOOKS)
    assert "at 20 of 96 processes (time budget)" in row["text"]


def test_the_figure_ticks_the_margins_ends_on_a_narrow_axis(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from labkit.lab.comparing import figure

    stats = {("a", "b"): np.random.default_rng(3).normal(0, 0.005, 96)}
    (row,) = answer.decide(stats, sequential.LOOKS)
    assert row["outcome"] == answer.SAME
    drawn = {}

    def keep(self, path, **kw):  # the Figure as drawn, read before it is written
        drawn["fig"] = self

    monkeypatch.setattr(Figure, "savefig", keep)
    figure.draw([row], stats, tmp_path / "pair.png")
    ax = drawn["fig"].axes[0]
    lo, hi = ax.get_xlim()
    shown = {t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi}
    assert {"0.952x", "1x", "1.05x"} <= shown, shown


def test_several_pairs_are_answered_together():
    rng = np.random.default_rng(4)
    stats = {("a", "b"): -0.3 + rng.normal(0, 0.02, 96), ("a", "c"): -0.3 + rng.normal(0, 0.02, 96),
             ("b", "c"): rng.normal(0, 0.02, 96)}
    rows = answer.decide(stats, sequential.LOOKS)
    assert [r["outcome"] for r in rows] == [answer.FASTER, answer.FASTER, answer.SAME]
    assert all("holm over 3 pairs" in r["method"] for r in rows)


# ---- live sides, through the command line ----

SHORT = ["--looks", "2,3", "--repeats", "1", "--switches", "20000"]  # fast, not decisive


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    """A module of the user's in a folder on sys.path (a fresh name each test: the shared
    worker keeps what it imported)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def _greenlet_switch(tmp_path, monkeypatch, name: str) -> str:
    return _module(tmp_path, monkeypatch, name, """
        import greenlet

        def factory():
            def swap(g):
                g.switch()
            return greenlet.greenlet, swap
        """) + ":factory"


@pytest.mark.usefixtures("forget_added")
def test_live_compare_of_an_entry_a_build_and_a_users_switch(tmp_path, capsys):
    pyperf_file, fig = tmp_path / "runs.json", tmp_path / "pairs.png"
    argv = ["compare", "asm", "asm_fpu@O3", "--source", str(REPO / "docs/examples/my_switch.c"),
            *SHORT, "--json", "--figure", str(fig), "--export", f"pyperf={pyperf_file}"]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "labkit.compare/1" and out["kind"] == "live"
    assert {"machine", "labkit_commit", "command", "date"} <= set(out["context"])
    assert out["context"]["machine"]["machine_id"]
    assert [s["label"] for s in out["sides"]] == ["asm", "asm_fpu@O3", "user:my_switch"]
    assert out["sides"][1]["build"] == "O3"
    assert [(p["a"], p["b"]) for p in out["pairs"]] == [
        ("asm", "asm_fpu@O3"), ("asm", "user:my_switch"), ("asm_fpu@O3", "user:my_switch")]
    assert 2 <= out["schedule"]["processes"] <= 3
    for p in out["pairs"]:
        assert p["outcome"] in (answer.FASTER, answer.SLOWER, answer.SAME, answer.UNDECIDED)
        assert p["low"] is None or p["low"] <= p["ratio"] <= (p["high"] or math.inf)
        assert len(p["values"]) == out["schedule"]["processes"] and p["text"]
    assert fig.stat().st_size > 0
    done = subprocess.run([sys.executable, "-m", "pyperf", "stats", str(pyperf_file)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "compare/asm" in done.stdout


@pytest.mark.usefixtures("forget_added")
def test_two_users_python_switches_are_compared(tmp_path, monkeypatch, capsys):
    pythons = [_greenlet_switch(tmp_path, monkeypatch, n) for n in ("before_4c1e", "after_4c1e")]
    argv = ["compare", "--python", pythons[0], "--python", pythons[1], *SHORT, "--json"]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["label"] for s in out["sides"]] == ["user:before_4c1e", "user:after_4c1e"]
    (pair,) = out["pairs"]
    assert (pair["a"], pair["b"]) == ("user:before_4c1e", "user:after_4c1e")
    assert pair["outcome"] in (answer.FASTER, answer.SLOWER, answer.SAME, answer.UNDECIDED)
    assert pair["processes"] == out["schedule"]["processes"] == len(pair["values"])
    assert 2 <= pair["processes"] <= 3 and pair["text"]


@pytest.mark.usefixtures("forget_added")
def test_a_side_that_fails_to_build_or_load_is_named(tmp_path, monkeypatch, capsys):
    not_c = tmp_path / "not_c.c"
    not_c.write_text("this is not C\n")
    still = _module(tmp_path, monkeypatch, "still_4c1e", """
        def factory():
            return (lambda fn: fn), (lambda ctx: None)
        """)
    cases = [
        (["asm", "--source", str(not_c)], "labkit compare: --source "),
        (["asm", "--source", str(EXAMPLES / "broken_switch.c")], "labkit compare: --source "),
        (["asm", "--python", "no_such_module_4c1e:factory"], "labkit compare: --python "),
        (["asm", "--python", f"{still}:factory"], "labkit compare: --python "),
    ]
    for argv, said in cases:
        assert cli.main(["compare", *argv, *SHORT]) == 2, argv
        err = capsys.readouterr().err  # a build says "building ..." on the line before
        assert err.count("labkit compare:") == 1, (argv, err)
        assert err.splitlines()[-1].startswith(said), (argv, err)


# ---- saved runs of one machine ----

def _scaled(tmp_path, side: str, factor: float) -> Path:
    """A copy of the fixture's results folder with `side`'s times multiplied."""
    out = tmp_path / "after"
    shutil.copytree(RUNS, out)
    path = out / "data" / "04_latency_ladder_verdict_runs.csv"
    runs = pd.read_csv(path)
    hit = runs.side == side
    for col in ("ns_per_switch", "ns_per_switch_raw", "baseline_ns_per_switch"):
        runs.loc[hit, col] *= factor
    runs.to_csv(path, index=False)
    return out


def test_a_run_against_itself_finds_no_difference():
    got = saved.compare(RUNS, RUNS)
    names = {(r["what"], r["name"]) for r in got["answers"]}
    assert ("claim", "C002.3") in names and ("ladder entry", "boost_fiber") in names
    assert all(r["outcome"] in (answer.SAME, answer.UNDECIDED) for r in got["answers"])
    assert all(r["ratio"] == pytest.approx(1.0) for r in got["answers"])
    assert [s["claim_id"] for s in got["skipped"]] == ["C000.1"]  # three statistics
    assert got["sides"][0]["machine_id"] == "7461bdc0ac34"


def test_a_slower_entry_is_found_per_entry_and_per_claim(tmp_path):
    after = _scaled(tmp_path, "boost_fiber", 2.0)
    got = {(r["what"], r["name"]): r for r in saved.compare(after, RUNS)["answers"]}
    fiber = got[("ladder entry", "boost_fiber")]
    assert fiber["outcome"] == answer.SLOWER and fiber["low"] > 1.5, fiber["text"]
    assert got[("claim", "C000.5")]["outcome"] == answer.SLOWER  # boost_fiber / cxx20_generator
    assert got[("ladder entry", "virtual_call")]["outcome"] != answer.SLOWER


def test_saved_sides_through_the_command_line(tmp_path, capsys):
    fig = tmp_path / "saved.svg"
    again = _scaled(tmp_path, "boost_fiber", 1.0)
    assert cli.main(["compare", str(RUNS), str(again), "--json", "--figure", str(fig)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "saved" and out["schema"] == "labkit.compare/1"
    assert len(out["pairs"]) == len(saved.compare(RUNS, RUNS)["answers"])
    assert fig.read_text().startswith("<?xml")


def test_two_machines_are_refused_unless_asked(tmp_path, capsys):
    other = _scaled(tmp_path, "boost_fiber", 1.0)
    for path in (other / "data").glob("*.csv"):
        runs = pd.read_csv(path)
        runs.assign(machine_id="0123456789ab").to_csv(path, index=False)
    assert cli.main(["compare", str(RUNS), str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("labkit compare: sides must be runs of one "
                                                   "machine") and "--other-machine" in err
    assert cli.main(["compare", str(RUNS), str(other), "--other-machine"]) == 0


# ---- bad input: exit 2, one line naming the parameter ----

@pytest.mark.parametrize("argv, said", [
    (["asm"], "sides must name at least two"),
    (["asm", "no_such_entry"], "sides no_such_entry: must be one of"),
    (["asm", "asm@O9"], "sides asm@O9: the build must be one of"),
    (["asm", "asm"], "sides must name each side once"),
    (["asm", "asm_ret", "--margin", "2"], "--margin must be a fraction in (0, 1)"),
    (["asm", "asm_ret", "--margin", "five"], "--margin must be a percent"),
    (["asm", "asm_ret", "--looks", "8,4"], "--looks must increase strictly"),
    (["asm", "asm_ret", "--looks", "a,b"], "--looks must be process counts"),
    (["asm", "asm_ret", "--repeats", "0"], "--repeats must be an int in [1, 50]"),
    (["asm", "asm_ret", "--export", "csv=x"], "--export format must be one of"),
    (["asm", "tests/fixtures/epyc-7461bd-runs"], "sides must be all live"),
    (["asm", "./nowhere"], "sides ./nowhere: no such bundle or results folder"),
    (["asm", "--source", "/nonexistent/switch.c"], "--source must be an existing file"),
    (["asm", "--calibration"], "sides must be left out with --calibration"),
    (["asm", "asm_ret", "--export", "pyperf=/nonexistent/x.json"], "--export /nonexistent/x.json: "
                                                                    "cannot be written"),
])
def test_bad_input_is_one_line_naming_the_parameter(argv, said, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    assert cli.main(["compare", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("labkit compare: "), err
    assert said in err, err


def test_the_doc_shows_what_the_calibration_command_prints(capsys):
    assert cli.main(["compare", "--calibration"]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ")]
    assert len(rows) == 1 + len(calibration.CASES)
    doc = (REPO / "docs" / "compare.md").read_text()
    assert all(row in doc for row in rows), "docs/compare.md: rerun labkit compare --calibration"
