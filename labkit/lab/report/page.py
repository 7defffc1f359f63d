"""One self-contained HTML report from the executed notebooks: a one-screen summary (the
verdicts counted), a table of contents, the articles' eleven tables beside ours with their
figures, then each notebook's narrative, figures, texts and verdicts (code hidden), and the
machine that measured last. Offline: no script or style is fetched from anywhere, and
nothing raw is shown (no stderr, no progress bars, no object reprs, no terminal colour
codes; long tables folded)."""
from __future__ import annotations

import base64
import datetime
import html
import html.parser
import io
import re
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import mistune
import nbformat
import pandas as pd
from nbconvert import HTMLExporter

from labkit.core import envcheck, results, sequential
from labkit.core.machine import machine_info
from labkit.core.results import atomic_path
from labkit.lab import experiment
from labkit.lab.judging import claims, ledger, pictures, verdicts
from labkit.lab.report import articles, choosing
from labkit.lab.running.notebooks import LEDGER

REPORT_NAME = "labkit-report.html"
# The notebooks link their words to ../docs/glossary.md#<slug>: from notebooks/ in the
# checkout, and from <report dir>/executed/ once a copy is shipped beside the report.
# docs/glossary.md of the checkout, or its copy the wheel ships (setup.py, BuildPyWithShipped).
GLOSSARY = (results.checkout() or results.SHIPPED) / "docs" / "glossary.md"
_GLOSSARY_LINK = re.compile(r"""href=(["'])(?:\.\./)*docs/glossary\.md#([^"']*)\1""")
# A table longer than this is folded into a <details> block.
FOLD_ROWS = 20
# Progress-bar text (tqdm's '42%|'), which belongs in a terminal.
_PROGRESS = re.compile(r"\d+%\|")
# Terminal escape sequences (colours in a traceback, cursor moves): CSI, OSC and the
# two-byte ones.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
# What a notebook's output may carry for a reader: HTML, images, and Markdown text
# (display(Markdown(...)), rendered as the Markdown cells are).
_SHOWN = ("text/html", "image/png", "image/svg+xml", "text/markdown")


def strip_ansi(text: str) -> str:
    """`text` without terminal escape sequences (a traceback's colours)."""
    return _ANSI.sub("", text)


def measured_machine() -> tuple[dict, str]:
    """The machine whose rows are in data/ (their metadata columns, the one with most
    rows when several machines' rows are there), and a phrase saying where that came
    from. Without measured rows, the machine building the report, and that said."""
    machines = articles.measured_machines()
    if not machines:
        return machine_info(), ("no measured row in data/ names its machine: this is the "
                                "machine that builds the report")
    m = machines[0]
    where = (f"as the metadata columns of its {m['rows']:,} measured rows in "
             f"{len(m['files'])} data files record it")
    if len(machines) > 1:
        where += ("; data/ holds rows of other machines too: " + "; ".join(
            f"{o.get('cpu_model')} ({o['rows']:,} rows, machine {o['machine_id']})"
            for o in machines[1:]))
    return m, where


def _in_vm(info: dict) -> bool:
    return info.get("virtualization") not in (None, "none", "none detected")


def machine_warnings(info: dict, env: list[dict] | None = None) -> list[str]:
    """Conditions that make timings on this machine less stable (pyperf's spirit): the
    VM, and every condition of the environment check (`env`: its rows) that warns."""
    out = []
    if _in_vm(info):
        out.append(f"Virtual machine ({info['virtualization']}): hypervisor exits and steal "
                   "time add noise; the TSC counts reference ticks, not core cycles.")
    for r in envcheck.latest()["rows"] if env is None else env:
        if r["status"] == "warn":
            out.append(f"{r['condition']}: {r['value']}. {r['effect']}.")
    return out


def _noise(info: dict) -> str:
    """What machine_warnings counts, said as the Machine section says it: the VM, and how
    many of the environment check's conditions warn."""
    rows = envcheck.latest()["rows"]
    parts = ["the virtual machine"] if _in_vm(info) else []
    if warned := envcheck.warnings(rows):
        parts.append(f"{len(warned)} of the {len(rows)} conditions of the environment check")
    return " and ".join(parts)


