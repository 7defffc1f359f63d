"""Who may publish (labkit.lab.registry.admission): a store with a list of admitted keys
refuses, in one line each and leaving every byte as it was, an unsigned bundle, a
signature that does not verify and a key not admitted; an admitted key's bundle lands and
names its publisher in every answer. Every machine's answers come from the key that first
published it, by the registry's time; two bundles of one machine and commit that disagree
are flagged with both publishers; runs scaled against their own measurements are flagged.
On the real foreign bundles of ../shared/reference, signed here with test keys."""
import hashlib
import importlib.util
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from conftest import copy_bundle, labkit_cli

from labkit.core.results import REPO
from labkit.lab.registry import admission, consistency, keys, publish, query
from labkit.lab.sharing import bundle
from labkit.lab.sharing.recompute import COMPARED, recompute

REFERENCE = REPO.parent / "shared" / "reference"
# The Intel Xeon bundle is kept among the fixtures, so these tests run on every clone.
XEON = Path(__file__).resolve().parent / "fixtures" / "intel-xeon-amx-kvm-e68bcbc.labkit"
EPYC = REFERENCE / "amd-epyc-zen4-kvm.labkit"
EPYC_RUNS = REFERENCE / "amd-epyc-zen4-kvm.verdict_runs"
needs_epyc = pytest.mark.skipif(not EPYC.exists(), reason="no AMD EPYC reference bundle")
EIGHT_MIB = 8 * 1024 * 1024



def _bytes(reg) -> dict:
    """Every file of the store and the sha256 of its bytes."""
    return {str(p.relative_to(reg)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(reg).rglob("*")) if p.is_file()}


