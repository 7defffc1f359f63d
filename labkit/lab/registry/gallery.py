"""The registry's gallery: one static HTML page, read offline, built from a registry.

Three parts, all from the store's own Parquet (labkit.lab.registry.query):
- claims against machines: a grid, a row per claim and a column per machine, each cell the
  verdict with its measured value and interval, and the claim's tally across machines;
- the ladder across CPUs: each design's ns per switch on each machine, a figure (inline
  SVG) and its table. Where the bundle carries the design's verdict runs the value is the
  geometric mean over fresh processes with its 95% repeated confidence interval
  (labkit.core.sequential, on logs of the per-process medians, as the engine does);
  otherwise it is the median of one process's repeats, drawn hollow and said to have no
  interval over processes;
- a section per machine: its hardware as CPUID reports it (vendor, family, model,
  stepping, microcode, vector ISA, XSAVE), the layers under the process, and the machine
  effects decided between it and the others (labkit.lab.registry.effects).

Nothing on the page is fetched: CSS and SVG are inline and a Content-Security-Policy
forbids any request, so the file works from a USB stick.
"""
from __future__ import annotations

import datetime
import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from labkit.core import sequential
from labkit.core.results import atomic_path
from labkit.lab.judging import engine
from labkit.lab.registry import admission, effects, query
from labkit.lab.registry import store as stores

PAGE = "index.html"
LADDER_NOTEBOOK = "04_latency_ladder"
VERDICT_CLASS = {"reproduced": "rep", "contradicted": "con", "inconclusive": "inc"}
# machine.parquet fields shown in a machine's section, with their headings.
HARDWARE = (("cpu_vendor", "vendor (CPUID)"), ("cpu_model", "brand string"),
            ("cpu_family", "family"), ("cpu_model_id", "model"), ("cpu_stepping", "stepping"),
            ("microcode", "microcode"), ("vector_isa", "vector ISA"), ("xcr0", "XCR0"),
            ("xstate_components", "XSAVE components"), ("xsave_bytes", "XSAVE bytes"),
            ("arch", "ABI"), ("cpu_count", "CPUs"), ("tsc_ghz", "TSC GHz"),
            ("layers", "virtualisation layers"), ("virtualization", "as detected"),
            ("kernel_release", "kernel"), ("compiler", "compiler"), ("opt_level", "opt level"),
            ("governor", "governor"), ("turbo", "turbo"), ("smt", "SMT"),
            ("env_warnings", "environment warnings"), ("labkit_commit", "labkit commit"),
            ("format", "bundle format"), ("recomputable", "verdicts recomputable"),
            ("recomputed", "verdicts recomputed and agreeing"), ("synthetic", "synthetic"),
            ("created", "bundle created (as the bundle says)"),
            ("published", "published (the registry's time)"), ("publisher", "published by"),
            ("fingerprint", "publisher's key"),
            ("claimed_by_others", "bundles of other keys claiming this machine (not shown)"),
            ("flags", "flags"))
# Machine effects are decided on the page among at most this many machines with verdict
# runs: every pair is a comparison (n(n-1)/2 of them, each a root search in
# labkit.core.sequential); beyond it the page says how to ask `labkit registry effects`
# for a narrower set.
EFFECT_MACHINES = 6
# Beyond this many machines the page groups them by CPU (vendor, family, model, layers):
# a column per group with its verdict counts, the ladder's median and quartiles across the
# group's machines, and the machines as one table.
GRID_MACHINES = 12
LIST_FIELDS = ("label", "cpu_vendor", "cpu_family", "cpu_model_id", "cpu_stepping",
               "microcode", "layers", "commit", "format", "synthetic")
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22")


def machine_rows(registry, *, filters=None, quick: bool = False):
    """Every field of each chosen machine's record (its latest bundle), by label."""
    store = stores.open_store(registry)
    _, params = query._where(filters, quick)
    df = query._run(store, f"SELECT * FROM ({query._chosen(store, filters, quick)}) "
                    "ORDER BY label", params)
    return pd.DataFrame() if df is None else df


