"""docs/architecture.md's "Where a new thing goes" is true: in a copy of the repository a
dummy kernel, a dummy C++ peer and a dummy Python peer are added in exactly the files the
doc names for them,
the copy is built by the project's own build, and the catalogue, the correctness tests and
labkit.measure pick both up. The copy rebuilds only the extension and the peers' -O2
library (the builds the checks run); its other native builds are the checkout's, copied."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
DUMMY_KERNEL, DUMMY_PEER, DUMMY_PY = "test_dummy", "test_dummy_peer", "test_dummy_py"

pytestmark = pytest.mark.slow


def doc_rows() -> dict[str, tuple[list[str], int]]:
    """The doc's table of what to touch: {what to add: (its files, its count)}."""
    text = DOC.read_text().split("## Where a new thing goes", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) != 4 or cells[0] in ("to add", "---"):
            continue
        rows[cells[0]] = (re.findall(r"`([^`]+)`", cells[1]), int(cells[3]))
    return rows


def _replace(old: str, new: str):
    def edit(text: str) -> str:
        assert text.count(old) == 1, f"the anchor {old!r} is not in the file exactly once"
        return text.replace(old, new)
    return edit


def _chain(*edits):
    def edit(text):
        for e in edits:
            text = e(text)
        return text
    return edit


# A kernel the same as asm under another name, x86-64 only.
KERNEL_EDITS = {
    "labkit/csrc/labkit_core.h": _replace(
        '    X(copy_stack, any, copy, 1, 1, "")\n',
        '    X(copy_stack, any, copy, 1, 1, "") \\\n'
        f'    X({DUMMY_KERNEL}, x86_64, sp, 1, 0, "the test\'s dummy kernel is x86-64 only")\n'),
    "labkit/csrc/switch_x86_64_sysv.h": _chain(
        _replace('    LK_END("lk_swap_asm_ret")\n',
                 '    LK_END("lk_swap_asm_ret")\n'
                 f'    LK_FUNCTION("lk_swap_{DUMMY_KERNEL}")\n'
                 '    LK_PUSH_CALLEE_SAVED\n'
                 '    "    movq  %rsp, (%rdi)\\n"\n'
                 '    "    movq  %rsi, %rsp\\n"\n'
                 '    LK_POP_CALLEE_SAVED\n'
                 '    "    popq  %r8\\n"\n'
                 '    "    jmpq  *%r8\\n"\n'
                 f'    LK_END("lk_swap_{DUMMY_KERNEL}")\n'),
        _replace("case LK_ASM: case LK_ASM_RET: return 56;",
                 f"case LK_ASM: case LK_ASM_RET: case LK_KERNEL_{DUMMY_KERNEL}: return 56;"),
        _replace("case LK_ASM: case LK_ASM_RET:\n        return sp;",
                 f"case LK_ASM: case LK_ASM_RET: case LK_KERNEL_{DUMMY_KERNEL}:\n"
                 "        return sp;")),
    "labkit/core/systems.py": _replace(
        "KERNEL_PROSE = {\n",
        "KERNEL_PROSE = {\n"
        f'    "{DUMMY_KERNEL}": ("same as asm", "pop + indirect jmp", "the test\'s dummy"),\n'),
}

# A peer that times what direct_call does, from a library the peers did not link before
# (libm, there on every machine): one row of the peer table, its run, and the library's line.
PEER_ROW_TEXT = f'    X({DUMMY_PEER}, baseline, 0, "the test\'s dummy: a direct call and its return")\n'
PEER_EDITS = {
    "labkit/cxx/peers.h": _chain(
        _replace('      "its state and pending-exception checks")\n',
                 '      "its state and pending-exception checks")                                  \\\n'
                 + PEER_ROW_TEXT),
        _replace('    L(boost_fiber, "boost/fiber/all.hpp", "libboost-fiber-dev")\n',
                 '    L(boost_fiber, "boost/fiber/all.hpp", "libboost-fiber-dev") \\\n'
                 '    L(m, "math.h", "libc6-dev")\n')),
    "labkit/cxx/peers.cpp": _replace(
        "#define LKX_RUN_CASE(",
        f"LKX_RUN_LOOP({DUMMY_PEER}, loop_direct)\n\n#define LKX_RUN_CASE("),
}


