"""The lab's one look, checked on matplotlib's artists: plots.look_faults, which every
figure the notebooks save passes through (plots.finish refuses a figure it faults)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from labkit.core import plots, systems  # noqa: E402


def _fig():
    fig, ax = plt.subplots()
    return fig, ax


def test_a_clean_figure_has_no_faults():
    fig, ax = _fig()
    plots.errorbars(ax, __import__("pandas").DataFrame(
        {"entry": ["asm_fpu", "asm_fpu", "boost_fcontext", "boost_fcontext"],
         "x": [1, 2, 1, 2], "median": [3.0, 4.0, 5.0, 6.0], "q1": [2.5, 3.5, 4.5, 5.5],
         "q3": [3.5, 4.5, 5.5, 6.5]}), x="x", hue="entry")
    plots.log_axis(ax, "y")
    assert plots.look_faults(fig) == []
    plt.close(fig)


def test_bars_on_a_log_axis_are_a_fault_and_dots_are_not():
    fig, ax = _fig()
    ax.bar([0, 1], [10, 1000])
    ax.set_yscale("log")
    assert any("bars on a log y axis" in f for f in plots.look_faults(fig))
    fig2, ax2 = _fig()
    plots.dots(ax2, [0, 1], [10, 1000], [9, 900], [11, 1100])
    ax2.set_yscale("log")
    assert plots.look_faults(fig2) == []
    plt.close("all")


def test_a_zero_a_log_axis_would_drop_is_a_fault():
    fig, ax = _fig()
    ax.plot([0, 10, 100], [1, 2, 3], label="share")
    ax.set_xscale("log")
    assert any("'share' has values <= 0" in f for f in plots.look_faults(fig))
    plt.close(fig)


def test_an_entry_in_another_colour_is_a_fault_and_finish_refuses_it(tmp_path, monkeypatch):
    fig, ax = _fig()
    ax.plot([1, 2], [1, 2], color="#00ff00", label="asm_fpu")
    faults = plots.look_faults(fig)
    assert faults and systems.ENTRY_COLOURS["asm_fpu"] in faults[0]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="asm_fpu"):
        plots.finish(fig, "bad")
    assert not list(tmp_path.rglob("bad.png"))
    plt.close(fig)


def test_every_entry_has_its_own_colour_and_other_names_keep_theirs():
    import labkit

    entries = labkit.catalogue().entry.tolist()
    assert set(entries) <= set(systems.ENTRY_COLOURS)
    assert len(set(systems.ENTRY_COLOURS.values())) == len(systems.ENTRY_COLOURS)
    assert not set(systems.OTHER_COLOURS) & set(systems.ENTRY_COLOURS.values())
    assert systems.colour("thread_futex") == systems.colour("thread_futex")
    assert systems.colour("asm_fpu") == systems.ENTRY_COLOURS["asm_fpu"]


def test_lines_across_the_axes_are_not_data_a_log_axis_drops():
    fig, ax = _fig()
    ax.plot([1, 10], [1, 10])
    ax.axhline(5, color="grey", label="a level")
    ax.axvline(3, color="grey", label="a position")
    ax.set_xscale("log")
    ax.set_yscale("log")
    assert plots.look_faults(fig) == []
    plt.close(fig)


def test_fold_prints_its_lines_outside_a_kernel_and_nothing_when_empty(capsys):
    plots.fold(["first warning", "second warning"], plots.NOISY)
    plots.fold([], plots.NOISY)
    assert capsys.readouterr().out == "first warning\nsecond warning\n"


def test_outside_the_tests_a_faulted_figure_is_kept_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.delenv(plots.STRICT_LOOK)
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    fig, ax = _fig()
    ax.plot([1, 2], [1, 2], color="#00ff00", label="asm_fpu")
    with pytest.warns(UserWarning, match="breaks the lab's look"):
        paths = plots.finish(fig, "kept")
    assert paths and all(p.exists() for p in paths)
    plt.close(fig)


def test_the_ladder_draws_each_rung_in_its_entrys_colour_with_its_kind_in_words():
    import pandas as pd

    from labkit.lab.analysis import latency_ladder

    ns = pd.DataFrame({"entry": ["direct_call", "asm_fpu", "cxx20_generator"],
                       "kind": ["baseline", "stackful", "stackless"],
                       "system": ["labkit", "labkit", "peer"],
                       "median": [0.0, 4.0, 1.0], "q1": [-0.1, 3.9, 0.9], "q3": [0.1, 4.1, 1.1]})
    fig = latency_ladder.ladder_figure(ns, ns.copy(), 2.6, 0)
    assert plots.look_faults(fig) == []
    rungs = {c.get_label(): c.lines[0].get_color() for c in fig.axes[0].containers}
    assert rungs == {e: systems.colour(e) for e in ns.entry}
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [
        "direct_call (baseline)", "asm_fpu (stackful)", "cxx20_generator (stackless)"]
    plt.close(fig)


def test_the_copy_stack_figure_draws_its_entries_in_their_colours_under_its_finding():
    import pandas as pd

    from labkit.lab.analysis import latency_ladder

    copy = pd.DataFrame({"copied_bytes_per_switch": [64, 8192], "median": [10.0, 400.0],
                         "q1": [9.0, 390.0], "q3": [11.0, 410.0], "GB/s": [6.4, 20.5]})
    ns = pd.DataFrame({"entry": ["asm_fpu"], "median": [4.0]})
    fig = latency_ladder.copy_figure(copy, ns, 0)
    assert plots.look_faults(fig) == []
    assert fig._suptitle.get_text().replace("\n", " ") == latency_ladder.copy_finding(copy, ns)
    plt.close(fig)


def test_the_allocators_each_get_a_colour_no_other_allocator_or_entry_has(monkeypatch):
    import pandas as pd

    from labkit.experiments import frames
    from labkit.lab.analysis import frames_allocators as fa

    monkeypatch.setattr(fa.plots, "finish", lambda fig, name, caption=None: fig)
    alloc = pd.DataFrame([{"allocator": a, "block": b, "pattern": p, "ns_shown": 5.0 + i,
                           "baseline_ns_per_pair": 1.0}
                          for i, a in enumerate(frames.ALLOCATORS) for b in (192, 256)
                          for p in fa.PATTERNS for _ in range(3)])
    fig = fa.alloc_figure(alloc, fa.alloc_summary(alloc), live_blocks=100)
    assert plots.look_faults(fig) == []
    drawn = {c.get_label(): c.lines[0].get_color() for c in fig.axes[0].containers}
    assert set(drawn) == set(frames.ALLOCATORS)
    assert len(set(drawn.values())) == len(drawn)
    assert not set(drawn.values()) & set(systems.ENTRY_COLOURS.values())
    plt.close(fig)
