"""Every kernel, checked against the ABI it claims to follow (see the table at the top of
labkit/csrc/switch_*.h): callee-saved registers survive, FP control state is kept by the
kernels that say they keep it, the switch counters add up, the stack ends at its guard page."""
import pytest

import labkit
from conftest import KEEPS_FP_CONTROL, PEERS, STACKFUL


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
    order = [k for k in labkit.catalogue().query("available").kernel]
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