# A Python peer that counts both sides' transfers and switches nothing.
PY_EDITS = {
    "labkit/core/pypeers.py": _chain(
        _replace("PY_PEERS = {\n",
                 f'PY_PEERS = {{\n    "{DUMMY_PY}": ("stackless", "the test\'s dummy: nothing"),\n'),
        _replace("_RUNNERS = {",
                 "def _test_dummy(c, rounds):\n    for _ in range(rounds):\n"
                 "        c.co += 1\n        c.main += 1\n\n\n"
                 f'_RUNNERS = {{"{DUMMY_PY}": _test_dummy, ')),
}

KERNEL_ROW, PEER_ROW, PY_ROW = "a switch kernel on x86-64", "a C++ peer", "a Python peer"
LIBRARY_ROW = "a C++ peer from a library not yet linked"


def test_every_row_counts_the_files_it_names():
    rows = doc_rows()
    assert {KERNEL_ROW, PEER_ROW, PY_ROW, "a claim", "a notebook"} <= set(rows)
    for what, (files, count) in rows.items():
        assert len(files) == count, f"{what}: the doc names {files} but says {count}"
        for f in files:
            if "<" not in f:
                assert (ROOT / f).exists(), f"{what}: {f} is not a file of the repository"


def test_a_cxx_peer_is_one_row_of_the_peer_table():
    """Its enum value, name, kind, FP control and what it saves come from that one row; the
    rest of the peer's C++ is its run."""
    path = "labkit/cxx/peers.h"
    def lines(text):  # a macro's line continuations aside
        return [ln.rstrip(" \\") for ln in text.splitlines()]

    before = lines((ROOT / path).read_text())
    added = [ln for ln in lines(PEER_EDITS[path]((ROOT / path).read_text())) if ln not in before]
    rows = [ln for ln in added if ln.lstrip().startswith("X(")]
    assert rows == [PEER_ROW_TEXT.rstrip("\n")]
    assert set(added) - set(rows) == {'    L(m, "math.h", "libc6-dev")'}


def test_the_edits_are_the_docs_files():
    rows = doc_rows()
    assert sorted(KERNEL_EDITS) == sorted(rows[KERNEL_ROW][0])
    assert sorted(PEER_EDITS) == sorted(rows[PEER_ROW][0]) == sorted(rows[LIBRARY_ROW][0])
    assert sorted(PY_EDITS) == sorted(rows[PY_ROW][0])


def _copy(to: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = ROOT / name
        if name.startswith((".venv/", "build/")) or not src.is_file():
            continue
        (to / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, to / name)


def _changed(copy: Path) -> set[str]:
    return {str(p.relative_to(copy)) for p in copy.rglob("*")
            if p.is_file() and (ROOT / p.relative_to(copy)).is_file()
            and p.read_bytes() != (ROOT / p.relative_to(copy)).read_bytes()}


CHECK = f"""
import json, labkit
from labkit.core import systems
cat = labkit.catalogue().set_index("entry")
rows = {{n: cat.loc[n].to_dict() for n in ({DUMMY_KERNEL!r}, {DUMMY_PEER!r}, {DUMMY_PY!r})}}
measured = {{n: labkit.measure(n, switches=2000, repeats=2, warmup=0).entry.tolist()
            for n, r in rows.items() if r["available"]}}
from labkit.core import native_build
libs = native_build.TARGETS["liblabkit_peers-O2.so"]["libs"]
print(json.dumps({{"file": labkit.__file__, "rows": rows, "measured": measured, "libs": libs,
                  "system": {{n: systems.of(n).family for n in rows}}}}, default=str))
"""


@pytest.mark.skipif(not (ROOT / "labkit" / "bin" / "build.json").exists(),
                    reason="the checkout is not built: run `make setup`")
def test_a_dummy_kernel_and_peer_in_the_docs_files_are_picked_up(tmp_path):
    copy = tmp_path / "labkit-copy"
    _copy(copy)
    shutil.copytree(ROOT / "labkit" / "bin", copy / "labkit" / "bin")
    edits = {**KERNEL_EDITS}
    for path, edit in {**PEER_EDITS, **PY_EDITS}.items():
        edits[path] = _chain(edits[path], edit) if path in edits else edit
    for path, edit in edits.items():
        (copy / path).write_text(edit((copy / path).read_text()))
    assert _changed(copy) == set(edits)

    # The checkout's native builds count as fresh; the checks need the extension and the
    # peers' -O2 library, which the build makes again from the edited sources.
    bin_dir = copy / "labkit" / "bin"
    for p in bin_dir.iterdir():
        os.utime(p)
    (bin_dir / "liblabkit_peers-O2.so").unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=copy,
                           env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]

    env["PYTHONPATH"] = str(copy)
    run = subprocess.run([sys.executable, "-c", CHECK], cwd=copy, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.splitlines()[-1])
    assert Path(out["file"]).is_relative_to(copy)
    assert out["system"] == {DUMMY_KERNEL: "labkit", DUMMY_PEER: "peer", DUMMY_PY: "python"}
    assert out["libs"][-1] == "-lm"  # the new library's line in peers.h is linked
    kernel, peer = out["rows"][DUMMY_KERNEL], out["rows"][DUMMY_PEER]
    assert kernel["kind"] == "stackful" and kernel["frame_bytes"] == 56
    x86 = os.uname().machine == "x86_64"
    assert kernel["available"] == x86
    assert peer["kind"] == "baseline" and peer["saves"].startswith("the test's dummy")
    if x86:
        assert out["measured"][DUMMY_KERNEL] == [DUMMY_KERNEL] * 2
    if peer["available"]:
        assert out["measured"][DUMMY_PEER] == [DUMMY_PEER] * 2
    assert out["rows"][DUMMY_PY]["kind"] == "stackless"
    assert out["measured"][DUMMY_PY] == [DUMMY_PY] * 2

    # The correctness tests are parametrised from the catalogue (tests/conftest.py): they
    # take the dummies in, and pass for them.
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/test_kernel_correctness.py", "-k", "test_dummy", "-rA"],
                           cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    assert tests.returncode == 0, tests.stdout[-3000:]
    passed = set(re.findall(r"PASSED \S+\[(\w+)\]", tests.stdout))
    assert passed >= {DUMMY_PY} | ({DUMMY_KERNEL} if x86 else set()) | (
        {DUMMY_PEER} if peer["available"] else set())


