"""Shared fixtures: the kernels that run on this machine, split by kind."""
import pytest

import labkit

KERNELS = labkit.kernels()
AVAILABLE = KERNELS[KERNELS.available]
STACKFUL = list(AVAILABLE[AVAILABLE.kind == "stackful"].kernel)
ALL = list(AVAILABLE.kernel)
# Kernels that keep the FP control state (MXCSR + x87 CW, or FPCR) by design.
KEEPS_FP_CONTROL = {"asm_fpu", "asm_fxsave", "asm_xsave", "ucontext"}


@pytest.fixture(params=STACKFUL)
def stackful(request):
    return request.param


@pytest.fixture(params=ALL)
def any_kernel(request):
    return request.param
