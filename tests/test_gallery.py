"""The registry's gallery (labkit.lab.registry.gallery): one static page from a registry of
the reference bundles and this checkout's committed data, checked as text and then in
headless Chromium with the network watched: every claim row, every machine's section with
its CPUID fields, the ladder figure, and no request leaving file://.

Chromium as tests/test_browser.py finds it (LABKIT_CHROMIUM, Debian's /usr/bin/chromium);
skipped with the reason where it or Playwright is missing, a failure under
LABKIT_REQUIRE_BROWSER=1."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.core.results import REPO
from labkit.lab.registry import gallery, publish, query, synthetic
from labkit.lab.registry import store as stores
from labkit.lab.sharing import bundle

REFERENCE = REPO.parent / "shared" / "reference"
XEON_REF = Path(__file__).resolve().parent / "fixtures" / "intel-xeon-kvm.labkit"
EPYC = REFERENCE / "amd-epyc-zen4-kvm.labkit"
EPYC_RUNS = REFERENCE / "amd-epyc-zen4-kvm.verdict_runs"
CHROMIUM = os.environ.get("LABKIT_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = REPO / "reports" / "browser"


def _browser_missing() -> str:
    if not Path(CHROMIUM).exists():
        return f"Chromium is not installed at {CHROMIUM} (apt-get install chromium, or set LABKIT_CHROMIUM)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[test]')"
    return ""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A registry of the committed data, the Xeon reference and (when beside this
    checkout) the EPYC reference with its runs; the gallery built from it by the CLI."""
    d = tmp_path_factory.mktemp("gallery")
    paths = [bundle.pack_folder(REPO / "data", d / "committed"), XEON_REF]
    if EPYC.exists() and EPYC_RUNS.exists():
        paths.append(bundle.attach_runs(EPYC, EPYC_RUNS, d / "epyc"))
    reg = d / "store"
    for p in paths:
        publish.publish(p, reg)
    out = d / "site"
    done = subprocess.run([sys.executable, "-m", "labkit", "registry", "gallery", "--registry",
                           str(reg), "-o", str(out)], capture_output=True, text=True, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    page = out / gallery.PAGE
    assert done.stdout.strip() == str(page)
    return {"registry": reg, "page": page, "paths": paths, "html": page.read_text(encoding="utf-8"),
            "machines": query.machines(reg), "claims": query.claims(reg)}


def test_the_page_holds_every_claim_and_machine_and_fetches_nothing(built):
    text, m, rows = built["html"], built["machines"], built["claims"]
    claim_ids = sorted(set(rows.claim_id))
    assert len(claim_ids) >= 40
    found = re.findall(r'<tr class="claim" id="c-([^"]+)"', text)
    assert found == claim_ids
    for r in m.itertuples():
        section = text[text.index(f'id="m-{r.machine}"'):]
        section = section[:section.find("</section>")]
        assert r.cpu_vendor in section and f">{r.layers}<" in section
    if EPYC.exists() and EPYC_RUNS.exists():  # the EPYC's CPUID fields, as its bundle records them
        epyc = bundle.read_bundle(EPYC)["machine"]["machine_id"]
        assert epyc in set(m.machine)
        section = text[text.index(f'id="m-{epyc}"'):]
        hw = section[:section.find("</table>")]
        for head, value in (("family", "25"), ("model", "17"), ("stepping", "1"),
                            ("microcode", "0x1000065"), ("virtualisation layers", "kvm+docker")):
            assert f"<th>{head}</th><td>{value}</td>" in hw
        assert re.search(r"<th>vector ISA</th><td>[^<]*avx512f", hw)
    # nothing that could be fetched: no src at all, no link off the page, a CSP to say so
    assert " src=" not in text and not re.search(r'href="(?!#)', text)
    assert "default-src 'none'" in text
    assert "<svg" in text and "ns per switch (log scale)" in text


def test_the_ladder_gives_intervals_only_over_processes(built):
    lad = gallery.ladder_points(built["registry"], query.verdict_runs(built["registry"]))
    with_runs = lad[lad.processes > 0]
    assert set(with_runs.entry) >= {"boost_fiber", "virtual_call"}
    assert ((with_runs.low <= with_runs.value) & (with_runs.value <= with_runs.high)).all()
    alone = lad[lad.processes == 0]
    assert alone.low.isna().all() and (alone.repeats > 0).all()
    # the old Xeon bundle carries no runs: none of its points has an interval
    old = built["machines"][built["machines"].format == "2"].label.iloc[0]
    assert (lad[lad.label == old].processes == 0).all()


def test_bad_arguments_are_refused(built, tmp_path):
    with pytest.raises(TypeError, match="out"):
        gallery.build(built["registry"], None)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="out must be a folder"):
        gallery.build(built["registry"], f)
    empty = gallery.render(gallery.collect(tmp_path / "no-store"))
    assert "holds no full bundles" in empty


