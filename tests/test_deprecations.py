"""Names that changed keep working for one release, and say what they are now."""
import pytest

import labkit


@pytest.mark.parametrize("old, new", [
    ("kernels", "catalogue"),
    ("measure_kernel_switch", "measure_handoff"),
    ("KMODES", "HANDOFF_MODES"),
])
def test_old_top_level_names_warn_and_are_the_new_ones(old, new):
    with pytest.warns(DeprecationWarning, match=new):
        value = getattr(labkit, old)
    assert value is getattr(labkit, new)


def test_old_modules_warn_and_forward():
    from labkit import entries, handoff, kernel_switch, kernelinfo

    with pytest.warns(DeprecationWarning, match="labkit.handoff.os_counts_agree"):
        assert kernel_switch.kernel_counts_agree is handoff.os_counts_agree
    with pytest.warns(DeprecationWarning, match="labkit.entries.catalogue"):
        assert kernelinfo.kernels is entries.catalogue
    with pytest.raises(AttributeError):
        kernelinfo.no_such_name  # noqa: B018


def test_explore_index_moved():
    from labkit import explore, notebook_index

    with pytest.warns(DeprecationWarning, match="notebook_index"):
        old = explore.experiment_index()
    assert list(old.notebook) == list(notebook_index.experiment_index().notebook)


def test_max_map_count_moved_to_procfs():
    from labkit import frames, procfs

    with pytest.warns(DeprecationWarning, match="labkit.procfs.max_map_count"):
        assert frames.max_map_count() == procfs.max_map_count()


def test_unknown_top_level_name_is_still_an_error():
    with pytest.raises(AttributeError):
        labkit.no_such_name  # noqa: B018
