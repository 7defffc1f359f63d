"""The report: what a reader must not see is removed (stderr, progress bars, object
reprs), long tables are folded, nothing is fetched from the network, and the articles'
tables come first after the summary."""
import re

import nbformat
import pytest

from labkit.core import results
from labkit.lab.report import page


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
    page.clean_outputs(cell)
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
    page.clean_outputs(cell)
    note, long, short = (o["data"]["text/html"] for o in cell.outputs)
    assert note.startswith("<details") and "Notes and noise warnings" in note
    assert "std dev is 12%" in note
    assert long.startswith("<details") and "table of 49 rows" in long
    assert not short.startswith("<details")


def test_make_offline_drops_every_remote_script_and_stylesheet():
    html = ("<html><head><script src=\"https://cdn.example/require.js\"></script>"
            "<script type=\"text/x-mathjax-config\">MathJax.Hub.Config({})</script>"
            "<script type=\"module\">const u = \"https://cdn.example/mermaid.mjs\";</script>"
            "<link rel=\"stylesheet\" href=\"https://cdn.example/x.css\">"
            "<script>var local = 1;</script></head><body>ok</body></html>")
    out = page.make_offline(html)
    assert not re.search(r"<(script|link)[^>]*(src|href)=[\"']https?://", out)
    assert "cdn.example" not in out
    assert "var local = 1" in out and "<style>" in out


@pytest.mark.notebook
def test_report_from_recorded_results_starts_with_summary_then_the_articles(
        tmp_path, monkeypatch):
    import shutil

    shutil.copytree(results.REPO / "data", tmp_path / "data")
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    path = page.build([], out_dir=tmp_path / "out", quick=False)
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
    assert page.bad_cells(text) == []


@pytest.mark.notebook
def test_a_built_quick_report_shows_no_raw_missing_value_or_negative_time():
    """The quick report `labkit reproduce --quick` last built here, every table of it."""
    path = results.REPO / "reports" / "quick" / page.REPORT_NAME
    if not path.exists():
        pytest.skip(f"no quick report at {path}: run `labkit reproduce --quick` first")
    assert page.bad_cells(path.read_text()) == []


def test_bad_cells_finds_raw_missing_values_and_negative_times():
    html = ("<table><thead><tr><th></th><th>ns per pair</th><th>% over 4 KB, here</th>"
            "<th>heap / pool spread</th><th>share switching</th></tr></thead><tbody>"
            "<tr><th>0</th><td>-1.3</td><td>-3%</td><td>NaN -inf .. inf</td><td>0.2 [-0.1, 0.4]</td></tr>"
            "<tr><th>1</th><td>13.8</td><td>+40%</td><td>1.0 .. 2.0</td><td>None</td></tr>"
            "<tr><th>2</th><td>below resolution (&lt; 2 ns)</td><td>+1%</td><td>inf</td>"
            "<td>12.5 [10, 15]%</td></tr></tbody></table>")
    bad = page.bad_cells(html)
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
    bad = page.bad_cells(df.to_html())
    assert bad == ["'ns_per_switch': '-2.0' (a negative time or share)"]
    assert page.bad_cells(df.assign(ns_per_switch=[1.0, 2.0]).to_html()) == []


def test_say_missing_puts_unbounded_intervals_and_unmeasured_parts_in_words():
    text = page.say_missing("<td>share ratio 0.04 [-inf, inf], gain 1.33 [1.10, 1.41]</td>"
                              "<td>mem=0.708 [0.708, 0.708], tps=nan [nan, nan]</td>")
    assert "inf" not in text and "nan" not in text
    assert "[unbounded]" in text and "tps=not measured" in text
    assert "[1.10, 1.41]" in text and "[0.708, 0.708]" in text
    assert page.bad_cells(f"<table><tr><td>{text}</td></tr></table>") == []


