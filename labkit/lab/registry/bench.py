"""The registry at scale, measured (docs/registry.md, "Scale"): a scratch store of synthetic
bundles (labkit.lab.registry.synthetic), its size per bundle, the claims query's and the
gallery's times, the query plan's partition filter, and optionally the same on SeaweedFS
with a storm of concurrent publishers. A benchmark, not a test: `labkit registry bench`
prints its figures."""
from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labkit.core import validate
from labkit.core.results import REPO
from labkit.lab.registry import gallery, index, query, serve, synthetic
from labkit.lab.registry import store as stores
from labkit.lab.sharing import bundle

REPEATS = 3  # each timing is the median of this many runs, each on a fresh connection
MOST_BUNDLES = 100_000  # synthetic bundles in one store: far above any run docs/registry.md shows
MOST_PUBLISHERS = 1_000  # the storm's publishers: one process each, all at once


def _timed(fn, repeats: int = REPEATS) -> tuple[float, list]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times


def machine_text() -> str:
    """The machine the figures belong to: CPU brand, CPUs, kernel."""
    brand = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                brand = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{brand or platform.processor()}, {os.cpu_count()} vCPU, Linux {platform.release()}"


def _templates() -> list[Path]:
    """The real bundles synthetic ones are made from: the references beside this checkout
    (the EPYC with its runs attached) and this checkout's committed data."""
    ref = REPO.parent / "shared" / "reference"
    tmp = Path(tempfile.mkdtemp(prefix="labkit-bench-templates-"))
    out = [bundle.pack_folder(REPO / "data", tmp / "committed")]
    epyc, runs = ref / "amd-epyc-zen4-kvm.labkit", ref / "amd-epyc-zen4-kvm.verdict_runs"
    if epyc.exists() and runs.exists():
        out.append(bundle.attach_runs(epyc, runs, tmp / "epyc"))
    xeon = REPO / "tests" / "fixtures" / "intel-xeon-kvm.labkit"
    if xeon.exists():
        out.append(xeon)
    return out


def local_figures(scratch, n: int) -> dict:
    store = stores.open_store(scratch)
    have = len(store.bundles())
    made = 0
    if have < n:
        t = time.perf_counter()
        made = synthetic.synthesise(store, _templates(), n - have, seed=have, start=have)
        synth_s = time.perf_counter() - t
    return {"bundles_made_now": made,
            "synthesis_s_per_bundle": round(synth_s / made, 4) if made else None,
            **store_figures(store)}


def store_figures(store: stores.Store) -> dict:
    """Size, compaction, claims (all; one commit) and gallery times of a store."""
    count = len(store.bundles())
    size = store.size_bytes()
    t = time.perf_counter()
    packed = index.compact(store)
    compact_s = time.perf_counter() - t
    commit = query.machines(store).commit.iloc[0]
    q_all, q_all_runs = _timed(lambda: query.tally(query.claims(store)))
    q_one, q_one_runs = _timed(lambda: query.claims(store, filters={"commit": commit}))
    plan = query.explain_claims(store, filters={"commit": commit})
    out_dir = Path(tempfile.mkdtemp(prefix="labkit-bench-gallery-"))
    g, g_runs = _timed(lambda: gallery.build(store, out_dir))
    page = (out_dir / gallery.PAGE).stat().st_size
    shutil.rmtree(out_dir)
    return {"bundles": count, "bytes_per_bundle": round(size / count), "store_bytes": size,
            "compact": packed, "compact_s": round(compact_s, 2),
            "claims_query_s": round(q_all, 3), "claims_query_runs_s": _r(q_all_runs),
            "claims_query_one_commit_s": round(q_one, 3), "claims_one_commit_runs_s": _r(q_one_runs),
            "commit_filtered": commit,
            "plan_filter_lines": [ln.strip() for ln in plan.splitlines()
                                  if "ilter" in ln or "commit" in ln or "Scanning" in ln
                                  or "/" in ln.strip("│ ")],
            "plan": plan,
            "gallery_build_s": round(g, 3), "gallery_build_runs_s": _r(g_runs),
            "gallery_page_bytes": page}


def _r(times) -> list:
    return [round(t, 3) for t in times]


def _storm_bundles(n: int, into: Path) -> list[Path]:
    """n distinct copies of the old Xeon bundle (format 2: published without the
    recomputation, so the storm loads the store, not the CPUs)."""
    src = REPO / "tests" / "fixtures" / "intel-xeon-kvm.labkit"
    out = []
    for i in range(n):
        dst = into / f"storm{i}.labkit"
        shutil.copytree(src, dst)
        bundle.relabel(dst, f"57{i:04x}" + "5" * 6)
        meta = json.loads((dst / "machine.json").read_text())
        meta["synthetic"] = True
        (dst / "machine.json").write_text(json.dumps(meta))
        out.append(dst)
    return out


def seaweed_figures(k: int, storm: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="labkit-bench-weed-"))
    out = {}
    try:
        with serve.Server(work / "weed", f"127.0.0.1:{serve._free_port('127.0.0.1')}") as s:
            os.environ.update(s.env)  # the writer key, for this process and the storm's
            s3 = stores.open_store(s.url + "/bench")
            if k:
                t = time.perf_counter()
                synthetic.synthesise(s3, _templates(), k)
                out["synthesis_s_per_bundle"] = round((time.perf_counter() - t) / k, 4)
                out.update(store_figures(s3))
            if storm:
                paths = _storm_bundles(storm, work)
                target = s.url + "/storm"
                env = dict(os.environ, PYTHONPATH=str(REPO))
                t = time.perf_counter()
                procs = [subprocess.Popen([sys.executable, "-m", "labkit", "publish", str(p),
                                           "--registry", target], env=env, cwd=REPO,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                         for p in paths]
                codes = [p.wait() for p in procs]
                wall = time.perf_counter() - t
                stored = len(stores.open_store(target).bundles())
                out.update(storm_clients=storm, storm_ok=codes.count(0), storm_stored=stored,
                           storm_wall_s=round(wall, 1),
                           storm_bundles_per_s=round(stored / wall, 2),
                           storm_errors=sorted({p.stderr.read().decode().strip()[:200]
                                                for p, c in zip(procs, codes) if c})[:3])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def figures(scratch, bundles: int = 1000, seaweed: int = 0, storm: int = 0) -> dict:
    """The figures of `bundles` synthetic bundles in the scratch store `scratch` (0: none),
    and, with `seaweed` or `storm`, of a SeaweedFS store on loopback; `repeats`: the runs
    each time is the median of."""
    for name, n, most in (("bundles", bundles, MOST_BUNDLES), ("seaweed", seaweed, MOST_BUNDLES),
                          ("storm", storm, MOST_PUBLISHERS)):
        validate.integer_in(name, n, 0, most)
    out = {"repeats": REPEATS}
    if bundles:
        out["local"] = local_figures(scratch, bundles)
    if seaweed or storm:
        out["seaweedfs"] = seaweed_figures(seaweed, storm)
    return out
