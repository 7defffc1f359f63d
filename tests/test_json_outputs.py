"""Every `--json` of the command line, found by walking its parser, prints `schema`
(labkit.<command>/<version>) and the context block (machine, build, commit, command, date)
before what it answers (labkit.lab.envelope.stamped)."""
import argparse
import json
from pathlib import Path

import pytest
from conftest import copy_bundle

from labkit.core import results
from labkit.lab import cli
from labkit.lab.cli.main import COMMANDS, build_parser
from labkit.lab import envelope

FIXTURES = Path(__file__).resolve().parent / "fixtures"
XEON = FIXTURES / "intel-xeon-kvm.labkit"
AMX = FIXTURES / "intel-xeon-amx-kvm-e68bcbc.labkit"
# reproduce runs notebooks: test_cli.py's reproduce test checks its summary is stamped.
ELSEWHERE = {"reproduce"}


def _json_commands(parser, prefix=()) -> set[str]:
    """The commands (registry's questions as `registry.<question>`) that take --json."""
    found = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name in {a for c in COMMANDS for a in c.aliases}:
                    continue
                found |= _json_commands(sub, (*prefix, name))
        elif "--json" in action.option_strings:
            found.add(".".join(prefix))
    return found


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """A registry holding the Xeon reference bundle, published through --json."""
    d = tmp_path_factory.mktemp("json")
    reg = d / "store"
    bundle = copy_bundle(XEON, d / "xeon.labkit")
    return reg, ["publish", str(bundle), "--registry", str(reg), "--json"]


def cases(registry) -> dict:
    reg, publish = registry
    at = ["--registry", str(reg), "--json"]
    return {
        "measure": ["measure", "asm", "--switches", "1000", "--repeats", "2", "--json"],
        "catalogue": ["catalogue", "--json"],
        "check": ["check", "--json"],
        "compare": ["compare", "--calibration", "--json"],
        "card": ["card", "--switches", "2000", "--repeats", "3", "--json"],
        "advise": ["advise", "--work", "20us", "--switches", "2", "--alive", "1024",
                   "--stack-in-use", "1KiB", "--stack-size", "64KiB", "--design", "asm",
                   "--json"],
        "merge": ["merge", str(XEON), str(AMX), "--allow-other-commits", "--json"],
        "publish": publish,
        "registry.machines": ["registry", "machines", *at],
        "registry.claims": ["registry", "claims", *at],
        "registry.ladder": ["registry", "ladder", *at],
        "registry.effects": ["registry", "effects", *at],
        "registry.compact": ["registry", "compact", *at],
        # no bundles: the envelope is what is checked, not the figures (minutes at scale)
        "registry.bench": ["registry", "bench", "--scratch", str(reg.parent / "scratch"),
                           "--bundles", "0", "--json"],
    }


def test_every_json_output_carries_its_schema_and_context(registry, tmp_path, capsys,
                                                         monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path / "results"))
    walked = _json_commands(build_parser())
    todo = cases(registry)
    assert walked == set(todo) | ELSEWHERE, "a --json without a case here"
    try:
        for name, argv in todo.items():  # publish first: the registry's questions read it
            assert cli.main(argv) == 0, (name, capsys.readouterr().err)
            out = json.loads(capsys.readouterr().out)
            assert list(out)[:2] == ["schema", "context"], name
            assert out["schema"] == envelope.schema(name) == f"labkit.{name}/1"
            ctx = out["context"]
            assert {"machine", "build", "labkit_commit", "command", "date"} <= set(ctx), name
            assert ctx["machine"]["machine_id"] and ctx["build"]["labkit_version"], name
            # the command run, not the argv of the process calling cli.main (pytest's)
            assert ctx["command"] == " ".join(["labkit", *argv]), name
            assert len(out) > 2, name  # and what it answers
    finally:
        results.set_home(None)


def test_a_list_goes_under_records_and_nan_is_null():
    got = envelope.stamped("x", [{"v": float("nan")}], [], ctx={"date": "d"})
    assert got == {"schema": "labkit.x/1", "context": {"date": "d"}, "records": [{"v": None}]}
