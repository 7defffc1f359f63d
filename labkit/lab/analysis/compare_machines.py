"""compare_machines.py's figures and tables: a merge of several machines' bundles
(labkit.lab.sharing.merge), drawn, and the room's predictions beside its measurements."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import matplotlib.ticker as ticker
import numpy as np
import pandas as pd

from labkit.lab.headers import shown


def ladder_figure(comparison: dict):
    """Each machine's kernels as ratios to its own `asm` (the merged ladder), one bar per
    machine; None when no machine has ladder results yet."""
    ladder = comparison.get("ladder")
    if ladder is None or ladder.empty:
        return None
    ratios = ladder.xs("ratio to asm", axis=1, level=1)
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(ratios) + 1.5))
    ratios.plot.barh(ax=ax)
    ax.axvline(1, color="grey", lw=0.8)
    ax.set_xlabel("median ns per switch / that machine's own asm")
    ax.set_title("the ladder, machine by machine (ratios travel, nanoseconds do not)")
    fig.tight_layout()
    plt.close(fig)
    return fig


# What the predictions figure's caption says of the measurements beside the predictions.
PREDICTIONS_CAPTION = ("each measurement is the one its learner's exercise checked the "
                       "prediction against: that learner's laptop, or the recorded machine "
                       "it read")


# The predictions figure's two series, in colours no entry has.
MEASURED_COLOUR, PREDICTION_COLOUR = "#1a7f37", "#b00020"


def _number(x):
    """A prediction or measurement as a float, or None when it is a choice or missing."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x) if math.isfinite(x) else None


def prediction_findings(table) -> dict:
    """Per exercise of a room's predictions (labkit.lab.room.predictions.collect): how
    many learners predicted, and how many predictions fell inside the measured interval
    (a number) or named the choice the measurement supports (a choice)."""
    out = {}
    for exercise, rows in table.groupby("exercise", sort=True):
        rows = rows[rows.prediction.notna()]
        hits = 0
        for r in rows.itertuples():
            p, low, high = _number(r.prediction), _number(r.low), _number(r.high)
            if p is None:
                hits += _choice_key(r.prediction) == _choice_key(r.measured)
            elif low is not None and high is not None:
                hits += low <= p <= high
        out[exercise] = {"predicted": len(rows), "inside": hits,
                         "choice": bool(len(rows)) and _number(rows.measured.iloc[0]) is None}
    return out


def _finding(f: dict) -> str:
    said = ("named the choice the measurement supports" if f["choice"] else
            "fell inside the measured interval")
    return f"{f['inside']} of {f['predicted']} {said}"


def _choice_key(choice) -> str:
    """A choice as the checks compare it: "c" is the letter "C"."""
    return str(choice).strip().upper()


def _said(choice) -> str:
    """A choice as shown: a single letter in upper case, as the check reads it."""
    text = str(choice).strip()
    return text.upper() if len(text) == 1 else text


def _two_and_five(v, _pos) -> str:
    """A log axis's minor label at 2 and 5 times a power of ten only, where they fit."""
    lead = round(v / 10 ** math.floor(math.log10(v))) if v > 0 else 0
    return f"{v:g}" if lead in (2, 5) else ""


def predictions_figure(table):
    """Each learner's prediction beside the measurement it was checked against, one panel
    per exercise: a number with its interval, or a choice beside the supported one. Each
    panel's title counts the predictions that fell inside (computed from `table`, the
    room's collect()); None when no learner has predicted yet."""
    findings = {e: f for e, f in prediction_findings(table).items() if f["predicted"]}
    if not findings:
        return None
    table = table[table.prediction.notna()]
    heights = [max(1.2, 0.35 * findings[e]["predicted"] + 0.9) for e in findings]
    fig, axes = plt.subplots(len(findings), 1, figsize=(9.5, sum(heights) + 0.6),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (exercise, f) in zip(axes[:, 0], findings.items()):
        rows = table[table.exercise == exercise].sort_values("name")
        y = np.arange(len(rows))
        if f["choice"]:
            same = {_choice_key(v): str(v) for v in rows.measured}
            chosen = [same.get(_choice_key(v), _said(v)) for v in rows.prediction]
            options = sorted({*chosen, *same.values()})
            at = {o: i for i, o in enumerate(options)}
            ax.plot([at[str(v)] for v in rows.measured], y, "o", ms=14, mfc="none",
                    color=MEASURED_COLOUR, label="the choice the measurement supports")
            ax.plot([at[v] for v in chosen], y, "o", color=PREDICTION_COLOUR, label="prediction")
            ax.set_xticks(range(len(options)), options)
            ax.set_xlim(-0.5, len(options) - 0.5)
        else:
            measured = rows.measured.map(_number).astype(float).to_numpy()
            low = rows.low.map(_number).astype(float).fillna(rows.measured).to_numpy()
            high = rows.high.map(_number).astype(float).fillna(rows.measured).to_numpy()
            predicted = rows.prediction.map(_number).astype(float).to_numpy()
            ax.errorbar(measured, y, xerr=[measured - low, high - measured], fmt="o",
                        color=MEASURED_COLOUR, capsize=3,
                        label="measured, with its interval")
            ax.plot(predicted, y, "D", color=PREDICTION_COLOUR, label="prediction")
            values = np.concatenate([measured, low, high, predicted])
            if np.all(values[np.isfinite(values)] > 0):
                ax.set_xscale("log")  # ratios and ticks spread over decades
                plain = ticker.FuncFormatter(lambda v, _: f"{v:g}")
                ax.xaxis.set_major_formatter(plain)
                finite = values[np.isfinite(values)]
                # Within a decade every minor tick is labelled; across decades they crowd.
                ax.xaxis.set_minor_formatter(plain if finite.max() < 10 * finite.min()
                                             else ticker.FuncFormatter(_two_and_five))
            ax.margins(x=0.08)
            ax.set_xlabel(str(rows.what.iloc[0]))
        ax.set_yticks(y, list(rows.name))
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_title(f"exercise {exercise}: {_finding(f)}", fontsize=10)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    inside = sum(f["inside"] for f in findings.values())
    total = sum(f["predicted"] for f in findings.values())
    fig.suptitle(f"the room's predictions: {inside} of {total} fell inside the measured "
                 "interval or named the supported choice", fontsize=11)
    fig.tight_layout()
    plt.close(fig)
    return fig


def by_machine(frame):
    """A merge's frame (its verdicts, or its ladder through merge.shown) with its headers in
    words: its first column level, the machines' labels, named `machine`."""
    if isinstance(frame.columns, pd.MultiIndex):
        frame = frame.rename_axis(columns=["machine", *frame.columns.names[1:]])
    return shown(frame)
