"""A user's own switch (labkit.add_switch, labkit.measure(source=...)): a correct one passes
the checks and measures with every switch counted; one that loses rbx is refused naming rbx;
the alignment, stack and FP-control checks can fail too; a crash or a hang ends the worker
only; a source that does not compile is answered with the compiler's file:line; bad
arguments name the parameter."""
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import labkit
from labkit.core import native_build
from labkit.experiments import callgrind

from conftest import EXAMPLES

pytestmark = [
    pytest.mark.skipif(
        platform.machine() not in ("x86_64", "AMD64"),
        reason="the user switches here are x86-64 assembly, and so are the harness's probes"),
    pytest.mark.usefixtures("forget_added"),
]

GOOD = EXAMPLES / "my_switch.c"
BROKEN = EXAMPLES / "broken_switch.c"


@pytest.fixture(scope="module", autouse=True)
def results_elsewhere(tmp_path_factory):
    """Builds go to a folder of this module's own, never the checkout's results."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABKIT_RESULTS_DIR", str(tmp_path_factory.mktemp("results")))
        yield


def variant(tmp_path, name: str, replace: dict) -> Path:
    """my_switch.c with some lines changed: a switch with one mistake of a known kind."""
    text = GOOD.read_text()
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / f"{name}.c"
    path.write_text(text)
    return path


def test_a_correct_switch_passes_the_checks_and_measures():
    checks = labkit.check_switch(GOOD)
    assert checks.passed.all(), checks.to_string()
    assert len(checks) == 4
    entry = labkit.add_switch(GOOD, keeps_fp_control=False)
    assert entry == "user:my_switch"
    df = labkit.measure(entry, switches=20_000, repeats=3)
    assert (df.counted_switches == 20_000).all() and (df.switches == 20_000).all()
    assert (df.entry == entry).all() and (df.build == "O2").all()
    assert df.cflags.iloc[0] == "-O2 -Wall" and df.source.iloc[0] == str(GOOD)
    row = labkit.catalogue().set_index("entry").loc[entry]
    assert row.system == "user" and row.available and "shared" in row.note


def test_measure_takes_the_source_itself():
    df = labkit.measure(source=GOOD, switches=2_000, repeats=1)
    assert (df.counted_switches == 2_000).all() and (df.entry == "user:my_switch").all()


def test_a_user_switch_runs_a_ring_and_a_scheduler():
    entry = labkit.add_switch(GOOD)
    ring = labkit.measure_ring(entry, contexts=5, laps=100, repeats=2)
    assert (ring.counted_switches == 100 * 6).all()
    sched = labkit.measure_ring(entry, contexts=5, laps=100, repeats=2, asymmetric=True)
    assert (sched.counted_switches == 100 * 10).all()


def test_a_prebuilt_library_and_a_cpp_source_are_taken(tmp_path):
    lib = tmp_path / "libmine.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(GOOD)], check=True)
    cpp = tmp_path / "mine_cpp.cpp"
    cpp.write_text(f'extern "C" {{\n#include "{GOOD}"\n}}\n')
    for source, name in ((lib, "user:libmine"), (cpp, "user:mine_cpp")):
        assert labkit.add_switch(source) == name
        assert (labkit.measure(name, switches=1_000, repeats=1).counted_switches == 1_000).all()


def test_a_switch_that_forgets_rbx_is_named_with_rbx():
    with pytest.raises(labkit.UserSwitchError, match="lk_user_swap does not preserve rbx") as err:
        labkit.add_switch(BROKEN)
    checks = err.value.checks
    assert list(checks[~checks.passed].check) == ["callee-saved registers survive"]
    assert "user:broken_switch" not in labkit.catalogue().entry.values
    # Nothing else was lost: the message names rbx alone.
    assert not any(r in str(err.value) for r in ("rbp", "r12", "r13", "r14", "r15"))


def test_the_fp_control_words_are_checked_against_what_is_declared():
    with pytest.raises(labkit.UserSwitchError, match="FP control words as declared.*shared"):
        labkit.add_switch(GOOD, keeps_fp_control=True)
    found = labkit.check_switch(GOOD).set_index("check").loc["FP control words as declared"]
    assert found.passed and not found.kept


def test_a_misaligned_first_frame_is_found(tmp_path):
    # One word lower: fn starts with rsp 16-aligned, 8 bytes off what the ABI asks.
    src = variant(tmp_path, "misaligned", {"(uint64_t *)top - 7;": "(uint64_t *)top - 8;"})
    with pytest.raises(labkit.UserSwitchError, match="stack aligned at entry.*8 bytes off"):
        labkit.add_switch(src)


def test_a_switch_that_writes_into_its_callers_frame_is_found(tmp_path):
    # The first word above the return address is the caller's.
    src = variant(tmp_path, "scribbler", {
        '    "    pushq %rbp\\n"             /* callee-saved: the caller expects it back */\n':
        '    "    movq  $0, 8(%rsp)\\n"\n    "    pushq %rbp\\n"\n'})
    with pytest.raises(labkit.UserSwitchError, match="wrote into its caller's frame, 0 bytes"):
        labkit.add_switch(src)


def test_a_crash_ends_its_worker_only(tmp_path):
    # A switch to a null stack pointer: the first pop faults.
    src = variant(tmp_path, "crashy", {'"    movq  %rsi, %rsp\\n"': '"    xorl  %esp, %esp\\n"'})
    with pytest.raises(labkit.KernelCrashError, match="user:crashy.*SIGSEGV"):
        labkit.add_switch(src)
    entry = labkit.add_switch(GOOD)
    assert (labkit.measure(entry, switches=1_000, repeats=1).counted_switches == 1_000).all()


def test_a_hang_meets_the_timeout(tmp_path):
    src = variant(tmp_path, "stuck", {'"lk_user_swap:\\n"': '"lk_user_swap:\\n1:  jmp 1b\\n"'})
    with pytest.raises(labkit.MeasurementTimeout, match="user:stuck"):
        labkit.add_switch(src, timeout=3)
    assert (labkit.measure("asm", switches=1_000, repeats=1).counted_switches == 1_000).all()


def test_a_compile_error_shows_the_compilers_file_and_line(tmp_path):
    src = tmp_path / "typo.c"
    src.write_text("#include <stddef.h>\n\nvoid lk_user_swap(void **save, void *to) {\n"
                   "    *save = to\n}\n")
    with pytest.raises(labkit.UserSwitchBuildError, match=rf"{src}:4:\d+: error: ") as err:
        labkit.add_switch(src)
    assert "error" in err.value.log
    missing = tmp_path / "half.c"
    missing.write_text("void lk_user_swap(void **save, void *to) { *save = to; }\n")
    with pytest.raises(labkit.UserSwitchBuildError, match="lk_user_make"):
        labkit.add_switch(missing)


def test_bad_arguments_name_the_parameter(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(ValueError, match="source must be an existing file"):
        labkit.add_switch(tmp_path / "nowhere.c")
    with pytest.raises(ValueError, match="source must be a .c, .cpp or .so file"):
        labkit.add_switch(tmp_path / "notes.txt")
    with pytest.raises(TypeError, match="source must be a path"):
        labkit.add_switch(3)
    with pytest.raises(ValueError, match="entry must be left unset"):
        labkit.measure("asm", source=GOOD)
    with pytest.raises(ValueError, match="keeps_fp_control must be left unset"):
        labkit.measure("asm", keeps_fp_control=True)
    with pytest.raises(TypeError, match="keeps_fp_control must be True or False"):
        labkit.add_switch(GOOD, keeps_fp_control="yes")
    with pytest.raises(ValueError, match="name must be"):
        labkit.add_switch(GOOD, name="no spaces")
    with pytest.raises(ValueError, match="entry must be one of.*add_switch"):
        labkit.measure("user:never_added")
    entry = labkit.add_switch(GOOD)
    with pytest.raises(ValueError, match="build must be None"):
        labkit.measure(entry, build="O2")
    labkit.remove_switch(entry)
    with pytest.raises(ValueError, match="entry must be a user switch"):
        labkit.remove_switch(entry)


def test_the_command_line_takes_a_source():
    from labkit.lab import cli

    assert cli.main(["measure", "--source", str(GOOD), "--keeps-fp-control", "no",
                     "--switches", "2000", "--repeats", "2", "--json"]) == 0
    assert cli.main(["measure", "--source", str(BROKEN), "--switches", "2000"]) == 2


def test_callgrind_counts_a_user_switch():
    ok, why = callgrind.available()
    if not ok:
        pytest.skip(why)
    entry = labkit.add_switch(GOOD)
    mine = callgrind.instructions_per_switch(entry)
    asm = callgrind.instructions_per_switch("asm")
    # Both push and pop the same six registers; mine ends in ret, asm in pop + jmp.
    assert mine["net"] > 0 and mine["loop"] > mine["base"]
    assert mine["net"] == pytest.approx(asm["net"], abs=2)


def asm_fpu_as_a_user_switch(tmp_path) -> Path:
    """A user's source whose lk_user_swap is asm_fpu's switch, its instructions read from the
    lab's switch file, and whose lk_user_make lays out asm_fpu's first frame."""
    csrc = native_build.PACKAGE / "csrc"
    header = (csrc / "switch_x86_64_sysv.h").read_text()
    body = re.search(r'LK_FUNCTION\("lk_swap_asm_fpu"\)\n(.*?)LK_END\("lk_swap_asm_fpu"\)',
                     header, re.S).group(1)
    path = tmp_path / "fpu_twin.c"
    path.write_text(f"""#include "{csrc / 'labkit_core.h'}"
#include "{csrc / 'switch_x86_64_sysv.h'}"

__asm__(".text\\n" LK_FUNCTION("lk_user_swap")
{body}    LK_END("lk_user_swap"));

void *lk_user_make(void *stack_base, size_t stack_size, void (*fn)(void *), void *arg) {{
    return lk_arch_make(LK_ASM_FPU, (char *)stack_base + stack_size, fn, arg);
}}
""")
    return path


def test_a_user_switch_is_timed_by_the_loop_the_kernels_are(tmp_path):
    # asm_fpu's instructions brought from outside: the same count, to the instruction, in
    # the switch loop and in the empty loop (pingpong_loops.h serves both libraries).
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed: apt-get install valgrind")
    entry = labkit.add_switch(asm_fpu_as_a_user_switch(tmp_path), keeps_fp_control=True)
    mine = callgrind.instructions_per_switch(entry)
    fpu = callgrind.instructions_per_switch("asm_fpu")
    assert mine["net"] > 0
    assert {k: mine[k] for k in ("loop", "base", "net")} == \
        {k: fpu[k] for k in ("loop", "base", "net")}
    df = labkit.measure(entry, switches=2_000, repeats=1)
    assert (df.counted_switches == 2_000).all()
