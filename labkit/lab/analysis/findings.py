"""'What this run shows': a few sentences computed from a notebook's own run, shown at its
top. The top cell holds a place (placeholder); the notebook's last cells fill it (fill),
and Jupyter redraws the first output where it stands, so a reader meets the findings
before the method. The same sentences title the figures (title), their ratios said one
way (times)."""
from __future__ import annotations

import html
import math
import textwrap

from IPython.display import HTML, display, update_display

from labkit.core import plots
from labkit.lab.judging import view

PENDING = "This run's findings appear here when the notebook has run to its end."


def title(fig, finding: str | None, width: int = 110):
    """Put `finding` over `fig` as its title, each line wrapped to stay readable; returns
    `fig`."""
    if finding:
        fig.suptitle("\n".join(textwrap.fill(line, width) for line in finding.split("\n")),
                     fontsize=10)
    return fig


def _figures(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def quartiles(low: str, high: str) -> str:
    """A spread of repeats as a finding says it, '(quartiles 9 ns to 11 ns)': brackets are
    kept for 95% intervals."""
    return f"(quartiles {low} to {high})"


def times(r: float, lo: float | None = None, hi: float | None = None) -> str:
    """A ratio as a finding says it: 5.2 -> '5.2x', 1234 -> '1,234x', with its 95% interval
    '[lo, hi]' after it when both ends are finite."""
    if not math.isfinite(r):
        return "n/a"
    said = f"{_figures(r)}x"
    if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
        said += f" [{_figures(lo)}, {_figures(hi)}]"
    return said


def _id(notebook: str) -> str:
    return f"{notebook}-what-this-run-shows"


def _html(sentences) -> str:
    items = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    return f"<div class='lk-findings'><b>What this run shows</b><ul>{items}</ul></div>"


def placeholder(notebook: str) -> None:
    """Hold the findings' place at the top of `notebook` (printed outside a kernel)."""
    if not plots.in_kernel():
        return

    display(HTML(_html([PENDING])), display_id=_id(notebook))


def verdicts_sentence(table) -> str:
    """One sentence on a verdict table: each claim's verdict, with its value measured here."""
    if table is None or len(table) == 0:
        return "This notebook judges no claim."
    parts = [f"{r['claim_id']} {r['verdict']} ({r['measured_value']})"
             for r in table.to_dict("records")]
    return "Verdicts: " + "; ".join(parts) + "."


def fill(notebook: str, sentences) -> list[str]:
    """Put `sentences` in the place placeholder() held, and return them (printed as well
    outside a kernel)."""
    sentences = [s for s in sentences if s]
    if plots.in_kernel():
        update_display(HTML(_html(sentences)), display_id=_id(notebook))
    else:
        print("What this run shows:", *sentences, sep="\n- ")
    return sentences


def and_verdicts(notebook: str, table, sentences=()):
    """The notebook's last word: fill its findings with `sentences` and the verdicts'
    sentence, and return the verdict table's view (labkit.lab.judging.view) to show."""
    fill(notebook, [*sentences, verdicts_sentence(table)])
    return view.show(table)
