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
