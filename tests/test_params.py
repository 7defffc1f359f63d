"""Notebook parameters: one table per notebook (labkit.lab.running.params), what `-p` may set and
how it is read, and the parameters cells that take their values from the tables."""
import ast
import subprocess
import sys

import jupytext
import pytest

from labkit.lab.running import notebook_run, notebooks, params


def test_an_explicit_value_beats_the_quick_value():
    quick = params.resolve("01_stack_size", quick=True)
    assert quick["repeats"] == 5 and quick["switches"] == 100_000
    given = params.parse(["01_stack_size"], [("repeats", "9")])
    assert given == {"repeats": 9}
    run = params.resolve("01_stack_size", quick=True, **given)
    assert run["repeats"] == 9 and run["switches"] == 100_000  # the rest stay quick
    full = next(p.full for p in params.table("01_stack_size") if p.name == "repeats")
    assert params.resolve("01_stack_size")["repeats"] == full != quick["repeats"]


def test_what_papermill_is_given_is_every_value_that_runs():
    values = notebook_run.run_values("01_stack_size", quick=True,
                                  parameters={"repeats": 9, "coroutines": 3})  # 08's, not 01's
    assert values == {"quick": True, **params.resolve("01_stack_size", quick=True, repeats=9)}
    # A notebook without a table gets quick and the values given, as before.
    assert notebook_run.run_values("90_tiny", quick=False, parameters={"log": "x"}) == \
        {"quick": False, "log": "x"}


@pytest.mark.parametrize("pair, message", [
    (("repeats", "abc"), "-p repeats: must be an int in [1, 1000]; got 'abc'"),
    (("repeats", "0"), "-p repeats: must be an int in [1, 1000]; got '0'"),
    (("repeats", "2.5"), "-p repeats: must be an int"),
    (("cpu", "-1"), "-p cpu: must be None or an int in [0, 4095]"),
    (("sizes", "[4096, 'x']"), "-p sizes: must be a list of ints"),
    (("sizes", "[]"), "-p sizes: must be a list of ints"),
    (("nosuch", "3"), "-p nosuch: no notebook run here has that parameter"),
    (("quick", "True"), "-p quick: use --quick"),
])
def test_bad_values_name_the_parameter_and_what_is_allowed(pair, message):
    with pytest.raises(ValueError) as bad:
        params.parse(["01_stack_size"], [pair])
    assert message in str(bad.value)


def test_values_are_read_by_their_declared_type():
    got = params.parse(["01_stack_size", "08_switch_frequency"],
                       [("cpu", "None"), ("sizes", "[4096, 65536]"), ("loop_seconds", "1e-3"),
                        ("ring_laps_switches", "1_000")])
    assert got == {"cpu": None, "sizes": [4096, 65536], "loop_seconds": 0.001,
                   "ring_laps_switches": 1000}
    assert params.parse(["05_kernel_switches"], [("cross_cpus", "(0, 1)")]) == \
        {"cross_cpus": [0, 1]}
    with pytest.raises(ValueError, match="-p cross_cpus: must be None or a list of 2 ints"):
        params.parse(["05_kernel_switches"], [("cross_cpus", "[0, 1, 2]")])
    # cpu may be None in 01 but not in 05, whose same-CPU runs need one: both must accept.
    with pytest.raises(ValueError, match=r"-p cpu: must be an int .* \(in 05_kernel_switches\)"):
        params.parse(["01_stack_size", "05_kernel_switches"], [("cpu", "None")])
    with pytest.raises(ValueError, match="build: must be one of 'O0'"):
        params.parse(["07a_frames_and_allocators"], [("build", "O9")])


