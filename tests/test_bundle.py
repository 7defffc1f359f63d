"""Results bundles: this machine's results packed, merged with a bundle from another machine
(a synthetic golden fixture, tests/fixtures/make_synthetic_bundle.py), compared per claim;
a damaged copy of a real bundle (tests/fixtures/README.md) refused with its file named."""
from pathlib import Path

import pytest

import labkit
from labkit.core import results
from labkit.lab.sharing import bundle, merge

SYNTHETIC = Path(__file__).resolve().parent / "fixtures" / "synthetic-aarch64.labkit"
REAL = Path(__file__).resolve().parent / "fixtures" / "intel-xeon-kvm.labkit"


@pytest.fixture
def FIXTURE(tmp_path):
    """The synthetic AArch64 bundle, as if made from this labkit commit (merge compares
    commits)."""
    import json
    import shutil

    copy = tmp_path / "synthetic-aarch64.labkit"
    shutil.copytree(SYNTHETIC, copy)
    meta = json.loads((copy / "machine.json").read_text())
    meta["machine"]["labkit_commit"] = labkit.machine_info()["labkit_commit"]
    (copy / "machine.json").write_text(json.dumps(meta))
    return copy


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path / "results"))
    import pandas as pd

    df = pd.concat([labkit.measure(k, switches=1000, repeats=2) for k in ("asm", "asm_fpu")],
                   ignore_index=True)
    results.save_csv(df, "04_latency_ladder")
    return bundle.make_bundle(tmp_path / "this-machine", quick=True)


def test_bundle_has_the_documented_parts(here):
    assert here.name.endswith(".labkit")
    b = bundle.read_bundle(here)
    assert b["machine"]["machine_id"] == labkit.machine_info()["machine_id"]
    assert set(b["measurements"].notebook) == {"04_latency_ladder"}
    assert len(b["verdicts"]) == len(labkit.lab.judging.claims.registry())


def test_merge_puts_machines_side_by_side(here, FIXTURE):
    out = merge.merge([here, FIXTURE])
    assert len(out["machines"]) == 2 and "SYNTHETIC" in out["machines"][1]
    v = out["verdicts"]
    assert len(v) == len(labkit.lab.judging.claims.registry())
    fixture_col = out["machines"][1]
    assert v.loc["C002.3", (fixture_col, "verdict")] == "reproduced"
    assert v.loc["C003.1", (fixture_col, "verdict")] == "inconclusive"
    # Both machines have a ladder; each machine's asm is its own unit.
    lad = out["ladder"]
    for m in out["machines"]:
        assert lad.loc["asm", (m, "ratio to asm")] == pytest.approx(1.0)
    assert lad.loc["ucontext", (fixture_col, "median ns")] == pytest.approx(404.0)


def test_merge_refuses_bad_input(here, tmp_path):
    with pytest.raises(ValueError, match="at least two"):
        merge.merge([here])
    with pytest.raises(ValueError, match="same machine"):
        merge.merge([here, here])
    with pytest.raises(ValueError, match="not a labkit bundle"):
        merge.merge([here, tmp_path])
    with pytest.raises(TypeError, match="paths"):
        merge.merge(str(here))  # one path, not a list of them
    with pytest.raises(ValueError, match="same machine"):
        merge.merge(p for p in [here, here])  # any iterable of paths will do
    with pytest.raises(TypeError, match="path"):
        bundle.read_bundle(None)


@pytest.fixture
def real_copy(tmp_path):
    """A writable copy of the real bundle of another machine."""
    import shutil

    copy = tmp_path / "colleague" / REAL.name
    shutil.copytree(REAL, copy)
    for f in copy.iterdir():
        f.chmod(0o644)
    return copy


def test_a_real_bundle_from_another_machine_reads(real_copy):
    b = bundle.read_bundle(real_copy)
    assert "Xeon" in b["machine"]["cpu_model"] and not b["meta"]["quick"]
    assert len(b["measurements"]) > 0 and b["verdicts"].claim_id.is_unique


