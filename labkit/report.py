"""One self-contained HTML report from the executed notebooks: the machine and its noise
warnings first, then each notebook's narrative, figures and verdicts (code hidden)."""
from __future__ import annotations

import datetime
import html
from pathlib import Path

from labkit.results import atomic_path

REPORT_NAME = "labkit-report.html"


def machine_warnings(info: dict) -> list[str]:
    """Conditions that make timings on this machine less stable (pyperf's spirit)."""
    out = []
    if info.get("virtualization") not in (None, "none", "none detected"):
        out.append(f"Virtual machine ({info['virtualization']}): hypervisor exits and steal "
                   "time add noise; the TSC counts reference ticks, not core cycles.")
    if info.get("governor") not in ("performance", "unknown"):
        out.append(f"CPU frequency governor is {info.get('governor')!r}, not 'performance'.")
    if info.get("turbo") == "on":
        out.append("Turbo boost is on: the clock rate varies with load and temperature.")
    if info.get("smt") == "1":
        out.append("SMT (hyper-threading) is on: a sibling thread shares the core's caches.")
    if not info.get("isolated_cpus"):
        out.append("No isolated CPUs: other processes may run on the measured CPU.")
    load = info.get("load_avg_1min", 0) or 0
    if load > 0.5:
        out.append(f"Load average is {load:.2f}: other work was running.")
    return out


def _machine_cell(outcomes, info: dict, quick: bool) -> str:
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in info.items()
    )
    warns = machine_warnings(info)
    warn_html = "".join(f"<li>{html.escape(w)}</li>" for w in warns) or "<li>none</li>"
    status = "".join(
        f"<li><b>{html.escape(o.name)}</b>: "
        + ("ok, from an earlier run" if getattr(o, "earlier", False)
           else f"{'ok' if o.ok else 'FAILED'} ({o.seconds:.0f} s)")
        + "".join(f", <code>-p {html.escape(str(k))} {html.escape(repr(v))}</code>"
                  for k, v in sorted(getattr(o, "parameters", {}).items()))
        + (f"<pre>{html.escape(o.error[-1500:])}</pre>" if not o.ok else "") + "</li>"
        for o in sorted(outcomes, key=lambda o: (o.name != "00_claims_ledger", o.name))
    )
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f"<h1>labkit report{' (quick mode)' if quick else ''}</h1>"
        f"<p>Built {when} from labkit commit <code>{html.escape(info['labkit_commit'])}</code>, "
        f"core built with <code>{html.escape(info['compiler'])}</code>, flags "
        f"<code>{html.escape(info['cflags'])}</code>. Machine <code>{info['machine_id']}</code>.</p>"
        + ("<p><b>Quick mode:</b> small sweeps and few repeats, for CI. Spreads are wide; "
           "do not quote these figures.</p>" if quick else "")
        + f"<h2>Results may be unstable</h2><ul>{warn_html}</ul>"
        f"<h2>Notebooks</h2><ul>{status}</ul>"
        f"<h2>Machine</h2><table>{rows}</table>"
    )


def build(outcomes, *, out_dir: Path, quick: bool) -> Path:
    """Write out_dir/labkit-report.html (atomically) and return its path."""
    import nbformat
    from nbconvert import HTMLExporter

    from labkit.machine import machine_info

    info = machine_info()
    report = nbformat.v4.new_notebook()
    report.cells.append(nbformat.v4.new_markdown_cell(_machine_cell(outcomes, info, quick)))
    # The ledger first: it is the summary the reader came for.
    ordered = sorted(outcomes, key=lambda o: (o.name != "00_claims_ledger", o.name))
    for o in ordered:
        if not o.ok or o.executed is None:
            continue
        nb = nbformat.read(o.executed, as_version=4)
        for cell in nb.cells:
            tags = cell.get("metadata", {}).get("tags", [])
            if "parameters" in tags or "injected-parameters" in tags:
                continue
            report.cells.append(cell)
    report.metadata["kernelspec"] = {"name": "labkit", "display_name": "labkit (Python 3)",
                                     "language": "python"}
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(report)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / REPORT_NAME
    with atomic_path(path) as tmp:
        tmp.write_text(body)
    return path
