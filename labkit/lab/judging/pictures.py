"""The verdicts drawn: one colour per verdict (Okabe and Ito's colour-blind-safe set), the
forest of every claim's interval against its rule's regions, and the strip of the
per-process values one verdict stands on (a small inline SVG for the verdict table).

    fig = pictures.forest(ledger.ledger())        # notebook 00 and the report's summary
    pictures.strip_svg(pictures.per_process("C000.2"), "C000.2")
"""
from __future__ import annotations

import html
import math
import re

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from labkit.core import plots, sequential
from labkit.lab.judging import claims, engine, rule_expr, rules, verdicts

# One colour per verdict: the decided outcomes and the undecided in hues of Okabe and Ito's
# colour-blind-safe set, the two unmeasured ones in a light and a dark grey, so that every
# pair stays apart under protanopia, deuteranopia and tritanopia as well
# (tests/test_verdict_pictures.py simulates them).
VERDICT_COLOURS = dict(zip(verdicts.VERDICTS,
                           ("#009E73", "#D55E00", "#E69F00", "#56B4E9", "#BBBBBB", "#555555"),
                           strict=True))
# The regions' shades on the forest: each in the colour of the verdict it gives.
REGION_COLOURS = {v: VERDICT_COLOURS[v] for v in ("reproduced", "contradicted")}
_EDGE = 2.0  # how far past the outermost bounds, in steps, each row's frame reaches
# How the forest places each row's x (stated in its caption).
FOREST_CAPTION = (
    "Each row is on its own axis: the numbers its rule compares x with sit at the dotted "
    "gridlines, evenly spaced, and x is linear between them (logarithmic for a ratio); "
    "beyond the outermost bound the axis goes on at the nearest step's scale for "
    f"{_EDGE:g} steps, and an interval running past the frame ends in an arrow. Green: the "
    "claim's region; vermilion: the refutation's; the point is x, the bar its "
    f"{1 - sequential.ALPHA:.0%} interval (repeated "
    "confidence interval over fresh processes, or none for an exact count), written "
    "beside the row.")
_NUMBER = r"-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?"
_MEASURED = re.compile(rf"^\s*(?:x\s*=\s*)?(?P<v>{_NUMBER})(?:\s*\[(?P<lo>{_NUMBER}),\s*"
                       rf"(?P<hi>{_NUMBER})\])?", re.I)
_SAMPLES = 400  # points per row at which the rule's regions are evaluated


def measured_interval(text: str):
    """(x, low, high) read from a verdict row's `measured_value` (an exact count: low =
    high = x); None when it does not start with x."""
    m = _MEASURED.match(str(text))
    if not m:
        return None
    num = (lambda s: float(s.replace(",", "")))
    v = num(m["v"])
    return (v, num(m["lo"]), num(m["hi"])) if m["lo"] else (v, v, v)


def _bounds(*rule_texts) -> list[float]:
    """The numbers the rules compare x with (verdicts.bounds_of), sorted, each once."""
    return sorted({b for text in rule_texts for _, b, _ in verdicts.bounds_of(text)})


class _Axis:
    """One row's axis: the rule's bounds at 1..k, linear (or log) between them."""

    def __init__(self, bounds: list[float], log: bool):
        self.log = log and all(b > 0 for b in bounds)
        self.k = len(bounds)
        t = np.log(bounds) if self.log else np.asarray(bounds, float)
        if self.k == 1:
            step = math.log(2) if self.log else max(abs(t[0]), 1.0) / 2
            self.t, self.step_lo, self.step_hi = t, step, step
        else:
            self.t, self.step_lo, self.step_hi = t, t[1] - t[0], t[-1] - t[-2]

    def pos(self, x):
        x = np.asarray(x, float)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.log(x) if self.log else x
        inside = np.interp(t, self.t, np.arange(1, self.k + 1))
        below = 1 + (t - self.t[0]) / self.step_lo
        above = self.k + (t - self.t[-1]) / self.step_hi
        return np.where(t < self.t[0], below, np.where(t > self.t[-1], above, inside))

    def value(self, p):
        p = np.asarray(p, float)
        inside = np.interp(p, np.arange(1, self.k + 1), self.t)
        t = np.where(p < 1, self.t[0] + (p - 1) * self.step_lo,
                     np.where(p > self.k, self.t[-1] + (p - self.k) * self.step_hi, inside))
        return np.exp(t) if self.log else t

    @property
    def frame(self):
        return 1 - _EDGE, self.k + _EDGE


def _spans(mask, grid):
    """The [start, end) runs of grid where mask holds."""
    out, start = [], None
    for p, m in zip(grid, mask):
        if m and start is None:
            start = p
        if not m and start is not None:
            out.append((start, p))
            start = None
    if start is not None:
        out.append((start, grid[-1]))
    return out


