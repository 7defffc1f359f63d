"""labkit.lab.report.articles: the article tables are built from recorded results (a small fixture
written here), keep the article's rows and numbers, judge each row by its written rule,
and say why when a row cannot be measured."""
import numpy as np
import pandas as pd
import pytest

from conftest import assert_each_raises
from labkit.lab.judging import claims, verdicts
from labkit.lab.report import articles


@pytest.fixture
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


def _stack_rows(ns_by_size, repeats=5, entry="boost_fiber"):
    rng = np.random.default_rng(1)
    return pd.DataFrame([
        {"entry": entry, "pattern": "pingpong", "contexts": 2, "colour_step": 0,
         "stack_size": size, "ns_per_switch": ns * (1 + 0.001 * rng.standard_normal())}
        for size, ns in ns_by_size.items() for _ in range(repeats)])


def _design_runs(ns_by_label, processes=8, repeats=2):
    """A verdict design's runs (labkit.lab.judging.designs): each process measures every label."""
    rng = np.random.default_rng(2)
    return pd.DataFrame([
        {"worker": w, "side": label, "ns_per_switch": ns * (1 + 0.001 * rng.standard_normal())}
        for w in range(processes) for label, ns in ns_by_label.items()
        for _ in range(repeats)]).assign(looks="8 16 24 32")


STACK_LABELS = {4096: "4 KiB", 16384: "16 KiB", 65536: "64 KiB", 262144: "256 KiB",
                1 << 20: "1 MiB", 8 << 20: "8 MiB"}


def test_every_table_has_the_articles_column_and_ours_even_without_data(results_dir):
    ts = articles.tables()
    assert [t.key for t in ts] == [f"t{i:02d}" for i in range(1, 12)]
    for t in ts:
        cols = list(t.frame.columns)
        assert any("article" in c for c in cols), (t.key, cols)
        assert any("here" in c for c in cols), (t.key, cols)
        assert len(t.frame) >= 2
        # Nothing measured: no verdict either way (t05 counts jump_fcontext's
        # instructions from the installed library, which needs no recorded data).
        if t.key != "t05":
            assert not {"reproduced", "contradicted"} & set(t.verdicts.values()), t.verdicts


def test_stack_table_keeps_the_articles_numbers_and_judges_each_row(results_dir):
    # Measured: no rise at all with the stack size, tight spreads.
    sizes = [s for s, _, _ in articles.STACKS]
    _stack_rows({s: 10.0 for s in sizes}).to_csv(results_dir / "01_stack_size.csv",
                                                  index=False)
    _design_runs({lab: 10.0 for lab in STACK_LABELS.values()}).to_csv(
        results_dir / "01_stack_size_verdict_runs.csv", index=False)
    t = articles.table("t01")
    assert list(t.frame["stack"]) == ["4 KB", "16 KB", "64 KB", "256 KB", "1 MB", "8 MB"]
    assert list(t.frame["ns/switch, article"]) == [22, 24, 28, 35, 45, 120]
    assert list(t.frame["% over 4 KB, article"]) == ["+0%", "+9%", "+27%", "+59%", "+105%",
                                                     "+445%"]
    # No rise where the article saw 5% to 445%: every row with a rule is contradicted.
    assert t.verdicts == {c: "contradicted" for c in
                          ("C000.2a", "C000.2b", "C000.2c", "C000.2d")} | \
        {"C000.2": t.verdicts.get("C000.2")}
    v = articles.article_verdicts("01_stack_size")
    assert sorted(v.claim_id) == ["C000.2a", "C000.2b", "C000.2c", "C000.2d"]
    assert set(v.verdict) == {"contradicted"}
    # The figure's points: normalised to 4 KB, the article's beside ours.
    assert t.points[0][1] == 1.0 and t.points[-1][1] == pytest.approx(120 / 22)
    assert t.points[-1][2] == pytest.approx(1.0, abs=0.01)


