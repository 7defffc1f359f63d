"""Every notebook narrates, calls labkit, shows and judges; its analysis lives in
labkit.lab.analysis. The notebooks are read from their experiments' records
(labkit.lab.experiment), so a new notebook is checked here with its record. A notebook
whose code grows past a screenful or two fails here: move the new code into its analysis
module. Its code names no data file, no side of its design and picks no verdict row by
claim id: those come from its record (exp.data, exp.part(...), exp.sides) and
labkit.lab.judging.designs.verdict_table."""
import re
from pathlib import Path

import pytest

from labkit.lab import experiment

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
MOST = 60
RECORDS = [e for e in experiment.RECORDS.values() if (NOTEBOOKS / f"{e.name}.py").exists()]
JUDGING = [e for e in RECORDS if e.claims()]


def code_lines(text: str) -> int:
    """Lines that are neither blank nor comments (jupytext's markdown cells are comments)."""
    return sum(1 for line in code(text))


def code(text: str) -> list[str]:
    """The code lines themselves, each without a trailing comment."""
    return [line.split("  #")[0] for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_code_lines_counts_code_only():
    text = "# %% [markdown]\n# # Title\n\n# %%\nimport labkit\n  # why\nx = 1  # a note\n"
    assert code_lines(text) == 2


def test_every_notebook_has_a_record():
    have = {e.name for e in RECORDS}
    assert {p.stem for p in NOTEBOOKS.glob("[0-9][0-9]*_*.py")} == have


def _id(e):
    return e.name


@pytest.mark.parametrize("record", RECORDS, ids=_id)
def test_notebook_code_fits(record):
    n = code_lines((NOTEBOOKS / f"{record.name}.py").read_text())
    assert n <= MOST, (f"{record.name} has {n} lines of code (at most {MOST}): move its "
                       "analysis into labkit/lab/analysis/")


@pytest.mark.parametrize("record", JUDGING, ids=_id)
def test_notebook_cites_the_registry_and_the_sources(record):
    text = (NOTEBOOKS / f"{record.name}.py").read_text()
    assert "CLAIMS.md" not in text
    assert "data/claims.csv" in text and "docs/sources.md" in text


@pytest.mark.parametrize("record", RECORDS, ids=_id)
def test_notebook_names_no_data_file_side_or_row(record):
    lines = code((NOTEBOOKS / f"{record.name}.py").read_text())
    # its own name is allowed where it names the notebook (params.resolve's first argument)
    files = {f for e in experiment.RECORDS.values() for f in e.files()} - {record.name}
    for line in lines:
        quoted = set(re.findall(r"""["']([^"']+)["']""", line))
        assert not quoted & files, f"{record.name}: a data file's name in {line.strip()!r}"
        assert not quoted & set(record.sides), f"{record.name}: a side in {line.strip()!r}"
        assert not re.search(r"""\[\s*["']C\d{3}\.""", line), \
            f"{record.name}: a verdict row picked by id in {line.strip()!r}"
