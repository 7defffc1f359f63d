"""`labkit export`: a results folder's per-process runs as pyperf's JSON (read back by
pyperf itself: stats and compare_to), Google Benchmark's JSON and a Markdown table."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyperf
import pytest

from labkit.core import results
from labkit.lab import cli
from labkit.lab.comparing import export

REPO = Path(__file__).resolve().parent.parent
RUNS = REPO / "tests" / "fixtures" / "epyc-7461bd-runs"
CONTEXT = {"machine": {"machine_id": "7461bdc0ac34", "cpu_model": "AMD EPYC", "cpu_count": 2,
                       "tsc_ghz": 2.6}, "labkit_commit": "1f2bac5", "date": "2026-12-05"}


@pytest.fixture(autouse=True)
def _results_home_restored(monkeypatch):
    """--results sets the home for the process; every test here leaves it as it was."""
    monkeypatch.setenv("LABKIT_RESULTS_DIR", "")  # restored after: --results removes it
    monkeypatch.delenv("LABKIT_RESULTS_DIR")
    yield
    results.set_home(None)


def _pyperf(*args):
    return subprocess.run([sys.executable, "-m", "pyperf", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def rows():
    got, left = export.collect(RUNS / "data")
    assert left == {}
    return got


def test_pyperf_reads_one_run_per_fresh_process(rows, tmp_path):
    path = export.write("pyperf", tmp_path / "a.json", rows, CONTEXT)
    done = _pyperf("stats", str(path))
    assert done.returncode == 0, done.stderr
    assert "04_latency_ladder/boost_fiber" in done.stdout
    suite = json.loads(path.read_text())
    bench = next(b for b in suite["benchmarks"]
                 if b["metadata"]["name"] == "04_latency_ladder/boost_fiber")
    fiber = rows[rows.benchmark == "04_latency_ladder/boost_fiber"]
    assert len(bench["runs"]) == fiber.worker.nunique()  # one run per process
    assert _pyperf("hist", str(path)).returncode == 0


def test_pyperf_compare_to_reads_two_exports(rows, tmp_path):
    a = export.write("pyperf", tmp_path / "a.json", rows, CONTEXT)
    slower = rows.assign(ns=rows.ns * 1.5)
    b = export.write("pyperf", tmp_path / "b.json", slower, CONTEXT)
    done = _pyperf("compare_to", str(a), str(b))
    assert done.returncode == 0, done.stderr
    assert "slower" in done.stdout


def test_google_benchmark_json_has_its_context_and_one_repetition_per_process(rows, tmp_path):
    path = export.write("google-benchmark", tmp_path / "gb.json", rows, CONTEXT)
    got = json.loads(path.read_text())
    assert {"date", "num_cpus", "mhz_per_cpu", "caches", "library_build_type"} <= set(got["context"])
    assert got["context"]["labkit"]["labkit_commit"] == "1f2bac5"
    fiber = [b for b in got["benchmarks"] if b["name"] == "04_latency_ladder/boost_fiber"]
    assert len(fiber) == rows[rows.benchmark == fiber[0]["name"]].worker.nunique()
    for b in fiber:  # what Google Benchmark's compare.py reads of a row
        assert b["run_type"] == "iteration" and b["time_unit"] == "ns"
        assert b["real_time"] > 0 and b["cpu_time"] == b["real_time"]
    # a design whose calls record no switch count (notebook 07a's frames): one iteration
    unknown = export.google_benchmark(rows.assign(switches=float("nan")), CONTEXT)
    assert {b["iterations"] for b in unknown["benchmarks"]} == {1}


def test_markdown_table(rows, tmp_path):
    text = export.write("markdown", tmp_path / "t.md", rows, CONTEXT).read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert len(lines) == rows.benchmark.nunique()
    assert "| Benchmark | Median [ns] |" in text
    assert any(ln.endswith("| 1.00 |") for ln in lines)  # the fastest of its notebook


def test_the_command_writes_this_results_folder(tmp_path, capsys):
    home = tmp_path / "results"
    shutil.copytree(RUNS, home)
    # a design measured in queries per second is left out, and said so
    pd.DataFrame({"side": ["a"], "worker": [0], "qps": [1.0]}).to_csv(
        home / "data" / "09_echo_servers_verdict_runs.csv", index=False)
    out = tmp_path / "x.md"
    assert cli.main(["--results", str(home), "export", "markdown", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert "09_echo_servers_verdict_runs.csv left out" in said and out.exists()


def test_bad_input_exits_2_in_one_line(tmp_path, capsys):
    empty = tmp_path / "empty"
    (empty / "data").mkdir(parents=True)
    assert cli.main(["--results", str(empty), "export", "pyperf", "-o",
                     str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--results" in err, err
    assert cli.main(["--results", str(RUNS), "export", "pyperf", "-o",
                     str(tmp_path / "no" / "x.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("labkit export: -o "), err
    with pytest.raises(SystemExit) as done:
        cli.main(["export", "csv", "-o", "x"])
    assert done.value.code == 2


# ---- `labkit measure --export`: one worker's repeats ----

def test_measure_exports_its_repeats(tmp_path, capsys):
    pyperf_file, gb_file = tmp_path / "m.json", tmp_path / "m.gb.json"
    argv = ["measure", "asm", "--switches", "20000", "--repeats", "3", "--json",
            "--export", f"pyperf={pyperf_file}", "--export", f"google-benchmark={gb_file}"]
    assert cli.main(argv) == 0
    df = pd.DataFrame(json.loads(capsys.readouterr().out)["records"])
    done = _pyperf("stats", str(pyperf_file))
    assert done.returncode == 0, done.stderr
    bench = pyperf.Benchmark.load(str(pyperf_file))
    assert bench.get_name() == "measure/asm"
    (run,) = bench.get_runs()  # one worker process: one run, its values the repeats
    assert run.values == pytest.approx([v * 1e-9 for v in df.ns_per_switch if v > 0])
    gb = json.loads(gb_file.read_text())
    assert {"date", "num_cpus", "mhz_per_cpu", "caches", "library_build_type"} <= set(gb["context"])
    assert gb["context"]["labkit"]["machine"]["machine_id"] == df.machine_id.iloc[0]
    (row,) = gb["benchmarks"]  # one repetition per process: the median of its repeats
    assert row["name"] == "measure/asm" and row["run_type"] == "iteration"
    assert row["iterations"] == 20000 and row["time_unit"] == "ns"
    assert row["real_time"] == pytest.approx(df.ns_per_switch.median())


def test_measure_refuses_a_bad_export_before_measuring(tmp_path, capsys, monkeypatch):
    import labkit

    def measured(*_, **__):
        raise AssertionError("measured before --export was checked")

    monkeypatch.setattr(labkit, "measure", measured)
    for target in ("csv=x.csv", "pyperf", f"pyperf={tmp_path / 'no' / 'x.json'}",
                   f"markdown={tmp_path}"):
        assert cli.main(["measure", "asm", "--export", f"markdown={tmp_path / 'ok.md'}",
                         "--export", target]) == 2, target
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("labkit measure: --export "), err
    assert not (tmp_path / "ok.md").exists()
