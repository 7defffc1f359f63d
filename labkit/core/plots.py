"""Plot helpers for the notebooks: medians with quartile error bars, labelled units, and
the machine in the caption (absolute ns only ever appear beside their machine)."""
from __future__ import annotations

import math
import os
import warnings
# Worker processes load this layer, and a fresh worker must start cheap: pandas,
# numpy and other heavy modules are imported in the functions that use them
# (docs/architecture.md, Imports).


def machine_caption(info: dict | None = None) -> str:
    """One line naming the machine and build a figure's numbers come from."""
    if info is None:
        from labkit.core.machine import machine_info

        info = machine_info()
    return (f"{info['cpu_model']} ({info['arch']}, {info['cpu_count']} CPUs, "
            f"TSC {info['tsc_ghz']:.2f} GHz, {info['virtualization']}), Linux "
            f"{info['kernel_release']}, {info['compiler']} {info['opt_level']}, "
            f"labkit {info['labkit_commit']}")


def bars(frame, y: str = "median", lo: str = "q1", hi: str = "q3", scale: float = 1.0):
    """matplotlib's xerr/yerr from `y` down to `lo` and up to `hi` (never negative), over
    `scale`."""
    return [(frame[y] - frame[lo]).clip(lower=0) / scale,
            (frame[hi] - frame[y]).clip(lower=0) / scale]


def errorbars(ax, summary, *, x: str, hue: str | None = None, y: str = "median",
              lo: str = "q1", hi: str = "q3", label_fmt: str = "{}", palette=None, **kw):
    """Draw medians with [lo, hi] error bars (quartiles by default), one line per hue, each
    in its colour from `palette` (a figure's systems.colours, so that its panels agree; by
    default the hues' own), unless `color` is given."""
    from labkit.core.systems import colours

    groups = summary.groupby(hue, sort=False) if hue else [(None, summary)]
    if hue and palette is None:
        palette = colours(summary[hue].unique())
    for key, g in groups:
        g = g.sort_values(x)
        opts = {"marker": "o", "capsize": 3, **kw}
        if hue and "color" not in kw:
            opts["color"] = palette[str(key)]
        ax.errorbar(g[x], g[y], yerr=bars(g, y, lo, hi),
                    label=label_fmt.format(key) if hue else None, **opts)
    if hue:
        ax.legend(fontsize="small")
    ax.grid(True, which="both", alpha=0.3)
    return ax


def dots(ax, pos, values, low=None, high=None, *, horizontal: bool = False, color=None,
         label=None, marker: str = "o"):
    """Values as points with [low, high] bars at positions `pos`: what a log axis can show,
    where a bar's length means nothing."""
    import numpy as np

    v = np.asarray(values, float)
    err = None
    if low is not None and high is not None:
        err = [np.clip(v - np.asarray(low, float), 0, None),
               np.clip(np.asarray(high, float) - v, 0, None)]
    xy = (v, pos) if horizontal else (pos, v)
    return ax.errorbar(*xy, **({"xerr": err} if horizontal else {"yerr": err}), fmt=marker,
                       ls="none", capsize=3, color=color, label=label)


