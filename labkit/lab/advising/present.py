"""The advice as a table: a ranked frame, its text for the terminal, JSON records for
`labkit advise --json`, and an HTML view for JupyterLab."""
from __future__ import annotations

import html
import math

import pandas as pd

from labkit.core import procfs
from labkit.core.plots import bytes_label, ns_label as _ns, percent_label as _pc
from labkit.lab.advising import evidence

# What the work a user states means, said by the advice and by `labkit advise --help`.
WORK_MEANS = ("what the work between two suspensions costs in one warm context, its bytes in "
              "use touched in one stack (what a profiler of a one-request loop shows); the "
              "advice adds what the N contexts and the design cost")

# Below this relative difference in time per request the reason says to choose by memory
# and hazards instead: a wording threshold, not a cost.
SAME_TIME = 0.01


def rank(preds: list[dict]) -> list[dict]:
    """Order the designs: those a blocking hazard rules out last, those without a time
    before them, the rest by predicted time per request; each gets `rank` and `reason`."""
    def key(p):
        t = p["ns_per_request"]["value"]
        return (any(h.blocking for h in p["hazards"]), not math.isfinite(t),
                t if math.isfinite(t) else 0.0, p["design"])

    out = sorted(preds, key=key)
    best = next((p for p in out if not any(h.blocking for h in p["hazards"])
                 and math.isfinite(p["ns_per_request"]["value"])), None)
    untimed = sum(not any(h.blocking for h in p["hazards"])
                  and not math.isfinite(p["ns_per_request"]["value"]) for p in out)
    for i, p in enumerate(out, 1):
        p["rank"] = i
        p["reason"] = _reason(p, best, untimed)
    return out


def _reason(p, best, untimed: int = 0) -> str:
    t, share = p["ns_per_request"], p["switch_share"]
    blocking = [h for h in p["hazards"] if h.blocking]
    if blocking:
        return "Ruled out: " + blocking[0].sentence.split(":")[0].rstrip(".") + "."
    if not math.isfinite(t["value"]):
        return "Not ranked by time: " + next((n for n in p["notes"] if n.startswith("no time")),
                                             "no measurement of it") + "."
    if p is best:
        among = (f", of the designs with a time ({untimed} "
                 f"{'has' if untimed == 1 else 'have'} none)" if untimed else "")
        return (f"Fastest without a blocking hazard{among}: {_ns(t['value'])} per request, "
                f"{_pc(share['value'])}% of it switching.")
    b = best["ns_per_request"]
    more = t["value"] / b["value"] - 1
    if more < SAME_TIME:
        return (f"As fast as {best['design']} to within {100 * SAME_TIME:g}% per request "
                f"({_pc(share['value'])}% switching): choose by memory and hazards.")
    apart = t["low"] > b["high"]
    one = [x["design"] for x in (best, p) if evidence.ONE_PROCESS in x.get("basis", "")]
    slower = (f"{_pc(more)}% slower than" if more < 1 else
              f"{t['value'] / b['value']:.3g} times as slow as")
    return (f"{slower} {best['design']} per request "
            + ("(the intervals are apart" + (f", though {' and '.join(one)} "
                                             f"{'stand' if len(one) > 1 else 'stands'} on "
                                             "repeats of one process, not fresh processes)"
                                             if one else ")")
               if apart else "(the intervals overlap: as good a choice by time)")
            + f", {_pc(share['value'])}% switching.")