def _e(v) -> str:
    return html.escape(str(v))


def _order(outcomes):
    # The ledger first among the notebooks: it is the summary of every claim.
    return sorted(outcomes, key=lambda o: (o.name != LEDGER, o.name))


def _notebook_anchor(name: str) -> str:
    return f"nb-{name}"


def _summary(outcomes, info: dict, quick: bool, tables) -> str:
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    led_path = results.data_dir() / f"{LEDGER}.csv"
    counts = forest = ""
    n_claims = None
    if led_path.exists():
        led = pd.read_csv(led_path, dtype=str).fillna("")
        n_claims = len(led)
        counts = "".join(f"<tr><td>{_e(v)}</td><td>{int(n)}</td></tr>"
                         for v, n in ledger.counts(led).items())
        counts = (f"<table class='lk-counts'><tr><th>verdict</th><th>claims</th></tr>{counts}"
                  f"<tr><td><b>total</b></td><td><b>{len(led)}</b></td></tr></table>")
        forest = _forest_html(led, info)
    else:
        counts = "<p>No claims ledger in this run.</p>"
    per_table = "".join(
        f"<tr><td><a href='#{t.anchor}'>{_e(t.key[1:])}. {_e(t.title)}</a></td><td>"
        + ", ".join(f"{n} {v}" for v, n in _tally(t).items()) + "</td></tr>" for t in tables)
    failed = [o.name for o in outcomes if not o.ok]
    status = (f"<p><b>Failed notebooks:</b> {_e(', '.join(failed))} (their claims show "
              "not-measured).</p>" if failed else "")
    warns = machine_warnings(info)
    here = machine_info()
    built = (f"Report built {when}" + (
        f" on another machine (<code>{_e(here.get('cpu_model'))}</code>, machine "
        f"{_e(here.get('machine_id'))})" if here.get("machine_id") != info.get("machine_id")
        else "") + ".")
    return (
        f"<h1 id='summary'>labkit report{' (quick mode)' if quick else ''}</h1>"
        f"<p>Measured on <code>{_e(info.get('cpu_model'))}</code> "
        f"({_e(info.get('cpu_count'))} CPUs, {_e(info.get('virtualization'))}), labkit "
        f"<code>{_e(info.get('labkit_commit'))}</code>, as the data's rows record it "
        f"(<a href='#machine'>Machine</a>). {built} Five articles' claims, judged by "
        "rules written before measuring (<code>data/claims.csv</code>); absolute times are "
        "that machine's, ratios are what travel.</p>"
        + ("<p><b>Quick mode:</b> small sweeps and few repeats, for CI. Spreads are wide; "
           "do not quote these figures.</p>" if quick else "")
        + status
        + "<div class='lk-row'><div>" + counts + "</div><div><table class='lk-counts'>"
        "<tr><th>the article's table</th><th>its rows' verdicts</th></tr>" + per_table
        + "</table></div></div>"
        + forest
        + _legend(quick, n_claims)
        + (f"<p class='lk-note'>Noise: {_noise(info)} make timings less stable here (see "
           "<a href='#machine'>Machine</a>).</p>" if warns else "")
    )


def _forest_html(led, info: dict) -> str:
    """The forest of every claim against its rule (labkit.lab.judging.pictures) as an
    inline PNG, with its caption."""
    fig = pictures.forest(led)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=results.FIGURE_DPI, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode()
    return (f"<img class='lk-fig' alt='{_e(pictures.forest_title(led))}' "
            f"src='data:image/png;base64,{data}'>"
            f"<p class='lk-note'>{_e(pictures.forest_caption(led, info))}</p>")


