"""Results bundles: one machine's results in a folder that travels, and the merge of several
machines' bundles into one side-by-side comparison (a workshop's laptops, an x86-64 and an
AArch64 server).

A bundle is a folder `<name>.labkit/` holding
    machine.json          machine_info() of the machine, the labkit commit, when, quick or not
    measurements.parquet  every experiment's tidy rows (data/<notebook>.csv), with a
                          `notebook` column; every row already carries its machine_id
    verdicts.parquet      the claims ledger of that machine (one row per claim)
Parquet keeps the columns typed and compact; any Arrow/pandas reader opens it.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path

from labkit import ledger, results
from labkit.reproduce import NOTEBOOKS

SUFFIX = ".labkit"


def _experiment_names() -> list[str]:
    return sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def _stringify_objects(df):
    # Parquet wants one type per column; columns mixing numbers and text become text.
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].map(lambda v: None if v is None or v != v else str(v))
    return df


def make_bundle(out: str | Path, *, quick: bool | None = None) -> Path:
    """Write this machine's results (from labkit.results.root()) as a bundle folder; the
    folder is built under a temporary name and renamed into place when complete."""
    import pandas as pd

    from labkit.machine import machine_info

    out = Path(out)
    if out.suffix != SUFFIX:
        out = out.with_name(out.name + SUFFIX)
    frames = []
    failed = {nb for nb, st in ledger.read_manifest().items() if st.get("ok") is False}
    for nb in _experiment_names():
        path = results.data_dir() / f"{nb}.csv"
        # A notebook that failed in the last run has no fresh measurements to travel.
        if path.exists() and nb != "00_claims_ledger" and nb not in failed:
            df = pd.read_csv(path)
            df.insert(0, "notebook", nb)
            frames.append(df)
    if not frames:
        raise FileNotFoundError(f"no results in {results.data_dir()}: run `make reproduce` first")
    measurements = _stringify_objects(pd.concat(frames, ignore_index=True))
    verdict_table = ledger.ledger()
    info = machine_info()
    meta = {"machine": info, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "quick": quick, "results_root": str(results.root()), "format": 1}
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    measurements.to_parquet(tmp / "measurements.parquet", index=False)
    _stringify_objects(verdict_table).to_parquet(tmp / "verdicts.parquet", index=False)
    (tmp / "machine.json").write_text(json.dumps(meta, indent=1, default=str))
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def read_bundle(path: str | Path) -> dict:
    """{machine: dict, measurements: DataFrame, verdicts: DataFrame} of one bundle."""
    import pandas as pd

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a bundle's directory (str or Path), not "
                        f"{type(path).__name__}")
    path = Path(path)
    missing = [n for n in ("machine.json", "measurements.parquet", "verdicts.parquet")
               if not (path / n).exists()]
    if missing:
        raise ValueError(f"path {path} is not a labkit bundle: missing {', '.join(missing)} "
                         "(make one with `python -m labkit bundle -o NAME`)")
    meta = json.loads((path / "machine.json").read_text())
    return {"meta": meta, "machine": meta["machine"],
            "measurements": pd.read_parquet(path / "measurements.parquet"),
            "verdicts": pd.read_parquet(path / "verdicts.parquet")}


def label(machine: dict) -> str:
    """A short column label for a machine: CPU model, arch and fingerprint."""
    return f"{machine['cpu_model']} [{machine['arch']}] {machine['machine_id'][:6]}"


def merge(paths) -> dict:
    """Merge bundles into comparisons: `verdicts` (one row per claim, a verdict and a
    measured value per machine) and `ladder` (median ns per switch of each kernel, one
    column per machine, with each machine's ratio to its own `asm`)."""
    import pandas as pd

    if isinstance(paths, (str, bytes, os.PathLike)) or not hasattr(paths, "__iter__"):
        raise TypeError(f"paths must be a list of bundle directories, not "
                        f"{type(paths).__name__}")
    bundles = [read_bundle(p) for p in paths]
    if len(bundles) < 2:
        raise ValueError(f"paths must name at least two bundles; got {len(bundles)}")
    labels = [label(b["machine"]) for b in bundles]
    if len(set(labels)) != len(labels):
        raise ValueError("two bundles come from the same machine: " + ", ".join(labels))
    v = None
    for lab, b in zip(labels, bundles):
        part = b["verdicts"].set_index("claim_id")[["verdict", "measured_value"]]
        part.columns = pd.MultiIndex.from_product([[lab], part.columns])
        v = part if v is None else v.join(part, how="outer")
    v = v.fillna("not-measured")
    agree = v.xs("verdict", axis=1, level=1).nunique(axis=1) == 1
    v[("all machines", "same verdict")] = agree
    ladders = []
    for lab, b in zip(labels, bundles):
        m = b["measurements"]
        m = m[(m.notebook == "04_latency_ladder") & m.get("ns_per_switch").notna()] \
            if "ns_per_switch" in m else m.iloc[0:0]
        if m.empty:
            continue
        med = m.groupby("kernel").ns_per_switch.median()
        ratio = med / med.get("asm", float("nan"))
        ladders.append(pd.DataFrame({(lab, "median ns"): med, (lab, "ratio to asm"): ratio}))
    ladder = pd.concat(ladders, axis=1) if ladders else pd.DataFrame()
    return {"machines": labels, "verdicts": v, "ladder": ladder}
