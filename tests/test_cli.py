"""The `labkit` command: help on every option, --version, machine-readable output, exit
codes (0 ok, 1 a measurement failed, 2 a usage error), the room's commands, and where an
installed labkit puts its results."""
import argparse
import io
import json
import os
import re
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

import labkit
from labkit.core import results
from labkit.errors import ParameterError
from labkit.lab import cli
from labkit.lab.running import notebook_run, notebooks, params, reproduce
from labkit.lab.sharing.bundle import READS

REPO = Path(__file__).resolve().parent.parent


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def test_every_option_has_help():
    parser = cli.build_parser()
    commands = _subparsers(parser)
    assert {"reproduce", "measure", "kernels", "bundle", "merge", "report", "lab",
            "room"} <= set(commands)
    nested = [(f"room {n}", s) for n, s in _subparsers(commands["room"]).items()]
    for name, sub in [("labkit", parser), *commands.items(), *nested]:
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"{name}: option {action.option_strings or action.dest} has no help"


def test_version_is_the_package_s_and_its_commit(capsys):
    """pyproject.toml's version, read from the installed package's metadata, and the git
    commit of the checkout (tests/test_wheel.py: an installed wheel's is the one it was
    built from)."""
    import tomllib
    from importlib import metadata

    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    typed = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert labkit.__version__ == metadata.version("labkit") == typed
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    out = capsys.readouterr().out
    assert re.fullmatch(rf"labkit {re.escape(typed)} \(commit {head}(-dirty)?\)\n", out), out


