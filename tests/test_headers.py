"""Every table a notebook shows has words for its headers (labkit.lab.headers)."""
import ast
import re
import shutil
import warnings

import pandas as pd
import pytest

import labkit
import test_bundle
from conftest import assert_each_raises
from labkit.core import plots, results
from labkit.experiments import xstate
from labkit.lab.analysis import (compare_machines, coroutine_memory, echo_servers, fp_state,
                                 frames_allocators, kernel_switches, latency_ladder,
                                 optimisation_levels, stack_size, switch_frequency, symmetric)
from labkit.lab.headers import HEADERS, NS_PER_SWITCH, shown, unworded, words
from labkit.lab.judging import view
from labkit.lab.room import predictions as room_predictions
from labkit.lab.sharing import merge

# test_bundle's two bundles, this machine's and a synthetic one, as fixtures here.
this_machine, other_machine = test_bundle.here, test_bundle.FIXTURE
NOTEBOOKS = sorted(p for p in (results.REPO / "notebooks").glob("*.py")
                   if re.match(r"(0[1-9][ab]?|10)_", p.name) or p.name == "compare_machines.py")
# A header that is a column's raw name (`claim_id`, `median_ticks`), not words.
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
# What a cell's last expression may be besides shown(...): a call that shows no table, or
# one that shows its table through shown (by_machine).
_NOT_TABLES = {"by_machine", "print", "display", "finish", "section", "show", "controls",
               "checked", "placeholder", "fill", "and_verdicts", "save_anatomy"}


def html_headers(frame) -> list[str]:
    """The header row's <th> texts of the frame as a notebook's HTML shows it (not the
    rows' labels)."""
    head = frame.to_html().split("</thead>")[0]
    return [h.strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", head, flags=re.S)]


def _values(frame) -> set:
    """The column labels that are values of a named column (a pivot's entries, servers)."""
    cols = frame.columns
    return {v for level, name in enumerate(cols.names) if name is not None
            for v in cols.get_level_values(level)}


def test_shown_words_columns_level_names_and_keeps_values():
    frame = pd.DataFrame({"entry": ["asm_fpu"], "median": [1.0], "why_not": [""]})
    assert list(shown(frame).columns) == ["entry", "ns per switch (median)", "why not measured"]
    assert list(shown(frame, value="queries per second").columns)[1] == \
        "queries per second (median)"
    assert list(frame.columns) == ["entry", "median", "why_not"]  # the frame is not changed
    pivot = pd.DataFrame({"stack_size": [4096, 4096], "entry": ["asm_fpu", "asm_ret"],
                          "page_faults": [0, 1], "median_ticks": [2, 3]}).pivot(
        index="stack_size", columns="entry", values=["page_faults", "median_ticks"])
    seen = shown(pivot)
    assert list(seen.columns.get_level_values(0).unique()) == [
        HEADERS["page_faults"], HEADERS["median_ticks"]]
    assert list(seen.columns.get_level_values(1).unique()) == ["asm_fpu", "asm_ret"]
    assert seen.index.names == [HEADERS["stack_size"]]
    assert {h for h in html_headers(seen) if _SNAKE.match(h)} == {"asm_fpu", "asm_ret"}


def test_a_header_with_no_words_is_refused_when_strict_and_warned_otherwise(monkeypatch):
    frame = pd.DataFrame({"entry": ["asm"], "brand_new_column": [1]}).set_index("entry")
    assert unworded(frame) == ["brand_new_column"]
    with pytest.raises(ValueError, match="brand_new_column"):
        shown(frame)
    with pytest.raises(ValueError, match="an_index"):
        shown(pd.DataFrame({"median": [1.0]}).rename_axis("an_index"))
    monkeypatch.delenv(plots.STRICT_LOOK)
    with pytest.warns(UserWarning, match="brand_new_column"):
        assert "brand_new_column" in shown(frame).columns


def test_shown_takes_frames_and_series_only_and_words_for_value():
    assert list(shown(pd.Series([1], name="page_faults")).columns) == [HEADERS["page_faults"]]
    frame = pd.DataFrame({"median": [1.0]})
    assert_each_raises((lambda: shown([{"median": 1}]), TypeError, "frame"),
                       (lambda: shown(frame, value=3), TypeError, "value"),
                       (lambda: shown(frame, value=" "), ValueError, "value"))


def test_the_verdict_tables_words_are_the_labs_words():
    frame = pd.DataFrame({"claim_id": ["C000.1"], "measured_value": ["1"]})
    assert list(view.worded(frame).columns) == [words("claim_id"), words("measured_value")]


def _last_expression(cell: str):
    """The expression a code cell shows (its last statement, unless a `;` hides it)."""
    try:
        body = ast.parse(cell).body
    except SyntaxError:
        return None
    if not body or not isinstance(body[-1], ast.Expr) or cell.rstrip().endswith(";"):
        return None
    node = body[-1].value
    return node.body if isinstance(node, ast.IfExp) else node


def _callee(node) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)


