"""Showing a table: the overlay figure (the article's points over the measured ones),
its HTML, and a notebook's "article's table beside ours" section."""
from __future__ import annotations

import html as _html
import math
import textwrap

import matplotlib.pyplot as plt
from IPython.display import HTML, display

from labkit.core import plots
from labkit.core.systems import colours
from labkit.lab import experiment
from labkit.lab.judging import view
from labkit.lab.report.articles.measured import measured_machines
from labkit.lab.report.articles.rows import save_article_verdicts
from labkit.lab.report.articles.tables import ArticleTable, by_notebook, table


def finding(t: ArticleTable) -> str:
    """What the overlay shows, from its points: at how many the article's value lies in
    this machine's spread, and the point where the two are furthest apart (by ratio)."""
    both = [p for p in t.points if _finite(p[1], p[2]) and p[1] > 0 and p[2] > 0]
    if not both:
        return "No point has both the article's value and one measured here."
    inside = sum(1 for p in both if _finite(p[3], p[4]) and p[3] <= p[1] <= p[4])
    far = max(both, key=lambda p: abs(math.log(p[2] / p[1])))
    spread = f" [{far[3]:.3g}, {far[4]:.3g}]" if _finite(far[3], far[4]) else ""
    return (f"The article's value lies in this machine's spread at {inside} of {len(both)} "
            f"points; they are furthest apart at {far[0]}: {far[2]:.3g}{spread} here against "
            f"{far[1]:.3g} in the article.")


def figure(t: ArticleTable, *, save: bool = True):
    """The article's points (normalised to its reference row) over the measured ones with
    their spread, log scale, titled with its finding, the machine in the caption. Saves
    figures/articles-<key>.png/.svg when save is True; returns the figure."""
    if not isinstance(t, ArticleTable):
        raise TypeError(f"t must be an ArticleTable from articles.table(), not {type(t).__name__}")

    labels = [p[0] for p in t.points]
    xs = range(len(labels))
    fig, ax = plt.subplots(figsize=(max(5.5, 0.9 * len(labels) + 2), 3.6))
    art = [p[1] for p in t.points]
    here = [p[2] for p in t.points]
    lo = [max(0.0, p[2] - p[3]) if _finite(p[2], p[3]) else 0.0 for p in t.points]
    hi = [max(0.0, p[4] - p[2]) if _finite(p[2], p[4]) else 0.0 for p in t.points]
    tint = colours(["here", "article", *t.extra])
    ax.errorbar(list(xs), here, yerr=[lo, hi], fmt="o", capsize=3, color=tint["here"],
                label="here: median, spread")
    for i, (name, series) in enumerate(t.extra.items()):
        v = [p[0] for p in series]
        lo_ = [max(0.0, p[0] - p[1]) if _finite(p[0], p[1]) else 0.0 for p in series]
        hi_ = [max(0.0, p[2] - p[0]) if _finite(p[0], p[2]) else 0.0 for p in series]
        ax.errorbar([x + 0.15 * (i + 1) for x in xs], v, yerr=[lo_, hi_], fmt="s",
                    capsize=3, color=tint[str(name)], label=name)
        here = here + v
    ax.plot(list(xs), art, "D", mfc="none", color=tint["article"], ms=8, label="article")
    ax.set_xticks(list(xs), labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(t.ylabel or f"relative to {t.reference}")
    # The intervals' low ends count: a log axis drops an end at zero with its cap.
    ends = [p[3] for p in t.points] + [p[1] for series in t.extra.values() for p in series]
    shown = [v for v in art + here + ends if v is not None and _finite(v)]
    vals = [v for v in shown if v > 0]
    if vals and max(vals) / min(vals) > 8:
        if len(vals) < len(shown):
            # A zero is a result: a log axis would drop it, so it is linear near zero.
            ax.set_yscale("symlog", linthresh=min(vals))
            ax.set_ylim(bottom=0)
        else:
            plots.log_axis(ax)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(f"{t.title}\n({t.source}: article vs this machine)", fontsize=9)
    fig.suptitle(textwrap.fill(finding(t), 90), fontsize=9)
    # The machine that measured the rows, as the data records it (the one drawing the
    # figure may be another).
    measured = measured_machines()
    caption = plots.machine_caption(measured[0]) if measured else plots.machine_caption()
    if save:
        plots.finish(fig, f"articles-{t.key}", caption)
    else:
        fig.text(0.01, -0.02, caption, fontsize=7, ha="left", va="top")
        fig.tight_layout()
    return fig


def _finite(*v) -> bool:
    return all(x is not None and not (isinstance(x, float) and (math.isnan(x) or math.isinf(x)))
               for x in v)


def to_html(t: ArticleTable) -> str:
    """The table as HTML: title, source, the frame, the note."""
    return (f"<h3 id='{t.notebook}-{t.key}'>{_html.escape(t.title)}</h3>"
            f"<p><code>{_html.escape(t.source)}</code></p>"
            + t.frame.to_html(index=False, border=0)
            + f"<p><small>{_html.escape(t.note)}</small></p>")


def section(notebook: str) -> None:
    """A notebook's "article's table beside ours": show each of its article tables with
    its figure, then judge the row claims of this notebook from the data it just saved
    and save them (data/<notebook>_article_verdicts.csv) for the ledger."""
    notebook = experiment.of(notebook).name
    shown = by_notebook()
    if notebook not in shown:
        raise ValueError(f"notebook must be one of {sorted(shown)}, got {notebook!r}")

    for key in shown[notebook]:
        t = table(key)
        display(HTML(to_html(t)))
        fig = figure(t)   # saved, and shown when this runs in a notebook
        if plt.fignum_exists(fig.number):
            display(fig)
            plt.close(fig)
    v = save_article_verdicts(notebook)
    if len(v):
        display(HTML("<p>The row claims judged from this notebook's data:</p>"
                     + view.worded(v[["claim_id", "measured_value", "verdict", "note"]]).to_html(
                         index=False, border=0)))