def test_resolve_refuses_what_the_table_does_not_allow():
    with pytest.raises(ValueError, match="has no parameter 'nosuch'"):
        params.resolve("01_stack_size", nosuch=1)
    with pytest.raises(TypeError, match="repeats must be an int in"):
        params.resolve("01_stack_size", repeats="9")
    with pytest.raises(ValueError, match="repeats must be an int in"):
        params.resolve("01_stack_size", repeats=0)
    with pytest.raises(TypeError, match="quick must be True or False"):
        params.resolve("01_stack_size", quick="yes")
    with pytest.raises(ValueError, match="notebook must be one of"):
        params.resolve("99_nosuch")
    with pytest.raises(ValueError, match="got nan"):
        params.resolve("09_echo_servers", duration=float("nan"))


def test_every_notebook_has_a_table_and_describe_shows_it():
    assert set(params.tables()) == {p.stem for p in notebooks.notebook_sources()}
    frame = params.describe("03_symmetric_vs_asymmetric", quick=True)
    assert list(frame.columns) == ["name", "value", "full", "quick", "allowed", "help"]
    row = frame.set_index("name").loc["repeats"]
    assert row["value"] == row["quick"] == params.resolve("03_symmetric_vs_asymmetric",
                                                          quick=True)["repeats"]
    assert frame.help.str.len().gt(0).all()


def _code_cells(source):
    """The parameters cell's source, and the code cells after it."""
    cells = [c for c in jupytext.read(source).cells if c.cell_type == "code"]
    at = [k for k, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(at) == 1, f"{source.name}: one parameters cell"
    return cells[at[0]].source, [c.source for c in cells[at[0] + 1:]]


@pytest.mark.parametrize("source", notebooks.notebook_sources(),
                         ids=lambda p: p.stem)
def test_the_parameters_cell_takes_its_values_from_the_table(source):
    """The cell unpacks resolve()'s values into the names of the table, in its order, and
    no later cell gives a parameter another value: what papermill injects is what runs."""
    cell, later = _code_cells(source)
    tree = ast.parse(cell)
    names = [p.name for p in params.table(source.stem)]
    assign = [n for n in tree.body if isinstance(n, ast.Assign)
              and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute)
              and n.value.func.attr == "values"]
    if not names:
        assert not assign
        return
    assert len(assign) == 1, f"{source.name}: one `... = params.resolve(...).values()`"
    target = assign[0].targets[0]
    assert [e.id for e in target.elts] == names
    call = assign[0].value.func.value
    assert call.func.attr == "resolve" and call.args[0].value == source.stem
    again = sorted({node.id for code in later for node in ast.walk(ast.parse(code))
                    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
                    and node.id in names})
    assert not again, f"{source.name} assigns {again} after its parameters cell"


def test_the_report_shows_every_value_a_notebook_ran_with():
    from labkit.lab.report import page

    ran = notebook_run.Outcome("01_stack_size", True, 1.0, None, given=["repeats"],
                            parameters=params.resolve("01_stack_size", quick=True, repeats=9))
    shown = page._parameters_html(ran)
    assert "<code>-p repeats 9</code>" in shown and "switches = 100000" in shown
    assert "repeats = " not in shown  # once, as the -p it was


def _labkit(*args):
    return subprocess.run([sys.executable, "-m", "labkit", *args], capture_output=True,
                          text=True, timeout=120)


def test_a_bad_value_exits_2_before_any_notebook_runs(tmp_path):
    done = _labkit("--results", str(tmp_path), "reproduce", "--quick", "-p", "repeats", "abc",
                   "--only", "01_stack_size")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "-p repeats: must be an int in [1, 1000]; got 'abc'" in done.stderr
    assert "labkit reproduce (" not in done.stdout  # it never started
    assert not (tmp_path / "reports").exists()


def test_an_unknown_name_exits_2(tmp_path):
    done = _labkit("--results", str(tmp_path), "reproduce", "--quick", "-p", "nosuch", "3",
                   "--only", "01_stack_size")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "-p nosuch: no notebook run here has that parameter" in done.stderr
    assert not (tmp_path / "reports").exists()


