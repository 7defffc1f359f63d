"""The lab's notebooks: which there are and in what order they run (the registry that
reproduce, the report, bundles and stability share), and the start page's index of them,
each with its title, the claims it judges and its last verdicts."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from labkit.core import results
from labkit.errors import ParameterError
from labkit.lab import experiment
from labkit.lab.judging import claims, verdicts

NOTEBOOKS = results.notebooks_dir()
LEDGER = "00_claims_ledger"  # runs last (it reads everyone's verdicts), shown first
NOTEBOOK_GLOB = "[0-9][0-9]*_*.py"


def notebook_sources(only: list[str] | None = None) -> list[Path]:
    """The notebooks in the order they run: the experiments (NN_name.py, and NNa_name.py,
    NNb_name.py for the parts of one split in two), then the ledger."""
    found = sorted(NOTEBOOKS.glob(NOTEBOOK_GLOB), key=lambda p: (p.stem == LEDGER, p.stem))
    if only:
        unknown = set(only) - {p.stem for p in found}
        if unknown:
            raise ParameterError("only", f"must name notebooks in {NOTEBOOKS}: unknown "
                                 f"{sorted(unknown)}; known: {[p.stem for p in found]}")
        found = [p for p in found if p.stem in only]
    return found


def experiments() -> list[str]:
    """The experiment notebooks' names, in order (every notebook but the ledger)."""
    return [p.stem for p in notebook_sources() if p.stem != LEDGER]


def _title(source: Path) -> str:
    for line in source.read_text().splitlines():
        m = re.match(r"#\s*#\s+(.*)", line)
        if m:
            return m.group(1).replace("`", "").strip()
    return source.stem


def experiment_index():
    """Every experiment notebook (notebooks/NN_*.py) with its title, the claims it judges
    and, where a run left them, its last verdicts: the start page's live table."""
    registered = claims.registry()
    rows = []
    for src in notebook_sources() + [NOTEBOOKS / "compare_machines.py"]:
        if not src.exists():
            continue
        name = src.stem
        mine = registered[registered.notebook == name].claim_id.tolist()
        last = ""
        record = experiment.RECORDS.get(name)  # compare_machines has none
        vfile = results.data_dir() / f"{record.verdicts}.csv" if record else None
        if name != LEDGER and vfile is not None and vfile.exists():
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
