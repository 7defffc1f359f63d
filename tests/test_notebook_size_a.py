"""Notebooks 01-06 narrate, call labkit, plot and judge; their analysis lives in
labkit.lab.analysis. A notebook whose code grows past a screenful or two fails here: move
the new code into its analysis module."""
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
MINE = ["01_stack_size", "02_optimisation_levels", "03_symmetric_vs_asymmetric",
        "04_latency_ladder", "05_kernel_switches", "06_fp_state_and_return"]
MOST = 60


def code_lines(text: str) -> int:
    """Lines that are neither blank nor comments (jupytext's markdown cells are comments)."""
    return sum(1 for line in text.splitlines()
               if line.strip() and not line.lstrip().startswith("#"))


def test_code_lines_counts_code_only():
    text = "# %% [markdown]\n# # Title\n\n# %%\nimport labkit\n  # why\nx = 1  # a note\n"
    assert code_lines(text) == 2


@pytest.mark.parametrize("name", MINE)
def test_notebook_code_fits(name):
    n = code_lines((NOTEBOOKS / f"{name}.py").read_text())
    assert n <= MOST, (f"{name} has {n} lines of code (at most {MOST}): move its analysis "
                       f"into labkit/lab/analysis/")


@pytest.mark.parametrize("name", MINE)
def test_notebook_cites_the_registry_and_the_sources(name):
    text = (NOTEBOOKS / f"{name}.py").read_text()
    assert "CLAIMS.md" not in text
    assert "data/claims.csv" in text and "docs/sources.md" in text