def test_papermill_s_guesses_about_the_parameters_line_are_silenced():
    import logging

    from labkit.lab.running import notebook_run

    quiet = notebook_run._DeclaredNames({"repeats"})

    def record(text):
        return logging.LogRecord("papermill.translators", logging.WARNING, "", 0, text, (), None)

    assert not quiet.filter(record("Unable to parse line 8 ' repeats) = params.resolve(\"05\", "
                                   "quick=quick).values()'."))
    assert quiet.filter(record("Unable to parse line 3 'x = y +'."))  # another line: shown
    assert not quiet.filter(record("Passed unknown parameter: repeats"))
    assert quiet.filter(record("Passed unknown parameter: nosuch"))
    assert "papermill.translators" in quiet.LOGGERS


# ---- a parameters file (-f params.yaml), as papermill's ----

def _file(tmp_path, text, name="params.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_parameters_file_gives_typed_values_and_p_beats_it(tmp_path):
    path = _file(tmp_path, "repeats: 5\nsizes: [4096, 65536]\ncpu: null\n")
    values = params.read_file(path)
    assert values == {"repeats": 5, "sizes": [4096, 65536], "cpu": None}
    got = params.parse(["01_stack_size"], [("repeats", "9")], file_values=values, file=path)
    assert got == {"repeats": 9, "sizes": [4096, 65536], "cpu": None}
    assert params.parse(["01_stack_size"], [], file_values=values, file=path)["repeats"] == 5
    assert params.read_file(_file(tmp_path, "# nothing set\n", "empty.yaml")) == {}


@pytest.mark.parametrize("text, message", [
    ("repeats: [5\n", "-f {f}: not valid YAML: "),
    ("repeats: 5\n  sizes: 4\n", "-f {f}: not valid YAML: mapping values are not allowed "
                                 "here (line 2, column 8)"),
    ("- repeats\n- 5\n", "-f {f}: must be a YAML mapping of NAME: VALUE; got a list"),
    ("5: repeats\n", "-f {f}: every name must be a parameter's name (text); got 5"),
])
def test_a_malformed_parameters_file_is_named(tmp_path, text, message):
    path = _file(tmp_path, text)
    with pytest.raises(ValueError) as bad:
        params.read_file(path)
    assert message.format(f=path) in str(bad.value)
    with pytest.raises(ValueError, match="cannot read it"):
        params.read_file(tmp_path / "missing.yaml")


@pytest.mark.parametrize("text, message", [
    ("nosuch: 3\n", "-f {f}: nosuch: no notebook run here has that parameter; known: "),
    ("quick: true\n", "-f {f}: quick: use --quick"),
    ("repeats: '5'\n", "-f {f}: repeats must be an int in [1, 1000]; got '5'"),
    ("repeats: 2.5\n", "-f {f}: repeats must be an int in [1, 1000]; got 2.5"),
    ("repeats: 0\n", "-f {f}: repeats must be an int in [1, 1000]; got 0"),
    ("sizes: 4096\n", "-f {f}: sizes must be a list of ints"),
    ("cpu: -1\n", "-f {f}: cpu must be None or an int in [0, 4095]; got -1"),
])
def test_an_unknown_name_or_a_value_that_does_not_fit_names_file_and_parameter(
        tmp_path, text, message):
    path = _file(tmp_path, text)
    with pytest.raises(ValueError) as bad:
        params.parse(["01_stack_size"], [], file_values=params.read_file(path), file=path)
    assert message.format(f=path) in str(bad.value)


@pytest.mark.parametrize("text, naming", [
    ("repeats: [5\n", "not valid YAML"),
    ("nosuch: 3\n", "nosuch: no notebook run here has that parameter"),
    ("repeats: abc\n", "repeats must be an int in [1, 1000]; got 'abc'"),
])
def test_a_bad_parameters_file_exits_2_with_one_line_before_anything_runs(tmp_path, text,
                                                                            naming):
    path = _file(tmp_path, text)
    done = _labkit("--results", str(tmp_path / "out"), "reproduce", "--quick", "-f",
                   str(path), "--only", "01_stack_size")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"labkit reproduce: error: -f {path}: ") and naming in done.stderr
    assert not done.stdout and not (tmp_path / "out" / "reports").exists()