class Advice:
    """The advisor's answer: `.frame` (one row per design, ranked), `.records()` (what
    `labkit advise --json` prints), `.text()`, and an HTML view in JupyterLab."""

    def __init__(self, workload, preds: list[dict], ev, since: int = 0):
        """`since`: how many of the evidence's measurements made now came before this
        advice (the evidence is kept for the process, and so are they)."""
        self.workload = workload
        self.predictions = preds
        self.source = ev.source
        self.local = ev.local
        self.measured_now = list(ev.measured_now[since:])
        self.measured_before = since
        self.machine = ev.machine

    @property
    def frame(self):

        rows = []
        for p in self.predictions:
            m, t, s = p["memory"], p["ns_per_request"], p["switch_share"]
            rows.append({
                "rank": p["rank"], "design": p["design"], "ns_per_request": t["value"],
                "ns_low": t["low"], "ns_high": t["high"],
                "ns_per_switch": p["ns_per_switch"]["value"], "switch_share": s["value"],
                "share_low": s["low"], "share_high": s["high"], "stack_size": m["stack_size"],
                "reserved_bytes": m["reserved"], "resident_bytes": m["resident"],
                "page_table_bytes": m["page_tables"], "mappings": m["mappings"],
                "bytes_per_coroutine": m["per_coroutine"], "bytes_total": m["total"],
                "mappings_total": m["mappings_total"],
                "hazards": [h.sentence for h in p["hazards"]], "reason": p["reason"],
                "basis": p["basis"], "notes": "; ".join(p["notes"])})
        return pd.DataFrame(rows)

    def records(self) -> list[dict]:
        def num(v):
            return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v

        out = []
        for p in self.predictions:
            m = p["memory"]
            out.append({
                "design": p["design"], "rank": p["rank"],
                "ns_per_request": {k: num(v) for k, v in p["ns_per_request"].items()},
                "switch_share": {k: num(v) for k, v in p["switch_share"].items()},
                "bytes_per_coroutine": num(m["per_coroutine"]), "bytes_total": num(m["total"]),
                "reserved_bytes": num(m["reserved"]), "resident_bytes": num(m["resident"]),
                "page_table_bytes": num(m["page_tables"]), "mappings": m["mappings_total"],
                "stack_size": m["stack_size"],
                "hazards": [h.sentence for h in p["hazards"]], "reason": p["reason"],
                "basis": p["basis"], "notes": p["notes"]})
        return out

    def _header(self) -> list[str]:

        w = self.workload
        work = f"{w.work:g} {w.work_unit}"
        lines = [f"workload: {work} of work between suspensions, {w.suspensions:g} "
                 f"suspension{'' if w.suspensions == 1 else 's'} (2 switches each) per request, "
                 f"{w.alive} alive, "
                 f"{w.stack_in_use} bytes of stack in use, fp {w.fp}"
                 + (f", stack {w.stack_size} bytes" if w.stack_size else
                    ", each stackful design on the smallest stack that holds it, its "
                    "switch's frame and 2 KiB of calls (a deeper call overflows it: give "
                    "--stack-size for room)")
                 + (f", {w.rate:g} requests/s" if w.rate else ""),
                 f"work: {WORK_MEANS}",
                 f"from: {self.source}; vm.max_map_count {procfs.max_map_count()}"
                 + ("" if self.local else " (here: the bundle does not record its machine's)")
                 + "; "
                 "intervals: 95%, resampled over fresh processes where the data has them, "
                 "else over repeats (the basis column)"]
        # One line per reason: a workload of many designs measures a dozen things for one.
        by_why: dict[str, list[str]] = {}
        for what, why in self.measured_now:
            by_why.setdefault(why, []).append(what)
        lines += [f"measured now, as {why}: " + "; ".join(whats) for why, whats in by_why.items()]
        if self.measured_before:
            lines.append(f"and {self.measured_before} measurements made earlier in this "
                         "process, on this machine, kept for reuse")
        return lines

    def text(self) -> str:
        head = ["rank", "design", "ns/request [95%]", "switching", "per coroutine",
                f"for {self.workload.alive}", "mappings", "stack", "basis"]
        rows = []
        for p in self.predictions:
            t, s, m = p["ns_per_request"], p["switch_share"], p["memory"]
            rows.append([
                str(p["rank"]), p["design"],
                f"{_ns(t['value'])} [{_ns(t['low'])}, {_ns(t['high'])}]",
                "n/a" if not math.isfinite(s["value"]) else
                f"{_pc(s['value'])}% [{_pc(s['low'])}, {_pc(s['high'])}]",
                bytes_label(m["per_coroutine"]), bytes_label(m["total"]), str(m["mappings_total"]),
                bytes_label(m["stack_size"]) if m["stack_size"] else "-", p["basis"]])
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        fmt = "  ".join(f"{{:{'>' if i in (0,) else '<'}{w}}}" for i, w in enumerate(widths))
        out = [*self._header(), "", fmt.format(*head), *(fmt.format(*r) for r in rows), ""]
        for p in self.predictions:
            out.append(f"{p['rank']}. {p['design']}: {p['reason']}")
            out += [f"     ! {h.sentence}" for h in p["hazards"]]
            if p["notes"]:
                out.append(f"     ({'; '.join(p['notes'])})")
        return "\n".join(out)

    def __repr__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        e = html.escape
        body = []
        for p in self.predictions:
            t, s, m = p["ns_per_request"], p["switch_share"], p["memory"]
            red = ' style="color:#b00"'
            hz = "".join(f"<li{red if h.blocking else ''}>{e(h.sentence)}</li>"
                         for h in p["hazards"])
            share = ("n/a" if not math.isfinite(s["value"]) else
                     f"{_pc(s['value'])}% <small>[{_pc(s['low'])}, "
                     f"{_pc(s['high'])}]</small>")
            body.append(
                f"<tr><td>{p['rank']}</td><td><b>{e(p['design'])}</b></td>"
                f"<td>{_ns(t['value'])} <small>[{_ns(t['low'])}, {_ns(t['high'])}]</small></td>"
                f"<td>{share}</td><td>{bytes_label(m['per_coroutine'])}</td><td>{bytes_label(m['total'])}"
                f"</td><td>{m['mappings_total']}</td><td>{bytes_label(m['stack_size']) if m['stack_size'] else '-'}"
                f"</td><td style='text-align:left'>{e(p['reason'])}"
                f"{'<ul>' + hz + '</ul>' if hz else ''}</td></tr>")
        head = "".join(f"<th>{h}</th>" for h in (
            "rank", "design", "ns per request [95%]", "switching", "per coroutine",
            f"for {self.workload.alive}", "mappings", "stack", "why this rank; hazards"))
        return ("<div class='labkit-advice'>"
                + "".join(f"<p>{e(line)}</p>" for line in self._header())
                + f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
                  "</table></div>")