def ladder_points(registry, runs: dict, *, filters=None, quick: bool = False):
    """One row per (design, machine): ns per switch with its interval where processes
    give one: value, low, high, processes (0: one process's repeats, no interval)."""
    lad = query.ladder(registry, filters=filters, quick=quick, notebook=LADDER_NOTEBOOK)
    rows = []
    for _, r in lad.iterrows():
        rows.append({"entry": r.entry, "label": r.label, "value": float(r.median_ns),
                     "low": math.nan, "high": math.nan, "processes": 0,
                     "repeats": int(r.rows)})
    out = pd.DataFrame(rows, columns=["entry", "label", "value", "low", "high", "processes",
                                      "repeats"])
    for label, by_nb in runs.items():
        frame = by_nb.get(LADDER_NOTEBOOK)
        if frame is None or frame.empty:
            continue
        per = engine.per_process(frame)
        looks = engine.looks_of(frame)
        for side in per.columns:
            v = per[side].to_numpy(float)
            v = v[np.isfinite(v) & (v > 0)]
            if v.size < 2:
                continue
            m, lo, hi, _ = sequential.interval(np.log(v), looks)
            row = {"entry": side, "label": label, "value": math.exp(m), "low": math.exp(lo),
                   "high": math.exp(hi), "processes": int(v.size), "repeats": 0}
            hit = (out.entry == side) & (out.label == label)
            if hit.any():
                out.loc[hit, list(row)] = list(row.values())
            else:
                out.loc[len(out)] = row
    return out.sort_values(["entry", "label"]).reset_index(drop=True)


def collect(registry, *, filters=None, quick: bool = False, decide_effects: bool = True) -> dict:
    """Everything the page shows, as frames and lists."""
    store = stores.open_store(registry)
    machines = machine_rows(store, filters=filters, quick=quick)
    claims = query.claims(store, filters=filters, quick=quick)
    grouped = len(machines) > GRID_MACHINES
    found, why_not, runs = [], "", {}
    if grouped:
        machines = machines.assign(group=group_labels(machines))
        why_not = (f"{len(machines)} machines: more than the page decides among "
                   f"({EFFECT_MACHINES}); ask `labkit registry effects` with --vendor, "
                   "--model or --layers for a narrower set")
    elif not machines.empty:
        runs = query.verdict_runs(store, filters=filters, quick=quick)
        if decide_effects and 1 < len(runs) <= EFFECT_MACHINES:
            found = effects.between(runs, effects.differing(claims, runs))
        elif len(runs) > EFFECT_MACHINES:
            why_not = (f"{len(runs)} machines carry verdict runs: more than the page decides "
                       f"among ({EFFECT_MACHINES}); ask `labkit registry effects` with "
                       "--vendor, --model or --layers for a narrower set")
    if machines.empty:
        ladder = None
    elif grouped:
        ladder = group_ladder(store, machines, filters=filters, quick=quick)
    else:
        ladder = ladder_points(store, runs, filters=filters, quick=quick)
    return {"registry": shown(store), "open": admission.header(store), "quick": quick,
            "machines": machines,
            "grouped": grouped, "claims": claims,
            "tally": query.tally(claims) if not claims.empty else [],
            "ladder": ladder, "effects": found, "effects_not_decided": why_not}


def shown(store: stores.Store) -> str:
    """The registry as a page names it: an S3 location as given, a local folder by its
    name only (a page is for sharing; the path is this computer's)."""
    return store.describe() if store.kind == "s3" else Path(store.root).name


def group_labels(machines):
    """A CPU group per machine: brand, family/model, layers."""
    def col(name):
        return machines[name].astype(object).where(machines[name].notna(), "?").astype(str)

    return (col("cpu_model") + " " + col("cpu_family") + "/" + col("cpu_model_id") + " ("
            + col("layers") + ")")