def test_machine_section_shows_the_cpu_and_the_runs_environment_check(tmp_path, monkeypatch):
    from labkit.core import envcheck
    from labkit.core.machine import machine_info

    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    rows = envcheck.check()
    rows[0] = {**rows[0], "value": "2 (as recorded)", "status": "warn"}  # the run's, not now's
    envcheck.save(rows)
    info = machine_info()
    text = page._machine_html([], info)
    assert "Environment check" in text and "2 (as recorded)" in text
    check = text[:text.index("Every metadata field")]
    assert check.count("<tr><td>") == len(envcheck.KEYS)
    assert all(page._e(r["effect"]) in text for r in rows)
    assert f"microcode {page._e(info['microcode'])}" in text
    assert f"XCR0 {info['xcr0']}" in text
    # What warns in the check is what the summary counts as making timings unstable.
    warns = page.machine_warnings(info)
    assert sum(w.startswith(r["condition"]) for w in warns for r in rows
               if r["status"] == "warn") == len(envcheck.warnings(rows))


def _fixture_run(root):
    """A results folder as a run leaves it, small: a ledger of three claims, one data file
    whose rows name a machine that is not this one, and an executed notebook that wrote
    Markdown, beside a notebook that failed with a coloured traceback."""
    import pandas as pd

    from labkit.core.machine import ROW_METADATA, machine_info
    from labkit.lab.running.notebook_run import Outcome

    data = root / "data"
    data.mkdir(parents=True)
    pd.DataFrame({"claim_id": ["C000.2", "C000.3", "C002.3"],
                  "verdict": ["reproduced", "contradicted", "inconclusive"]}).to_csv(
        data / "00_claims_ledger.csv", index=False)
    info = machine_info()
    row = {k: info[k] for k in ROW_METADATA}
    row.update(machine_id="feedfacecafe", cpu_model="Fixture CPU 9000", cpu_count=64,
               virtualization="none", labkit_commit="0123456789ab")
    pd.DataFrame([{"entry": "asm", "ns_per_switch": 2.0, **row}] * 3).to_csv(
        data / "fixture_rows.csv", index=False)
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell("# 07b · Memory"))
    nb.cells.append(_cell(nbformat.v4.new_output("display_data", data={
        "text/markdown": "**Bytes per suspended coroutine** (n = 1,000,000): conn256/heap 272 B",
        "text/plain": "<IPython.core.display.Markdown object>"}),
        nbformat.v4.new_output("stream", name="stdout",
                               text="\x1b[1;33mWARNING\x1b[0m: noisy group\n")))
    executed = root / "07b_coroutine_memory.ipynb"
    nbformat.write(nb, executed)
    ok = Outcome("07b_coroutine_memory", True, 1.0, executed)
    failed = Outcome("05_kernel_switches", False, 2.0, None, error=(
        "\x1b[0;31m---------\x1b[0m\n\x1b[0;31mValueError\x1b[0m: entry must be one of ..."))
    return [ok, failed]


def test_report_keeps_markdown_drops_ansi_and_describes_the_measuring_machine(
        tmp_path, monkeypatch):
    from labkit.core.machine import machine_info

    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    outcomes = _fixture_run(tmp_path)
    text = page.build(outcomes, out_dir=tmp_path / "out", quick=True).read_text()
    # The notebook's Markdown output, rendered as Markdown.
    assert ("<strong>Bytes per suspended coroutine</strong> (n = 1,000,000): "
            "conn256/heap 272 B") in text
    # No terminal escape anywhere; the traceback's words stay.
    assert "\x1b" not in text and "[0;31m" not in text and "[1;33m" not in text
    assert "ValueError</span>" not in text and "ValueError: entry must be one of" in text
    # The claim count is the ledger's (3), not the registry's.
    assert "among 3 claims" in text and "<td><b>3</b></td>" in text
    # The machine is the one the rows name, and the report says so.
    assert "Measured on <code>Fixture CPU 9000</code> (64 CPUs" in text
    assert "metadata columns of its 3 measured rows" in text
    machine = text[text.index("id='machine'") if "id='machine'" in text
                   else text.index('id="machine"'):]
    assert "Fixture CPU 9000" in machine and "0123456789ab" in machine
    here = machine_info()["cpu_model"]
    if here != "Fixture CPU 9000":
        assert f"on another machine (<code>{page._e(here)}</code>" in text
    # The method is explained in words.
    assert "rci-obf95-paired-processes: every fresh worker process" in text