def forest_rows(table):
    """The ledger's claims the forest draws: one dict per claim with a verdict and an
    interval of x on a rule over x alone (claim_id, verdict, x, low, high, reproduced_if,
    contradicted_if, log), in the ledger's order; and the ids left out, with why."""
    rows, left = [], {}
    for r in table.to_dict("records"):
        cid = r["claim_id"]
        if r["verdict"] in ("not-measured", "not-applicable-here"):
            left[cid] = r["verdict"]
            continue
        c = claims.claim(cid)
        if any(rule_expr.names(c[k]) - {"x"} for k in ("reproduced_if", "contradicted_if")):
            left[cid] = "judged on several named values"
            continue
        got = measured_interval(r.get("measured_value", ""))
        if got is None or not all(math.isfinite(v) for v in got):
            left[cid] = "no interval of x"
            continue
        rows.append({"claim_id": cid, "verdict": r["verdict"], "x": got[0], "low": got[1],
                     "high": got[2], "reproduced_if": c["reproduced_if"],
                     "contradicted_if": c["contradicted_if"],
                     "log": "ratio" in c.get("claimed_unit", "").lower()})
    return rows, left


def forest_title(table) -> str:
    """The forest's finding: how many claims each verdict holds, from the table."""
    counts = table["verdict"].value_counts()
    said = ", ".join(f"{int(counts[v])} {v}" for v in verdicts.VERDICTS if counts.get(v, 0))
    n = len(table)
    return (f"{n} claim{'s' if n != 1 else ''} against "
            f"{'their rules' if n != 1 else 'its rule'}: {said}")


def _said(r) -> str:
    if r["low"] == r["high"] == r["x"]:
        return f"{r['x']:.6g} (exact)"
    return f"{r['x']:.3g} [{r['low']:.3g}, {r['high']:.3g}]"


def forest_caption(table, info: dict | None = None) -> str:
    """FOREST_CAPTION, the claims the forest leaves out with why, and the machine (info:
    its metadata, default this one's; an exact count can be in bytes or nanoseconds)."""
    _, left = forest_rows(table)
    why: dict = {}
    for cid, reason in left.items():
        why.setdefault(reason, []).append(cid)
    return FOREST_CAPTION + "".join(f" Not drawn, {reason}: {', '.join(ids)}."
                                    for reason, ids in why.items()) \
        + " " + plots.machine_caption(info)


def forest(table):
    """Every claim with an interval of x, one row each on its own axis (FOREST_CAPTION),
    the rule's two regions shaded and the interval in its verdict's colour (the claims
    that cannot be drawn so: forest_caption). Title: the counts per verdict."""
    rows, _ = forest_rows(table)
    fig, ax = plt.subplots(figsize=(8, 1.8 + 0.26 * max(len(rows), 1)))
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        axis = _Axis(_bounds(r["reproduced_if"], r["contradicted_if"]), r["log"])
        lo_f, hi_f = axis.frame
        unit = (lambda p, lo_f=lo_f, hi_f=hi_f: (np.asarray(p, float) - lo_f) / (hi_f - lo_f))
        grid = np.linspace(lo_f, hi_f, _SAMPLES)
        xs = axis.value(grid)
        for verdict, key in (("reproduced", "reproduced_if"), ("contradicted", "contradicted_if")):
            colour = REGION_COLOURS[verdict]
            mask = [bool(rule_expr.evaluate(r[key], {"x": float(v)})) for v in xs]
            for a, b in _spans(mask, unit(grid)):
                ax.fill_between([a, b], y - 0.4, y + 0.4, color=colour, alpha=0.2, lw=0)
            # A region that is one number (x == 1) has no width: a bar at it instead.
            for p, b in enumerate(_bounds(r["reproduced_if"], r["contradicted_if"]), 1):
                if rule_expr.evaluate(r[key], {"x": b}) and not any(mask):
                    ax.fill_between([unit(p) - 0.012, unit(p) + 0.012], y - 0.4, y + 0.4,
                                    color=colour, alpha=0.35, lw=0)
        for p in range(1, axis.k + 1):
            ax.plot([unit(p)] * 2, [y - 0.4, y + 0.4], ls=":", color="#555555", lw=0.6)
        x, lo, hi = unit(axis.pos([r["x"], r["low"], r["high"]]))
        colour = VERDICT_COLOURS[r["verdict"]]
        ax.plot([max(lo, 0), min(hi, 1)], [y, y], color=colour, lw=2)
        ax.plot([min(max(x, 0), 1)], [y], "o", color=colour, ms=5)
        if lo < 0:
            ax.plot([0], [y], "<", color=colour, ms=6)
        if hi > 1:
            ax.plot([1], [y], ">", color=colour, ms=6)
        ax.text(1.02, y, _said(r), va="center", fontsize=7,
                transform=ax.get_yaxis_transform())
    ax.set_yticks(range(len(rows)), [r["claim_id"] for r in reversed(rows)], fontsize=7)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlim(0, 1)
    ax.set_xticks([])
    if not rows:
        ax.text(0.5, 0.5, "no claim has an interval of x yet", ha="center", va="center",
                fontsize=8, transform=ax.transAxes)
    ax.set_title(forest_title(table), fontsize=10)
    shown = dict.fromkeys(r["verdict"] for r in rows)
    handles = [Line2D([], [], color=VERDICT_COLOURS[v], marker="o", lw=2, label=v)
               for v in shown]
    handles += [Patch(color=REGION_COLOURS[v], alpha=0.3, label=f"{v} region")
                for v in REGION_COLOURS]
    ax.legend(handles=handles, fontsize=7, loc="upper center", ncol=4,
              bbox_to_anchor=(0.5, 0))
    return fig