def group_ladder(registry, machines, *, filters=None, quick: bool = False):
    """Per (design, CPU group): the median over the group's machines of each one's median
    ns per switch, with the quartiles across those machines (a spread, not an interval)."""
    lad = query.ladder(registry, filters=filters, quick=quick, notebook=LADDER_NOTEBOOK)
    if lad.empty:
        return None
    lad = lad.merge(machines[["label", "group"]], on="label")
    g = lad.groupby(["entry", "group"]).median_ns
    out = pd.DataFrame({"value": g.median(), "low": g.quantile(0.25), "high": g.quantile(0.75),
                        "machines": g.size()}).reset_index().rename(columns={"group": "label"})
    return out.assign(processes=0, repeats=0)


def _e(v) -> str:
    return html.escape("" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))


def _recorded(v) -> str:
    """A machine's field, or that its bundle did not record it (an empty cell reads as
    'none', which is not what an older bundle says)."""
    text = _e(v)
    return text if text not in ("", "None", "nan") else '<span class="small">not recorded</span>'


def _anchor(machine_id) -> str:
    return f"m-{html.escape(str(machine_id))}"


def _num(v: float) -> str:
    return f"{v:.3g}" if math.isfinite(v) else "∞" if v > 0 else "0"


def _group_grid(data) -> str:
    m, rows = data["machines"], data["claims"]
    groups = m.groupby("group").size()
    head = "".join(f"<th>{_e(g)}<br><span class=small>{n} machines</span></th>"
                   for g, n in groups.items())
    rows = rows.merge(m[["machine", "group"]], on="machine")
    counts = rows.groupby(["claim_id", "group"]).verdict.value_counts()
    text = rows.drop_duplicates("claim_id").set_index("claim_id")["claim"]
    body = []
    for t in data["tally"]:
        cid = t["claim_id"]
        tds = []
        for g in groups.index:
            try:
                c = counts.loc[(cid, g)]
            except KeyError:
                tds.append('<td class="none">not measured</td>')
                continue
            cls = VERDICT_CLASS.get(str(c.index[0]), "other")
            tds.append(f'<td class="{cls}">' + "<br>".join(
                f"{_e(v)} {int(k)}" for v, k in c.items()) + "</td>")
        body.append(_claim_row(t, text, tds))
    return _grid_table(head, body)


def _claim_row(t: dict, text, tds: list) -> str:
    """One claim's row of a grid: its id, its text, its cells and its tally."""
    cid, line = t["claim_id"], t["line"].split(": ", 1)[1]
    return (f'<tr class="claim" id="c-{_e(cid)}"><th class="cid">{_e(cid)}</th>'
            f'<td class="claim-text">{_e(text.get(cid, ""))}</td>{"".join(tds)}'
            f'<td class="tally">{_e(line)}</td></tr>')


def _grid_table(head: str, body: list) -> str:
    return (f'<table class="grid"><thead><tr><th>claim</th><th></th>{head}<th>tally</th>'
            f'</tr></thead><tbody>{"".join(body)}</tbody></table>')


def _machine_list(m) -> str:
    cols = [c for c in LIST_FIELDS if c in m]
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = "".join(f'<tr class="machine" id="{_anchor(r["machine"])}">'
                   + "".join(f"<td>{_e(r[c])}</td>" for c in cols) + "</tr>"
                   for r in m.to_dict(orient="records"))
    return f'<table class="mlist"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _text(row, field: str) -> str:
    """A row's text field, '' where it is missing or null (a store from before it)."""
    v = getattr(row, field, None)
    return v if isinstance(v, str) else ""