def test_synthetic_bundles_go_only_to_a_scratch_store(built, tmp_path):
    with pytest.raises(ValueError, match="real bundles"):
        synthetic.synthesise(built["registry"], [XEON_REF], 1)
    scratch = tmp_path / "scratch"
    mine = built["paths"][0]
    synthetic.synthesise(scratch, [mine, XEON_REF], 14)
    store = stores.open_store(scratch)
    rels = store.bundles()
    assert len(rels) == 14 and len(query.machines(scratch)) == 14
    rows = gallery.machine_rows(scratch)
    assert rows.synthetic.astype(str).isin(["True", "true"]).all()
    assert set(query.claims(scratch)["check"]) == {synthetic.CHECK}
    # the processes of a resampled bundle are the template's, drawn again: same count per
    # notebook, every value one the template has
    real = bundle.read_bundle(mine)["runs"]
    rel = next(r for r in rels if f"format={bundle.FORMAT}" in r)
    runs = store.read(rel, "verdict_runs.parquet")
    assert (runs.groupby("notebook").worker.nunique()
            == real.groupby("notebook").worker.nunique()).all()
    assert set(runs.ns_per_switch.dropna()) <= set(real.ns_per_switch.dropna())
    # more machines than the grid shows one by one: grouped by CPU
    data = gallery.collect(scratch)
    assert data["grouped"] and data["effects_not_decided"]
    html = gallery.render(data)
    assert html.count('<tr class="machine"') == 14
    assert html.count("7 machines</span>") == 2


_WHY = _browser_missing()


@pytest.mark.skipif(bool(_WHY) and not os.environ.get("LABKIT_REQUIRE_BROWSER"), reason=_WHY)
def test_the_page_in_chromium_offline(built, tmp_path):
    assert not _WHY, f"LABKIT_REQUIRE_BROWSER is set but {_WHY}"
    from playwright.sync_api import sync_playwright

    requests = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("request", lambda r: requests.append(r.url))
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.goto(built["page"].as_uri(), wait_until="load")
            rows = page.locator("tr.claim").count()
            sections = page.locator("section.machine").count()
            svg_dots = page.locator("svg.ladder circle").count()
            headers = page.locator("table.grid thead th a").all_inner_texts()
            shot = tmp_path / "gallery.png"
            page.screenshot(path=str(shot), full_page=True)
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "gallery.png"), full_page=True)
            first = built["machines"].machine.iloc[0]
            page.locator(f'a[href="#m-{first}"]').first.click()
            in_view = page.evaluate(f"document.getElementById('m-{first}')"
                                    ".getBoundingClientRect().top")
        finally:
            browser.close()
    assert rows == built["claims"].claim_id.nunique()
    assert sections == len(built["machines"]) == len(headers)
    assert sorted(headers) == sorted(built["machines"].label)
    assert svg_dots >= 20 * len(built["machines"])  # a dot per design and machine
    assert requests and all(u.startswith("file://") for u in requests), requests
    assert not errors, errors
    assert shot.stat().st_size > 10_000
    assert -2 < in_view < 1000  # the machine's link leads to its section
    assert str(built["registry"].parent) not in built["html"]  # no local path on the page


# ---- the room: its bundles published, its page, the learners' predictions ----

