"""The kernels' self-test as a plain C program: natively, and for AArch64 under qemu-user
with a cross compiler (AArch64 is kept compilable and correct, not timed, here)."""
import shutil
import subprocess
from pathlib import Path

import pytest

from labkit.core import native_build

# The source lists are declared once, in labkit/core/native_build.py (setup.py reads them too).
PACKAGE = native_build.PACKAGE
SOURCES = [str(PACKAGE / f) for f in native_build.SELFTEST_SOURCES]
HANDOFF = [str(PACKAGE / f) for f in native_build.HANDOFF_SELFTEST_SOURCES]


def _build_and_run(cc, out, run_prefix=(), opt="-O2", extra=()):
    subprocess.run([cc, opt, "-Wall", "-Wextra", "-Werror", *extra, "-o", str(out), *SOURCES],
                   check=True, capture_output=True, text=True)
    res = subprocess.run([*run_prefix, str(out)], capture_output=True, text=True, timeout=300)
    return res


@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_native_selftest(tmp_path, opt):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc/cc) on PATH")
    res = _build_and_run(cc, tmp_path / "selftest", opt=opt)
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
    res = _build_and_run(cc, tmp_path / "selftest-a64", run_prefix=(qemu,), opt=opt,
                         extra=("-static",))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "arch aarch64-aapcs64" in res.stdout
    assert "SELFTEST PASSED" in res.stdout
    # x19-x29 and d8-d15, both ways, for asm, asm_ret, asm_fpu and ucontext.
    assert res.stdout.count("d15 survives") == 8


def test_handoff_selftest(tmp_path):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc/cc) on PATH")
    out = tmp_path / "handoff"
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", str(out),
                    *HANDOFF], check=True, capture_output=True, text=True)
    res = subprocess.run([str(out)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "HANDOFF SELFTEST PASSED" in res.stdout