def _claims_grid(data) -> str:
    if data.get("grouped"):
        return _group_grid(data)
    m, rows = data["machines"], data["claims"]
    head = "".join(f'<th><a href="#{_anchor(r.machine)}">{_e(r.label)}</a><br>'
                   f'<span class="small">by {_e(_text(r, "publisher") or "unsigned")}'
                   f'</span></th>' for r in m.itertuples())
    cells = {(r.claim_id, r.machine): r for r in rows.itertuples()}
    text = rows.drop_duplicates("claim_id").set_index("claim_id")["claim"] \
        if "claim" in rows else {}
    body = []
    for t in data["tally"]:
        cid = t["claim_id"]
        tds = []
        for mm in m.itertuples():
            c = cells.get((cid, mm.machine))
            if c is None:
                tds.append('<td class="none">not measured</td>')
                continue
            cls = VERDICT_CLASS.get(str(c.verdict), "other")
            mark = " ✓" if str(c.check) == "recomputed: agrees" else ""
            split = _text(c, "disagreement")
            if split:
                cls += " split"
                split = (f'<div class="warn">opposite verdicts from bundles of this machine '
                         f'and commit: {_e(split)}</div>')
            tds.append(f'<td class="{cls}" title="{_e(c.check)}"><b>{_e(c.verdict)}</b>{mark}'
                       f'<br><span class="v">{_e(c.measured_value)}</span>{split}</td>')
        body.append(_claim_row(t, text, tds))
    return _grid_table(head, body)


def _ladder_svg(lad, labels: list) -> str:
    """Dots with interval bars on a log axis, a row per design, a colour per machine."""
    if lad is None or lad.empty:
        return "<p>No latency ladder in this registry.</p>"
    lad = lad[lad.value > 0]
    order = lad.groupby("entry").value.median().sort_values().index.tolist()
    lo_v = float(min(lad.value.min(), lad.low.min(skipna=True) if lad.low.notna().any()
                     else lad.value.min()))
    hi_v = float(max(lad.value.max(), lad.high.max(skipna=True) if lad.high.notna().any()
                     else lad.value.max()))
    lo_d, hi_d = math.floor(math.log10(lo_v)), math.ceil(math.log10(hi_v))
    left, width, row_h, top = 170, 640, 8 + 7 * len(labels), 30
    height = top + row_h * len(order) + 40

    def x(v):
        return left + (math.log10(v) - lo_d) / max(hi_d - lo_d, 1) * width

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="ladder" width="{left + width + 20}" '
             f'height="{height}" role="img" aria-label="ns per switch by design and machine">']
    for d in range(lo_d, hi_d + 1):
        for k in (1, 2, 5):
            v = k * 10 ** d
            if v < 10 ** lo_d or v > 10 ** hi_d:
                continue
            parts.append(f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{top - 5}" '
                         f'y2="{height - 35}" stroke="#ddd"/>')
            if k == 1:
                parts.append(f'<text x="{x(v):.1f}" y="{height - 20}" text-anchor="middle">'
                             f'{v:g}</text>')
    parts.append(f'<text x="{left + width / 2}" y="{height - 4}" text-anchor="middle">'
                 'ns per switch (log scale)</text>')
    colour = {lab: COLOURS[i % len(COLOURS)] for i, lab in enumerate(labels)}
    for i, entry in enumerate(order):
        y0 = top + i * row_h
        parts.append(f'<text x="{left - 6}" y="{y0 + row_h / 2 + 4:.1f}" text-anchor="end">'
                     f'{_e(entry)}</text>')
        for j, lab in enumerate(labels):
            r = lad[(lad.entry == entry) & (lad.label == lab)]
            if r.empty:
                continue
            r = r.iloc[0]
            y = y0 + 5 + 7 * j
            c = colour[lab]
            tip = _point_text(r)
            if r.processes or not math.isnan(r.low):
                parts.append(f'<line x1="{x(r.low):.1f}" x2="{x(r.high):.1f}" y1="{y}" '
                             f'y2="{y}" stroke="{c}" stroke-width="2"/>')
                parts.append(f'<circle cx="{x(r.value):.1f}" cy="{y}" r="3" fill="{c}">'
                             f'<title>{_e(lab)}: {_e(entry)} {_e(tip)}</title></circle>')
            else:
                parts.append(f'<circle cx="{x(r.value):.1f}" cy="{y}" r="3" fill="white" '
                             f'stroke="{c}"><title>{_e(lab)}: {_e(entry)} {_e(tip)}</title>'
                             '</circle>')
    parts.append("</svg>")
    legend = "".join(f'<span class="key"><i style="background:{colour[lab]}"></i>{_e(lab)}'
                     '</span>' for lab in labels)
    return f'<div class="legend">{legend}</div>{"".join(parts)}'