def log_axis(ax, which: str = "y", base: int = 10):
    """A log scale with plain numbers on it (5, 10, 20) instead of powers."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    axis = ax.yaxis if which == "y" else ax.xaxis
    (ax.set_yscale if which == "y" else ax.set_xscale)("log", base=base)
    axis.set_major_locator(LogLocator(base=base, subs=(1.0, 2.0, 5.0) if base == 10 else (1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def ns_label(v) -> str:
    """1500 -> '1.5 us', 38.5 -> '38.5 ns' (three figures), NaN -> 'n/a'."""
    if not math.isfinite(v):
        return "n/a"
    for unit, k in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if v >= k:
            return f"{v / k:.3g} {unit}"
    return f"{v:.3g} ns"


def percent_label(fraction) -> str:
    """0.9996 -> '100', 0.123 -> '12', 0.0123 -> '1.2', 0.00012 -> '0.012' (the percent,
    two figures but never in powers of ten, without the sign), NaN -> 'n/a'."""
    if fraction is None or not math.isfinite(fraction):
        return "n/a"
    v = 100 * fraction
    if v == 0 or abs(v) >= 10:
        return f"{v:.0f}"
    return f"{v:.{1 - math.floor(math.log10(abs(v)))}f}".rstrip("0").rstrip(".")


def bytes_label(n) -> str:
    """4096 -> '4 KiB', 8388608 -> '8 MiB', 1088 -> '1.06 KiB' (three figures where the
    unit does not divide), None or NaN -> 'n/a'."""
    if n is None or not math.isfinite(n):
        return "n/a"
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{int(n) // size} {unit}" if n % size == 0 else f"{n / size:.3g} {unit}"
    return f"{n:.0f} B"


# Set to 1, finish() refuses a figure that look_faults() faults (the tests set it).
STRICT_LOOK = "LABKIT_STRICT_LOOK"


def look_faults(fig) -> list[str]:
    """What in `fig` breaks the lab's one look: bars on a log axis (a bar's length means
    nothing there), values a log axis cannot draw (zeros and negatives vanish), an
    entry drawn in a colour not its own (systems.colour), and a labelled line, scatter or
    legend handle that is not an entry drawn in an entry's colour (a reader takes it for
    that entry)."""
    import numpy as np
    from matplotlib.colors import to_hex
    from matplotlib.collections import PathCollection
    from matplotlib.container import BarContainer, ErrorbarContainer

    from labkit.core.systems import ENTRY_COLOURS

    entry_colours = set(ENTRY_COLOURS.values())
    faults = []
    for n, ax in enumerate(fig.axes):
        where = f"axes {n} ({ax.get_title() or 'untitled'})"
        logs = [a for a, scale in (("x", ax.get_xscale()), ("y", ax.get_yscale()))
                if scale == "log"]
        if logs and any(isinstance(c, BarContainer) for c in ax.containers):
            faults.append(f"{where}: bars on a log {' and '.join(logs)} axis")
        # axhline and axvline are drawn partly in the axes' own 0-1 coordinates
        for line in (ln for ln in ax.get_lines() if ln.get_transform() == ax.transData):
            for a in logs:
                v = np.asarray(line.get_xdata() if a == "x" else line.get_ydata(), float)
                if np.any(np.isfinite(v) & (v <= 0)):
                    faults.append(f"{where}: {line.get_label()!r} has values <= 0 that the "
                                  f"log {a} axis does not draw")
        drawn = [(c.get_label(), c.lines[0]) for c in ax.containers
                 if isinstance(c, ErrorbarContainer)] + [(ln.get_label(), ln)
                                                         for ln in ax.get_lines()]
        for label, line in drawn:
            if label in ENTRY_COLOURS and line is not None and \
                    to_hex(line.get_color()) != ENTRY_COLOURS[label]:
                faults.append(f"{where}: {label} drawn in {to_hex(line.get_color())}, not "
                              f"its colour {ENTRY_COLOURS[label]}")
        legend = ax.get_legend()
        shown = [(t.get_text(), h) for t, h in zip(legend.get_texts(), legend.legend_handles)
                 ] if legend else []
        faults += [f"{where}: {label!r} is not an entry but drawn in {c}, an entry's colour"
                   for label, c in _labelled_colours(drawn + [
                       (c.get_label(), c) for c in ax.collections
                       if isinstance(c, PathCollection)] + shown)
                   if not _names_entry(label) and c in entry_colours]
    for legend in fig.legends:
        faults += [f"figure legend: {label!r} is not an entry but drawn in {c}, an entry's "
                   f"colour" for label, c in _labelled_colours(
                       zip((t.get_text() for t in legend.get_texts()), legend.legend_handles))
                   if not _names_entry(label) and c in entry_colours]
    return list(dict.fromkeys(faults))


def _names_entry(label: str) -> bool:
    """True when a series' label names an entry: the entry itself, or its name first and
    words after it ('asm_fpu (stackful)')."""
    from labkit.core.systems import ENTRY_COLOURS

    return bool(label) and label.split()[0] in ENTRY_COLOURS


def _is_none(c) -> bool:
    return isinstance(c, str) and c.lower() == "none"


def _labelled_colours(artists):
    """(label, colour) for each labelled line or scatter of (label, artist): the colours a
    line shows (its line, its markers' edge and face) and a scatter's face colours, as
    hex. Patches (bars, bands) are left out: their colour is often a shade, not a
    series' (a translucent entry band is its entry's)."""
    from matplotlib.collections import PathCollection
    from matplotlib.colors import to_hex
    from matplotlib.lines import Line2D

    for label, artist in artists:
        if not label or label.startswith("_") or artist is None:
            continue
        if isinstance(artist, Line2D):
            seen = []
            if artist.get_linestyle() not in ("None", "none", ""):
                seen.append(artist.get_color())
            if artist.get_marker() not in (None, "None", "none", ""):
                seen += [artist.get_markeredgecolor(), artist.get_markerfacecolor()]
            for c in dict.fromkeys(to_hex(c) for c in seen if not _is_none(c)):
                yield label, c
        elif isinstance(artist, PathCollection):
            for c in dict.fromkeys(to_hex(f) for f in artist.get_facecolors()):
                yield label, c


def finish(fig, name: str, caption: str | None = None):
    """Check the figure's look (look_faults: refused under STRICT_LOOK, else a warning),
    add the machine caption under it, save it as figures/<name>.png/.svg and, in a
    notebook, show the saved PNG."""
    from labkit.core import results

    faults = look_faults(fig)
    if faults:
        said = f"figure {name} breaks the lab's look: " + "; ".join(faults)
        # The tests run strict, so code that draws wrongly fails there; a user's run keeps
        # its figure (data can put a zero where none was expected) and says what is wrong.
        if os.environ.get(STRICT_LOOK) == "1":
            raise ValueError(said)
        warnings.warn(said, stacklevel=2)

    fig.text(0.01, -0.02, caption or machine_caption(), fontsize=7, ha="left", va="top",
             wrap=True)
    fig.tight_layout()
    paths = results.save_figure(fig, name)
    show_saved(fig, paths[0])
    return paths


_SHOWN_DPI = 100   # the inline backend's resolution, kept for the figure's shown size


def in_kernel() -> bool:
    """True inside a Jupyter kernel (where display() shows HTML and images)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")