# ---- experiments: a claim and a notebook, each in the files the doc names ----

CLAIM_ROW = "a claim"
NOTEBOOK_ROW = "a notebook"
DUMMY_CLAIM = "C000.7z"
CLAIM_EDITS = {
    "data/claims.csv": lambda text: text + (
        f'{DUMMY_CLAIM},000_dc0f0e0d023658f3.txt,"A test claim: batching does not slow the '
        'tasks",1,ratio,"median total time per process, after / before, dependent work",'
        "x <= 2,x > 10,a claim added by tests/test_extending.py,08_switch_frequency\n"),
    "labkit/lab/judging/rules.py": lambda text: text + (
        "\n\ndef c000_7z(runs):\n"
        f'    """{DUMMY_CLAIM}: total time after / before, dependent work."""\n'
        f'    return _ratio_row("{DUMMY_CLAIM}", runs, S08.AFTER_DEPENDENT, '
        'S08.BEFORE_DEPENDENT, col="total_ns")\n\n\n'
        f"RULES = _rules()\n"),
}
NOTEBOOK_EDITS = {
    "notebooks/10_test_dummy.py": lambda text: (
        "# %% [markdown]\n# # 10 · A test notebook\n\n"
        '# %% tags=["parameters"]\nfrom labkit.lab.running import params\n\n'
        "quick = False\n(rounds,) = params.resolve(\"10_test_dummy\", quick=quick).values()\n\n"
        "# %%\nfrom labkit.lab.analysis import test_dummy\n\ntest_dummy.show(rounds)\n"),
    "labkit/lab/experiment.py": lambda text: text.replace(
        "\n\nRECORDS: dict[str, Experiment]",
        '\n\nTEST_DUMMY = Experiment(\n    "10_test_dummy", "A test notebook",\n'
        '    params=(integer("rounds", 3, 1, "rounds of nothing", high=10),))\n'
        "\n\nRECORDS: dict[str, Experiment]"),
    "labkit/lab/analysis/test_dummy.py": lambda text: (
        '"""Notebook 10\'s analysis (a test)."""\n\n\ndef show(rounds):\n'
        "    return rounds\n"),
}

