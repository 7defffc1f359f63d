"""The /proc readers (labkit.core.procfs), each checked against what this process just did
or against another source (os, psutil), and on bad input."""
import os
import time

import psutil
import pytest

from labkit.core import procfs


def test_resident_memory_grows_by_what_is_written():
    before = procfs.status_kb("VmRSS")
    block = bytearray(64 << 20)
    block[::4096] = b"x" * len(block[::4096])  # every page written, however it was allocated
    grown = procfs.status_kb("VmRSS") - before
    assert grown >= (64 << 10) * 0.9
    assert procfs.status_kb("VmRSS", os.getpid()) == pytest.approx(
        psutil.Process().memory_info().rss / 1024, rel=0.05)
    del block


def test_a_field_the_process_lacks_reads_zero():
    assert procfs.status_kb("NoSuchField") == 0


def test_sleeping_counts_context_switches():
    before = procfs.context_switches(os.getpid())
    for _ in range(5):
        time.sleep(0.001)  # each sleep gives the CPU up: a voluntary switch
    assert procfs.context_switches(os.getpid()) >= before + 5


def test_processes_list_this_one_with_its_parent():
    me = {p["pid"]: p for p in procfs.processes()}[os.getpid()]
    assert me["ppid"] == os.getppid()
    assert me["comm"] == psutil.Process().name()[:15]
    assert me["state"] == "R"
    assert procfs.listed(os.getpid())


def test_open_descriptors_count_a_new_one():
    before = procfs.open_fds()
    with open(__file__) as f:
        assert procfs.open_fds(os.getpid()) == before + 1
        assert f.readable()
    assert procfs.open_fds() == before


def test_sysctl_values_read_the_files():
    with open("/proc/sys/vm/max_map_count") as f:
        assert procfs.max_map_count() == int(f.read())
    assert procfs.sysctl("vm.overcommit_memory") in ("0", "1", "2")
    assert procfs.sysctl("vm.no_such_setting") is None
    assert procfs.sysctl("vm.no_such_setting", "unknown") == "unknown"
    assert procfs.transparent_hugepages() in ("always", "madvise", "never", "unknown")
    assert procfs.read_text("/no/such/file", "d") == "d"


@pytest.mark.parametrize("call, error, words", [
    (lambda: procfs.status_kb("Vm RSS"), ValueError, ["field", "VmRSS"]),
    (lambda: procfs.status_kb(None), ValueError, ["field"]),
    (lambda: procfs.status_kb("VmRSS", 0), ValueError, ["pid", "self"]),
    (lambda: procfs.status_kb("VmRSS", "1"), TypeError, ["pid"]),
    (lambda: procfs.context_switches(True), TypeError, ["pid"]),
    (lambda: procfs.open_fds(-3), ValueError, ["pid"]),
    (lambda: procfs.listed(1.5), TypeError, ["pid"]),
    (lambda: procfs.sysctl("max_map_count"), ValueError, ["name", "vm.max_map_count"]),
    (lambda: procfs.sysctl("vm/../../etc"), ValueError, ["name"]),
    (lambda: procfs.read_text(3), TypeError, ["path"]),
])
def test_bad_input_names_the_parameter(call, error, words):
    with pytest.raises(error) as e:
        call()
    assert all(w in str(e.value) for w in words), str(e.value)