def _damage(copy, name):
    f = copy / name
    if name == "machine.json":
        # A comma lost in an edit: JSON's parser says only where, not which file.
        f.write_text(f.read_text().replace(",", "", 1))
    elif name == "measurements.parquet":
        data = f.read_bytes()
        f.write_bytes(data[: len(data) // 2])  # a copy cut short: Arrow's ValueError
    else:
        data = f.read_bytes()
        f.write_bytes(data[:100] + b"x" * 50 + data[150:])  # bytes overwritten: an OSError


@pytest.mark.parametrize("name", ["machine.json", "measurements.parquet", "verdicts.parquet"])
def test_merge_names_the_damaged_bundle_and_file(real_copy, FIXTURE, name, capsys):
    from labkit.lab.cli import main

    _damage(real_copy, name)
    with pytest.raises(ValueError) as err:
        merge.merge([FIXTURE, real_copy])
    message = str(err.value)
    assert str(real_copy) in message and f"{name} is damaged" in message
    assert "labkit bundle" in message  # what to do about it
    assert main(["merge", str(FIXTURE), str(real_copy)]) == 2  # bad input: a usage error
    err = capsys.readouterr().err
    assert str(real_copy) in err and name in err and "Traceback" not in err


def test_a_bundle_without_its_machine_is_refused(real_copy):
    import json

    meta = json.loads((real_copy / "machine.json").read_text())
    del meta["machine"]["machine_id"]
    (real_copy / "machine.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"machine\.json has no machine\.machine_id.*labkit bundle"):
        bundle.read_bundle(real_copy)


def test_command_line_merge(here, FIXTURE, tmp_path, capsys):
    from labkit.__main__ import main

    assert main(["merge", str(here), str(FIXTURE), "-o", str(tmp_path / "cmp")]) == 0
    assert (tmp_path / "cmp-verdicts.csv").exists()
    assert main(["merge", str(here)]) == 2  # a clear error, not a traceback
    assert "at least two" in capsys.readouterr().err


def test_compare_notebook_runs_on_two_bundles(here, FIXTURE, tmp_path):
    from labkit.lab.running import notebook_run, notebooks

    nb = notebooks.NOTEBOOKS / "compare_machines.py"
    import jupytext
    import nbformat
    import papermill

    src = tmp_path / "compare.ipynb"
    nbformat.write(jupytext.read(nb), src)
    papermill.execute_notebook(str(src), str(tmp_path / "out.ipynb"),
                               parameters={"bundles": [str(here), str(FIXTURE)]},
                               kernel_name=notebook_run.KERNEL_NAME, progress_bar=False,
                               cwd=str(nb.parent))
    text = (tmp_path / "out.ipynb").read_text()
    assert "SYNTHETIC" in text and "C002.3" in text


def test_a_bundle_is_not_written_over_another_unless_asked(tmp_path, monkeypatch, capsys):
    """Another machine's bundle of the same name is left alone: the command stops (exit
    2, one line) and --replace is the way to overwrite."""
    import json
    import shutil

    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path / "results"))
    results.save_csv(labkit.measure("asm", switches=1000, repeats=2), "04_latency_ladder")
    theirs = tmp_path / "theirs.labkit"
    shutil.copytree(REAL, theirs)
    before = {f.name: f.read_bytes() for f in theirs.iterdir()}
    from labkit.lab.cli import main

    assert main(["bundle", "-o", str(tmp_path / "theirs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "exists already" in err[0] and "--replace" in err[0]
    assert {f.name: f.read_bytes() for f in theirs.iterdir()} == before
    with pytest.raises(FileExistsError):
        bundle.pack_folder(Path(__file__).resolve().parent.parent / "data", theirs)
    assert main(["bundle", "-o", str(tmp_path / "theirs"), "--replace"]) == 0
    assert bundle.read_bundle(theirs)["machine"]["machine_id"] != \
        json.loads(before["machine.json"])["machine"]["machine_id"]


def test_bundle_refuses_another_machines_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RESULTS_DIR", str(tmp_path / "results"))
    df = labkit.measure("asm", switches=1000, repeats=2)
    df.loc[0, "machine_id"] = "3c7aea930bae"  # as the committed results of a fresh clone
    results.save_csv(df, "04_latency_ladder")
    with pytest.raises(bundle.ForeignResultsError, match="3c7aea930bae.*another machine|another machine.*3c7aea930bae"):
        bundle.make_bundle(tmp_path / "me")
    assert not (tmp_path / "me.labkit").exists()
    from labkit.lab.cli import main

    assert main(["bundle", "-o", str(tmp_path / "me")]) == 2


def test_no_host_or_path_unless_asked(here, tmp_path):
    b = bundle.read_bundle(here)
    text = (here / "machine.json").read_text()
    assert "hostname" not in b["machine"] and "results_root" not in b["meta"]
    assert str(tmp_path) not in text
    assert "hostname" not in b["measurements"].columns
    for col in b["measurements"].select_dtypes(object).columns:
        assert not b["measurements"][col].astype(str).str.contains(str(tmp_path)).any(), col
    with_host = bundle.make_bundle(tmp_path / "with-host", quick=True, include_host=True)
    meta = bundle.read_bundle(with_host)
    assert meta["machine"]["hostname"] == labkit.machine_info()["hostname"]
    assert meta["meta"]["results_root"] == str(tmp_path / "results")


def test_merge_checks_mode_commit_and_format(here, FIXTURE, tmp_path):
    import json
    import shutil

    def variant(name, **changes):
        copy = tmp_path / f"{name}.labkit"
        shutil.copytree(FIXTURE, copy)
        meta = json.loads((copy / "machine.json").read_text())
        for key, value in changes.items():
            if key == "commit":
                meta["machine"]["labkit_commit"] = value
            else:
                meta[key] = value
        (copy / "machine.json").write_text(json.dumps(meta))
        return copy

    with pytest.raises(ValueError, match="quick and full"):
        merge.merge([here, variant("full", quick=False)])
    with pytest.raises(ValueError, match="different labkit commits"):
        merge.merge([here, variant("old", commit="0123456789ab")])
    assert merge.merge([here, variant("old2", commit="0123456789ab")],
                        same_commit=False)["machines"]
    with pytest.raises(ValueError, match="format 1, this labkit reads formats 2, 3"):
        merge.merge([here, variant("v1", format=1)])



def test_command_line_merge_speaks_in_options(here, FIXTURE, tmp_path, capsys):
    """merge.merge's `paths` and `same_commit` are the command's BUNDLES and
    --allow-other-commits."""
    import json
    import shutil

    from labkit.lab.cli import main

    old = tmp_path / "old.labkit"
    shutil.copytree(FIXTURE, old)
    meta = json.loads((old / "machine.json").read_text())
    meta["machine"]["labkit_commit"] = "0123456789ab"
    (old / "machine.json").write_text(json.dumps(meta))
    assert main(["merge", str(here), str(old)]) == 2
    err = capsys.readouterr().err
    assert "merge: bundles come from different labkit commits" in err
    assert "pass --allow-other-commits" in err and "same_commit" not in err


XEON = Path(__file__).resolve().parent / "fixtures" / "intel-xeon-kvm.labkit"


def test_bundle_carries_the_cpu_identity_the_environment_check_and_the_counters(here):
    b = bundle.read_bundle(here)
    for key in merge.MACHINE_FIELDS:
        assert key in b["machine"], key
    assert [r["key"] for r in b["meta"]["environment"]["rows"]][0] == "aslr"
    for col in ("cpu_family", "microcode", "xcr0", "hypervisor", "container",
                "sw_context_switches", "hw_counters"):
        assert col in b["measurements"].columns, col


def test_a_real_bundle_made_before_the_new_fields_still_merges(here, tmp_path):
    full = bundle.make_bundle(tmp_path / "this-machine-full", quick=False)
    out = merge.merge([full, XEON], same_commit=False)
    mine, xeon = out["machines"]
    assert "Xeon" in xeon
    hw = out["hardware"]
    assert list(hw.index) == list(merge.MACHINE_FIELDS)
    assert hw.loc["cpu_model", xeon] == "Intel(R) Xeon(R) Processor"
    assert hw.loc["cpu_family", xeon] == hw.loc["xcr0", xeon] == merge.NOT_RECORDED
    info = labkit.machine_info()
    assert hw.loc["cpu_family", mine] == str(info["cpu_family"])
    assert hw.loc["xcr0", mine] == info["xcr0"]
    for m in out["machines"]:
        assert out["ladder"].loc["asm", (m, "ratio to asm")] == pytest.approx(1.0)


def test_a_format_2_bundle_reads_with_todays_column_names(here):
    """Format 2 named the catalogue entry `kernel`; read back, it is `entry`, so merge and
    compare see one name whatever the bundle's age."""
    import pandas as pd

    old = pd.read_parquet(REAL / "measurements.parquet")
    assert "kernel" in old.columns and "entry" not in old.columns
    b = bundle.read_bundle(REAL)
    assert b["meta"]["format"] == 2
    assert "kernel" not in b["measurements"].columns
    assert list(b["measurements"].entry) == list(old.kernel)
    mine = bundle.read_bundle(here)
    assert mine["meta"]["format"] == bundle.FORMAT == 5
    assert "entry" in mine["measurements"].columns and "kernel" not in mine["measurements"]


def test_old_data_files_read_with_todays_column_names(tmp_path):
    """An older data/ file: `kernel` is the entry; a design's runs called their side
    `entry`. A file of today's names comes back as it was written."""
    import pandas as pd

    old_runs = pd.DataFrame({"kernel": ["asm", "asm"], "entry": ["4 KiB", "8 MiB"],
                             "worker": [0, 0], "ns_per_switch": [2.0, 3.0]})
    old_echo = pd.DataFrame({"server": ["a"], "entry": ["a"], "worker": [0], "qps": [1.0]})
    new_runs = pd.DataFrame({"entry": ["asm"], "side": ["4 KiB"], "worker": [0]})
    for name, df in (("old_runs", old_runs), ("old_echo", old_echo), ("new_runs", new_runs)):
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    got = results.read_csv(tmp_path / "old_runs.csv")
    assert list(got.columns) == ["entry", "side", "worker", "ns_per_switch"]
    assert list(got.entry) == ["asm", "asm"] and list(got.side) == ["4 KiB", "8 MiB"]
    assert list(results.read_csv(tmp_path / "old_echo.csv").columns) == [
        "server", "side", "worker", "qps"]
    pd.testing.assert_frame_equal(results.read_csv(tmp_path / "new_runs.csv"), new_runs)


def test_command_line_merge_says_not_measured_and_gives_json(here, FIXTURE, capsys):
    import json

    from labkit.__main__ import main

    assert main(["merge", str(here), str(FIXTURE)]) == 0
    text = capsys.readouterr().out
    # This machine's ladder has asm and asm_fpu only; the fixture's has more rungs.
    assert "NaN" not in text and "nan" not in text.lower().split()
    assert merge.NOT_MEASURED in text
    assert main(["merge", str(here), str(FIXTURE), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    machines = data["machines"]
    assert len(machines) == 2 and set(data["hardware"]) == set(machines)
    assert len(data["verdicts"]) == len(labkit.lab.judging.claims.registry())
    c = next(r for r in data["verdicts"] if r["claim_id"] == "C002.3")
    assert c["machines"][machines[1]]["verdict"] == "reproduced" and c["same_verdict"] is False
    unmeasured = [r["machines"][m] for r in data["verdicts"] for m in machines
                  if r["machines"][m]["verdict"] == "not-measured"]
    assert unmeasured and all(u["measured_value"] is None for u in unmeasured)
    rungs = {r["entry"]: r["machines"] for r in data["ladder"]}
    assert rungs["asm"][machines[0]]["ratio_to_asm"] == 1.0
    missing = [e for e, m in rungs.items() if m[machines[0]]["median_ns"] is None]
    assert missing and all(rungs[e][machines[1]]["median_ns"] > 0 for e in missing)


def test_the_readme_names_the_formats_merge_reads():
    import re

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme[readme.index("## Comparing machines"):readme.index("**A room")]
    said = re.search(r"`merge` reads\s+bundles of format ([\d, or]+?) \(", section)
    assert said, "the README must say which bundle formats merge reads"
    assert [int(n) for n in re.findall(r"\d+", said.group(1))] == list(bundle.READS)
    assert f"`labkit bundle` writes {bundle.FORMAT}" in section


def test_a_results_folder_relabelled_reads_as_another_machines(tmp_path):
    """What CI does before the suite (.ci/run): the committed rows named as measured on
    another machine, every other value written back as it was, so that the advice finds
    nothing of this machine's in them."""
    import shutil

    from labkit.core.machine import machine_info
    from labkit.lab.advising import evidence

    data = tmp_path / "data"
    data.mkdir()
    repo = Path(__file__).resolve().parent.parent / "data"
    for name in ("04_latency_ladder.csv", "claims.csv"):
        shutil.copy(repo / name, data / name)
    committed = str(results.read_csv(data / "04_latency_ladder.csv").machine_id.iloc[0])
    (data / "04_latency_ladder.csv").write_text(  # as if measured here
        (data / "04_latency_ladder.csv").read_text().replace(
            committed, machine_info()["machine_id"]))
    before = {p.name: p.read_text() for p in data.iterdir()}
    assert not evidence.from_data(data).rows("04_latency_ladder").empty
    assert bundle.relabel_data(data, "newcomer0000") == ["04_latency_ladder.csv"]
    assert (data / "claims.csv").read_text() == before["claims.csv"]
    after = (data / "04_latency_ladder.csv").read_text()
    assert after == before["04_latency_ladder.csv"].replace(machine_info()["machine_id"],
                                                           "newcomer0000")
    assert evidence.from_data(data).rows("04_latency_ladder").empty
    with pytest.raises(ValueError, match="machine_id"):
        bundle.relabel_data(data, "")
