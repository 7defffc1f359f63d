"""The notebooks' Markdown reads at a learner's pace, and its glossary links lead somewhere.

A notebook fails when the median length of its Markdown sentences is over MOST words.
The counting rule, applied to the `# %% [markdown]` cells of notebooks/NN_*.py and
notebooks/compare_machines.py:

- not counted: headings (`#` lines), table rows (`|` lines), fenced code blocks, math
  (`$...$` and `$$...$$`), HTML tags (`<a id=...>`);
- a code span (`` `labkit.core.sequential` ``) counts as one word, a link as its text;
- a list item is a sentence unit of its own (its marker, `-`, `*` or `1.`, is dropped),
  and so is each paragraph: a blank line or a new item ends the sentence before it;
- inside a unit, a sentence ends at `.`, `!` or `?`, perhaps followed by a closing
  bracket or quote, and then a space (the dots of "e.g." and "i.e." do not end one);
- a word is a run of non-space characters holding a letter or a digit.

Glossary links are Markdown links whose target is `.../docs/glossary.md#anchor`; each
anchor must be the GitHub-style slug of a heading in docs/glossary.md (lower case,
punctuation dropped, spaces turned into hyphens)."""
import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.py")) + [
    ROOT / "notebooks" / "compare_machines.py"]
GLOSSARY = ROOT / "docs" / "glossary.md"
MOST = 20

_CELL = re.compile(r"^# %%(.*)$", re.M)
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "etc.")
_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][)\"'”]))\s+")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)")


def markdown_cells(text: str) -> list[str]:
    """The Markdown cells of a jupytext percent-format notebook, comment markers removed."""
    parts = _CELL.split(text)
    # parts: [before the first cell, header 1, body 1, header 2, body 2, ...]
    cells = []
    for header, body in zip(parts[1::2], parts[2::2]):
        if "[markdown]" not in header:
            continue
        lines = [re.sub(r"^# ?", "", line) if line.startswith("#") else line
                 for line in body.splitlines()]
        cells.append("\n".join(lines))
    return cells


def units(cell: str) -> list[str]:
    """Paragraphs and list items, each joined into one line, with what is not prose gone."""
    out, current, fenced = [], [], False

    def close():
        if current:
            out.append(" ".join(current))
            current.clear()

    for line in cell.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            close()
            continue
        if fenced or not stripped or stripped.startswith(("#", "|", "$$")):
            close()
            continue
        if _ITEM.match(line):
            close()
            line = _ITEM.sub("", line)
        current.append(line.strip())
    close()
    return out


def sentences(unit: str) -> list[str]:
    """One unit cut at its sentence ends, code spans, math, links and tags reduced first."""
    text = re.sub(r"`[^`]*`", "CODE", unit)
    text = re.sub(r"\$[^$]*\$", " ", text)
    text = _LINK.sub(r"\1", text)
    text = re.sub(r"<[^>]+>", " ", text)
    for abbreviation in _ABBREVIATIONS:
        text = text.replace(abbreviation, abbreviation.replace(".", ""))
    return [s for s in _END.split(text) if words(s)]


def words(sentence: str) -> int:
    return sum(1 for token in sentence.split() if re.search(r"[A-Za-z0-9]", token))


def sentence_lengths(text: str) -> list[int]:
    return [words(s) for cell in markdown_cells(text) for unit in units(cell)
            for s in sentences(unit)]


def median_sentence(path: Path) -> float:
    lengths = sentence_lengths(path.read_text())
    return statistics.median(lengths) if lengths else 0.0


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def glossary_anchors() -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+)$", GLOSSARY.read_text(), re.M)}


def glossary_links(text: str) -> list[str]:
    """The anchors of the links to docs/glossary.md in a notebook's Markdown."""
    return [target.split("#", 1)[1] if "#" in target else ""
            for cell in markdown_cells(text) for _, target in _LINK.findall(cell)
            if target.split("#")[0].endswith("docs/glossary.md")]


def test_the_counting_rule():
    text = ("# %% [markdown]\n# # A heading that is long and is not counted at all here\n#\n"
            "# One two three, e.g. four. `labkit.core.sequential` is one word!\n"
            "# (A bracket ends.) Then this.\n"
            "# - an item of four\n# - another item\n#\n# | a | table | row |\n\n"
            "# %%\nx = 'code is not prose. At all.'\n")
    assert sentence_lengths(text) == [5, 4, 3, 2, 4, 2]


def test_a_long_sentence_fails_the_median():
    long = "# %% [markdown]\n# " + " ".join(["word"] * (MOST + 1)) + ".\n"
    assert statistics.median(sentence_lengths(long)) > MOST


def test_a_link_to_a_missing_heading_is_caught():
    text = ("# %% [markdown]\n# An [ABBA](../docs/glossary.md#abba) pass, a "
            "[look](../docs/glossary.md#no-such-word) and [a page](../README.md#abba).\n")
    assert glossary_links(text) == ["abba", "no-such-word"]
    assert "abba" in glossary_anchors() and "no-such-word" not in glossary_anchors()


def test_slug_matches_githubs():
    assert slug("ABBA") == "abba"
    assert slug("Share of time switching") == "share-of-time-switching"
    assert slug("Fresh process (worker)") == "fresh-process-worker"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_median_sentence_is_short(path):
    median = median_sentence(path)
    assert median <= MOST, (f"{path.name}: the median Markdown sentence is {median:g} "
                            f"words (at most {MOST}); split its long sentences")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_glossary_links_resolve(path):
    anchors = glossary_anchors()
    for anchor in glossary_links(path.read_text()):
        assert anchor in anchors, f"{path.name}: no heading in docs/glossary.md for #{anchor}"


def _linked_anchors() -> set[str]:
    return {a for path in NOTEBOOKS for a in glossary_links(path.read_text())}


def test_jupyterlab_gives_every_linked_heading_the_anchor_its_links_use():
    # JupyterLab's id for a heading is its text with spaces turned into hyphens, case kept;
    # GitHub's is slug(). A linked heading must read the same both ways.
    headings = re.findall(r"^#+\s+(.+)$", GLOSSARY.read_text(), re.M)
    jupyterlab = {h.strip().replace(" ", "-") for h in headings}
    assert _linked_anchors() - jupyterlab == set()


def test_the_report_inlines_the_glossary_and_ships_it_beside_the_executed_copies(
        tmp_path, monkeypatch):
    import nbformat

    from labkit.lab.report import page
    from labkit.lab.running.notebook_run import Outcome

    assert page.glossary_slug("cross-CPU wake-up") == slug("cross-CPU wake-up")
    section = page.glossary_html()
    assert {a for a in _linked_anchors()
            if f"id='glossary-{a}'" not in section} == set()
    assert 'href="#glossary-kernel"' in section  # the glossary's own links follow it
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    (tmp_path / "data").mkdir()
    executed = tmp_path / "out" / "executed" / "02_optimisation_levels.ipynb"
    executed.parent.mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(
        "An [ABBA](../docs/glossary.md#abba) pass and [the README](../README.md)."))
    nbformat.write(nb, executed)
    text = page.build([Outcome("02_optimisation_levels", True, 1.0, executed)],
                      out_dir=tmp_path / "out", quick=True).read_text()
    assert 'href="#glossary-abba"' in text
    assert re.search(r"id=[\"']glossary-abba[\"']", text)
    assert "docs/glossary.md" not in text and 'href="../README.md"' in text
    # The executed copy's own link, ../docs/glossary.md from executed/, now leads somewhere.
    shipped = (executed.parent / "../docs/glossary.md").resolve()
    assert shipped.read_text() == GLOSSARY.read_text()
