"""Notebook 00's summary figure: points on the ladder's log axis, one colour per verdict,
and a title that states the ledger's counts."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.collections import PathCollection  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from labkit.lab.analysis import claims_ledger  # noqa: E402
from labkit.lab.judging import ledger  # noqa: E402


def _table():
    verdicts = (["reproduced"] * 5 + ["contradicted"] * 3 + ["in-between"] * 2
                + ["inconclusive", "not-measured", "not-applicable-here"])
    return pd.DataFrame({"claim_id": [f"C{i}" for i in range(len(verdicts))],
                         "verdict": verdicts})


def test_every_verdict_has_a_colour_of_its_own():
    assert list(claims_ledger.VERDICT_COLOURS) == list(ledger.LEDGER_VERDICTS)
    colours = list(claims_ledger.VERDICT_COLOURS.values())
    assert len(set(colours)) == len(colours)


def test_the_ladder_is_points_on_a_log_axis_and_the_verdicts_bars_in_their_colours():
    runs = pd.DataFrame({"entry": ["asm"] * 5 + ["ucontext"] * 5,
                         "ns_per_switch": [2.0, 2.1, 2.2, 2.0, 2.1, 150, 160, 155, 158, 152]})
    fig = claims_ledger.summary_figure(_table(), runs)
    ladder, counts = fig.axes
    assert ladder.get_xscale() == "log"
    assert not [p for p in ladder.patches if isinstance(p, Rectangle)]  # no bars on it
    bars = [p for p in counts.patches if isinstance(p, Rectangle)]
    assert [b.get_height() for b in bars] == [5, 3, 2, 1, 1, 1]
    want = [matplotlib.colors.to_rgba(c) for c in claims_ledger.VERDICT_COLOURS.values()]
    assert [b.get_facecolor() for b in bars] == want
    assert fig._suptitle.get_text() == claims_ledger.finding(_table())
    assert claims_ledger.finding(_table()).startswith(
        "Of 13 claims, 5 reproduced, 3 contradicted and 2 in-between")
    plt.close(fig)


def test_every_log_axis_of_the_summary_holds_dots_and_no_bar():
    runs = pd.DataFrame({"entry": ["asm"] * 3 + ["ucontext"] * 3,
                         "ns_per_switch": [2.0, 2.1, 2.2, 150, 160, 155]})
    fig = claims_ledger.summary_figure(_table(), runs)
    logs = [ax for ax in fig.axes if "log" in (ax.get_xscale(), ax.get_yscale())]
    assert logs
    for ax in logs:
        assert not ax.patches
        assert not any(isinstance(c, BarContainer) for c in ax.containers)
        markers = {ln.get_marker() for ln in ax.get_lines()} - {"None", "", "|", "_"}
        # a scatter draws its dots as one collection (round by default)
        if any(isinstance(c, PathCollection) for c in ax.collections):
            markers.add("o")
        assert markers == {"o"}
    plt.close(fig)


def test_without_a_ladder_the_figure_says_so():
    fig = claims_ledger.summary_figure(_table(), None)
    assert "no ladder yet" in fig.axes[0].texts[0].get_text()
    plt.close(fig)
