"""Shared fixtures: the kernels that run on this machine, split by kind; the user's
switches the docs show, and a catalogue left without them after a test."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import labkit
from labkit.core import entries, plots, systems
from labkit.core.results import REPO

# Every figure the tests draw, in-process or in a notebook's kernel, is held to the lab's
# look: a fault fails the test instead of warning.
os.environ[plots.STRICT_LOOK] = "1"

KERNELS = labkit.catalogue()
AVAILABLE = KERNELS[KERNELS.available]
OWN = AVAILABLE[AVAILABLE.system == "labkit"]
# labkit's own stackful kernels: the ones whose registers and stacks the checks can probe.
STACKFUL = list(OWN[OWN.kind == "stackful"].entry)
# Everything that runs here, labkit's kernels and the real peers.
ALL = list(AVAILABLE.entry)
PEERS = list(AVAILABLE[AVAILABLE.system == "peer"].entry)
# Kernels that keep the FP control state (MXCSR + x87 CW, or FPCR) by design: the C core's
# kernel table says which.
KEEPS_FP_CONTROL = {k for k in entries.KERNEL_NAMES if entries.keeps_fp_control(k)}
# docs/examples: the user's switches (C and Python) the documentation shows.
EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


def assert_each_raises(*cases):
    """Each (call, exception, pattern) raises that exception, its message matching pattern
    (re.search): for a test of several bad calls, one line a call."""
    for call, exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            call()


@pytest.fixture(params=STACKFUL)
def stackful(request):
    return request.param


@pytest.fixture(params=ALL)
def any_kernel(request):
    return request.param


@pytest.fixture
def forget_added():
    """The test ends with no user switch, C or Python, in this process's catalogue (for the
    modules that add them: pytest.mark.usefixtures("forget_added"))."""
    yield
    systems.USER_PY_SWITCHES.clear()
    systems.USER_SWITCHES.clear()


def labkit_cli(*args, env=None):
    """`python -m labkit ARGS` from the checkout, its output captured."""
    e = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
    return subprocess.run([sys.executable, "-m", "labkit", *args], capture_output=True,
                          text=True, env=e, cwd=REPO)


def copy_bundle(src, dst) -> Path:
    """A writable copy of the bundle `src` at `dst` (a fixture's files may be read-only)."""
    shutil.copytree(src, dst)
    for f in Path(dst).iterdir():
        f.chmod(0o644)
    return Path(dst)