def _legend(quick: bool, n_claims: int | None = None) -> str:
    """One line per outcome, what the stopping rule promises about them (over the
    ledger's `n_claims`; the registry's count where there is no ledger), and the method
    in words."""
    n = len(claims.registry()) if n_claims is None else n_claims
    items = "".join(f"<li><b>{_e(v)}</b>: {_e(why)}</li>" for v, why in verdicts.LEGEND.items())
    def listed(looks):
        *most, last = looks
        return f"{', '.join(map(str, most))} and {last}" if most else str(last)

    default = sequential.schedule(quick=quick)["looks"]
    own = "; ".join(f"notebook {e.name[:2]}: {listed(e.schedule(quick=quick)['looks'])}"
                    for e in experiment.RECORDS.values()
                    if e.schedule(quick=quick)["looks"] != default)
    looks = listed(default) + " processes" + (f" ({own}; 09's are rounds of fresh servers)"
                                           if own else "")
    return (f"<ul class='lk-legend'>{items}</ul><p class='lk-note'>Timings are judged over "
            f"fresh processes, looked at after {looks}; each look's interval is a "
            f"{100 * (1 - sequential.ALPHA):.0f}% repeated confidence interval "
            "(Lan-DeMets O'Brien-Fleming spending), so a decided verdict is wrong with "
            f"probability at most {sequential.ALPHA:.0%} per claim, whatever look decided "
            f"it: among {n} claims, at most {n * sequential.ALPHA:.2f} wrong decided "
            "verdicts are expected. Exact counts (bytes, instructions) have no "
            "interval.</p>"
            f"<p class='lk-note' id='method'><b>How a verdict is reached.</b> Each claim's "
            "rule (<code>data/claims.csv</code>) names a measured quantity "
            "(<code>measured_quantity</code>, the rule's <i>x</i>) and two regions for it; "
            "a verdict row shows x with the interval its rule was applied to, and how many "
            f"fresh processes stand behind it. The method {_e(verdicts.METHOD_TEXT)}</p>")


def _tally(t) -> dict:
    out: dict = {}
    for v in t.verdicts.values():
        out[v] = out.get(v, 0) + 1
    return out


def _toc(outcomes, tables) -> str:
    """One compact block: the summary above already lists the eleven tables."""
    items = " · ".join(f"<a href='#{t.anchor}'>{_e(t.key[1:])}</a>" for t in tables)
    nbs = " · ".join(f"<a href='#{_notebook_anchor(o.name)}'>{_e(o.name)}</a>"
                     for o in _order(outcomes) if o.ok and o.executed is not None)
    return ("<nav id='toc'><b>Contents</b>: <a href='#summary'>Summary</a> | "
            f"<a href='#articles'>The articles' tables</a> ({items}) | "
            f"<a href='#notebooks'>The notebooks</a> ({nbs or 'none'}) | "
            "<a href='#closing'>Closing note</a> | <a href='#machine'>Machine</a> | "
            "<a href='#glossary'>Glossary</a></nav>")


def _figure_html(t) -> str:
    """The table's overlay figure as an inline PNG (saved too as figures/articles-*.png)."""
    try:
        fig = articles.figure(t, save=True)
    except Exception as exc:  # a figure must not cost the report: say why instead
        return f"<p class='lk-note'>No figure: {_e(type(exc).__name__)}: {_e(exc)}</p>"

    png = results.figures_dir() / f"articles-{t.key}.png"
    plt.close(fig)
    data = base64.b64encode(png.read_bytes()).decode()
    return (f"<img class='lk-fig' alt='{_e(t.title)}: the article against this machine' "
            f"src='data:image/png;base64,{data}'>")


