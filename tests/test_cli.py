"""The `labkit` command: help on every option, --version, machine-readable output, exit
codes (0 ok, 1 a measurement failed, 2 a usage error), `room` forwarding, and where an
installed labkit puts its results."""
import argparse
import io
import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

import labkit
from labkit.lab import cli, notebook_index, notebook_run, params, reproduce
from labkit.core import results

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
    for name, sub in [("labkit", parser), *commands.items()]:
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction) or name == "room":
                continue
            assert action.help, f"{name}: option {action.option_strings or action.dest} has no help"


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"labkit {labkit.__version__}"


def test_measure_json_and_csv(capsys):
    assert cli.main(["measure", "asm", "--switches", "1000", "--repeats", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 and all("ns_per_switch" in r and "machine_id" in r for r in rows)
    assert cli.main(["measure", "asm", "--switches", "1000", "--repeats", "2", "--csv"]) == 0
    df = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(df) == 2 and "counted_switches" in df.columns


def test_measure_passes_build_and_fp_control(capsys):
    build = labkit.builds()[0]
    assert cli.main(["measure", "asm_fpu", "--switches", "1000", "--repeats", "2",
                     "--build", build, "--fp-control", "differ", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["build"] for r in rows} == {build}
    assert {r["fp_control"] for r in rows} == {"differ"}


def test_kernels_json(capsys):
    assert cli.main(["kernels", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
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


def test_room_forwards_its_arguments(monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "labkit.lab.room", raising=False)
    if importlib_find("labkit.lab.room") is None:
        assert cli.main(["room", "serve"]) == 2
        assert "not available in this build" in capsys.readouterr().err
    seen = []
    fake = types.ModuleType("labkit.lab.room")
    fake.main = lambda argv: seen.append(argv) or 3
    monkeypatch.setitem(sys.modules, "labkit.lab.room", fake)
    monkeypatch.setattr(sys.modules["labkit.lab"], "room", fake, raising=False)
    assert cli.main(["room", "join", "--port", "8786", "--help"]) == 3
    assert seen == [["join", "--port", "8786", "--help"]]


def importlib_find(name):
    import importlib.util

    return importlib.util.find_spec(name)


def test_undeclared_parameters_are_read_as_papermill_does():
    # A notebook without a table in labkit.lab.params (a workshop exercise, a test's own).
    assert params.papermill_value("5") == 5 and params.papermill_value("0.5") == 0.5
    assert params.papermill_value("True") is True and params.papermill_value("None") is None
    assert params.papermill_value("asm_fpu") == "asm_fpu"
    known = notebook_run.notebook_parameters(notebook_index.NOTEBOOKS / "01_stack_size.py")
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


def test_python_m_forms_still_work():
    for module in ("labkit", "labkit.lab.reproduce"):
        res = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        assert "--quick" in res.stdout or "reproduce" in res.stdout


def test_requirements_txt_agrees_with_pyproject():
    import tomllib

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = [*meta["dependencies"], *sum(meta["optional-dependencies"].values(), [])]

    def name(req):
        return re.split(r"[<>=!~\[ ;]", req.strip(), 1)[0].lower().replace("_", "-")

    pyproject = {name(r) for r in declared}
    build = {"cython", "setuptools", "wheel"}
    wanted = {name(line) for line in (REPO / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    assert wanted - build <= pyproject, f"in requirements.txt only: {wanted - build - pyproject}"
    assert not {"pytest", "playwright"} & wanted, "test-only tools belong to the test extra"
    locked = {name(line) for line in (REPO / "requirements.lock").read_text().splitlines()
              if "==" in line}
    assert pyproject | wanted <= locked, f"not in requirements.lock: {(pyproject | wanted) - locked}"
