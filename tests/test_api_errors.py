"""Bad input gets a clear ValueError/TypeError naming the parameter and what it accepts,
before anything runs: never a crash, a hang or a silent clamp."""
import os

import pytest

import labkit
from conftest import PEERS, STACKFUL
from labkit.core import entries

HUGE = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") * 2
NOT_MINE = max(range(os.cpu_count() + 64)) + 1  # beyond any CPU of this machine

CASES = [
    # (kwargs, exception, words the message must contain)
    (dict(entry="nope"), ValueError, ["entry", "asm_fpu"]),
    (dict(entry=3), TypeError, ["entry"]),
    (dict(entry=None), TypeError, ["entry"]),
    (dict(entry="asm", stack_size=-4096), ValueError, ["stack_size", "between"]),
    (dict(entry="asm", stack_size=0), ValueError, ["stack_size", "between"]),
    (dict(entry="asm", stack_size=100), ValueError, ["stack_size", "between"]),
    (dict(entry="asm", stack_size=HUGE), ValueError, ["stack_size", "memory"]),
    (dict(entry="asm", stack_size=65536.0), TypeError, ["stack_size", "integer"]),
    (dict(entry="asm", stack_size="64k"), TypeError, ["stack_size", "integer"]),
    (dict(entry="asm", stack_size=True), TypeError, ["stack_size", "integer"]),
    (dict(entry="stackless", stack_size=65536), ValueError, ["stack_size", "stackless"]),
    (dict(entry="direct_call", stack_size=65536), ValueError, ["stack_size", "baseline"]),
    (dict(entry="asm", switches=0), ValueError, ["switches", "even"]),
    (dict(entry="asm", switches=-10), ValueError, ["switches"]),
    (dict(entry="asm", switches=1001), ValueError, ["switches", "even"]),
    (dict(entry="asm", switches=10**20), ValueError, ["switches"]),
    (dict(entry="asm", switches=1e6), TypeError, ["switches", "integer"]),
    (dict(entry="asm", repeats=0), ValueError, ["repeats"]),
    (dict(entry="asm", repeats=-1), ValueError, ["repeats"]),
    (dict(entry="asm", repeats="3"), TypeError, ["repeats"]),
    (dict(entry="asm", warmup=-1), ValueError, ["warmup"]),
    (dict(entry="asm", cpu=NOT_MINE), ValueError, ["cpu", "one of"]),
    (dict(entry="asm", cpu=-1), ValueError, ["cpu"]),
    (dict(entry="asm", cpu="0"), TypeError, ["cpu"]),
    (dict(entry="asm", prefault=1), TypeError, ["prefault"]),
    (dict(entry="stackless", prefault=True), ValueError, ["prefault", "None"]),
    (dict(entry="asm", timeout=0), ValueError, ["timeout"]),
    (dict(entry="asm", timeout="1s"), TypeError, ["timeout"]),
    (dict(entry="asm", timeout=float("inf")), ValueError, ["timeout", "None"]),
    (dict(entry="asm", timeout=2**70), ValueError, ["timeout", "at most"]),
    (dict(entry="asm", timeout=float("nan")), ValueError, ["timeout"]),
    (dict(entry="asm_fpu", fp_control=[]), TypeError, ["fp_control"]),
]


@pytest.mark.parametrize("kwargs,exc,words", CASES, ids=[str(c[0]) for c in CASES])
def test_measure_rejects_bad_input(kwargs, exc, words):
    kwargs = dict(kwargs)
    kernel = kwargs.pop("entry")
    with pytest.raises(exc) as err:
        labkit.measure(kernel, switches=kwargs.pop("switches", 100), **kwargs)
    for w in words:
        assert w in str(err.value), f"{w!r} missing from: {err.value}"


def test_minimum_stack_is_accepted_and_rounded_up_to_pages():
    lo = entries.min_stack_size("asm")
    df = labkit.measure("asm", stack_size=lo - 1 + 1, switches=100, repeats=1)
    assert df.stack_size.iloc[0] == lo
    odd = labkit.measure("asm", stack_size=lo + 1, switches=100, repeats=1)
    # Rounded up, and the request is kept beside the real size: nothing silent.
    assert odd.stack_size.iloc[0] == lo + os.sysconf("SC_PAGE_SIZE")
    assert odd.stack_size_requested.iloc[0] == lo + 1


@pytest.mark.parametrize("kernel", STACKFUL)
def test_one_byte_under_the_minimum_is_refused(kernel):
    lo = entries.min_stack_size(kernel)
    with pytest.raises(ValueError, match="stack_size"):
        labkit.measure(kernel, stack_size=lo - 1, switches=100)


def test_checks_reject_stackless_and_unknown():
    with pytest.raises(ValueError, match="stackless"):
        labkit.check_registers("stackless")
    with pytest.raises(ValueError, match="entry"):
        labkit.check_fp_control("fiber")
    with pytest.raises(ValueError, match="use_bytes"):
        labkit.probe_stack("asm", 65536, -1)
    with pytest.raises(ValueError, match="use_bytes"):
        labkit.probe_stack("asm", 65536, 2**70)


@pytest.mark.parametrize("call,exc,word", [
    (lambda: labkit.summarize([1, 2]), TypeError, "df"),
    (lambda: labkit.summarize(labkit.catalogue(), value="nope"), ValueError, "value"),
    (lambda: labkit.summarize(labkit.catalogue(), by="nope", value="name"), ValueError, "by"),
    (lambda: labkit.catalogue(peers="yes"), TypeError, "peers"),
], ids=["summarize-df", "summarize-value", "summarize-by", "kernels-peers"])
def test_helpers_reject_bad_input(call, exc, word):
    with pytest.raises(exc, match=word):
        call()


def test_numpy_integers_are_accepted():
    np = pytest.importorskip("numpy")
    df = labkit.measure("asm", stack_size=np.int64(65536), switches=np.int32(100),
                        repeats=np.int64(1))
    assert df.switches.iloc[0] == 100


def test_unknown_build_is_refused():
    with pytest.raises(ValueError, match="build must be one of"):
        labkit.measure("asm", switches=100, build="O9")
    with pytest.raises(TypeError, match="build"):
        labkit.measure("asm", switches=100, build=2)


def test_boost_fcontext_takes_fp_control():
    if "boost_fcontext" not in PEERS:
        pytest.skip("the C++ peers are not built here")
    for mode in ("same", "differ"):
        df = labkit.measure("boost_fcontext", switches=1000, repeats=1, fp_control=mode)
        assert (df.counted_switches == 1000).all() and (df.fp_control == mode).all()


def test_peers_refuse_fp_control():
    if "boost_fiber" not in PEERS:
        pytest.skip("the C++ peers are not built here")
    with pytest.raises(ValueError, match="fp_control"):
        labkit.measure("boost_fiber", switches=100, fp_control="differ")
    with pytest.raises(ValueError, match="fp_control"):
        labkit.measure("asm", switches=100, fp_control="sometimes")
