"""Every kernel, checked against the ABI it claims to follow (see the table at the top of
labkit/csrc/switch_*.h): callee-saved registers survive, FP control state is kept by the
kernels that say they keep it, the switch counters add up, the stack ends at its guard page."""
import platform

import pytest

import labkit
from conftest import KEEPS_FP_CONTROL, PEERS, STACKFUL, assert_each_raises


def test_every_kernel_is_checked_here():
    # The parametrised tests below only cover what runs here; make sure that is most of them.
    assert {"asm", "asm_fpu", "ucontext"} <= set(STACKFUL)


def test_callee_saved_registers_survive(stackful):
    regs = labkit.check_registers(stackful)
    assert len(regs) == 2 * len(set(regs.register))  # both sides of every register
    assert set(regs.side) == {"main", "other"}
    # Sentinels differ between the two sides, or the check proves nothing.
    main = regs[regs.side == "main"].set_index("register").loaded
    other = regs[regs.side == "other"].set_index("register").loaded
    assert (main != other).all()
    lost = regs[~regs.survived]
    assert lost.empty, f"{stackful} lost registers:\n{lost}"


def test_fp_control_state(stackful):
    r = labkit.check_fp_control(stackful)
    # The two contexts really set different control words.
    assert [a & m for a, m in zip(r["main_set"], r["mask"])] != [
        b & m for b, m in zip(r["other_set"], r["mask"])]
    if stackful in KEEPS_FP_CONTROL:
        assert r["kept"], f"{stackful} should keep FP control state: {r}"
    else:
        # asm/asm_ret save no FP state, by design: a rounding mode set in one context
        # leaks into the other. This documents it (and shows the check can fail).
        assert not r["kept"]
        assert [x & m for x, m in zip(r["main_after"], r["mask"])] == [
            x & m for x, m in zip(r["other_set"], r["mask"])]


def test_counters_prove_every_switch(any_kernel):
    df = labkit.measure(any_kernel, switches=2000, repeats=3, warmup=1)
    assert len(df) == 3
    assert (df.counted_switches == 2000).all()
    assert (df.switches == 2000).all()


def test_cxx20_symmetric_refuses_builds_without_tail_calls():
    if "cxx20_symmetric" not in PEERS:
        pytest.skip("the C++ peers are not built here")
    # Without -foptimize-sibling-calls every transfer nests a call: a clear refusal,
    # not a stack overflow.
    with pytest.raises(labkit.WorkerError, match="tail"):
        labkit.measure("cxx20_symmetric", switches=1000, build="O0")


def test_kernels_in_any_order_share_a_worker():
    # State left behind by one kernel (an xsave header on the stack, say) must not
    # break the next one in the same worker process: run them forwards and backwards.
    order = [k for k in labkit.catalogue().query("available").entry]
    for k in order + order[::-1]:
        df = labkit.measure(k, switches=1000, repeats=1, warmup=0)
        assert (df.counted_switches == 1000).all(), k


def test_stack_fits_within_its_size(stackful):
    assert labkit.probe_stack(stackful, 64 * 1024, 32 * 1024) == 32 * 1024


def test_stack_overflow_hits_guard_page_and_caller_survives(stackful):
    with pytest.raises(labkit.KernelCrashError) as err:
        labkit.probe_stack(stackful, 16 * 1024, 256 * 1024)
    msg = str(err.value)
    assert stackful in msg and "SIGSEGV" in msg and "stack_size=16384" in msg
    # The caller is fine and the next measurement starts a fresh worker.
    assert (labkit.measure(stackful, switches=100, repeats=1).counted_switches == 100).all()


def test_prefault_changes_page_faults_not_results():
    cold = labkit.measure("asm", stack_size=1 << 20, switches=1000, repeats=1, warmup=0,
                          prefault=False)
    warm = labkit.measure("asm", stack_size=1 << 20, switches=1000, repeats=1, warmup=0,
                          prefault=True)
    assert (cold.counted_switches == 1000).all() and (warm.counted_switches == 1000).all()
    # A prefaulted stack takes no page fault inside the timed loop.
    assert warm.minor_faults.iloc[0] == 0