def _articles_html(tables, names: set) -> str:
    parts = ["<h2 id='articles'>The articles' tables</h2>",
             "<p>Each table keeps the article's rows and columns: the article's number, "
             "then the median of the notebook's sweep with its spread [low, high] (the "
             "columns marked <i>sweep</i>: its quartiles, or for a ratio a 95% bootstrap "
             "interval over the sweep's repeats), the relative column the article uses, and "
             "the claim that judges the row with its verdict <i>on the interval it stands "
             "on</i>: the value and 95% repeated confidence interval its rule was applied "
             "to (the verdict files in <code>data/</code>) and the fresh processes behind "
             "it, or the exact count; beside it, what the claim's <i>x</i> is. The sweep "
             "and the verdict are separate measurements: where they differ, the verdict "
             "stands on its own interval (<a href='#method'>how</a>). Figures show the "
             "article's points (open diamonds) over the sweep's, both normalised to the "
             "article's reference row.</p>"]
    for t in tables:
        link = (f"<a href='#{t.notebook}-article-table'>measured in {_e(t.notebook)}</a>"
                if t.notebook in names else f"measured in {_e(t.notebook)} (not in this report)")
        parts.append(
            f"<section class='lk-article' id='{t.anchor}'>"
            f"<h3>{_e(t.key[1:])}. {_e(t.title)}</h3>"
            f"<p class='lk-src'><code>{_e(t.source)}</code> · {link}</p>"
            + t.frame.to_html(index=False, classes="lk-table", border=0, escape=True)
            + f"<p class='lk-note'>{_e(t.note)}</p>" + _figure_html(t) + "</section>")
    return "".join(parts)


def _closing_html(tables) -> str:
    note = articles.closing_note(tables)
    return ("<h2 id='closing'>Closing note: per table</h2><p>Each row claim's outcome, "
            "table by table, on the data of this run.</p>"
            + note.to_html(index=False, classes="lk-table", border=0))


def _cpu_html(info: dict) -> str:
    """The CPU as CPUID reports it, and the layers it runs under, in one paragraph (the
    fields a row's metadata does not carry, such as the vendor, left out)."""
    vendor = f"{_e(info['cpu_vendor'])} " if info.get("cpu_vendor") else ""
    parts = f" ({_e(info['xstate_components'])})" if info.get("xstate_components") else ""
    return (f"<p><code>{_e(info.get('cpu_model'))}</code>: {vendor}family "
            f"{_e(info.get('cpu_family'))}, model {_e(info.get('cpu_model_id'))}, stepping "
            f"{_e(info.get('cpu_stepping'))}, microcode {_e(info.get('microcode'))}; vector ISA "
            f"<code>{_e(info.get('vector_isa'))}</code>; XCR0 {_e(info.get('xcr0'))}{parts}, "
            f"an xsave area of {_e(info.get('xsave_bytes'))} bytes; "
            f"{_e(info.get('virtualization'))}; Linux {_e(info.get('kernel_release'))}, "
            f"labkit {_e(info.get('labkit_commit'))}.</p>")


def _environment_html(env: dict) -> str:
    rows = "".join(f"<tr><td>{_e(r['condition'])}</td><td>{_e(r['value'])}</td><td>"
                   + (f"<b>{_e(r['status'])}</b>" if r["status"] == envcheck.WARN
                      else _e(r["status"]))
                   + f"</td><td>{_e(r['effect'])}.</td></tr>" for r in env["rows"])
    return (f"<h3>Environment check</h3><p><small>taken {_e(env.get('taken'))}, before the "
            "run</small></p><table><tr><th>condition</th><th>value</th><th>status</th>"
            f"<th>what it does to the figures</th></tr>{rows}</table>")


def _machine_html(outcomes, info: dict, where: str = "") -> str:
    """The machine that measured (`info`, and `where` that description came from), its
    environment check, and each notebook's outcome."""
    # The fields by their names in the data's columns, so that a reader can find them there.
    rows = "".join(f"<tr><td><code>{_e(k)}</code></td><td>"
                   f"{_e(', '.join(v) if isinstance(v, list) else v)}</td></tr>"
                   for k, v in info.items())
    env = envcheck.latest()
    # The check's own warnings are its table's rows, right below.
    warns = machine_warnings(info, [])
    warning = envcheck.warnings(env["rows"])
    if warning:
        warns.append(f"{len(warning)} of the {len(env['rows'])} conditions of the "
                     "environment check warn (below).")
    warn_html = "".join(f"<li>{_e(w)}</li>" for w in warns) or "<li>none</li>"
    status = "".join(
        f"<li><b>{_e(o.name)}</b>: "
        + ("ok, from an earlier run" if getattr(o, "earlier", False)
           else f"{'ok' if o.ok else 'FAILED'} ({o.seconds:.0f} s)")
        + _parameters_html(o)
        + (f"<pre>{_e(strip_ansi(o.error)[-1500:])}</pre>" if not o.ok else "") + "</li>"
        for o in _order(outcomes))
    return (f"<h2 id='machine'>Machine</h2><p>The machine that measured, {_e(where)}; "
            "its environment check is the one the run took before measuring "
            "(<code>data/environment.json</code>).</p>" + _cpu_html(info) +
            f"<h3>Results may be unstable</h3><ul>{warn_html}</ul>"
            f"{_environment_html(env)}"
            f"<h3>Notebooks run</h3><ul>{status}</ul>"
            "<details><summary>Every metadata field</summary><table><tr><th>field</th>"
            f"<th>value</th></tr>{rows}</table></details>")


