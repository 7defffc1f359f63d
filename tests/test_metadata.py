"""Every measured row says where it came from; the kernel table and machine info are complete."""
import re

import pandas as pd

import labkit
from labkit.core.machine import ROW_METADATA


def test_rows_carry_machine_and_build_metadata():
    df = labkit.measure("asm", switches=1000, repeats=2)
    for col in ROW_METADATA:
        assert col in df.columns, col
        assert df[col].notna().all(), col
    row = df.iloc[0]
    assert row.tsc_ghz > 0
    assert re.fullmatch(r"[0-9a-f]{12}", row.machine_id)
    assert row.cpu_model and row.cpu_model != "unknown"
    assert re.search(r"\d+\.\d+", row.compiler)  # a version number
    assert row.opt_level.startswith("-O")
    assert row.arch in ("x86_64-sysv", "aarch64-aapcs64")
    assert "CLOCK_MONOTONIC" in row.timer


def test_per_switch_figures_are_consistent():
    df = labkit.measure("ucontext", switches=2000, repeats=3)
    n = df.switches
    # net = raw - baseline floored at 0, by construction; and both clocks saw the same run.
    net = (df.ns_per_switch_raw - df.baseline_ns_per_switch).clip(lower=0)
    assert ((net - df.ns_per_switch).abs() < 1e-9).all()
    assert (df.below_resolution == (df.ns_per_switch_raw <= df.baseline_ns_per_switch)).all()
    # Not speed checks: the cycle counter and the clock both advanced during the run.
    assert df.ticks_per_ns.gt(0).all()
    assert (df.ns_per_switch_raw * n).gt(0).all()


def test_kernel_table_lists_every_kernel_with_a_reason_when_missing():
    from labkit.core.entries import ALL_NAMES

    k = labkit.catalogue()
    assert list(k.kernel) == list(ALL_NAMES)
    assert set(k.kind) == {"stackful", "stackless", "baseline"}
    assert (k[~k.available].why_not.str.len() > 0).all()
    assert (k.saves.str.len() > 0).all()


def test_machine_info_fields():
    info = labkit.machine_info()
    for key in ("cpu_model", "tsc_ghz", "cpu_count", "kernel_release", "compiler", "cflags",
                "governor", "turbo", "smt", "virtualization", "labkit_commit", "machine_id",
                "load_avg_1min"):
        assert key in info, key
    assert info["cpu_count"] >= 1


def test_summarize_flags_noise_by_pyperf_rule():
    # Synthetic values: the rule is std >= 10% of the mean.
    quiet = pd.DataFrame({"kernel": "a", "ns_per_switch": [10.0, 10.1, 9.9, 10.0]})
    loud = pd.DataFrame({"kernel": "b", "ns_per_switch": [10.0, 20.0, 5.0, 12.0]})
    s = labkit.summarize(pd.concat([quiet, loud]))
    assert list(s.kernel) == ["a", "b"]
    assert list(s.noisy) == [False, True]
    assert s.loc[0, "median"] == 10.0
    assert len(labkit.noise_warnings(s)) == 1


def test_a_missing_peer_is_a_row_that_says_why_not_a_crash(tmp_path, monkeypatch):
    from labkit.core import native

    monkeypatch.setattr(native, "BIN_DIR", tmp_path)  # as if Boost had not been there
    k = labkit.catalogue().set_index("kernel")
    assert not k.loc["boost_fiber", "available"]
    assert "libboost-context-dev" in k.loc["boost_fiber", "why_not"]
    assert k.loc["asm", "available"]
    import pytest

    with pytest.raises(labkit.KernelUnavailableError, match="libboost"):
        labkit.measure("boost_fiber", switches=100)


def test_peer_rows_say_which_build_measured_them():
    import pytest

    k = labkit.catalogue().set_index("kernel")
    if not k.loc["boost_fiber", "available"]:
        pytest.skip(k.loc["boost_fiber", "why_not"])
    df = labkit.measure("boost_fiber", switches=1000, repeats=2)
    assert df.build.iloc[0] == "O2"
    assert "-std=c++20" in df.cflags.iloc[0] and df.opt_level.iloc[0] == "-O2"


def test_ucontext_counts_the_context_it_keeps_on_its_stack():
    k = labkit.catalogue().set_index("kernel")
    assert k.loc["ucontext", "frame_bytes"] > 900  # a glibc ucontext_t, at the stack's top
