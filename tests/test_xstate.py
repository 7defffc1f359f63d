"""The FP/vector state sweep (labkit.experiments.xstate, notebook 06): a row for every
(instruction, mask, state) this CPU supports, area bytes as CPUID leaf 0xD gives them,
the dirty and clean states visible in XINUSE, and bad input refused by name. No test
here asserts how fast anything is."""
import pytest

from labkit.experiments import xstate

why = xstate.available()
pytestmark = pytest.mark.skipif(bool(why), reason=f"no XSAVE sweep here: {why}")

SMALL = dict(pairs=500, repeats=2, warmup=0)


@pytest.fixture(scope="module")
def cpu():
    return xstate.cpu_state()


@pytest.fixture(scope="module")
def rows():
    return xstate.sweep(**SMALL)


def test_a_row_per_supported_point(rows, cpu):
    masks = xstate.sweep_masks(cpu["xcr0"])
    assert masks[0] == 0x3 and cpu["xcr0"] in masks
    want = {(i, m, s) for i in cpu["instructions"] for m in masks for s in xstate.STATES}
    got = rows.groupby(["instruction", "mask", "state"]).size()
    assert set(got.index) == want
    assert (got == SMALL["repeats"]).all()
    assert (rows.pairs == SMALL["pairs"]).all()
    for col in ("cpu_model", "ns_per_pair_raw", "baseline_ns_per_pair", "components"):
        assert col in rows


def test_net_is_never_negative(rows):
    # Floored at 0 (below_resolution says where); the raw times stay beside it.
    for state in ("dirty", "clean"):
        sel = rows[rows.state == state]
        assert (sel.ns_per_pair >= 0).all()
        assert (sel.ns_per_pair_raw > 0).all()


def test_bytes_match_cpuid(rows, cpu):
    comps = cpu["components"]
    assert xstate.area_bytes(0x3, "xsave") == 576
    # Standard form: the end of the highest component; all of XCR0 is sub-leaf 0's EBX.
    assert xstate.area_bytes(cpu["xcr0"], "xsave") == cpu["enabled_bytes"]
    for bit, c in comps.items():
        assert xstate.area_bytes(0x3 | (1 << bit), "xsave") == max(576, c["offset"] + c["size"])
    # Compacted: the legacy region and header, then each component's size.
    if 2 in comps:
        assert xstate.area_bytes(0x7, "xsavec") == 576 + comps[2]["size"]
    got = rows.drop_duplicates(["instruction", "mask"])
    for r in got.itertuples():
        assert r.area_bytes == xstate.area_bytes(r.mask, r.instruction)


def test_xinuse_tells_dirty_from_clean(rows, cpu):
    if cpu["xinuse"] is None or not cpu["xcr0"] & 0x4:
        pytest.skip("this CPU cannot report XINUSE, or has no AVX")
    sel = rows[rows["mask"] == 0x7]
    dirty = sel[sel.state == "dirty"].xinuse.map(lambda x: int(x, 16))
    clean = sel[sel.state == "clean"].xinuse.map(lambda x: int(x, 16))
    assert (dirty & 0x4 != 0).all()
    assert (clean & 0x4 == 0).all()


def test_masks_outside_xcr0_are_refused(cpu):
    for bit in range(2, 19):
        if not cpu["xcr0"] >> bit & 1:
            with pytest.raises(ValueError, match="mask"):
                xstate.measure("xsave", 0x3 | (1 << bit), "dirty", **SMALL)
            break
    else:
        pytest.skip("XCR0 enables every component up to AMX")
    with pytest.raises(ValueError, match="mask"):
        xstate.check_mask(0x1, cpu["xcr0"])  # x87 without SSE


@pytest.mark.parametrize("kwargs, exc, name", [
    (dict(instruction="fxsave"), ValueError, "instruction"),
    (dict(instruction=1), TypeError, "instruction"),
    (dict(mask="0x7"), TypeError, "mask"),
    (dict(mask=0), ValueError, "mask"),
    (dict(state="warm"), ValueError, "state"),
    (dict(pairs=0), ValueError, "pairs"),
    (dict(pairs=1.5), TypeError, "pairs"),
    (dict(repeats=0), ValueError, "repeats"),
    (dict(warmup=-1), ValueError, "warmup"),
])
def test_bad_input_is_refused_by_name(kwargs, exc, name):
    args = dict(instruction="xsave", mask=0x3, state="dirty", **SMALL)
    args.update(kwargs)
    with pytest.raises(exc, match=name):
        xstate.measure(args.pop("instruction"), args.pop("mask"), args.pop("state"), **args)


def test_names():
    assert xstate.names(0x207) == "x87 sse avx pkru"
    assert xstate.label(0xE7) == "+AVX-512"
    assert xstate.sweep_masks(0x207) == [0x3, 0x7, 0x207]
    assert xstate.sweep_masks(0x602E7) == [0x3, 0x7, 0xE7, 0x600E7, 0x602E7]



def test_component_costs_say_what_each_step_adds(rows):
    summ = xstate.summary(rows)
    costs = xstate.component_costs(summ, "xsave", "dirty")
    sel = summ[(summ.instruction == "xsave") & (summ.state == "dirty")]
    assert [c["step"] for c in costs] == list(sel.step)
    assert costs[0]["adds_ns"] == sel.median_ns.iloc[0] and costs[0]["resolved"]
    for c, (a, b) in zip(costs[1:], zip(sel.itertuples(), list(sel.itertuples())[1:])):
        assert c["adds_ns"] == pytest.approx(b.median_ns - a.median_ns)
        assert c["adds_bytes"] == b.area_bytes - a.area_bytes
    assert xstate.cost_text(costs).startswith("x87+SSE costs ")