def _parameters_html(outcome) -> str:
    """The values a notebook ran with (as its injected-parameters cell records them), those
    set by -p first and marked so."""
    values = getattr(outcome, "parameters", {}) or {}
    given = set(getattr(outcome, "given", []) or [])
    if not values:
        return ""
    shown = [f"<code>-p {_e(k)} {_e(repr(values[k]))}</code>" for k in sorted(given & set(values))]
    rest = ", ".join(f"{_e(k)} = {_e(repr(v))}" for k, v in values.items() if k not in given)
    if rest:
        shown.append(f"<small>{rest}</small>")
    return ", " + ", ".join(shown)


def _html_cell(nbformat, body: str):
    """A code cell whose only output is `body` as HTML (inputs are hidden in the report)."""
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [nbformat.v4.new_output("display_data", data={"text/html": body})]
    return cell


def clean_outputs(cell) -> None:
    """Drop what a reader should not see: stderr, progress bars, object reprs, terminal
    colour codes; keep HTML, images and Markdown text; turn stdout text (noise warnings,
    notes) into a folded note; fold long tables."""
    if cell.get("cell_type") != "code":
        return
    kept = []
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            if out.get("name") == "stderr":
                continue
            text = "".join(ln for ln in strip_ansi(out.get("text", "")).splitlines(True)
                           if not _PROGRESS.search(ln) and "\r" not in ln).strip()
            if not text:
                continue
            lines = text.count("\n") + 1
            title = "Notes and noise warnings" if "WARNING" in text else "Notes"
            out = {"output_type": "display_data", "metadata": {}, "data": {"text/html": (
                f"<details class='lk-note'><summary>{title} ({lines} line"
                f"{'s' if lines > 1 else ''})</summary><pre>{_e(text)}</pre></details>")}}
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            if not any(k in data for k in _SHOWN):
                # A bare repr ([PosixPath(...)], <Figure ...>, a number echoed): not a result.
                continue
            if "text/html" in data:
                h = data["text/html"]
                h = say_missing(h if isinstance(h, str) else "".join(h))
                data = {**data, "text/html": h}
                out = {**out, "data": data}
                body = h.split("<tbody", 1)[-1]
                rows = body.count("<tr")
                if rows > FOLD_ROWS:
                    data = dict(data)
                    data["text/html"] = (f"<details><summary>table of {rows} rows "
                                         f"(the CSV in data/ has them all)</summary>{h}</details>")
                    out = {**out, "data": data}
        elif kind == "error":
            out = {**out, "traceback": [strip_ansi(t) for t in out.get("traceback", [])]}
        kept.append(out)
    cell["outputs"] = kept


# What a table cell must never show: a missing or infinite number printed raw.
# (Case matters: pandas prints NaN and None; "none" in a sentence is a word.)
_RAW_MISSING = re.compile(r"(?<![\w.])(?:NaN|nan|None|NaT|<NA>|[+-]?inf)(?![\w])")
# A column of times (ns, µs, ms, s) or of shares: a value there is never negative.
_TIME_COLUMN = re.compile(r"(?:\bns\b|ns/|ns_|_ns\b|\bµs\b|\bus\b|_us\b|\bms\b|"
                          r"\bseconds?\b|\btime\b|\bshare\b)", re.I)
