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
    from labkit.core import entries, handoff
    from labkit import kernel_switch, kernelinfo

    with pytest.warns(DeprecationWarning, match="labkit.core.handoff.os_counts_agree"):
        assert kernel_switch.kernel_counts_agree is handoff.os_counts_agree
    with pytest.warns(DeprecationWarning, match="labkit.core.entries.catalogue"):
        assert kernelinfo.kernels is entries.catalogue
    with pytest.raises(AttributeError):
        kernelinfo.no_such_name  # noqa: B018


def test_explore_index_moved():
    from labkit.lab import explore, notebook_index

    with pytest.warns(DeprecationWarning, match="notebook_index"):
        old = explore.experiment_index()
    assert list(old.notebook) == list(notebook_index.experiment_index().notebook)


def test_max_map_count_moved_to_procfs():
    from labkit.core import procfs
    from labkit.experiments import frames

    with pytest.warns(DeprecationWarning, match="labkit.core.procfs.max_map_count"):
        assert frames.max_map_count() == procfs.max_map_count()


def test_unknown_top_level_name_is_still_an_error():
    with pytest.raises(AttributeError):
        labkit.no_such_name  # noqa: B018


@pytest.mark.parametrize("old, new", [
    ("labkit.timing", "labkit.core.timing"),
    ("labkit.echo", "labkit.experiments.echo"),
    ("labkit.reproduce", "labkit.lab.reproduce"),
    ("labkit.articles.measured", "labkit.lab.articles.measured"),  # not .tables: a function of that name
])
def test_moved_modules_import_under_their_old_names(old, new):
    import importlib
    import sys
    import warnings

    importlib.import_module(new)
    for name in [old, *([old.rsplit(".", 1)[0]] if old.count(".") > 1 else [])]:
        sys.modules.pop(name, None)  # import afresh through the old name
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert any(w.category is DeprecationWarning and f"{old} is now {new}" in str(w.message)
               for w in seen), [str(w.message) for w in seen]
    assert module is sys.modules[new]  # one module: a patch of either name patches both


def test_moved_module_as_attribute_and_from_import():
    from labkit.experiments import frames

    with pytest.warns(DeprecationWarning, match="labkit.experiments.frames"):
        assert labkit.frames is frames
    with pytest.warns(DeprecationWarning, match="labkit.lab.verdicts"):
        from labkit.verdicts import judge
    from labkit.lab.verdicts import judge as new_judge
    assert judge is new_judge
    with pytest.raises(AttributeError):
        labkit.no_such_module  # noqa: B018
