"""The one binding layer reads every C struct from the layout its library exports
(labkit/csrc/lk_layout.h): the extension, every -O build and the C++ library must agree on
lk_sample, and a layout that does not match the library's sizeof is refused."""
import ctypes

import pytest

from labkit.core import _core, native, structs


def test_every_library_describes_lk_sample_alike():
    text, size = _core._LAYOUTS["lk_sample"]
    names = [d.split()[-1] for d in text.split(";") if d]
    assert names[:2] == ["loop_ns", "loop_ticks"] and names[-1] == "xinuse"
    assert size == 8 * len(names)
    for tag in native.builds():
        assert structs.fields(native.core(tag).structs["lk_sample"]) == names
    if not native.peers_missing_reason():
        assert structs.fields(native.peers(native.PEER_BUILD).structs["lk_sample"]) == names


def test_samples_of_both_halves_have_the_same_keys():
    # Run in this process on purpose: a few hundred switches of the plain asm kernel.
    a = _core.pingpong(0, 65536, True, 100, 0, 2)
    b = native.pingpong(native.builds()[0], 0, 65536, True, 100, 0, 2)
    assert len(a) == len(b) == 2
    assert list(a[0]) == list(b[0])
    assert all(s["switches"] == 200 and s["counted"] == 200 for s in a + b)


def test_a_layout_that_disagrees_with_sizeof_is_refused():
    with pytest.raises(RuntimeError, match="stale"):
        structs.struct_type("lk_test_a", "uint64_t a;uint64_t b;", 24)


def test_an_unknown_field_type_is_named():
    with pytest.raises(RuntimeError, match="'float'"):
        structs.struct_type("lk_test_b", "uint64_t a;float b;", 12)


def test_layout_gives_a_readable_struct():
    cls = structs.struct_type("lk_test_c", "uint64_t a;int64_t b;", 16)
    value = cls(a=7, b=-1)
    assert structs.as_dict(value) == {"a": 7, "b": -1}
    assert ctypes.sizeof(cls) == 16


# ---- the functions and the kernel table, exported the same way ----

def test_every_library_types_its_calls_from_the_prototypes_it_exports():
    lib = native.core(native.builds()[0])
    restype, argtypes = lib.functions["lk_pingpong_fp"]
    assert restype is ctypes.c_int and len(argtypes) == 10
    assert argtypes[7] is ctypes.POINTER(lib.structs["lk_sample"])
    assert argtypes[8] is ctypes.c_char_p
    if not native.peers_missing_reason():
        peers = native.peers(native.PEER_BUILD)
        assert {"lkx_pingpong", "lkf_coro_run"} <= set(peers.functions)


def test_a_function_the_library_does_not_export_is_refused():
    lib = native.core(native.builds()[0])
    with pytest.raises(AttributeError, match="lk_regtest is not among"):
        lib.lk_regtest


def test_an_exported_prototype_python_cannot_pass_is_named():
    with pytest.raises(RuntimeError, match="'float'"):
        native.prototypes("int lk_f(float x);", {})
    with pytest.raises(RuntimeError, match="'lk_other \\*'"):
        native.prototypes("int lk_g(lk_other *out, char *err, size_t n);", {})
    assert native.prototypes("void lk_h(void);", {}) == {"lk_h": (None, [])}


def test_the_kernel_table_comes_from_c_and_every_kernel_is_described():
    from labkit.core import entries, systems

    rows = _core.kernel_table()
    assert [r["index"] for r in rows] == list(range(len(rows)))
    assert entries.KERNEL_NAMES == tuple(r["name"] for r in rows)
    assert set(systems.KERNEL_PROSE) == set(entries.KERNEL_NAMES)
    for r in rows:
        assert r["handle"] in {"sp", "regs", "uc", "copy", "none"}
        assert entries.kernel_info(r["name"]).kind == ("stackful" if r["stackful"] else "stackless")
        assert entries.keeps_fp_control(r["name"]) == r["keeps_fp_control"]
    # A stackless kernel has no context of its own, nor FP state to keep.
    assert not any(r["keeps_fp_control"] for r in rows if not r["stackful"])