_NEGATIVE = re.compile(r"(?:^|[\[(,\s])[-\u2212]\d")


class _Tables(html.parser.HTMLParser):
    """Every table's header texts and body rows (the cells' texts), tags stripped."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self._cell, self._row, self._head = [], None, None, False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"header": [], "rows": []})
        elif tag == "thead":
            self._head = True
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "thead":
            self._head = False
        elif tag in ("td", "th") and self._cell is not None:
            self._row.append(("".join(self._cell).strip(), tag))
            self._cell = None
        elif tag == "tr" and self._row is not None and self.tables:
            t = self.tables[-1]
            if self._head or (not t["rows"] and all(k == "th" for _, k in self._row)):
                # Header rows (pandas writes two with a named index) joined per column,
                # aligned on the right as the body's cells are.
                cells = [c for c, _ in self._row]
                old = t["header"]
                width = max(len(old), len(cells))
                old, cells = [""] * (width - len(old)) + old, [""] * (width - len(cells)) + cells
                t["header"] = [" ".join(x for x in (a, b) if x) for a, b in zip(old, cells)]
            else:
                t["rows"].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


# Intervals a rule could not bound, and figures of a part that was not measured, as the
# verdict tables' text writes them: said in words.
_UNBOUNDED = re.compile(r"\[(?:-?inf|nan), (?:-?inf|nan|[-\d.e+]+)\]|\[[-\d.e+]+, (?:inf|nan)\]")
_NOT_MEASURED = re.compile(r"(?<![\w.])nan \[nan, nan\]")


def say_missing(page: str) -> str:
    """An HTML output with the intervals no rule could bound written as '[unbounded]'
    and a part's 'nan [nan, nan]' as 'not measured (see the note)'."""
    page = _NOT_MEASURED.sub("not measured (see the note)", page)
    return _UNBOUNDED.sub("[unbounded]", page)


def bad_cells(page: str) -> list[str]:
    """The table cells of an HTML page that show a raw NaN, None or ±inf, or a negative
    number in a column of times or shares: what no table of the report may show. One
    line each: the column's header and the cell's text."""
    p = _Tables()
    p.feed(page)
    out = []
    for t in p.tables:
        for row in t["rows"]:
            header = t["header"][-len(row):] if len(t["header"]) >= len(row) else \
                [""] * (len(row) - len(t["header"])) + t["header"]
            for (text, _), col in zip(row, header):
                if _RAW_MISSING.search(text):
                    out.append(f"{col!r}: {text!r} (a raw missing or infinite value)")
                elif _TIME_COLUMN.search(col) and _NEGATIVE.search(text):
                    out.append(f"{col!r}: {text!r} (a negative time or share)")
    return out


_STYLE = """<style>
body{max-width:1200px;margin:auto}
.lk-row{display:flex;gap:2em;flex-wrap:wrap}
table.lk-counts,table.lk-table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}
.lk-counts td,.lk-counts th,.lk-table td,.lk-table th{border:1px solid #ccc;padding:2px 6px;text-align:left !important}
.lk-table th{background:#f3f3f3}
.lk-note{color:#444;font-size:0.9em}
.lk-fig{max-width:680px;display:block;margin:0.5em 0}
.lk-article{border-top:2px solid #ddd;margin-top:1.5em}
nav#toc{font-size:0.9em;margin:1em 0;padding:0.5em;background:#f7f7f7}
</style>"""


def glossary_slug(heading: str) -> str:
    """A heading's anchor as GitHub and JupyterLab make it: lower case, punctuation
    dropped, spaces turned into hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def glossary_html() -> str:
    """docs/glossary.md as a section of the report, each heading's id 'glossary-<slug>'."""
    body = mistune.html(GLOSSARY.read_text())
    body = re.sub(r"<h(\d)>(.*?)</h\1>", lambda m: (
        f"<h{m[1]} id='glossary-{glossary_slug(re.sub('<[^>]+>', '', html.unescape(m[2])))}'>"
        f"{m[2]}</h{m[1]}>"), body)
    # The glossary's links to its own headings, #<slug>, follow them.
    body = re.sub(r'href="#([^"]*)"', r'href="#glossary-\1"', body)
    return f"<section id='glossary'>{body}</section>"


