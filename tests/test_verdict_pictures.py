"""The verdicts drawn (labkit.lab.judging.pictures): six colours told apart under colour
blindness, the forest of every claim against its rule's regions, the per-process strip."""
import itertools
import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex, to_rgb  # noqa: E402

from labkit.core import plots, results  # noqa: E402
from labkit.lab.analysis import claims_ledger  # noqa: E402
from labkit.lab.judging import pictures, verdicts  # noqa: E402

from conftest import assert_each_raises  # noqa: E402

# Machado, Oliveira and Fernandes (2009), severity 1, on linear RGB.
CVD = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}
# CIE76 distance under which two small marks are taken for one colour.
APART = 12.0


def _lab(linear_rgb):
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                  [0.0193, 0.1192, 0.9505]])
    xyz = m @ np.clip(linear_rgb, 0, 1) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _closest(colours, matrix):
    def lin(c):
        c = np.asarray(to_rgb(c))
        return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    pts = {c: _lab(np.asarray(matrix) @ lin(c)) for c in colours}
    return min((float(np.linalg.norm(pts[a] - pts[b])), a, b)
               for a, b in itertools.combinations(colours, 2))


def test_six_verdicts_have_six_colours_told_apart_with_and_without_colour_blindness():
    assert list(pictures.VERDICT_COLOURS) == list(verdicts.VERDICTS)
    assert claims_ledger.VERDICT_COLOURS is pictures.VERDICT_COLOURS  # declared once
    colours = list(pictures.VERDICT_COLOURS.values())
    for name, matrix in [("normal vision", np.eye(3)), *CVD.items()]:
        d, a, b = _closest(colours, matrix)
        assert d >= APART, f"{a} and {b} are {d:.1f} apart under {name}"


def test_the_colour_check_refuses_the_palette_it_replaced():
    old = ("#2a9d8f", "#e76f51", "#e9c46a", "#8d99ae", "#d9d9d9", "#5c5c5c")
    assert _closest(old, CVD["deuteranopia"])[0] < APART


def _ledger():
    rows = [("C000.2", "contradicted", "0.998 [0.959, 1.04]"),
            ("C000.3", "reproduced", "9.58 [6.31, 14.5]"),
            ("C001.3", "in-between", "1.01 [0.989, 1.03]"),
            ("C000.7a", "inconclusive", "0.0409 [0.0369, 0.135]"),
            ("C000.1", "reproduced", "x=1 [1, 1]: call 1.26, fiber 4.62 ns"),
            ("C000.7", "reproduced", "share ratio 0.00 [0.00, 0.18], gain 1.04 [1.04, 1.17]"),
            ("C003.1", "not-applicable-here", "not measured")]
    return pd.DataFrame(rows, columns=["claim_id", "verdict", "measured_value"])


def test_measured_intervals_are_read_from_the_verdict_rows_words():
    assert pictures.measured_interval("0.998 [0.959, 1.04]") == (0.998, 0.959, 1.04)
    assert pictures.measured_interval("x=1 [0, 1]: call 1.26") == (1, 0, 1)
    assert pictures.measured_interval("65,536 B at -O2") == (65536, 65536, 65536)
    assert pictures.measured_interval("share ratio 0.00 [0.00, 0.18]") is None


def _boxes(ax):
    """(colour, x0, x1, y0, y1) of every shaded span."""
    out = []
    for coll in ax.collections:
        for path, face in zip(coll.get_paths(), itertools.cycle(coll.get_facecolors())):
            (x0, y0), (x1, y1) = path.vertices.min(0), path.vertices.max(0)
            out.append((to_hex(face[:3]), x0, x1, y0, y1))
    return out