def test_a_prediction_is_judged_with_the_claims_rule():
    from labkit.lab.registry import predictions as pr

    measured = "8.68 [6.79, 11.1]"
    assert pr.judge("5..20", "reproduced", measured) == pr.RIGHT    # interval inside
    assert pr.judge("1.5..3", "reproduced", measured) == pr.WRONG   # wholly outside
    assert pr.judge("8..10", "reproduced", measured) == pr.UNDECIDED  # straddles an end
    assert pr.judge("reproduced", "reproduced", measured) == pr.RIGHT
    assert pr.judge("contradicted", "reproduced", measured) == pr.WRONG
    assert pr.judge("reproduced", "inconclusive", measured) == pr.UNDECIDED
    assert pr.measured_interval("x=1 [1, 1]: call 0.75") == (1.0, 1.0, 1.0)
    for bad in ("3..1", "maybe", "1.5-3", ""):
        with pytest.raises(ValueError, match="predicted"):
            pr.parse(bad)


def test_a_bad_predictions_file_names_the_row(tmp_path):
    from labkit.lab.registry import predictions as pr

    f = tmp_path / "p.csv"
    f.write_text("learner,claim_id,predicted\nalice,C000.3a,reproduced\nbob,C999.9,1..2\n")
    with pytest.raises(ValueError, match=r"row 3: claim_id 'C999.9'"):
        pr.read(f)
    f.write_text("learner,claim_id,predicted\nalice,C000.3a,soon\n")
    with pytest.raises(ValueError, match="row 2: predicted"):
        pr.read(f)
    f.write_text("learner,claim\nalice,C000.3a\n")
    with pytest.raises(ValueError, match="missing claim_id, predicted"):
        pr.read(f)


def _expected(predicted, verdict, measured):
    """The outcome worked out by hand: interval inside, outside or across the range."""
    from labkit.lab.registry import predictions as pr

    if predicted in ("reproduced", "contradicted"):
        return "undecided" if verdict == "inconclusive" else \
            "right" if verdict == predicted else "wrong"
    a, b = map(float, predicted.split(".."))
    _, lo, hi = pr.measured_interval(measured)
    return "right" if a <= lo and hi <= b else "wrong" if hi < a or lo > b else "undecided"


def test_the_room_publishes_its_bundles_and_counts_predictions(built, tmp_path):
    pytest.importorskip("cryptography")
    from labkit.lab.room import room

    preds = tmp_path / "predictions.csv"
    preds.write_text("learner,claim_id,predicted\nalice,C000.3a,reproduced\n"
                     "bob,C000.3a,0.9..1.1\ncarol,C000.3a,reproduced\nalice,C000.3,5..20\n")
    folders = {}
    for p in built["paths"]:
        folders[bundle.read_bundle(p)["machine"]["machine_id"]] = p
    # another room's machine already in the registry: not on this room's page
    other = bundle.read_bundle(XEON_REF)["machine"]["machine_id"]
    publish.publish(folders.pop(other), tmp_path / "reg")
    run = room.RoomRun(out=tmp_path / "out", bundles=dict(folders), registry=str(tmp_path / "reg"),
                       predictions=preds)
    run.out.mkdir()
    room._to_registry(run)
    assert set(run.published) == set(folders) and other not in run.published
    assert all(v.startswith("stored as") for v in run.published.values())
    run.published.pop(next(iter(run.published)))
    room._to_registry(run)  # published again: the registry already holds it
    assert "already in the registry" in run.published.values()
    text = run.page.read_text()
    rows = query.claims(tmp_path / "reg")
    assert other in set(rows.machine)
    rows = rows[rows.machine.isin(folders)]
    assert f"<p>{len(folders)} machines (" in text
    assert len(re.findall(r'<tr class="claim"', text)) == rows.claim_id.nunique()
    c3a = text[text.index('id="c-C000.3a"'):]
    c3a = c3a[:c3a.index("</tr>")]
    assert "reproduced: 2 (alice, carol)" in c3a and "0.9..1.1: 1 (bob)" in c3a
    want = {}
    for learner, predicted in (("alice", "reproduced"), ("bob", "0.9..1.1"), ("carol", "reproduced")):
        for r in rows[rows.claim_id == "C000.3a"].itertuples():
            k = _expected(predicted, r.verdict, r.measured_value)
            want[k] = want.get(k, 0) + 1
    assert sum(want.values()) == 3 * len(folders)
    for k, v in want.items():
        assert f"{k} {v}" in c3a
    # the room's tally is the registry's, over the room's machines only
    assert [line for line in query.tally(rows) if line["claim_id"] == "C000.3a"][0]["line"] \
        .split(": ", 1)[1] in c3a
