"""The registry of systems (labkit.core.systems): every catalogue entry belongs to exactly
one system, and what the records say agrees with the C and Python sides they describe."""
import inspect
import re
from pathlib import Path

import pytest

import labkit
from labkit.core import entries, native, systems

CSRC = Path(systems.__file__).resolve().parents[1] / "csrc"


def test_every_entry_has_exactly_one_system_in_the_catalogue_order():
    names = [n for s in systems.SYSTEMS.values() for n in s.names()]
    assert len(names) == len(set(names))
    assert tuple(names) == entries.ALL_NAMES
    cat = labkit.catalogue()
    assert list(cat.entry) == names
    assert all(cat.system == [systems.of(n).family for n in cat.entry])


def test_the_kernels_are_the_c_kernel_table():
    from labkit.core import _core

    assert systems.KERNELS.names() == tuple(r["name"] for r in _core.kernel_table())


def test_records_are_consistent():
    for family, s in systems.SYSTEMS.items():
        assert s.family == family
        assert s.applies <= set(systems.PARAMETERS), family
        assert (s.library is None) == (s.index is None), family
        if s.count_driver:
            assert s.library, f"{family}: callgrind needs the library it loads"


@pytest.mark.parametrize("family", list(systems.SYSTEMS))
def test_each_job_names_a_worker_function_of_the_registry(family):
    s = systems.SYSTEMS[family]
    name = next(n for n in s.names() if s.available(n)[0]) if any(
        s.available(n)[0] for n in s.names()) else None
    if name is None:
        pytest.skip(f"no {s.what} runs here")
    size = entries.check_stack_size(name, None)
    job = s.job(name, size, None, None, "as-is")
    fn = getattr(systems, job.function)
    assert job.function.startswith("worker_") and callable(fn)
    # The job's arguments and measure's common ones are exactly what the worker takes.
    common = {"stack_size", "rounds", "warmup", "repeats"}
    params = set(inspect.signature(fn).parameters)
    assert set(job.args) | common <= params
    assert not {p for p, v in inspect.signature(fn).parameters.items()
                if v.default is inspect.Parameter.empty} - set(job.args) - common


def test_the_cxx_peers_are_the_librarys_in_its_order():
    if native.peers_missing_reason():
        pytest.skip(native.peers_missing_reason())
    assert tuple(native.peer_names()) == systems.CXX.names()


def test_callgrinds_driver_knows_each_systems_name():
    text = (CSRC.parent / "cxx" / "count_main.c").read_text()
    usage = re.search(r"usage: %s LIB (\S+) INDEX", text).group(1).split("|")
    assert usage == [s.count_driver for s in systems.SYSTEMS.values() if s.count_driver]


def test_unknown_names_and_rings_of_peers_are_refused():
    with pytest.raises(ValueError, match="entry must be one of"):
        systems.of("no_such_kernel")
    with pytest.raises(ValueError, match="kernel must be one of labkit's own kernels"):
        labkit.measure_ring("generator_send", contexts=4)


@pytest.mark.parametrize("family", list(systems.SYSTEMS))
def test_a_parameter_that_does_not_apply_is_refused(family):
    s = systems.SYSTEMS[family]
    if not s.names():
        pytest.skip(f"no {s.what} in this process's catalogue (tests/test_user_switch.py "
                    "adds some)")
    name = s.names()[0]
    size = entries.check_stack_size(name, None)
    refused = {"prefault": dict(prefault=True), "build": dict(build=native.DEFAULT_BUILD),
               "fp_control": dict(fp_control="same")}
    for param, given in refused.items():
        if param in s.applies:
            continue
        args = {"prefault": None, "build": None, "fp_control": "as-is", **given}
        with pytest.raises(ValueError, match=param):
            s.job(name, size, args["prefault"], args["build"], args["fp_control"])


def test_a_python_peer_takes_no_stack_size():
    """greenlet is stackful, but its stacks are greenlet's: a stack_size would be recorded
    for a stack labkit never made."""
    with pytest.raises(ValueError, match="stack_size must be left unset.*greenlet_switch"):
        entries.check_stack_size("greenlet_switch", 65536)
    assert entries.check_stack_size("greenlet_switch", None) is None
