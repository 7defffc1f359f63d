"""One colour per series in a figure: systems.colours gives a figure's names colours no two
of them share and no non-entry takes from an entry; plots.look_faults flags a labelled
series that is not an entry but wears an entry's colour."""
import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from labkit.core import plots, systems  # noqa: E402
from labkit.experiments import echo, frames  # noqa: E402

ENTRY = set(systems.ENTRY_COLOURS.values())


def _colliding(names):
    """The pairs of `names` whose colour() alone is the same."""
    return [(a, b) for a, b in itertools.combinations(names, 2)
            if systems.colour(a) == systems.colour(b)]


@pytest.mark.parametrize("names", [frames.ALLOCATORS, echo.SERVER_NAMES])
def test_names_whose_hashes_collide_get_colours_of_their_own(names):
    assert _colliding(names), "no two of these names collide: the test would show nothing"
    given = systems.colours(names)
    assert list(given) == [str(n) for n in names]
    assert len(set(given.values())) == len(given)
    assert not set(given.values()) & ENTRY
    first = next(iter(names))
    assert given[first] == systems.colour(first)


def test_entries_keep_their_own_colour_beside_other_names():
    given = systems.colours(["asm_fpu", "heap", "boost_fiber", "atomic", "heap"])
    assert given["asm_fpu"] == systems.ENTRY_COLOURS["asm_fpu"]
    assert given["boost_fiber"] == systems.ENTRY_COLOURS["boost_fiber"]
    assert len(given) == 4 and len(set(given.values())) == 4


def test_more_other_names_than_colours_is_a_value_error_naming_names():
    with pytest.raises(ValueError, match="names"):
        systems.colours(f"name {i}" for i in range(len(systems.OTHER_COLOURS) + 1))


def test_every_entry_of_the_catalogue_has_a_colour_no_other_entry_has():
    import labkit

    entries = set(labkit.catalogue().entry) | set(systems.all_names())
    assert entries <= set(systems.ENTRY_COLOURS)
    assert len(ENTRY) == len(systems.ENTRY_COLOURS)


def _faults(draw):
    fig, ax = plt.subplots()
    draw(ax)
    try:
        return plots.look_faults(fig)
    finally:
        plt.close(fig)


ASM = systems.ENTRY_COLOURS["asm"]


@pytest.mark.parametrize("draw", [
    lambda ax: ax.plot([1, 2], [1, 2], color=ASM, label="g++ -O2"),
    lambda ax: ax.errorbar([1, 2], [1, 2], yerr=[0.1, 0.1], color=ASM, label="heap"),
    lambda ax: ax.scatter([1, 2], [1, 2], color=ASM, label="heap"),
    lambda ax: ax.plot([1, 2], [1, 2], label="default cycle"),
    lambda ax: ax.axhline(1, color=ASM, label="a level"),
    lambda ax: ax.legend(handles=[plt.Line2D([], [], color=ASM, marker="o", label="N = 4")]),
    lambda ax: ax.plot([1, 2], [1, 2], "D", color="k", mfc="none", mec=ASM, label="article"),
], ids=["line", "errorbar", "scatter", "default-cycle", "axhline", "legend-handle",
        "marker-edge"])
def test_a_non_entry_in_an_entrys_colour_is_a_fault(draw):
    faults = _faults(draw)
    assert faults and "not an entry" in faults[0]


def test_a_figure_legend_handle_in_an_entrys_colour_is_a_fault():
    fig, _ = plt.subplots()
    fig.legend(handles=[plt.Line2D([], [], color=ASM, label="batched")])
    assert any("figure legend" in f for f in plots.look_faults(fig))
    plt.close(fig)


@pytest.mark.parametrize("draw", [
    lambda ax: ax.plot([1, 2], [1, 2], color=ASM, label="asm (stackful)"),
    lambda ax: ax.plot([1, 2], [1, 2], color=ASM),
    lambda ax: ax.plot([1, 2], [1, 2], color="k", label="claimed"),
    lambda ax: ax.fill_between([1, 2], [0, 0], [1, 1], color=ASM, alpha=0.25, label="band"),
    lambda ax: ax.plot([1, 2], [1, 2], color=systems.colours(["heap"])["heap"], label="heap"),
], ids=["entry-with-words", "unlabelled", "black-reference", "band", "own-colour"])
def test_what_is_not_a_non_entry_in_an_entrys_colour_is_no_fault(draw):
    assert _faults(draw) == []


def test_errorbars_give_colliding_hues_distinct_colours():
    fig, ax = plt.subplots()
    data = pd.DataFrame({"allocator": ["heap", "atomic", "pool", "tlpool"] * 2,
                         "x": [1] * 4 + [2] * 4, "median": [1.0] * 8, "q1": [0.9] * 8,
                         "q3": [1.1] * 8})
    plots.errorbars(ax, data, x="x", hue="allocator")
    drawn = [c.lines[0].get_color() for c in ax.containers]
    assert len(set(drawn)) == 4 and not set(drawn) & ENTRY
    assert plots.look_faults(fig) == []
    plt.close(fig)


def test_the_xstate_figure_draws_its_instructions_in_no_entrys_colour():
    from labkit.lab.analysis import fp_state

    rows = [{"instruction": i, "state": s, "step": st, "area_bytes": b, "median_ns": 10.0 + k,
             "q1_ns": 9.0 + k, "q3_ns": 11.0 + k}
            for k, i in enumerate(("fxsave", "xsave", "xsaveopt", "xsavec", "xsaves"))
            for s in ("dirty", "clean") for st, b in (("x87+SSE", 576), ("+AVX", 832))]
    fig = fp_state.xstate_figure(pd.DataFrame(rows))
    assert plots.look_faults(fig) == []
    drawn = {c.get_label(): c.lines[0].get_color() for c in fig.axes[0].containers}
    assert len(set(drawn.values())) == len(drawn) == 5
    plt.close(fig)


def test_the_frame_sizes_figure_draws_its_builds_in_no_entrys_colour(monkeypatch):
    from labkit.lab.analysis import frames_allocators as fa

    monkeypatch.setattr(fa.plots, "finish", lambda fig, name, caption=None: fig)
    sizes = pd.DataFrame([{"variant": v, "build": b,
                           "frame_bytes": (32 + 16 * i) * (2 if b == "O0" else 1)}
                          for b in ("O0", "O2") for i, v in enumerate(frames.VARIANTS)])
    monkeypatch.setattr(fa, "sizes_finding", lambda s: "a finding")
    fig = fa.sizes_figure(sizes)
    assert plots.look_faults(fig) == []
    plt.close(fig)
