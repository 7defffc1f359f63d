"""The kernels' self-test as a plain C program: natively, and for AArch64 under qemu-user
with a cross compiler (AArch64 is kept compilable and correct, not timed, here)."""
import shutil
import subprocess

import pytest

from labkit.core import native_build



def _build_and_run(tmp_path, name, run_prefix=(), **options):
    """Build one self-test with labkit's own builder (the one `make setup` uses) and run it."""
    targets = native_build.selftest_targets(**options)
    built = native_build.build(tmp_path, {name: targets[name]})
    assert name in built, native_build.missing_reason(tmp_path, name) + "\n" + \
        (tmp_path / f"{name}.missing.txt").read_text()
    return subprocess.run([*run_prefix, str(tmp_path / name)], capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_native_selftest(tmp_path, opt):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc/cc) on PATH")
    res = _build_and_run(tmp_path, "lk_selftest", opt=opt)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "SELFTEST PASSED" in res.stdout
    assert "FAIL" not in res.stdout
    # Every stackful kernel that ran had its registers checked.
    assert res.stdout.count("survives in main") >= 6


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_aarch64_selftest_under_qemu(tmp_path, opt):
    cc, qemu = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")
    if cc is None or qemu is None:
        pytest.skip("needs the AArch64 cross compiler and qemu-user: "
                    "apt-get install gcc-aarch64-linux-gnu qemu-user")
    res = _build_and_run(tmp_path, "lk_selftest", run_prefix=(qemu,), opt=opt, cc=cc,
                         static=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "arch aarch64-aapcs64" in res.stdout
    assert "SELFTEST PASSED" in res.stdout
    # x19-x29 and d8-d15, both ways, for every stackful kernel that runs there: asm,
    # asm_ret, asm_fpu, ucontext and copy_stack at least.
    ran = {line.split()[1] for line in res.stdout.splitlines() if line.endswith("regtest ran")}
    assert {"asm", "asm_ret", "asm_fpu", "ucontext", "copy_stack"} <= ran
    assert res.stdout.count("d15 survives") == 2 * len(ran)
    # libco's design is x86-64's alone: skipped with its reason, not failed.
    assert "skip libco_design" in res.stdout


def test_handoff_selftest(tmp_path):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc/cc) on PATH")
    res = _build_and_run(tmp_path, "lk_handoff_selftest")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "HANDOFF SELFTEST PASSED" in res.stdout