@pytest.mark.parametrize("build", labkit.builds())
def test_every_optimisation_build_switches_and_says_how_it_was_built(build):
    df = labkit.measure("asm_fpu", switches=1000, repeats=2, build=build)
    assert (df.counted_switches == 1000).all()
    flag = build.split("-")[0]
    assert f"-{flag}" in df.cflags.iloc[0]
    assert df.build.iloc[0] == build


def test_all_six_optimisation_builds_exist():
    assert labkit.builds() == ["O0", "O1", "O2", "O3", "Os", "O2-native"]


def test_libco_design_lets_mxcsr_leak_between_contexts():
    # libco's design keeps no FP control state: the rounding mode the other context set
    # is what main finds after switching back. Expected, documented (entries.py), and the
    # hazard of that design: a test that shows it, not a failure.
    if "libco_design" not in STACKFUL:
        pytest.skip("libco_design is x86-64's: " + labkit.catalogue().set_index("entry")
                    .why_not.get("libco_design", ""))
    r = labkit.check_fp_control("libco_design")
    assert not r["kept"]
    mxcsr = r["mask"][0]
    assert r["main_set"][0] & mxcsr != r["other_set"][0] & mxcsr
    assert r["main_after"][0] & mxcsr == r["other_set"][0] & mxcsr  # main got the other's


def test_libco_design_is_reported_where_it_cannot_run():
    row = labkit.catalogue().set_index("entry").loc["libco_design"]
    assert row.available == (platform.machine() in ("x86_64", "AMD64"))
    if not row.available:
        assert "x86-64" in row.why_not


def test_copy_stack_copies_what_is_in_use():
    # Each round trip resumes the other coroutine: it is copied in and the last one out,
    # so 4 KiB more in use is 4 KiB more copied per switch, exactly.
    small = labkit.measure("copy_stack", switches=2000, repeats=2, stack_in_use=0)
    large = labkit.measure("copy_stack", switches=2000, repeats=2, stack_in_use=4096)
    assert (large.copied_bytes_per_switch - small.copied_bytes_per_switch == 4096).all()
    assert (small.copied_bytes_per_switch > 0).all()  # frames and registers at least
    assert (large.stack_in_use == 4096).all()
    # The kernels that copy no stack copy nothing.
    assert (labkit.measure("asm", switches=1000, repeats=1).copied_bytes_per_switch == 0).all()


def test_stack_in_use_is_checked():
    assert_each_raises(
        (lambda: labkit.measure("asm", stack_in_use=64), ValueError, "stack_in_use.*copy_stack"),
        (lambda: labkit.measure("copy_stack", stack_size=65536, stack_in_use=65536),
         ValueError, "stack_in_use must be an integer from 0"),
        (lambda: labkit.measure("copy_stack", stack_in_use="8"), TypeError, "stack_in_use"),
        (lambda: labkit.measure_ring("copy_stack", contexts=4), ValueError, "share one run stack"),
    )


@pytest.mark.parametrize("asymmetric", [False, True])
def test_a_rings_switches_are_its_laps_times_the_one_per_lap_count(asymmetric):
    """The ring's C loop, the switches it reports, the counted switches and the laps the
    notebooks plan all come from one per-lap function (lk_ring_switches_per_lap)."""
    from labkit.core import timing
    from labkit.lab.analysis import symmetric

    contexts, laps = 5, 200
    per_lap = timing.ring_switches_per_lap(contexts, asymmetric)
    assert per_lap == (2 * contexts if asymmetric else contexts + 1)
    d = labkit.measure_ring("asm", contexts=contexts, asymmetric=asymmetric, laps=laps,
                            repeats=1)
    assert (d.switches == laps * per_lap).all() and (d.counted_switches == d.switches).all()
    assert symmetric.laps(contexts, asymmetric, laps * per_lap) == laps
