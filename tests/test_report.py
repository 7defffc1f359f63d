"""The report: what a reader must not see is removed (stderr, progress bars, object
reprs), long tables are folded, nothing is fetched from the network, and the articles'
tables come first after the summary."""
import re

import nbformat
import pytest

from labkit.core import results
from labkit.lab import report


def _cell(*outputs):
    c = nbformat.v4.new_code_cell("")
    c.outputs = list(outputs)
    return c


def test_stderr_progress_bars_and_reprs_are_removed():
    cell = _cell(
        nbformat.v4.new_output("stream", name="stderr", text="Traceback? no: a warning\n"),
        nbformat.v4.new_output("stream", name="stdout", text="ping-pong:   0%|    | 0/49\n"),
        nbformat.v4.new_output("execute_result", execution_count=1, data={
            "text/plain": "[PosixPath('/r/figures/01_stack_size-ring.png')]"}),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="}))
    report.clean_outputs(cell)
    assert [o["output_type"] for o in cell.outputs] == ["display_data"]
    assert "image/png" in cell.outputs[0]["data"]


def test_noise_warnings_become_a_folded_note_and_long_tables_fold():
    rows = "".join(f"<tr><td>{i}</td></tr>" for i in range(49))
    cell = _cell(
        nbformat.v4.new_output("stream", name="stdout",
                               text="WARNING: entry=asm: std dev is 12% of the mean\n"),
        nbformat.v4.new_output("display_data", data={
            "text/html": f"<table><thead><tr><th>n</th></tr></thead><tbody>{rows}</tbody></table>"}),
        nbformat.v4.new_output("display_data", data={"text/html": "<table><tr></tr></table>"}))
    report.clean_outputs(cell)
    note, long, short = (o["data"]["text/html"] for o in cell.outputs)
    assert note.startswith("<details") and "Notes and noise warnings" in note
    assert "std dev is 12%" in note
    assert long.startswith("<details") and "table of 49 rows" in long
    assert not short.startswith("<details")


def test_make_offline_drops_every_remote_script_and_stylesheet():
    page = ("<html><head><script src=\"https://cdn.example/require.js\"></script>"
            "<script type=\"text/x-mathjax-config\">MathJax.Hub.Config({})</script>"
            "<script type=\"module\">const u = \"https://cdn.example/mermaid.mjs\";</script>"
            "<link rel=\"stylesheet\" href=\"https://cdn.example/x.css\">"
            "<script>var local = 1;</script></head><body>ok</body></html>")
    out = report.make_offline(page)
    assert not re.search(r"<(script|link)[^>]*(src|href)=[\"']https?://", out)
    assert "cdn.example" not in out
    assert "var local = 1" in out and "<style>" in out


@pytest.mark.notebook
def test_report_from_recorded_results_starts_with_summary_then_the_articles(
        tmp_path, monkeypatch):
    import shutil

    shutil.copytree(results.REPO / "data", tmp_path / "data")
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    path = report.build([], out_dir=tmp_path / "out", quick=False)
    text = path.read_text()
    assert not re.search(r"<script[^>]*src=[\"']https?://", text)
    order = [re.search(f"id=[\"']{a}[\"']", text).start() for a in ("summary", "toc", "articles", "notebooks",
                                               "closing", "machine")]
    assert order == sorted(order)
    assert len(re.findall(r"<section class=[\"']lk-article[\"']", text)) == 11
    assert "PosixPath" not in text
    assert len(list((tmp_path / "figures").glob("articles-t*.png"))) == 11
    # The articles' tables, from the committed full run: no raw NaN/None/inf, no
    # negative time or share, whatever the rows below them held.
    assert report.bad_cells(text) == []


@pytest.mark.notebook
def test_a_built_quick_report_shows_no_raw_missing_value_or_negative_time():
    """The quick report `labkit reproduce --quick` last built here, every table of it."""
    path = results.REPO / "reports" / "quick" / report.REPORT_NAME
    if not path.exists():
        pytest.skip(f"no quick report at {path}: run `labkit reproduce --quick` first")
    assert report.bad_cells(path.read_text()) == []


def test_bad_cells_finds_raw_missing_values_and_negative_times():
    page = ("<table><thead><tr><th></th><th>ns per pair</th><th>% over 4 KB, here</th>"
            "<th>heap / pool spread</th><th>share switching</th></tr></thead><tbody>"
            "<tr><th>0</th><td>-1.3</td><td>-3%</td><td>NaN -inf .. inf</td><td>0.2 [-0.1, 0.4]</td></tr>"
            "<tr><th>1</th><td>13.8</td><td>+40%</td><td>1.0 .. 2.0</td><td>None</td></tr>"
            "<tr><th>2</th><td>below resolution (&lt; 2 ns)</td><td>+1%</td><td>inf</td>"
            "<td>12.5 [10, 15]%</td></tr></tbody></table>")
    bad = report.bad_cells(page)
    assert len(bad) == 5, bad
    assert any("'-1.3'" in b and "negative" in b for b in bad)
    assert any("NaN -inf" in b for b in bad) and any("None" in b for b in bad)
    assert any("[-0.1" in b for b in bad)
    # A relative change may be negative; words and intervals above zero are fine.
    assert not any("-3%" in b or "below resolution" in b or "+40%" in b for b in bad)


def test_bad_cells_reads_pandas_two_row_headers():
    import pandas as pd

    df = pd.DataFrame({"ns_per_switch": [1.0, -2.0], "note": ["ok", "fine"]},
                      index=pd.Index(["a", "b"], name="entry"))
    bad = report.bad_cells(df.to_html())
    assert bad == ["'ns_per_switch': '-2.0' (a negative time or share)"]
    assert report.bad_cells(df.assign(ns_per_switch=[1.0, 2.0]).to_html()) == []


def test_say_missing_puts_unbounded_intervals_and_unmeasured_parts_in_words():
    text = report.say_missing("<td>share ratio 0.04 [-inf, inf], gain 1.33 [1.10, 1.41]</td>"
                              "<td>mem=0.708 [0.708, 0.708], tps=nan [nan, nan]</td>")
    assert "inf" not in text and "nan" not in text
    assert "[unbounded]" in text and "tps=not measured" in text
    assert "[1.10, 1.41]" in text and "[0.708, 0.708]" in text
    assert report.bad_cells(f"<table><tr><td>{text}</td></tr></table>") == []


def test_machine_section_shows_the_cpu_and_the_runs_environment_check(tmp_path, monkeypatch):
    from labkit.core import envcheck
    from labkit.core.machine import machine_info

    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    rows = envcheck.check()
    rows[0] = {**rows[0], "value": "2 (as recorded)", "status": "warn"}  # the run's, not now's
    envcheck.save(rows)
    info = machine_info()
    text = report._machine_html([], info)
    assert "Environment check" in text and "2 (as recorded)" in text
    assert text.count("<tr><td>") == len(envcheck.KEYS)
    assert all(report._e(r["effect"]) in text for r in rows)
    assert f"microcode {report._e(info['microcode'])}" in text
    assert f"XCR0 {info['xcr0']}" in text
    # What warns in the check is what the summary counts as making timings unstable.
    warns = report.machine_warnings(info)
    assert sum(w.startswith(r["condition"]) for w in warns for r in rows
               if r["status"] == "warn") == len(envcheck.warnings(rows))
