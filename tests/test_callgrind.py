"""Instruction counts per switch from callgrind: deterministic, so they can be checked
exactly against what the switch files say each kernel does."""
import pytest

from labkit.core import entries
from labkit.experiments import callgrind

ok, why = callgrind.available()
pytestmark = pytest.mark.skipif(not ok, reason=why or "callgrind available")


def test_counts_are_deterministic_and_ordered():
    a = callgrind.instructions_per_switch("asm", rounds=(500, 1500))
    b = callgrind.instructions_per_switch("asm", rounds=(500, 1500))
    assert a == b  # same binary, same input: the same count, whatever the machine is doing
    fpu = callgrind.instructions_per_switch("asm_fpu", rounds=(500, 1500))
    # Every switch leaves one context and enters another: asm_fpu adds lea, stmxcsr, fnstcw
    # on the way out and ldmxcsr, fldcw, lea on the way in, 6 instructions per switch.
    assert fpu["net"] - a["net"] == 6
    # The empty loop is the same loop in both.
    assert fpu["base"] == a["base"]


def test_asm_ret_is_one_instruction_shorter_than_asm():
    a = callgrind.instructions_per_switch("asm", rounds=(500, 1500))
    r = callgrind.instructions_per_switch("asm_ret", rounds=(500, 1500))
    assert a["net"] - r["net"] == 1  # pop + jmp vs ret


def test_bad_arguments():
    with pytest.raises(ValueError, match="build"):
        callgrind.instructions_per_switch("asm", build="O7")
    with pytest.raises(ValueError, match="rounds"):
        callgrind.instructions_per_switch("asm", rounds=(10, 5))
    with pytest.raises(TypeError, match="rounds"):
        callgrind.instructions_per_switch("asm", rounds=5000)
    with pytest.raises(ValueError, match="Python peer"):
        callgrind.instructions_per_switch("generator_send")


def test_a_build_valgrind_cannot_decode_is_a_row_with_a_reason(monkeypatch):
    def boom(kernel, build, **kw):
        raise callgrind.UnsupportedInstructionError("valgrind cannot decode")

    monkeypatch.setattr(callgrind, "instructions_per_switch", boom)
    t = callgrind.instructions_table(["asm"], ["O2-native"])
    assert t.net.isna().all() and "cannot decode" in t.why.iloc[0]


def test_libco_design_counts_what_its_switch_file_says():
    if not entries.availability("libco_design")[0]:
        pytest.skip("libco_design runs on x86-64 only")
    a = callgrind.instructions_per_switch("asm", rounds=(500, 1500))
    lc = callgrind.instructions_per_switch("libco_design", rounds=(500, 1500))
    # asm: 6 pushes, 2 movs, 6 pops, pop + jmp = 16. libco_design: 2 to find the return
    # address and rsp, 14 stores, 12 loads, push, mov, ret = 31: 15 more per switch.
    assert lc["net"] - a["net"] == 15
    assert lc["base"] == a["base"]