CLAIM_CHECK = f"""
import importlib, json
from labkit.lab.experiment import SWITCH_FREQUENCY as exp
from labkit.lab.judging import designs, rules
tables = importlib.import_module("labkit.lab.report.articles.tables")
# what notebook 08 calls, on the committed data: its design's rows (recomputed from its
# saved runs), its verdict table, its article table
verdicts = designs.verdict_table(exp, designs.judge_saved(exp))
article = tables.table(exp.tables[0])
row = verdicts[verdicts.claim_id == {DUMMY_CLAIM!r}]
cells = [str(c) for c in article.frame[tables.VERDICT_COLUMN]]
print(json.dumps({{"rule": rules.RULES[{DUMMY_CLAIM!r}][1], "claims": exp.claims(),
                  "verdict": row.verdict.tolist(), "value": row.measured_value.tolist(),
                  "article": [c for c in cells if {DUMMY_CLAIM!r} in c]}}))
"""

NOTEBOOK_CHECK = """
import json
from labkit.lab.running import notebooks, params
print(json.dumps({"sources": [p.stem for p in notebooks.notebook_sources()],
                  "resolve": params.resolve("10_test_dummy", quick=True),
                  "parsed": params.parse(["10_test_dummy"], [("rounds", "2")]),
                  "index": notebooks.experiment_index().notebook.tolist()}, default=str))
"""


def _touched(copy: Path) -> set[str]:
    """The files changed or added in the copy (not the checkout's own, not caches)."""
    new = {str(p.relative_to(copy)) for p in copy.rglob("*")
           if p.is_file() and "__pycache__" not in p.parts
           and not (ROOT / p.relative_to(copy)).exists()}
    return _changed(copy) | new


def _python_copy(tmp_path) -> tuple[Path, dict]:
    copy = tmp_path / "labkit-copy"
    _copy(copy)
    for so in (ROOT / "labkit" / "core").glob("_core*.so"):
        shutil.copy2(so, copy / "labkit" / "core" / so.name)
    env = dict(os.environ, PYTHONPATH=str(copy), LABKIT_RESULTS_DIR=str(copy))
    return copy, env


def _apply(copy: Path, edits: dict) -> set[str]:
    for path, edit in edits.items():
        target = copy / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(edit(target.read_text() if target.exists() else ""))
    return _touched(copy)


def _edited_run(tmp_path, edits: dict, check: str) -> tuple[set[str], dict]:
    """The files `edits` touch in a copy of the checkout, and what `check` prints (its
    last line, JSON) when run there."""
    copy, env = _python_copy(tmp_path)
    touched = _apply(copy, edits)
    run = subprocess.run([sys.executable, "-c", check], cwd=copy, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return touched, json.loads(run.stdout.strip().splitlines()[-1])


def test_the_experiment_edits_are_the_docs_files():
    rows = doc_rows()
    assert sorted(CLAIM_EDITS) == sorted(rows[CLAIM_ROW][0])
    assert sorted(NOTEBOOK_EDITS) == sorted(f.replace("<NN_name>", "10_test_dummy")
                                            .replace("<name>", "test_dummy")
                                            for f in rows[NOTEBOOK_ROW][0])


def test_a_claim_of_08_in_two_files_is_judged_and_shown(tmp_path):
    """A claim added to notebook 08 in its row of data/claims.csv and its rule, and nothing
    else, is judged by 08's design rule, and shows in 08's verdict table and article table
    (what the notebook calls, on the committed data)."""
    touched, out = _edited_run(tmp_path, CLAIM_EDITS, CLAIM_CHECK)
    assert touched == set(CLAIM_EDITS) and len(touched) == 2
    assert out["rule"] == ["08_switch_frequency_verdict_runs"]
    assert DUMMY_CLAIM in out["claims"]
    assert out["verdict"] and out["verdict"][0] in ("reproduced", "contradicted", "inconclusive")
    assert out["value"][0] not in ("", "not measured")
    assert out["article"] and out["verdict"][0] in out["article"][0]


def test_a_notebook_with_its_record_in_three_files_is_picked_up(tmp_path):
    """A notebook, its record and its analysis module: reproduce's list, the parameters
    and the start page's index take it."""
    touched, out = _edited_run(tmp_path, NOTEBOOK_EDITS, NOTEBOOK_CHECK)
    assert touched == set(NOTEBOOK_EDITS) and len(touched) == 3
    assert "10_test_dummy" in out["sources"]
    assert out["resolve"] == {"rounds": 1} and out["parsed"] == {"rounds": 2}
    assert "10_test_dummy" in json.dumps(out["index"])