def test_measure_json_and_csv(capsys):
    assert cli.main(["measure", "asm", "--switches", "1000", "--repeats", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["records"]
    assert len(rows) == 2 and all("ns_per_switch" in r and "machine_id" in r for r in rows)
    assert cli.main(["measure", "asm", "--switches", "1000", "--repeats", "2", "--csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(df) == 2 and "counted_switches" in df.columns


def test_measure_passes_build_and_fp_control(capsys):
    build = labkit.builds()[0]
    assert cli.main(["measure", "asm_fpu", "--switches", "1000", "--repeats", "2",
                     "--build", build, "--fp-control", "differ", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["records"]
    assert {r["build"] for r in rows} == {build}
    assert {r["fp_control"] for r in rows} == {"differ"}


# ---- labkit measure --python ----

def _measure_python(path: str, folder: Path):
    """`python -m labkit measure --python PATH` in a fresh process, its module found through
    PYTHONPATH=folder, as a user's shell would give it."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    return subprocess.run([sys.executable, "-m", "labkit", "measure", "--python", path,
                           "--switches", "2000", "--repeats", "2"],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_measure_python_prints_the_summary_of_the_example():
    done = _measure_python("my_py_switch:greenlet_switch", REPO / "docs" / "examples")
    assert done.returncode == 0, done.stderr
    shown = dict(line.split(None, 1) for line in done.stdout.splitlines() if " " in line)
    assert shown["entry"].strip() == "user:my_py_switch"
    assert shown["repeats"].strip() == "2" and float(shown["median"]) >= 0


@pytest.mark.parametrize("path, body, said", [
    ("no_such_module_5c1e:factory", None, "--python must be importable in a worker process: "
     "'no_such_module_5c1e:factory' is not .*; put the module's folder on PYTHONPATH$"),
    ("wrong_shape_5c1e:factory", "def factory():\n    return 42\n",
     r"--python 'wrong_shape_5c1e:factory': the factory returned int .* must return a pair "
     r"\(make, swap\)"),
    ("no_switch_5c1e:factory", "def factory():\n    return (lambda fn: fn), (lambda c: None)\n",
     r"--python no_switch_5c1e:factory: the user's Python switch 'user:no_switch_5c1e' "
     r".* does not switch"),
], ids=["not-importable", "wrong-shape", "fails-its-check"])
def test_measure_python_errors_are_one_line_naming_the_option(tmp_path, path, body, said):
    if body is not None:
        (tmp_path / f"{path.split(':')[0]}.py").write_text(body)
    done = _measure_python(path, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert re.match(f"labkit measure: {said}", done.stderr.strip()), done.stderr


def test_measure_python_is_refused_beside_an_entry_or_a_source(capsys):
    for argv in (["asm", "--python", "my_py_switch:greenlet_switch"],
                 ["--source", "x.c", "--python", "my_py_switch:greenlet_switch"]):
        with pytest.raises(SystemExit) as done:
            cli.main(["measure", *argv])
        assert done.value.code == 2
        assert "argument --python: not allowed with argument" in capsys.readouterr().err
    assert cli.main(["measure", "--python", "my_py_switch.greenlet_switch"]) == 2
    assert capsys.readouterr().err == ("labkit measure: --python must be an import path "
                                       "'package.module:factory' (dotted names, one colon); "
                                       "got 'my_py_switch.greenlet_switch'\n")


def test_kernels_json(capsys):
    assert cli.main(["kernels", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["records"]
    assert [r["entry"] for r in rows] == list(labkit.catalogue().entry)
    assert all(r["why_not"] for r in rows if not r["available"])


def test_usage_errors_exit_2(capsys):
    assert cli.main(["measure", "no_such_kernel"]) == 2
    assert "entry must be one of" in capsys.readouterr().err
    assert cli.main(["measure", "asm", "--switches", "3"]) == 2
    for argv in (["measure"], ["no-such-command"], ["measure", "asm", "--bogus"],
                 ["measure", "asm", "--json", "--csv"], ["reproduce", "--only", "nope"]):
        with pytest.raises(SystemExit) as done:
            cli.main(argv)
        assert done.value.code == 2, argv


# ---- a bad value: exit status 2, one line naming the option ----

@pytest.mark.parametrize("argv, said", [
    (["measure", "asm", "--switches", "3"], "labkit measure: --switches must be an even "),
    (["measure", "asm", "--repeats", "0"], "labkit measure: --repeats must be an integer from 1 "),
    (["measure", "asm", "--stack-in-use", "1KiB"], "labkit measure: --stack-in-use must be "
     "left unset"),
    (["measure", "copy_stack", "--stack-size", "64"], "labkit measure: --stack-size must be "
     "between "),
    (["measure", "no_such_kernel"], "labkit measure: entry must be one of "),
    (["advise", "--work", "20us", "--rate", "0"], "labkit advise: --rate must be more than 0"),
    (["advise", "--work", "20us", "--connections", "0"], "labkit advise: --connections must "),
    (["advise", "--work", "20us", "--design", "asm", "--design", "nope"], "labkit advise: "
     "--design must be one of "),
    (["publish", "/nonexistent.labkit", "--registry", "/nonexistent-registry"],
     "labkit publish: refused /nonexistent.labkit: not a labkit bundle"),
    (["registry", "claims", "--registry", "/nonexistent-registry"],
     "labkit registry: --registry /nonexistent-registry: no registry there"),
    (["registry", "bench", "--scratch", "/nonexistent-scratch", "--bundles", "-1"],
     "labkit registry: --bundles must be an integer from 0 "),
], ids=lambda v: " ".join(v[:2]) if isinstance(v, list) else None)
def test_a_bad_value_exits_2_naming_its_option(argv, said, capsys):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1, err


@pytest.mark.parametrize("argv, said", [
    (["reproduce", "--only", "01_stack_size", "--timeout", "0"],
     "labkit reproduce: error: --timeout must be a positive number of seconds, got 0"),
    (["reproduce", "--only", "01_stack_size", "-p", "repeats", "0"],
     "labkit reproduce: error: -p repeats: must be an int in "),
    (["stability", "--only", "00_claims_ledger"],
     "labkit stability: error: --only must name at least one experiment notebook"),
], ids=["reproduce-timeout", "reproduce-p", "stability-only"])
def test_a_command_that_checks_first_refuses_as_argparse_does(argv, said, tmp_path, capsys):
    """reproduce and stability check every value before anything runs and refuse a bad one
    as argparse refuses an option (SystemExit 2), without the usage block."""
    try:
        with pytest.raises(SystemExit) as done:
            cli.main(["--results", str(tmp_path), *argv])
    finally:
        results.set_home(None)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and err.count("\n") == 1 and "usage:" not in err, err
    assert not (tmp_path / "reports").exists()


def test_resume_with_nothing_to_resume_names_the_option(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "ensure_kernel", lambda: None)
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))  # restored after: reproduce sets it
    try:
        with pytest.raises(SystemExit) as done:
            cli.main(["--results", str(tmp_path), "reproduce", "--quick", "--only",
                      "01_stack_size", "--resume", "--no-progress"])
    finally:
        results.set_home(None)
    assert done.value.code == 2
    assert capsys.readouterr().err.startswith("labkit reproduce: error: --resume has nothing "
                                              f"to resume in {tmp_path / 'reports' / 'quick'}")


def test_merge_names_its_bundles_and_the_option_that_allows_other_commits(capsys):
    from labkit.lab.cli.sharing import MERGE

    exc = ParameterError("paths", "come from different labkit commits (a: 1, b: 2)",
                         other=("same_commit", False))
    assert str(exc) == ("paths come from different labkit commits (a: 1, b: 2); pass "
                        "same_commit=False to allow it")
    assert MERGE.says(exc) == ("bundles come from different labkit commits (a: 1, b: 2); "
                               "pass --allow-other-commits")
    assert cli.main(["merge", "/nonexistent-a.labkit", "/nonexistent-b.labkit"]) == 2
    assert capsys.readouterr().err.startswith(
        "labkit merge: bundles /nonexistent-a.labkit: not a labkit bundle: missing ")


def test_a_parameter_error_is_a_value_error_naming_its_parameter():
    from labkit.core import units, validate
    from labkit.errors import BundleError, ParameterTypeError

    with pytest.raises(ParameterError) as bad:
        validate.integer_in("repeats", 0, 1, 10)
    assert isinstance(bad.value, ValueError)
    assert (bad.value.param, bad.value.message) == ("repeats", "must be an integer from 1 to "
                                                               "10; got 0")
    assert str(bad.value) == "repeats must be an integer from 1 to 10; got 0"
    with pytest.raises(ParameterError, match="^work must not be negative") as bad:
        units.parse_time("work", "-5us")
    assert bad.value.param == "work"
    wrong = ParameterTypeError("python", "'m:f': the factory returned int")
    assert isinstance(wrong, TypeError) and isinstance(wrong, ParameterError)
    damaged = BundleError("b.labkit", "its machine.json is damaged")
    assert (damaged.param, damaged.path, damaged.reason) == ("path", "b.labkit",
                                                             "its machine.json is damaged")
    assert str(damaged) == "path b.labkit: its machine.json is damaged"


def test_every_option_a_command_names_a_parameter_by_is_its_own():
    """A command's {parameter: option} table names options (or positionals) it has, so a
    ParameterError is never said in an option the command lacks."""
    from labkit.lab.cli.main import COMMANDS

    commands = _subparsers(cli.build_parser())
    for command in COMMANDS:
        parser = commands[command.name]
        known = {s for a in parser._actions for s in [*a.option_strings, a.dest]}
        for param, option in command.options.items():
            assert option.split(" ")[0] in known, (command.name, param, option)


@pytest.mark.parametrize("argv, option", [
    (["--runs", "0"], "--runs"), (["--quick", "--with-committed"], "--with-committed")])
def test_stability_errors_name_the_option(argv, option, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["stability", *argv])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {option} " in err and "usage:" not in err


def test_a_reader_that_goes_away_is_not_a_failure(monkeypatch, capsys):
    """`labkit catalogue --csv | head -1`: the pipe closes early; no traceback, and the
    exit status is SIGPIPE's, not a measurement's failure."""
    read, write = os.pipe()
    os.close(read)  # the reader has gone: every write fails with EPIPE
    closed = os.fdopen(write, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", closed)
    try:
        assert cli.main(["catalogue", "--csv"]) == 141
    finally:
        closed.close()
    assert "Error" not in capsys.readouterr().err


def test_measure_reads_sizes_with_units_as_advise_does(capsys):
    args = cli.build_parser().parse_args(["measure", "copy_stack", "--stack-size", "64KiB",
                                          "--stack-in-use", "1K"])
    assert (args.stack_size, args.stack_in_use) == (65536, 1024)
    plain = cli.build_parser().parse_args(["measure", "asm", "--stack-size", "8192"])
    assert plain.stack_size == 8192
    for bad in ("64QB", "-4"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["measure", "asm", "--stack-size", bad])
        assert exc.value.code == 2
        assert "argument --stack-size: must" in capsys.readouterr().err


def test_a_measurement_failure_is_one_line_and_exit_1(monkeypatch, capsys):
    def crash(*a, **k):
        raise labkit.KernelCrashError("the worker died of SIGSEGV\nits stderr: ...")

    monkeypatch.setattr(labkit, "measure", crash)
    assert cli.main(["measure", "asm"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "KernelCrashError: the worker died of SIGSEGV" in err and "--debug" in err
    with pytest.raises(labkit.KernelCrashError):
        cli.main(["--debug", "measure", "asm"])
    for error in (labkit.SwitchCountError("counted 3 of 4"),
                  labkit.MeasurementTimeout("no answer in 5 s")):
        monkeypatch.setattr(labkit, "measure", lambda *a, e=error, **k: (_ for _ in ()).throw(e))
        assert cli.main(["measure", "asm"]) == 1
        assert type(error).__name__ in capsys.readouterr().err


def test_help_loads_no_module_of_the_lab():
    """`labkit --help` adds no command's options (main adds the running command's alone), so
    it loads none of the lab's modules, nor pandas or scipy; `labkit merge --help` still
    names the bundle formats merge reads."""
    code = ("import sys\nfrom labkit.lab.cli.main import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\nprint(' '.join(sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert "COMMAND" in done.stdout
    loaded = set(done.stderr.split())
    lab = {m for m in loaded if m.startswith("labkit.lab.") and not m.startswith("labkit.lab.cli")}
    heavy = lab | (loaded & {"pandas", "scipy"})
    assert not heavy, sorted(heavy)
    merge = subprocess.run([sys.executable, "-m", "labkit", "merge", "--help"],
                           capture_output=True, text=True, check=True).stdout
    assert " or ".join(map(str, READS)) in " ".join(merge.split())


def test_room_is_built_here_and_reaches_the_room(monkeypatch, capsys):
    """`labkit room ...` is parsed by cli.py (a bad option is a usage error before the
    room's modules load) and calls the room's plain functions."""
    with pytest.raises(SystemExit) as done:
        cli.main(["room", "join", "--port", "8786"])
    assert done.value.code == 2
    seen = []
    fake = types.ModuleType("labkit.lab.room.room")
    fake.join = lambda room, **kw: seen.append((room, kw))
    monkeypatch.setitem(sys.modules, "labkit.lab.room.room", fake)
    assert cli.main(["room", "join", "r.json", "--name", "ann", "--machine-id", "abc123"]) == 0
    assert seen == [("r.json", {"name": "ann", "machine_id": "abc123", "allow_root": False,
                                "quiet": True})]
    monkeypatch.setitem(sys.modules, "labkit.lab.room.room", None)  # not installed
    assert cli.main(["room", "serve"]) == 2
    assert "labkit room" in capsys.readouterr().err


def test_undeclared_parameters_are_read_as_papermill_does():
    # A notebook without a table in labkit.lab.running.params (a workshop exercise, a test's own).
    assert params.papermill_value("5") == 5 and params.papermill_value("0.5") == 0.5
    assert params.papermill_value("True") is True and params.papermill_value("None") is None
    assert params.papermill_value("asm_fpu") == "asm_fpu"
    known = notebook_run.notebook_parameters(notebooks.NOTEBOOKS / "01_stack_size.py")
    assert {"quick", "repeats"} <= known


def test_unknown_parameter_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["reproduce", "--quick", "--only", "01_stack_size", "-p", "no_such", "1"])
    assert done.value.code == 2
    assert "no_such" in capsys.readouterr().err


def test_results_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.delenv("LABKIT_RESULTS_DIR", raising=False)
    assert results.checkout() == REPO  # the tests run from a checkout
    monkeypatch.setattr(results, "checkout", lambda: None)
    monkeypatch.chdir(tmp_path)
    assert results.home() == tmp_path / "labkit-results"
    assert results.root() == tmp_path / "labkit-results"
    assert results.notebooks_dir() == results.SHIPPED / "notebooks"
    results.set_home(tmp_path / "mine")
    try:
        assert results.data_dir() == tmp_path / "mine" / "data"
        assert reproduce.reports_dir(True) == tmp_path / "mine" / "reports" / "quick"
    finally:
        results.set_home(None)
    with pytest.raises(TypeError, match="path"):
        results.set_home(3)


def test_python_m_labkit_is_the_command():
    """`python -m labkit` is the one other form; the modules keep no command line of their own."""
    for argv in (["--help"], ["reproduce", "--help"]):
        res = subprocess.run([sys.executable, "-m", "labkit", *argv], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert "--quick" in res.stdout or "reproduce" in res.stdout


# ---- labkit check ----

def test_check_json_has_the_rows_reproduce_records(tmp_path, monkeypatch, capsys):
    from labkit.core import envcheck

    assert cli.main(["check", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    envcheck.announce(io.StringIO())  # what `labkit reproduce` does before its first notebook
    recorded = json.loads((tmp_path / "data" / envcheck.FILE).read_text())
    assert set(shown) - {"schema", "context"} == set(recorded) == {"taken", "rows"}
    assert [r["key"] for r in shown["rows"]] == [r["key"] for r in recorded["rows"]] \
        == list(envcheck.KEYS)
    assert [set(r) for r in shown["rows"]] == [set(r) for r in recorded["rows"]]
    assert not (tmp_path / "data" / "other").exists()


def test_check_says_what_each_warning_does_and_what_to_do(monkeypatch, capsys):
    from labkit.core import envcheck

    rows = envcheck.check()
    for r in rows:
        assert bool(r["remedy"]) == (r["status"] == envcheck.WARN), r
    # Every condition made to warn: each says its effect and its remedy, naming root when
    # the remedy needs it.
    warned = [{**r, "status": envcheck.WARN, "remedy": r["remedy"] or f"do {r['key']}"}
              for r in rows]
    monkeypatch.setattr(envcheck, "check", lambda: warned)
    assert cli.main(["check"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"environment check ({len(rows)} of {len(rows)} conditions warn)")
    for r in warned:
        assert f"{r['condition']}: {r['value']}\n  effect: {r['effect']}.\n  to do:  " \
               f"{r['remedy']}." in out
    for r in rows:
        if "sudo" in r["remedy"]:
            assert "needs root" in r["remedy"], r


def test_check_records_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    assert cli.main(["check"]) == 0
    assert list(tmp_path.iterdir()) == []


# ---- labkit stability ----

def test_stability_is_a_subcommand(monkeypatch, capsys):
    from labkit.lab.judging import stability

    with pytest.raises(SystemExit) as done:
        cli.main(["stability", "--runs", "0", "--quick", "--only", "06_fp_state_and_return"])
    assert done.value.code == 2
    assert "runs must be an int in [1, 50]" in capsys.readouterr().err
    seen = {}

    def run(runs, **kw):
        seen.update(runs=runs, **kw)
        ledger = pd.DataFrame({"claim_id": ["C002.3"], "verdict": ["reproduced"]})
        return stability.agreement([ledger, ledger]), [60.0, 120.0]

    monkeypatch.setattr(stability, "run", run)
    assert cli.main(["stability", "--runs", "2", "--quick", "--only", "06_fp_state_and_return",
                     "--out", "somewhere"]) == 0
    assert seen == {"runs": 2, "quick": True, "only": ["06_fp_state_and_return"],
                    "out": Path("somewhere"), "with_committed": False}
    out = capsys.readouterr().out
    assert "1 of 1 claims keep the same verdict over 2 runs" in out and "run 2 2.0 min" in out


# ---- reproduce --json ----

def test_reproduce_json_is_the_only_thing_on_stdout(tmp_path, monkeypatch, capsys):
    from labkit.lab.report import page

    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    row = {"claim_id": "C000.2", "verdict": "contradicted",
           "measured_value": "0.997 [0.966, 1.03]", "processes": "16",
           "method": "rci-obf95-paired-processes", "note": "n", "source": "s",
           "claimed_value": "5.45", "rule": "r"}

    def run_notebook(src, *, quick, out_dir, results_dir, timeout, parameters):
        # What a notebook leaves: its verdicts in data/.
        pd.DataFrame([row]).to_csv(Path(results_dir) / "data" / f"{src.stem}_verdicts.csv",
                                   index=False)
        return notebook_run.Outcome(src.stem, True, 2.5, None)

    monkeypatch.setattr(reproduce, "run_notebook", run_notebook)
    monkeypatch.setattr(reproduce, "ensure_kernel", lambda: None)
    monkeypatch.setattr(page, "build", lambda outcomes, out_dir, quick: out_dir / "r.html")
    argv = ["--results", str(tmp_path), "reproduce", "--only", "01_stack_size", "--json",
            "--no-progress"]
    try:
        status = cli.main(argv)
    finally:
        results.set_home(None)
    assert status == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)  # stdout holds the JSON and nothing else
    assert summary["schema"] == "labkit.reproduce/1" and summary["context"]["machine"]
    assert summary["context"]["command"] == " ".join(["labkit", *argv])  # not pytest's
    assert "environment check" in captured.err and "1 notebooks ok" in captured.err
    assert summary["notebooks"] == [{"name": "01_stack_size", "ok": True, "seconds": 2.5,
                                     "earlier": False, "error": None}]
    from labkit.lab.judging import claims, verdicts

    counts = summary["verdict_counts"]
    assert list(counts) == list(verdicts.VERDICTS)
    assert counts["contradicted"] == 1 and sum(counts.values()) == len(summary["claims"]) \
        == len(claims.registry())
    claim = next(c for c in summary["claims"] if c["claim_id"] == "C000.2")
    assert claim["verdict"] == "contradicted" and claim["processes"] == 16
    assert claim["interval"] == {"value": 0.997, "low": 0.966, "high": 1.03}
    assert claim["notebook"] == "01_stack_size"
    other = next(c for c in summary["claims"] if c["claim_id"] == "C002.3")
    assert other["verdict"] == "not-measured" and other["interval"] is None
    assert summary["mode"] == "full" and summary["status"] == 0


@pytest.mark.parametrize("text, expected", [
    ("1.17 [1.13, 1.21]", {"value": 1.17, "low": 1.13, "high": 1.21}),
    ("x = 425 [309, 586]; asm 1.98 ns", {"value": 425, "low": 309, "high": 586}),
    ("5.03 [4.95, -inf]", {"value": 5.03, "low": 4.95, "high": None}),
    ("29", None),  # an exact count: no interval
    ("mem=0.706 [0.706, 0.706], tps=0.873 [0.753, 1.01]", None),  # two: the text says them
    ("", None),
])
def test_a_claim_s_interval_is_read_from_its_measured_value(text, expected):
    assert reproduce.interval(text) == expected


def test_the_committed_ledger_s_intervals_read(capsys):
    table = results.load_csv(notebooks.LEDGER)
    summary = reproduce.summary([], table, quick=False, results_dir="r", report="h", status=0)
    by_id = {c["claim_id"]: c for c in summary["claims"]}
    for _, row in table.iterrows():
        c = by_id[row.claim_id]
        assert c["verdict"] == row.verdict
        if row.method == "rci-obf95-paired-processes" and row.measured_value.count("[") == 1:
            assert c["interval"] is not None and c["processes"] == int(row.processes), c
            assert c["interval"]["low"] <= c["interval"]["high"]
    if "measured_quantity" in table.columns:
        assert all("measured_quantity" in c for c in summary["claims"])


# ---- README statements the code backs ----

def test_every_command_is_in_the_readme_s_table():
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## The `labkit` command"):readme.index("### Installing")]
    table = "\n".join(line for line in section.splitlines() if line.startswith("| `labkit "))
    for name in _subparsers(cli.build_parser()):
        if name != "kernels":  # catalogue's other name, said in its row
            assert f"`labkit {name}" in table, name


def test_start_page_names_every_verdict():
    from labkit.lab.judging import claims, verdicts

    nb = json.loads((notebooks.NOTEBOOKS / "start_here.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    named = set(re.findall(r"`([a-z-]+)`", text)) & set(verdicts.VERDICTS)
    assert named == set(verdicts.VERDICTS), set(verdicts.VERDICTS) - named
    assert f"of {['no', 'one', 'two', 'three', 'four', 'five', 'six'][len(verdicts.VERDICTS)]} " \
           "verdicts" in text


def test_documented_module_paths_work_after_import_labkit():
    readme = (REPO / "README.md").read_text()
    paths = sorted(set(re.findall(r"`(labkit\.(?:core|lab|experiments)\.\w+)", readme)))
    assert "labkit.experiments.callgrind" in paths
    # A fresh process: only `import labkit`, then each path as an attribute; and again
    # after a subpackage was imported first by its own name.
    code = ("import labkit, sys\n"
            f"for p in {paths!r}:\n"
            "    obj = labkit\n"
            "    for part in p.split('.')[1:]:\n"
            "        obj = getattr(obj, part)\n"
            "    assert obj.__name__ == p, p\n"
            "import labkit.lab.running.params\n"
            "assert labkit.experiments.frames.__name__ == 'labkit.experiments.frames'\n"
            "assert labkit.core.timing.__name__ == 'labkit.core.timing'\n"
            "try:\n"
            "    labkit.experiments.no_such_module\n"
            "except AttributeError as e:\n"
            "    print('AttributeError', e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "AttributeError module 'labkit.experiments' has no attribute 'no_such_module'" \
        in done.stdout


def test_the_public_namespace_is_the_api_and_the_subpackages():
    public = {n for n in dir(labkit) if not n.startswith("_")}
    assert public == set(labkit.__all__) | {"core", "lab", "experiments", "errors"}
    assert not hasattr(labkit, "importlib")
    with pytest.raises(AttributeError, match="no attribute 'importlib'"):
        getattr(labkit, "importlib")