def local_glossary_links(body: str) -> str:
    """Point the notebooks' links to docs/glossary.md at the report's own glossary."""
    return _GLOSSARY_LINK.sub(lambda m: f"href={m[1]}#glossary-{m[2]}{m[1]}", body)


def ship_glossary(out_dir: Path) -> None:
    """Copy docs/glossary.md to out_dir/docs/, where the executed notebooks' links
    (out_dir/executed/*.ipynb, ../docs/glossary.md) lead."""
    (out_dir / "docs").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(GLOSSARY, out_dir / "docs" / "glossary.md")


def make_offline(body: str) -> str:
    """Remove every script and stylesheet fetched from the network (nbconvert's templates
    pull require.js and MathJax from a CDN); the report needs no script to be read."""
    body = re.sub(r"<script[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>", "", body, flags=re.I)
    body = re.sub(r"<link[^>]*\bhref=[\"']https?://[^>]*>", "", body, flags=re.I)
    # Inline scripts that would fetch something (MathJax's configuration, the mermaid
    # loader): without the network they only fail, and the report needs neither.
    body = re.sub(r"<script\b[^>]*>(?:(?!</script>).)*?https?://(?:(?!</script>).)*?</script>",
                  "", body, flags=re.S | re.I)
    body = re.sub(r"<script type=\"text/x-mathjax-config\">.*?</script>", "", body,
                  flags=re.S | re.I)
    body = re.sub(r"@import\s+url\([\"']?https?://[^)]*\)\s*;?", "", body, flags=re.I)
    return body.replace("</head>", _STYLE + "</head>", 1)


def build(outcomes, *, out_dir: Path, quick: bool) -> Path:
    """Write out_dir/labkit-report.html (atomically) and return its path."""
    info, where = measured_machine()
    tables = articles.tables()
    ran = [o for o in _order(outcomes) if o.ok and o.executed is not None]
    names = {o.name for o in ran}
    report = nbformat.v4.new_notebook()
    report.cells.append(_html_cell(nbformat, _summary(outcomes, info, quick, tables)))
    report.cells.append(_html_cell(nbformat, _toc(outcomes, tables)))
    report.cells.append(_html_cell(nbformat, _articles_html(tables, names)))
    report.cells.append(_html_cell(nbformat, choosing.section_html()))
    report.cells.append(_html_cell(nbformat, "<h2 id='notebooks'>The notebooks</h2>"))
    for o in ran:
        nb = nbformat.read(o.executed, as_version=4)
        report.cells.append(_html_cell(
            nbformat, f"<hr><p id='{_notebook_anchor(o.name)}'><small>notebook "
                      f"<code>notebooks/{_e(o.name)}.py</code>"
                      f"{' (from an earlier run)' if getattr(o, 'earlier', False) else ''}"
                      "</small></p>"))
        for cell in nb.cells:
            tags = cell.get("metadata", {}).get("tags", [])
            if "parameters" in tags or "injected-parameters" in tags:
                continue
            clean_outputs(cell)
            report.cells.append(cell)
    report.cells.append(_html_cell(nbformat, _closing_html(tables)))
    report.cells.append(_html_cell(nbformat, _machine_html(outcomes, info, where)))
    report.cells.append(_html_cell(nbformat, glossary_html()))
    report.metadata["kernelspec"] = {"name": "labkit", "display_name": "labkit (Python 3)",
                                     "language": "python"}
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(report)
    body = local_glossary_links(make_offline(strip_ansi(body)))
    out_dir.mkdir(parents=True, exist_ok=True)
    ship_glossary(out_dir)
    path = out_dir / REPORT_NAME
    with atomic_path(path) as tmp:
        tmp.write_text(body)
    return path
