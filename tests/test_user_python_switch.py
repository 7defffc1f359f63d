"""A user's own Python-level switch (labkit.add_switch(python="module:factory")): greenlet's,
from docs/examples/my_py_switch.py, measures with every switch counted and is taken by the
advisor; a path that does not import, a factory of the wrong shape, user code that raises,
a swap that does not switch and one that hangs each get their clear answer, and the lab
goes on."""
import io
import math
import textwrap

import pytest

import labkit
from labkit.core import systems, user_pyswitch

from conftest import EXAMPLES

pytestmark = pytest.mark.usefixtures("forget_added")


@pytest.fixture
def examples_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))


def module(tmp_path, monkeypatch, name: str, body: str) -> str:
    """A module of the user's, `name`, in a folder on sys.path (a fresh folder and name each
    test: the shared worker keeps what it imported)."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_the_greenlet_example_measures_every_switch_counted(examples_on_path):
    entry = labkit.add_switch(python="my_py_switch:greenlet_switch")
    assert entry == "user:my_py_switch"
    row = labkit.catalogue().set_index("entry").loc[entry]
    assert row.system == "user_python" and row.kind == "stackful" and row.available
    df = labkit.measure(entry, switches=20_000, repeats=3)
    assert len(df) == 3
    assert (df.counted_switches == 20_000).all() and (df.switches == 20_000).all()
    assert (df.entry == entry).all() and (df.build == "cpython").all()
    assert (df.ns_per_switch >= 0).all() and (df.baseline_ns_per_switch > 0).all()
    assert df.source.iloc[0] == str(EXAMPLES / "my_py_switch.py")
    assert len(df.source_sha256.iloc[0]) == 64 and df.machine_id.notna().all()
    # Its stacks and FP state are greenlet's, not labkit's.
    with pytest.raises(ValueError, match="stack_size must be left unset"):
        labkit.measure(entry, stack_size=65536)
    with pytest.raises(ValueError, match="fp_control must be 'as-is'"):
        labkit.measure(entry, fp_control="same")
    labkit.remove_switch(entry)
    assert entry not in labkit.catalogue().entry.values


def test_a_callable_is_taken_by_its_module_and_name_only(examples_on_path):
    import my_py_switch

    assert labkit.add_switch(python=my_py_switch.greenlet_switch, name="g2") == "user:g2"
    assert systems.USER_PY_SWITCHES["user:g2"].path == "my_py_switch:greenlet_switch"

    def local_factory():
        return my_py_switch.greenlet_switch()

    for given in (local_factory, lambda: None):
        with pytest.raises(ValueError, match="python='module:attr'"):
            labkit.add_switch(python=given)
    with pytest.raises(TypeError, match="python must be an import path"):
        labkit.add_switch(python=42)
    with pytest.raises(ValueError, match="python must be an import path"):
        labkit.add_switch(python="my_py_switch.greenlet_switch")
    with pytest.raises(ValueError, match="source must be left unset"):
        labkit.add_switch(EXAMPLES / "my_switch.c", python="my_py_switch:greenlet_switch")
    with pytest.raises(ValueError, match="keeps_fp_control must be left unset"):
        labkit.add_switch(python="my_py_switch:greenlet_switch", keeps_fp_control=True)
    with pytest.raises(TypeError, match="needs a source .* or python"):
        labkit.add_switch()


def test_a_path_that_does_not_import_is_named(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="'no_such_module_8f3a:factory' is not.*"
                                         "ModuleNotFoundError"):
        labkit.add_switch(python="no_such_module_8f3a:factory")
    name = module(tmp_path, monkeypatch, "has_no_factory_8f3a", "x = 1\n")
    with pytest.raises(ValueError, match=f"'{name}:factory' is not.*AttributeError"):
        labkit.add_switch(python=f"{name}:factory")
    assert not systems.USER_PY_SWITCHES


@pytest.mark.parametrize("returns", ["42", "(1, 2)", "(lambda fn: fn,)"])
def test_a_factory_of_the_wrong_shape_is_told_what_to_return(tmp_path, monkeypatch, returns):
    name = module(tmp_path, monkeypatch, f"wrong_shape_{abs(hash(returns))}",
                  f"def factory():\n    return {returns}\n")
    with pytest.raises(TypeError, match=r"must return a pair \(make, swap\) of callables"):
        labkit.add_switch(python=f"{name}:factory")
    assert not systems.USER_PY_SWITCHES


def test_user_code_that_raises_is_named_and_the_lab_goes_on(tmp_path, monkeypatch,
                                                              examples_on_path):
    name = module(tmp_path, monkeypatch, "raises_8f3a", """
        import greenlet

        def at_once():
            def swap(g):
                raise LookupError("no context to resume")
            return greenlet.greenlet, swap

        def later():
            calls = [0]
            def swap(g):
                calls[0] += 1
                if calls[0] > 1000:  # past the add's check, inside the measurement
                    raise LookupError("ran out of contexts")
                g.switch()
            return greenlet.greenlet, swap
        """)
    with pytest.raises(labkit.UserSwitchError, match="LookupError: no context to resume"):
        labkit.add_switch(python=f"{name}:at_once")
    entry = labkit.add_switch(python=f"{name}:later")
    with pytest.raises(labkit.WorkerError, match="LookupError: ran out of contexts"):
        labkit.measure(entry, switches=20_000, repeats=1)
    good = labkit.add_switch(python="my_py_switch:greenlet_switch")
    df = labkit.measure(good, switches=2_000, repeats=1)
    assert (df.counted_switches == 2_000).all()


def test_a_swap_that_does_not_switch_is_refused_with_the_counts(tmp_path, monkeypatch):
    name = module(tmp_path, monkeypatch, "no_switch_8f3a", """
        def factory():
            return (lambda fn: fn), (lambda ctx: None)
        """)
    with pytest.raises(labkit.UserSwitchError, match="does not switch: .* the first context "
                                                     "counted 0 resumptions and the second 0"):
        labkit.add_switch(python=f"{name}:factory")


def test_a_swap_that_hangs_meets_the_timeout_and_the_lab_goes_on(tmp_path, monkeypatch,
                                                                   examples_on_path):
    name = module(tmp_path, monkeypatch, "hangs_8f3a", """
        import time

        def factory():
            def swap(ctx):
                while True:
                    time.sleep(1)
            return (lambda fn: fn), swap
        """)
    with pytest.raises(labkit.MeasurementTimeout, match=f"{name}"):
        labkit.add_switch(python=f"{name}:factory", timeout=3)
    assert not systems.USER_PY_SWITCHES
    assert labkit.add_switch(python="my_py_switch:greenlet_switch") == "user:my_py_switch"


def test_the_advisor_takes_it_measuring_it_on_the_spot(tmp_path, examples_on_path):
    entry = labkit.add_switch(python="my_py_switch:greenlet_switch")
    status = io.StringIO()
    advice = labkit.advise("1us", suspensions=2, alive=100, designs=[entry],
                           data_dir=tmp_path, quick=True, status=status)
    (r,) = advice.records()
    assert r["design"] == entry and r["rank"] == 1
    t = r["ns_per_request"]
    assert all(math.isfinite(t[k]) for k in ("value", "low", "high"))
    assert t["low"] <= t["value"] <= t["high"] and t["value"] >= 2 * 1000  # the work itself
    assert r["bytes_per_coroutine"] > 0 and r["mappings"] == 0
    assert r["bytes_total"] == pytest.approx(100 * r["bytes_per_coroutine"])
    said = status.getvalue()
    assert f"measuring now {entry}'s ping-pong" in said
    assert f"suspended {entry} objects" in said


def test_memory_counts_the_contexts_made(examples_on_path):
    """tracemalloc's bytes per suspended context: greenlet's objects, more than nothing and
    the same order at 100 and at 1000 contexts (the hub's own bytes are not counted)."""
    entry = labkit.add_switch(python="my_py_switch:greenlet_switch")
    small, large = user_pyswitch.memory(entry, 100), user_pyswitch.memory(entry, 1000)
    assert small > 0 and large > 0
    assert 0.5 < small / large < 2


def test_measure_takes_the_python_switch_itself(examples_on_path):
    df = labkit.measure(python="my_py_switch:greenlet_switch", switches=2_000, repeats=2)
    assert len(df) == 2 and (df.entry == "user:my_py_switch").all()
    assert (df.counted_switches == 2_000).all() and (df.build == "cpython").all()
    assert df.source.iloc[0] == str(EXAMPLES / "my_py_switch.py")
    assert "user:my_py_switch" in systems.USER_PY_SWITCHES  # added, as add_switch adds it


def test_measure_refuses_python_beside_another_switch_naming_both(examples_on_path):
    path = "my_py_switch:greenlet_switch"
    with pytest.raises(ValueError, match="entry must be left unset .* when python is given"
                                         ".*entry='asm', python='my_py_switch"):
        labkit.measure("asm", python=path)
    with pytest.raises(ValueError, match="source must be left unset .* when python is given"):
        labkit.measure(source=EXAMPLES / "my_switch.c", python=path)
    with pytest.raises(ValueError, match="keeps_fp_control must be left unset .* with python"):
        labkit.measure(python=path, keeps_fp_control=False)
    with pytest.raises(TypeError, match="measure needs an entry .* or python"):
        labkit.measure()
    with pytest.raises(ValueError, match="python must be an import path"):
        labkit.measure(python="my_py_switch.greenlet_switch")
    assert not systems.USER_PY_SWITCHES and not systems.USER_SWITCHES