def _code_cells(path):
    text = path.read_text()
    for chunk in re.split(r"^# %%.*$", text, flags=re.M):
        if not chunk.lstrip().startswith("# ["):
            yield chunk.strip()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_table_a_notebook_shows_goes_through_shown(path):
    """A cell's shown expression is a table in words (shown(...)) or a known non-table."""
    raw = []
    for cell in _code_cells(path):
        node = _last_expression(cell)
        if node is None:
            continue
        name = _callee(node)
        if name == "shown" or name in _NOT_TABLES or (name or "").endswith("figure"):
            continue
        raw.append(ast.unparse(node))
    assert raw == []


def _data(name):
    return results.read_csv(results.data_dir() / f"{name}.csv")


def _tables():
    """The tables notebooks 01-09 show, made by the notebooks' calls from the saved data."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cat = labkit.catalogue()
        yield "catalogue", cat[["entry", "system", "kind", "saves", "returns_by",
                                "frame_bytes", "available", "why_not"]], None
        d = _data("01_stack_size")
        pp = d[d.part == "pingpong"]
        yield "01 ping-pong", stack_size.pingpong_summary(pp), None
        yield "01 faults", stack_size.faults(pp), None
        ring = d[d.part == "ring"]
        yield "01 ring", stack_size.ring_summary(ring), None
        yield "01 flatness", stack_size.flatness(pp), None
        yield "01 rings read", stack_size.rings(ring, sorted(set(ring.stack_size)),
                                                sorted(set(ring.contexts))), None
        timed = _data("02_optimisation_levels")
        timed = timed[timed.ns_per_switch.notna()]
        builds = [b for b in ("O0", "O1", "O2", "O3") if b in set(timed.build)]
        yield "02 pivot", optimisation_levels.pivot(
            optimisation_levels.summary(timed, builds), builds, "median"), None
        yield "02 ratios", optimisation_levels.ratios(
            timed, pd.DataFrame(), sorted(set(timed.entry))), None
        shapes = _data("03_symmetric_vs_asymmetric")
        per_transfer, _ = symmetric.summaries(shapes)
        yield "03 shapes", per_transfer.pivot(index="contexts", columns=["entry", "pattern"],
                                              values="median"), None
        yield "03 ratios", symmetric.ratios(shapes, sorted(set(shapes.contexts))).pivot(
            index="contexts", columns="entry", values="asym / sym"), None
        runs = _data("04_latency_ladder")
        _, _, missing = latency_ladder.catalogue_parts()
        runs, missing = latency_ladder.split_failed(runs, cat, missing)
        ns, _ = latency_ladder.summaries(runs, cat)
        instr = _data("04_latency_ladder_instructions")
        yield "04 missing", missing, None
        yield "04 ns", ns[["entry", "system", "kind", "repeats", "median", "q1", "q3",
                           "median_ticks", "noisy"]], None
        yield "04 ladder", latency_ladder.ladder_table(ns, cat, instr), None
        yield "04 copy", latency_ladder.copy_summary(_data("04_latency_ladder_copy_stack"))[1], \
            None
        yield "04 raw net", latency_ladder.raw_net(runs, instr), None
        h = _data("05_kernel_switches")
        hand, yields = h[h.part != "yield"], h[h.part == "yield"]
        yield "05 hand-offs", kernel_switches.summary(hand)[
            ["task", "placement", "what", "repeats", "median", "q1", "q3", "median_ticks",
             "cv", "noisy"]], None
        yield "05 counts", kernel_switches.os_counts(hand), None
        yield "05 yield", kernel_switches.yield_summary(yields), "units of work per second"
        yield "05 spreads", kernel_switches.spreads(hand, yields, None), "measured quantity"
        fp = fp_state.label_fp_control(_data("06_fp_state_and_return"))
        yield "06 same", fp_state.same_words(fp_state.summary(fp)), None
        yield "06 FP/vector state", xstate.summary(_data("06_fp_state_and_return_xstate")), None
        yield "06 effects", fp_state.effects(fp, sorted(set(fp.entry))), "ratio"
        fa = _data("07a_frames_and_allocators")
        alloc = fa[fa.part == "allocation"]
        yield "07a frames", frames_allocators.frame_table(fa[fa.part == "frame_sizes"])[0], None
        yield "07a allocation", frames_allocators.alloc_table(
            alloc, frames_allocators.alloc_summary(alloc))[0], None
        yield "07a ratios", frames_allocators.shown_ratios(frames_allocators.ratios(alloc)), None
        yield "07a cycles", frames_allocators.cycle_table(fa[fa.part == "cycles"]), None
        cm = _data("07b_coroutine_memory")
        coros, guard = cm[cm.part == "coroutines"], cm[cm.part == "guard_check"]
        yield "07b per coroutine", coroutine_memory.per_coroutine(coros), None
        yield "07b per pool", coroutine_memory.per_pool(
            _data("07b_coroutine_memory_pool_reuse"), coros), None
        yield "07b per context", coroutine_memory.per_context(cm[cm.part == "stackful"])[1], None
        yield "07b guard", guard[["stack_size", "guard", "n", "bytes_per_object",
                                  "pte_bytes_per_object", "ns_create_per_object"]], None
        yield "07b copy stack", coroutine_memory.copy_table(
            _data("07b_coroutine_memory_copy_stack")), None
        r8 = _data("08_switch_frequency")
        i8 = _data("08_switch_frequency_independent")
        share, _, _ = switch_frequency.summaries(r8)
        checks = switch_frequency.checks(r8)
        w = int(sorted(set(r8.work_cycles))[-1])
        yield "08 share", switch_frequency.share_table(share), None
        for values in (["work_ticks_per_task", "switches_per_task"],
                       ["preempted_runs", "page_faults"]):
            yield "08 checks", checks.pivot(index="work_cycles", columns="setup",
                                            values=values), None
        yield "08 at W", switch_frequency.at_w(r8, i8, judge_work=w), None
        yield "08 by rotation", switch_frequency.by_rotation(r8, judge_work=w), None
        yield "08 author", switch_frequency.author_beside_here(r8, i8, judge_work=w)[0], None
        yield "09 servers", echo_servers.servers(), None
        echo = _data("09_echo_servers")
        main, reads = echo[echo.part == "main"], echo[echo.part == "reads"]
        ms = echo_servers.summary(main)
        chunk = int(reads.chunk.dropna().max())
        yield "09 survived", echo_servers.survived(_data("09_echo_servers_robustness")), None
        yield "09 load", echo_servers.load_table(ms), None
        yield "09 twins", echo_servers.twins(main, ms), None
        yield "09 reads", echo_servers.reads_table(reads, chunk=chunk), None
        yield "09 C004.1", echo_servers.c004_table(main, ms), None
        yield "09 closing", echo_servers.closing_table(ms), None
        yield "room predictions", pd.DataFrame(columns=room_predictions.COLUMNS), None


def test_the_notebooks_tables_from_saved_data_show_words(tmp_path, monkeypatch):
    # Some table functions save what they show: they write to a copy.
    shutil.copytree(results.REPO / "data", tmp_path / "data")
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path))
    tables = [(name, frame, value or NS_PER_SWITCH) for name, frame, value in _tables()]
    assert len(tables) >= 25
    assert {name: unworded(frame, value) for name, frame, value in tables
            if unworded(frame, value)} == {}
    raw = {name: [h for h in html_headers(shown(frame, value)) if _SNAKE.match(h)
                  and h not in _values(frame)] for name, frame, value in tables}
    assert {name: headers for name, headers in raw.items() if headers} == {}


def test_a_merge_of_machines_shows_words_and_keeps_machine_labels(this_machine, other_machine):
    cmp = merge.merge([this_machine, other_machine])
    for frame in (cmp["verdicts"], merge.shown(cmp["ladder"]), pd.DataFrame()):
        table = compare_machines.by_machine(frame)
        labels = set(cmp["machines"])
        assert [h for h in html_headers(table) if _SNAKE.match(h) and h not in labels] == []
    verdicts = compare_machines.by_machine(cmp["verdicts"])
    assert verdicts.index.name == "claim" and verdicts.columns.names[0] == "machine"
    assert set(verdicts.columns.get_level_values(0)) == set(cmp["machines"]) | {"all machines"}