def test_a_rise_like_the_articles_reproduces_the_row(results_dir):
    claimed = {s: ns for s, _, ns in articles.STACKS}
    _stack_rows(claimed).to_csv(results_dir / "01_stack_size.csv", index=False)
    _design_runs({lab: claimed[s] for s, lab in STACK_LABELS.items()}).to_csv(
        results_dir / "01_stack_size_verdict_runs.csv", index=False)
    v = articles.article_verdicts("01_stack_size").set_index("claim_id").verdict
    assert (v == "reproduced").all()


def test_rows_that_cannot_be_measured_say_why(results_dir):
    t = articles.table("t05")
    row = t.frame.set_index("item").loc["misprediction of the final jump"]
    assert "counters" in row["how"]
    assert t.verdicts["C000.6c"] == "not-applicable-here"
    t10 = articles.table("t10")
    assert t10.verdicts["C003.1"] in ("not-applicable-here", "not-measured")
    assert any("AArch64" in str(x) for x in t10.frame.values.ravel())


def test_every_row_claim_is_registered_and_judged_by_its_own_notebook():
    registered = claims.registry().set_index("claim_id")
    for cid in articles.ROW_JUDGES:
        assert cid in registered.index, cid
    # Each table names only registered claims.
    for key in articles.TABLES:
        for nb in (nb for nb, keys in articles.by_notebook().items() if key in keys):
            assert nb in set(registered.notebook)


def test_memory_ops_are_counted_from_att_disassembly():
    text = """
0000000000001000 <jump_fcontext>:
    1000:	endbr64
    1004:	lea    -0x38(%rsp),%rsp
    1009:	stmxcsr (%rsp)
    100d:	fnstcw 0x4(%rsp)
    1011:	mov    %r12,0x8(%rsp)
    1016:	push   %rbp
    1017:	mov    %rsp,%rax
    101a:	mov    0x8(%rsp),%r12
    101f:	ldmxcsr (%rsp)
    1023:	pop    %rbp
    1024:	jmp    *%r8
"""
    c = articles.count_memory_ops(text)
    assert c == {"stores": 4, "loads": 3, "instructions": 11}


def test_bad_input_names_the_parameter():
    assert_each_raises(
        (lambda: articles.table("t12"), ValueError, "key"),
        (lambda: articles.table(1), TypeError, "key"),
        (lambda: articles.article_verdicts("99_nothing"), ValueError, "notebook"),
        (lambda: articles.section(None), TypeError, "notebook"),
        (lambda: articles.figure("t01"), TypeError, "ArticleTable"))


def test_figure_overlays_the_article_on_ours_with_the_machine(results_dir):
    _stack_rows({s: 10.0 for s, _, _ in articles.STACKS}).to_csv(
        results_dir / "01_stack_size.csv", index=False)
    fig = articles.figure(articles.table("t01"), save=False)
    ax = fig.axes[0]
    assert "Stack size" in ax.get_title()
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"article",
                                                                   "here: median, spread"}
    assert any("CPUs" in t.get_text() for t in fig.texts)  # the machine caption


def test_figure_titles_its_finding_from_the_points():
    from labkit.lab.report.articles.show import finding
    from labkit.lab.report.articles.tables import ArticleTable

    # (label, article, here, low, high): the article inside the spread at N=2 only, and
    # furthest from here, by ratio, at N=1024 (0.5 against 2), not at N=64 (1.4 against 1).
    t = ArticleTable(key="tx", source="s.txt", title="T", notebook="03",
                     points=[("N=2", 1.0, 1.05, 0.9, 1.1), ("N=64", 1.0, 1.4, 1.3, 1.5),
                             ("N=1024", 2.0, 0.5, 0.45, 0.55), ("N=4096", None, 1.0, 1, 1)])
    said = finding(t)
    assert "at 1 of 3 points" in said
    assert "furthest apart at N=1024: 0.5 [0.45, 0.55] here against 2 in the article" in said
    fig = articles.figure(t, save=False)
    assert fig._suptitle.get_text().replace("\n", " ") == said
    assert finding(ArticleTable(key="ty", source="s", title="T", notebook="03")) == \
        "No point has both the article's value and one measured here."