def test_strip_ansi_removes_every_escape_and_keeps_the_text():
    coloured = ("\x1b[0;31mValueError\x1b[0m: bad \x1b]0;title\x07\x1b[2K\x1bMend "
                "[not an escape]")
    assert page.strip_ansi(coloured) == "ValueError: bad end [not an escape]"
    cell = _cell(nbformat.v4.new_output("error", ename="E", evalue="v",
                                        traceback=["\x1b[0;31mE\x1b[0m: v"]),
                 nbformat.v4.new_output("display_data", data={"text/markdown": "*kept*"}))
    page.clean_outputs(cell)
    assert cell.outputs[0]["traceback"] == ["E: v"]
    assert cell.outputs[1]["data"]["text/markdown"] == "*kept*"


def test_the_advisor_scores_read_as_words_and_percent():
    import pandas as pd

    from labkit.lab.advising import grid
    from labkit.lab.report import choosing

    g = pd.read_csv(results.data_dir() / "advisor_calibration.csv")
    raw = grid.scores(g)
    shown = choosing.score_table(raw)
    assert not any("_" in c for c in shown.columns)
    assert list(shown.columns[:3]) == ["design", "points", "coverage of the 95% interval"]
    cov = shown.set_index("design").loc["all", "coverage of the 95% interval"]
    assert cov == f"{100 * raw.set_index('design').loc['all', 'coverage']:.1f}%"
    assert set(shown["all four targets met"]) <= {"yes", "no"}


# A header that is a column's raw name (`claim_id`, `targets_met`), not words.
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")


def snake_headers(text: str) -> list[str]:
    """The <th> of `text` that are raw snake_case names."""
    return sorted({h.strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", text, flags=re.S)
                   if _SNAKE.match(h.strip())})


def test_snake_headers_finds_raw_column_names_only():
    text = ("<tr><th>claim_id</th><th>ns/switch, here (asm_fpu, sweep)</th>"
            "<th class='x'> targets_met </th><th>fresh processes</th></tr>")
    assert snake_headers(text) == ["claim_id", "targets_met"]


@pytest.mark.notebook
def test_no_table_of_the_report_has_a_raw_column_name_for_a_header(tmp_path, monkeypatch):
    """The report from the recorded results, with notebook 00's tables, one of notebook
    01's and a verdict table among the notebooks' outputs, as the notebooks show them."""
    import shutil

    from labkit.lab import headers
    from labkit.lab.analysis import claims_ledger, stack_size
    from labkit.lab.judging import designs, ledger, view
    from labkit.lab.running.notebook_run import Outcome

    shutil.copytree(results.REPO / "data", tmp_path / "data")
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    table = ledger.ledger()
    verdict_table = results.read_csv(tmp_path / "data" / "01_stack_size_verdicts.csv")
    pingpong = results.read_csv(tmp_path / "data" / "01_stack_size.csv").query(
        "part == 'pingpong'")
    shown = [claims_ledger.every_claim(table), claims_ledger.amended(table),
             designs.variance_table(), headers.shown(stack_size.pingpong_summary(pingpong))]
    nb = nbformat.v4.new_notebook()
    nb.cells.append(_cell(*[nbformat.v4.new_output("execute_result", data={
        "text/html": f.to_html(), "text/plain": "table"}, execution_count=1) for f in shown],
        nbformat.v4.new_output("display_data", data={
            "text/html": view.show(verdict_table)._repr_html_(), "text/plain": "view"})))
    executed = tmp_path / "00_claims_ledger.ipynb"
    nbformat.write(nb, executed)
    path = page.build([Outcome("00_claims_ledger", True, 1.0, executed)],
                      out_dir=tmp_path / "out", quick=False)
    text = path.read_text()
    assert "claim_id" in str(table.columns.tolist())  # the raw names were there to word
    assert "<svg" in text and "data:image/png;base64" in text
    assert snake_headers(text) == []