# What labkit.noise_warnings' lines are, as fold() names them.
NOISY = "noise warnings (a point whose standard deviation is 10% of its mean or more)"


def fold(lines, what: str) -> None:
    """Show `lines` out of the reader's way: in a Jupyter kernel folded under one line
    naming how many there are and `what` they are (HTML <details>), elsewhere printed."""
    lines = list(lines)
    if not lines:
        return
    if not in_kernel():
        print("\n".join(lines))
        return
    import html

    from IPython.display import HTML, display

    display(HTML(f"<details><summary>{len(lines)} {html.escape(what)} (click to read)"
                 f"</summary><pre>{html.escape(chr(10).join(lines))}</pre></details>"))


def show_saved(fig, png) -> bool:
    """In a Jupyter kernel, show the PNG already saved for `fig` and close the figure, so
    that the inline backend does not draw it once more (a second full render of every
    figure on each run). Outside a kernel, do nothing. True when shown."""
    if not in_kernel():
        return False
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    from labkit.core.results import FIGURE_DPI

    data = open(png, "rb").read()
    width = int.from_bytes(data[16:20], "big")  # the PNG header's IHDR width
    display(Image(data=data, format="png", width=width * _SHOWN_DPI // FIGURE_DPI))
    plt.close(fig)
    return True