def _committed_verdicts() -> dict:
    """Every committed verdict row (data/*_verdicts.csv, the article rows' too), by claim,
    with the ledger's row for a claim the ledger judges itself from two notebooks."""
    from labkit.core.results import REPO
    from labkit.lab.judging import claims, ledger

    out = {}
    for path in sorted((REPO / "data").glob("*_verdicts.csv")):
        for _, r in pd.read_csv(path, dtype=str).fillna("").iterrows():
            out[r.claim_id] = r.to_dict()
    led = pd.read_csv(REPO / "data" / "00_claims_ledger.csv", dtype=str).fillna("")
    for _, r in led[led.claim_id.isin(ledger.JUDGED_HERE)].iterrows():
        out[r.claim_id] = r.to_dict()
    return out


def test_every_row_with_a_verdict_shows_that_verdicts_own_interval_and_processes(monkeypatch):
    """From the committed data: a row's verdict stands beside the value, interval and
    processes its rule was applied to, as the verdict files have them, never a sweep's."""
    import re

    monkeypatch.delenv("LABKIT_RESULTS_DIR", raising=False)
    committed = _committed_verdicts()
    quantity = claims.measured_quantities()
    shown = 0
    for t in articles.tables():
        assert articles.VERDICT_COLUMN in t.frame, t.key
        for _, row in t.frame.iterrows():
            cell = row[articles.VERDICT_COLUMN]
            for cid, verdict in re.findall(r"\b(C\d{3}\.\d+[a-z]?): ([a-z-]+)", cell):
                want = committed[cid]
                assert verdict == want["verdict"], (t.key, cid, cell)
                part = cell.split(f"{cid}: ", 1)[1]
                if want["measured_value"] not in ("", "not measured") and \
                        verdict not in ("not-measured", "not-applicable-here"):
                    assert part.startswith(f"{verdict} on {want['measured_value']}"), \
                        (t.key, cid, cell)
                    n = want["processes"]
                    assert (f"over {n} processes" in part) if n else ("exact" in part), \
                        (t.key, cid, cell)
                # What x is stands beside it.
                assert f"{cid}: {quantity[cid]}" in row[articles.QUANTITY_COLUMN], (t.key, cid)
                shown += 1
    assert shown >= 40


def test_table_02s_o3_row_shows_the_interval_its_verdict_stands_on(results_dir):
    """A sweep that says ~1 and a verdict design that says 0.85: the row shows both,
    the verdict beside its own interval and processes, the sweep's column labelled."""
    rng = np.random.default_rng(3)
    pd.DataFrame([{"entry": "boost_fiber", "build": b, "ns_per_switch": ns * (1 + 0.001 * rng.standard_normal())}
                  for b, ns in (("O0", 40.0), ("O2", 10.0), ("O3", 10.0)) for _ in range(5)]
                 ).to_csv(results_dir / "02_optimisation_levels.csv", index=False)
    _design_runs({"O0": 40.0, "O2": 10.0, "O3": 8.5}).to_csv(
        results_dir / "02_optimisation_levels_verdict_runs.csv", index=False)
    judged = articles.verdict_of("C000.3a")
    row = articles.table("t02").frame.set_index("build").loc["-O3"]
    assert row["ratio to -O2, here (sweep)"].startswith("1 [")
    assert row[articles.VERDICT_COLUMN] == (
        f"C000.3a: {judged['verdict']} on {judged['measured_value']} over "
        f"{judged['processes']} processes")
    assert judged["measured_value"].startswith("0.85")
    assert "-O3 / at -O2" in row[articles.QUANTITY_COLUMN]


def test_verdict_rows_say_what_x_is_and_old_files_get_it_joined():
    row = verdicts.judge("C000.3a", 0.9, low=0.85, high=0.93)
    assert row["measured_quantity"] == claims.claim("C000.3a")["measured_quantity"]
    assert list(verdicts.table([row]).columns) == verdicts.COLUMNS
    old = pd.DataFrame([{k: v for k, v in row.items() if k != "measured_quantity"}])
    joined = verdicts.with_measured_quantity(old)
    assert joined.measured_quantity.iloc[0] == row["measured_quantity"]
    assert list(joined.columns).index("measured_quantity") == \
        list(joined.columns).index("claimed_value") + 1
    with pytest.raises(ValueError, match="claim_id"):
        verdicts.with_measured_quantity(pd.DataFrame({"x": [1]}))