def test_the_forest_draws_each_interval_in_its_verdicts_colour_inside_the_regions():
    table = _ledger()
    fig = pictures.forest(table)
    (ax,) = fig.axes
    assert plots.look_faults(fig) == []
    drawn = [t.get_text() for t in ax.get_yticklabels()]
    assert drawn == ["C000.1", "C000.7a", "C001.3", "C000.3", "C000.2"]  # top row first
    title = ax.get_title()
    assert title == pictures.forest_title(table)
    assert re.search(r"^7 claims.*3 reproduced, 1 contradicted, 1 in-between, 1 "
                     r"inconclusive, 1 not-applicable-here$", title)
    caption = pictures.forest_caption(table)
    assert "Not drawn, judged on several named values: C000.7." in caption
    assert "Not drawn, not-applicable-here: C003.1." in caption
    boxes = _boxes(ax)
    for y, cid in enumerate(drawn):
        verdict = table.set_index("claim_id").verdict[cid]
        points = [ln for ln in ax.get_lines() if ln.get_marker() == "o"
                  and ln.get_ydata()[0] == y]
        assert len(points) == 1 and to_hex(points[0].get_color()) == \
            pictures.VERDICT_COLOURS[verdict].lower()
        x = points[0].get_xdata()[0]
        if verdict in pictures.REGION_COLOURS:  # a decided point lies in its region
            want = pictures.VERDICT_COLOURS[verdict].lower()
            assert any(c == want and x0 - 0.02 <= x <= x1 + 0.02 and y0 < y < y1
                       for c, x0, x1, y0, y1 in boxes), cid
    plt.close(fig)


def test_each_rows_axis_puts_the_rules_bounds_at_whole_steps_and_reads_back():
    axis = pictures._Axis([1.1, 1.5], log=True)
    assert np.allclose(axis.pos([1.1, 1.5]), [1, 2])
    xs = np.array([0.5, 1.2, 4.0])
    assert np.allclose(axis.value(axis.pos(xs)), xs)
    lin = pictures._Axis([0.0, 1.0], log=True)  # a bound of 0 has no log: linear
    assert not lin.log and np.allclose(lin.pos([0.5]), [1.5])


def test_per_process_values_are_those_of_the_look_that_decided():
    row = pd.read_csv(results.data_dir() / "01_stack_size_verdicts.csv", dtype=str) \
        .set_index("claim_id").loc["C000.2"]
    values = pictures.per_process("C000.2")
    assert list(values) == ["x"] and len(values["x"]) == int(row.processes)
    assert (values["x"] > 0).all()
    assert pictures.per_process("C004.3") is None  # an exact count


def test_the_strip_has_one_tick_per_process_and_refuses_no_values():
    svg = pictures.strip_svg({"x": [0.9, 1.0, 1.1, 1.05]}, "C000.2")
    assert svg.startswith("<svg") and svg.count("stroke='#0072B2'") == 4
    assert "4 fresh processes" in svg and "http" not in svg
    two = pictures.strip_svg({"a": [1, 2], "b": [3, 4, 5]})
    assert two.count("<g>") == 2 and "<rect" not in two
    banded = pictures.strip_svg({"x": [1.0, 2.0]}, interval=(0.5, 3.0))
    # The band spans the interval, which widens the strip's range past the values.
    (x, w), = re.findall(r"<rect x='([\d.]+)' y='\d+' width='([\d.]+)'", banded)
    assert float(x) == 4 and float(x) + float(w) == 176 and "[0.5, 3]" in banded
    assert ">0.5</text>" in banded and ">3</text>" in banded  # the ends, written
    assert_each_raises(
        (lambda: pictures.strip_svg({}), ValueError, "values must"),
        (lambda: pictures.strip_svg({"x": []}), ValueError, "values must"),
        (lambda: pictures.strip_svg({"a": [1], "b": [2]}, interval=(0, 1)), ValueError,
         "interval must"))


@pytest.mark.parametrize("verdict", verdicts.VERDICTS)
def test_a_forest_of_one_verdict_keeps_its_title_in_counts(verdict):
    table = pd.DataFrame({"claim_id": ["C000.2"], "verdict": [verdict],
                          "measured_value": ["1.2 [1.0, 1.4]"]})
    fig = pictures.forest(table)
    assert fig.axes[0].get_title() == f"1 claim against its rule: 1 {verdict}"
    plt.close(fig)
