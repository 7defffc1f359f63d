"""The start page's index: every experiment notebook with its title, the claims it judges
and its last verdicts, each a link that JupyterLab opens."""
from __future__ import annotations

import html
import re
from pathlib import Path


def _title(source: Path) -> str:
    for line in source.read_text().splitlines():
        m = re.match(r"#\s*#\s+(.*)", line)
        if m:
            return m.group(1).replace("`", "").strip()
    return source.stem


def experiment_index():
    """Every experiment notebook (notebooks/NN_*.py) with its title, the claims it judges
    and, where a run left them, its last verdicts: the start page's live table."""
    import pandas as pd

    from labkit.lab import reproduce, verdicts

    from labkit.core import results

    claims = verdicts.claims()
    rows = []
    for src in reproduce.notebook_sources() + [reproduce.NOTEBOOKS / "compare_machines.py"]:
        if not src.exists():
            continue
        name = src.stem
        mine = claims[claims.notebook == name].claim_id.tolist()
        last = ""
        vfile = results.data_dir() / f"{name}_verdicts.csv"
        if name != reproduce.LEDGER and vfile.exists():
            v = pd.read_csv(vfile)
            last = ", ".join(f"{n} {verdict}" for verdict, n in v.verdict.value_counts().items())
        rows.append({"notebook": src.name, "title": _title(src), "claims": ", ".join(mine),
                     "last verdicts": last})
    return pd.DataFrame(rows)


class _Index:
    def __init__(self, frame):
        self.frame = frame

    def _repr_html_(self):
        t = self.frame.copy()
        t["notebook"] = [f'<a href="{html.escape(n)}">{html.escape(n)}</a>' for n in t.notebook]
        t["title"] = t["title"].map(html.escape)
        return t.to_html(index=False, escape=False, border=0)

    def __repr__(self):
        return self.frame.to_string(index=False)


def show_index():
    """experiment_index() with each notebook a link (JupyterLab opens it on a click)."""
    return _Index(experiment_index())