def _scaled(src, dst, factor=5.6):
    """The issue's forgery: C000.2's 8 MiB side scaled in the verdict runs, the verdicts
    recomputed to match; the measurements left as they were."""
    out = copy_bundle(src, dst)
    (out / keys.SIGNATURE).unlink(missing_ok=True)
    runs = pd.read_parquet(out / "verdict_runs.parquet")
    side = (runs.notebook == "01_stack_size") & \
        (pd.to_numeric(runs.stack_size_requested, errors="coerce") == EIGHT_MIB)
    assert side.any()
    runs.loc[side, "ns_per_switch"] = pd.to_numeric(runs.loc[side, "ns_per_switch"]) * factor
    runs.to_parquet(out / "verdict_runs.parquet", index=False)
    verdicts = pd.read_parquet(out / "verdicts.parquet")
    for claim, (why, again) in recompute(bundle.read_bundle(out)).items():
        if why.startswith("disagrees") and again is not None:
            for k in COMPARED:
                verdicts.loc[verdicts.claim_id == claim, k] = str(again.get(k, ""))
    verdicts.to_parquet(out / "verdicts.parquet", index=False)
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Two publishers' keys, the Xeon reference signed by alice, a copy signed by mallory,
    an unsigned copy, and the Xeon with its runs scaled, signed by mallory."""
    d = tmp_path_factory.mktemp("keys")
    alice, mallory = keys.new_key("alice", d / "alice"), keys.new_key("mallory", d / "mallory")
    signed = copy_bundle(XEON, d / "alice.labkit")
    keys.sign(signed, d / "alice")
    other = copy_bundle(XEON, d / "mallory.labkit")
    keys.sign(other, d / "mallory")
    scaled = _scaled(XEON, d / "scaled.labkit")
    meta = json.loads((scaled / "machine.json").read_text())
    meta["created"] = "2027-01-01T00:00:00+00:00"  # claims to be the newest
    (scaled / "machine.json").write_text(json.dumps(meta, indent=1))
    keys.sign(scaled, d / "mallory")
    return {"dir": d, "alice": alice, "mallory": mallory, "signed": signed, "other": other,
            "unsigned": copy_bundle(XEON, d / "unsigned.labkit"), "scaled": scaled}


def _line(key: keys.Signer) -> str:
    return f"ed25519 {key.public_key} {key.name}"


def test_an_admitting_registry_refuses_strangers_in_one_line_each(world, tmp_path):
    reg = tmp_path / "store"
    done = labkit_cli("registry", "admit", _line(world["alice"]), "--name", "Alice L.",
                "--registry", str(reg))
    assert done.returncode == 0, done.stderr
    before = _bytes(reg)
    altered = copy_bundle(world["signed"], tmp_path / "altered.labkit")
    data = bytearray((altered / "measurements.parquet").read_bytes())
    data[len(data) // 2] ^= 0x01
    (altered / "measurements.parquet").write_bytes(bytes(data))
    refusals = {"unsigned": (world["unsigned"], "unsigned, and this registry takes only"),
                "does not verify": (altered, "does not verify"),
                "not admitted": (world["other"], f"signed by mallory ({world['mallory'].fingerprint}), "
                                 "a key this registry has not admitted")}
    for what, (b, said) in refusals.items():
        done = labkit_cli("publish", str(b), "--registry", str(reg))
        err = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(err) == 1, (what, done.stderr)
        assert said in err[0] and str(b) in err[0], (what, err[0])
        assert _bytes(reg) == before, what
    done = labkit_cli("publish", str(world["signed"]), "--registry", str(reg), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["publisher"], out["fingerprint"]) == ("Alice L.", world["alice"].fingerprint)
    claims = labkit_cli("registry", "claims", "--registry", str(reg), "--json")
    assert claims.returncode == 0 and "open registry" not in claims.stderr
    rows = [v for r in json.loads(claims.stdout)["records"] for v in r["verdicts"]]
    assert rows and {(v["publisher"], v["fingerprint"]) for v in rows} == \
        {("Alice L.", world["alice"].fingerprint)}
    m = query.machines(reg)
    assert list(m.publisher) == ["Alice L."]


def test_an_open_registry_says_so_and_names_unsigned_publishers(world, tmp_path):
    reg = tmp_path / "open"
    publish.publish(world["unsigned"], reg)
    assert admission.admitted(reg) is None
    done = labkit_cli("registry", "machines", "--registry", str(reg), "--json")
    assert done.returncode == 0 and done.stderr.strip() == admission.OPEN
    assert json.loads(done.stdout)["records"][0]["publisher"] == "unsigned"


@pytest.fixture(scope="module")
def contested(world, tmp_path_factory):
    """A store admitting alice and mallory: alice's genuine Xeon, then mallory's bundle of
    the same machine id with its runs scaled and a later `created`."""
    reg = tmp_path_factory.mktemp("contested") / "store"
    admission.admit(reg, _line(world["alice"]))
    admission.admit(reg, _line(world["mallory"]))
    publish.publish(world["signed"], reg)
    before = query.claims(reg)
    out = publish.publish(world["scaled"], reg)  # recomputes and agrees: it lands
    return {"registry": reg, "before": before, "scaled": out}


def test_no_one_takes_over_a_machine_and_disagreement_is_flagged(world, contested):
    reg, claims_before, out = contested["registry"], contested["before"], contested["scaled"]
    c2 = claims_before[claims_before.claim_id == "C000.2"]
    assert len(c2) == 1 and c2.verdict.iloc[0] == "contradicted"
    assert out["flags"].startswith(consistency.FLAG + ": 01_stack_size"), out["flags"]
    after = query.claims(reg)
    keep = ["claim_id", "machine", "verdict", "measured_value", "publisher"]
    pd.testing.assert_frame_equal(after[keep], claims_before[keep])
    m = query.machines(reg)
    assert len(m) == 1 and m.claimed_by_others.iloc[0] == 1 and m.publisher.iloc[0] == "alice"
    split = after[after.disagreement != ""]
    assert "C000.2" in set(split.claim_id)
    said = split[split.claim_id == "C000.2"].disagreement.iloc[0]
    assert f"contradicted by alice ({world['alice'].fingerprint})" in said
    assert f"reproduced by mallory ({world['mallory'].fingerprint})" in said
    line = {r["claim_id"]: r["line"] for r in query.tally(after)}["C000.2"]
    assert "the opposite verdict" in line
    text = labkit_cli("registry", "claims", "--registry", str(reg)).stdout
    assert "! " in text and "reproduced by mallory" in text


@needs_epyc
def test_genuine_bundles_are_not_flagged_and_scaled_runs_are(world, tmp_path):
    genuine = [XEON, bundle.attach_runs(EPYC, EPYC_RUNS, tmp_path / "epyc"),
               bundle.pack_folder(REPO / "data", tmp_path / "committed")]
    for b in genuine:
        assert consistency.flag(bundle.read_bundle(b)) == "", b
    said = consistency.flag(bundle.read_bundle(world["scaled"]))
    # x5.6 on top of the 1.05 the genuine runs stand from the measurements
    assert said.startswith(consistency.FLAG) and "8388608" in said and "x5.87" in said, said


CHROMIUM = os.environ.get("LABKIT_CHROMIUM", "/usr/bin/chromium")


def _no_browser() -> str:
    if not Path(CHROMIUM).exists():
        return f"Chromium is not installed at {CHROMIUM}"
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install -e '.[test]')"
    return ""


@pytest.mark.skipif(bool(_no_browser()), reason=_no_browser() or "")
def test_the_gallery_names_publishers_and_flags_the_disagreement(world, contested, tmp_path):
    from playwright.sync_api import sync_playwright

    done = labkit_cli("registry", "gallery", "--registry", str(contested["registry"]), "-o",
                str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto((tmp_path / "site" / "index.html").as_uri(), wait_until="load")
            head = page.locator("table.grid thead th").all_inner_texts()
            cell = page.locator("#c-C000\\.2 td.split")
            said = cell.inner_text()
            cell.scroll_into_view_if_needed()
            cell.screenshot(path=str(tmp_path / "disagreement.png"))
            section = page.locator("section.machine").first.inner_text()
        finally:
            browser.close()
    assert any("by alice" in h for h in head), head
    assert "contradicted" in said and "reproduced by mallory" in said, said
    assert f"contradicted by alice ({world['alice'].fingerprint})" in said, said
    assert "published by alice" in section and world["alice"].fingerprint in section
    assert "bundles of other keys claiming this machine" in section