def _point_text(r) -> str:
    if getattr(r, "machines", 0) and not math.isnan(getattr(r, "machines", math.nan)):
        return (f"{_num(r.value)} ns, median of {int(r.machines)} machines (quartiles "
                f"{_num(r.low)} to {_num(r.high)} across them)")
    if r.processes:
        return (f"{_num(r.value)} [{_num(r.low)}, {_num(r.high)}] ns "
                f"({r.processes} processes)")
    return f"{_num(r.value)} ns (one process, {r.repeats} repeats: no interval over processes)"


def _ladder_table(lad, labels) -> str:
    if lad is None or lad.empty:
        return ""
    head = "".join(f"<th>{_e(lab)}</th>" for lab in labels)
    body = []
    for entry, g in lad.groupby("entry", sort=False):
        by = {r.label: r for r in g.itertuples()}
        tds = "".join(f"<td>{_e(_point_text(by[lab]))}</td>" if lab in by else "<td>—</td>"
                      for lab in labels)
        body.append(f"<tr><th>{_e(entry)}</th>{tds}</tr>")
    return (f'<table class="lad"><thead><tr><th>design</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _effects_table(rows, why_not: str = "") -> str:
    if why_not:
        return f"<p>Not decided on this page: {_e(why_not)}.</p>"
    if not rows:
        return "<p>No machine effect to decide: no claim with a rule differs between " \
               "machines that carry verdict runs.</p>"
    body = "".join(
        f'<tr><th><a href="#c-{_e(r["claim_id"])}">{_e(r["claim_id"])}</a></th>'
        f'<td>{_e(r["machine_a"])} / {_e(r["machine_b"])}</td><td><b>{_e(r["outcome"])}</b></td>'
        f'<td>{_num(r["ratio"])} [{_num(r["low"])}, {_num(r["high"])}]</td>'
        f'<td>{r["processes"][0]} and {r["processes"][1]}</td></tr>' for r in rows)
    return ('<table class="eff"><thead><tr><th>claim</th><th>machine A / machine B</th>'
            '<th>decided</th><th>ratio of ratios [interval]</th><th>processes</th></tr>'
            f'</thead><tbody>{body}</tbody></table><p class="small">{_e(rows[0]["method"])}</p>')


def _machine_section(m, effect_rows, why_not: str = "") -> str:
    fields = "".join(f"<tr><th>{_e(head)}</th><td>{_recorded(getattr(m, key, None))}</td></tr>"
                     for key, head in HARDWARE if key in m._fields)
    mine = [r for r in effect_rows if m.label in (r["machine_a"], r["machine_b"])]
    synthetic = ' <span class="syn">synthetic</span>' if str(getattr(m, "synthetic", "")) \
        in ("True", "true") else ""
    flags = f'<p class="warn">{_e(_text(m, "flags"))}</p>' if _text(m, "flags") else ""
    return (f'<section class="machine" id="{_anchor(m.machine)}"><h3>{_e(m.label)}{synthetic}'
            f'</h3><p class="small">machine {_e(m.machine)}, bundle {_e(m.bundle)}, published '
            f'by {_e(_text(m, "publisher") or "unsigned")} '
            f'({_e(_text(m, "fingerprint") or "no key")})</p>{flags}'
            f'<table class="hw">{fields}</table><h4>Machine effects with this machine</h4>'
            f'{_effects_table(mine, why_not)}</section>')


CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ddd;padding:3px 6px;
vertical-align:top}thead th{background:#f4f4f4;position:sticky;top:0}
.grid td{font-size:12px;min-width:9em}.claim-text{max-width:26em;font-size:12px;color:#555}
.rep{background:#e3f4e3}.con{background:#fbe3e3}.inc{background:#eee}.other{background:#fff7e0}
.none{color:#999}.v{font-family:ui-monospace,monospace}.tally{font-size:12px}
.small{font-size:12px;color:#666}.legend .key{margin-right:1.2em;font-size:12px}
.legend i{display:inline-block;width:.8em;height:.8em;margin-right:.3em;border-radius:50%}
svg.ladder text{font-size:11px;fill:#333}.machine{border-top:1px solid #ccc;margin-top:1.5em}
.hw th{text-align:left;background:#fafafa;font-weight:normal;color:#555}
.syn{background:#fd0;padding:0 .4em;font-size:12px}nav a{margin-right:1em}
.split{outline:2px solid #d60}.warn{color:#a40;font-size:12px}
.open{background:#fff3d6;border:1px solid #d60;padding:.4em}
"""


def render(data: dict) -> str:
    """The page as HTML text."""
    m = data["machines"]
    labels = list(m.label) if not m.empty else []
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    mode = "quick" if data["quick"] else "full"
    opened = f'<p class="open">{_e(data["open"])}</p>' if data.get("open") else ""
    if m.empty:
        body = f"<p>The registry {_e(data['registry'])} holds no {mode} bundles.</p>"
    elif data.get("grouped"):
        labels = sorted(m.group.unique())
        body = f"""
<p>{len(m)} machines in {len(labels)} CPU groups, {len(data['tally'])} claims ({mode} runs),
from the registry {_e(data['registry'])}; built {when}. More than {GRID_MACHINES} machines:
each column is a CPU group with its verdict counts.</p>
<h2 id="claims">Claims against CPU groups</h2>
{_claims_grid(data)}
<h2 id="ladder">The ladder across CPUs</h2>
<p class="small">Dots: the median over a group's machines of each machine's median ns per
switch; bars: the quartiles across those machines (how machines of one CPU spread, not an
interval of a mean). Absolute nanoseconds belong to their machines.</p>
{_ladder_svg(data['ladder'], labels)}
{_ladder_table(data['ladder'], labels)}
<h2 id="effects">Machine effects, decided</h2>
{_effects_table(data['effects'], data['effects_not_decided'])}
<h2 id="machines">Machines</h2>
{_machine_list(m)}"""
    else:
        machines = "".join(_machine_section(r, data["effects"], data["effects_not_decided"])
                           for r in m.itertuples())
        nav = "".join(f'<a href="#{_anchor(r.machine)}">{_e(r.label)}</a>' for r in m.itertuples())
        body = f"""
<p>{len(m)} machines, {len(data['tally'])} claims ({mode} runs), from the registry
{_e(data['registry'])}; built {when}. Each verdict was recomputed by the registry from the
bundle's own per-process statistics where the bundle carries them (✓; hover a cell for how
it was checked).</p>
<nav>machines: {nav}</nav>
<h2 id="claims">Claims against machines</h2>
{_claims_grid(data)}
<h2 id="ladder">The ladder across CPUs</h2>
<p class="small">Filled dots with bars: geometric mean over fresh processes with its 95%
repeated confidence interval (the design's verdict runs). Hollow dots: the median of one
process's repeats (the ladder's own sweep), which has no interval over processes.
Absolute nanoseconds belong to their machine.</p>
{_ladder_svg(data['ladder'], labels)}
{_ladder_table(data['ladder'], labels)}
<h2 id="effects">Machine effects, decided</h2>
{_effects_table(data['effects'], data['effects_not_decided'])}
<h2 id="machines">Machines</h2>
{machines}"""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>labkit registry gallery</title><style>{CSS}</style></head>
<body><h1>labkit registry: claims across machines</h1>{opened}{body}</body></html>
"""


def build(registry, out, *, filters=None, quick: bool = False) -> Path:
    """Write the gallery into the folder `out` (made if needed); returns the page's path."""
    if not isinstance(out, (str, Path)) or not str(out):
        raise TypeError(f"out must be a folder path; got {out!r}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"out must be a folder; {out} is a file")
    page = render(collect(registry, filters=filters, quick=quick))
    with atomic_path(out / PAGE) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return out / PAGE