def per_process(claim_id: str, data_dir=None) -> dict | None:
    """The per-process values the claim's interval was taken over, recomputed from its
    saved runs, up to the look that decided: name -> values on the rule's scale (a ratio,
    not its log); None for a claim judged on an exact count or whose runs are missing."""
    if claim_id not in rules.RULES:
        return None
    with engine.capture() as seen:
        row = rules.recompute(claim_id, data_dir)
    seen = [s for s in seen if s["claim_id"] == claim_id]
    if row is None or not seen:
        return None
    n = int(row["processes"]) if str(row.get("processes", "")).isdigit() else None
    out = {}
    for name, values in seen[-1]["stats"].items():
        v = np.asarray(values, float)[:n]  # the processes of the look that decided
        if seen[-1]["scales"].get(name, "log") == "log":
            v = np.exp(v)
        out[name] = v[np.isfinite(v)]
    return out


def strip_svg(values: dict, label: str = "", *, interval=None, width: int = 180) -> str:
    """A small inline SVG: one strip per named value, each process a tick, the median a
    black bar, the strip's two ends written under it, and `interval` ((low,
    high) of the one value, as the verdict row states it) a pale band behind them;
    log-spaced for positive values spanning more than a factor of 3. ValueError when there
    is no value, or an interval beside several values."""
    if not values or not all(len(v) for v in values.values()):
        raise ValueError("values must map each name to at least one per-process value")
    if interval is not None and len(values) != 1:
        raise ValueError("interval must be left out when values has several names")
    each = 26
    parts = []
    for i, (name, v) in enumerate(values.items()):
        y0 = i * each
        v = np.asarray(v, float)
        ends = [float(e) for e in interval if math.isfinite(e)] if interval else []
        log = v.min() > 0 and v.max() / v.min() > 3 and all(e > 0 for e in ends)
        scale = np.log if log else (lambda a: np.asarray(a, float))
        back = math.exp if log else float
        t = scale(v)
        both = np.concatenate([t, scale(np.asarray(ends, float))])
        lo, hi = float(both.min()), float(both.max())
        span = (hi - lo) or 1.0

        def px(a, lo=lo, span=span):
            return 4 + (np.asarray(a, float) - lo) / span * (width - 8)

        band = ""
        if len(ends) == 2:
            a, b = px(scale(ends))
            band = (f"<rect x='{a:.1f}' y='{y0 + 1}' width='{max(b - a, 1):.1f}' height='12' "
                    "fill='#999999' fill-opacity='0.3'><title>the interval "
                    f"[{ends[0]:.3g}, {ends[1]:.3g}]</title></rect>")
        ticks = "".join(f"<line x1='{p:.1f}' x2='{p:.1f}' y1='{y0 + 3}' y2='{y0 + 11}' "
                        "stroke='#0072B2' stroke-opacity='0.6'/>" for p in px(t))
        med = float(px(np.median(t)))
        name_said = "" if name == "x" else f"{html.escape(name)}: "
        parts.append(
            f"<g><title>{name_said}{v.size} fresh processes, from {v.min():.3g} to "
            f"{v.max():.3g}, median {np.median(v):.3g}"
            f"{' (log-spaced)' if log else ''}</title>{band}{ticks}"
            f"<line x1='{med:.1f}' x2='{med:.1f}' y1='{y0 + 1}' y2='{y0 + 13}' "
            "stroke='#000' stroke-width='2'/>"
            f"<text x='2' y='{y0 + 23}' font-size='9'>{name_said}{back(lo):.3g}</text>"
            f"<text x='{width - 2}' y='{y0 + 23}' font-size='9' text-anchor='end'>"
            f"{back(hi):.3g}</text></g>")
    n = max(len(v) for v in values.values())
    return (f"<svg width='{width}' "
            f"height='{each * len(values)}' role='img' aria-label='{html.escape(label)}: "
            f"the values of {n} fresh processes'>" + "".join(parts) + "</svg>")
