"""Results bundles: one machine's results in a folder that travels, and the merge of several
machines' bundles into one side-by-side comparison (a workshop's laptops, an x86-64 and an
AArch64 server).

A bundle is a folder `<name>.labkit/` holding
    machine.json          machine_info() of the machine, the labkit commit, when, quick or
                          not, the environment check of the run, the bundle format (no
                          hostname or absolute path unless asked for with include_host)
    measurements.parquet  every experiment's tidy rows (data/<notebook>.csv), with a
                          `notebook` column; every row already carries its machine_id
    verdicts.parquet      the claims ledger of that machine (one row per claim)
Parquet keeps the columns typed and compact; any Arrow/pandas reader opens it.

A bundle carries only what was measured on the machine that packs it: rows with another
machine_id (say, the development VM's results committed in a fresh clone) are refused.
`merge` puts side by side only bundles of a format it reads (READS: 2 and 3), of one mode
(quick or full) and of one labkit commit; `shown` and `merged_records` give its tables as
a person reads them ('not measured', not NaN) and as JSON. Bundles made before a machine
field existed still merge: the field shows as not recorded.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path

from labkit.core import envcheck, results
from labkit.lab.judging import ledger
from labkit.lab.running import notebooks

SUFFIX = ".labkit"
FORMAT = 3  # 3: the catalogue entry's column is `entry` (2: `kernel`)
READS = (2, 3)  # the formats merge and compare read; older frames get today's column names
HOST_COLUMNS = ("hostname",)
# What to do with a damaged bundle.
REMAKE = "make the bundle again with `labkit bundle -o NAME` on the machine that measured it"
# The machine fields merge puts side by side: the CPU as CPUID reports it and its layers.
MACHINE_FIELDS = ("cpu_model", "cpu_vendor", "cpu_family", "cpu_model_id", "cpu_stepping",
                  "microcode", "vector_isa", "xcr0", "xstate_components", "xsave_bytes",
                  "cpu_count", "tsc_ghz", "kernel_release", "compiler", "virtualization",
                  "hypervisor", "container", "governor", "turbo", "smt", "env_warnings")
NOT_RECORDED = "not recorded"


class ForeignResultsError(ValueError):
    """The results to bundle were measured on another machine."""


def _stringify_objects(df):
    # Parquet wants one type per column; columns mixing numbers and text become text.
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].map(lambda v: None if v is None or v != v else str(v))
    return df


def _commit(machine: dict) -> str:
    return str(machine.get("labkit_commit", "unknown")).removesuffix("-dirty")


def _scrub(df):
    """Take the host's name and this machine's absolute paths out of a frame."""
    df = df.drop(columns=[c for c in HOST_COLUMNS if c in df.columns])
    places = {str(results.root()): "<results>", str(results.home()): "<results>",
              os.path.expanduser("~"): "~"}
    for col in df.columns:
        if df[col].dtype == object:
            for path, token in places.items():
                if len(path) > 1:
                    df[col] = df[col].map(lambda v, p=path, t=token:
                                          v.replace(p, t) if isinstance(v, str) else v)
    return df


def make_bundle(out: str | Path, *, quick: bool = False, include_host: bool = False) -> Path:
    """Write this machine's results (from labkit.core.results.root()) as a bundle folder; the
    folder is built under a temporary name and renamed into place when complete. Raises
    ForeignResultsError (a ValueError) if any row was measured on another machine."""
    import pandas as pd

    from labkit.core.machine import machine_info

    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path (str or Path), not {type(out).__name__}")
    if not isinstance(quick, bool) or not isinstance(include_host, bool):
        raise TypeError("quick and include_host must be True or False")
    out = Path(out)
    if out.suffix != SUFFIX:
        out = out.with_name(out.name + SUFFIX)
    info = machine_info()
    frames, foreign = [], {}
    failed = {nb for nb, st in ledger.read_manifest().items() if st.get("ok") is False}
    for nb in notebooks.experiments():
        path = results.data_dir() / f"{nb}.csv"
        # A notebook that failed in the last run has no fresh measurements to travel.
        if path.exists() and nb not in failed:
            df = results.read_csv(path)
            if "machine_id" in df.columns:
                ids = set(df.machine_id.dropna().astype(str)) - {info["machine_id"]}
                if ids:
                    foreign[nb] = sorted(ids)
            df.insert(0, "notebook", nb)
            frames.append(df)
    if foreign:
        others = sorted({i for ids in foreign.values() for i in ids})
        raise ForeignResultsError(
            f"refusing to bundle results measured on another machine: {len(foreign)} "
            f"notebooks' results ({', '.join(foreign)}) in {results.data_dir()} come from "
            f"machine_id {', '.join(others)}, not from this machine ({info['machine_id']}). "
            f"Run `labkit reproduce{' --quick' if quick else ''}` here first")
    if not frames:
        raise FileNotFoundError(f"no results in {results.data_dir()}: run `labkit reproduce` first")
    measurements = _stringify_objects(pd.concat(frames, ignore_index=True))
    verdict_table = ledger.ledger()
    machine = dict(info)
    meta = {"machine": machine, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "quick": quick, "environment": envcheck.latest(), "format": FORMAT}
    if include_host:
        meta["results_root"] = str(results.root())
    else:
        machine.pop("hostname", None)
        measurements = _scrub(measurements)
        verdict_table = _scrub(verdict_table)
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
                         "(make one with `labkit bundle -o NAME`)")
    meta = _parse(path, "machine.json", lambda f: json.loads(f.read_text()))
    machine = meta.get("machine") if isinstance(meta, dict) else None
    lacking = [k for k in ("machine_id", "cpu_model", "arch")
               if not isinstance(machine, dict) or k not in machine]
    if lacking:
        raise ValueError(f"path {path}: the bundle's machine.json has no machine."
                         f"{', machine.'.join(lacking)}; {REMAKE}")
    return {"meta": meta, "machine": machine,
            "measurements": results.current_columns(
                _parse(path, "measurements.parquet", pd.read_parquet)),
            "verdicts": _parse(path, "verdicts.parquet", pd.read_parquet)}


def _parse(path: Path, name: str, read):
    """read(path / name), or a ValueError naming the bundle and the file that is damaged."""
    try:
        return read(path / name)
    except Exception as exc:  # the JSON, Arrow, Thrift and snappy readers each raise their own
        raise ValueError(f"path {path}: the bundle's {name} is damaged ({type(exc).__name__}: "
                         f"{exc}); {REMAKE}") from exc


def label(machine: dict) -> str:
    """A short column label for a machine: CPU model, arch and fingerprint."""
    return f"{machine['cpu_model']} [{machine['arch']}] {machine['machine_id'][:6]}"


def merge(paths, *, same_commit: bool = True) -> dict:
    """Merge bundles into comparisons: `verdicts` (one row per claim, a verdict and a
    measured value per machine), `ladder` (median ns per switch of each kernel, one
    column per machine, with each machine's ratio to its own `asm`) and `hardware` (the
    MACHINE_FIELDS of each machine, 'not recorded' where its bundle predates one)."""
    import pandas as pd

    if isinstance(paths, (str, bytes, os.PathLike)) or not hasattr(paths, "__iter__"):
        raise TypeError(f"paths must be a list of bundle directories, not "
                        f"{type(paths).__name__}")
    paths = list(paths)
    bundles = [read_bundle(p) for p in paths]
    if len(bundles) < 2:
        raise ValueError(f"paths must name at least two bundles; got {len(bundles)}")
    for p, b in zip(paths, bundles):
        if b["meta"].get("format") not in READS:
            raise ValueError(f"paths: {p} is a bundle of format {b['meta'].get('format')}, "
                             f"this labkit reads formats {', '.join(map(str, READS))}: remake "
                             "it with `labkit bundle` from this labkit")
    modes = {("quick" if b["meta"].get("quick") else "full") for b in bundles}
    if len(modes) > 1:
        raise ValueError("paths mix quick and full runs: " + ", ".join(
            f"{p} ({'quick' if b['meta'].get('quick') else 'full'})"
            for p, b in zip(paths, bundles)) + "; compare runs of the same mode")
    commits = {_commit(b["machine"]) for b in bundles}
    if same_commit and len(commits) > 1:
        raise ValueError("paths come from different labkit commits (" + ", ".join(
            f"{p}: {_commit(b['machine'])}" for p, b in zip(paths, bundles)) + "): the "
            "experiments may differ; remake the bundles from one commit, or pass "
            "same_commit=False (--allow-other-commits) to compare anyway")
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
        med = m.groupby("entry").ns_per_switch.median()
        ratio = med / med.get("asm", float("nan"))
        ladders.append(pd.DataFrame({(lab, "median ns"): med, (lab, "ratio to asm"): ratio}))
    ladder = pd.concat(ladders, axis=1) if ladders else pd.DataFrame()
    hardware = pd.DataFrame({lab: [str(b["machine"].get(f, NOT_RECORDED)) for f in MACHINE_FIELDS]
                             for lab, b in zip(labels, bundles)}, index=list(MACHINE_FIELDS))
    return {"machines": labels, "verdicts": v, "ladder": ladder, "hardware": hardware}


NOT_MEASURED = "not measured"  # how a merge shows a value a machine has no measurement of


def shown(frame, digits: int = 2):
    """A merge's frame as a person reads it: numbers rounded, a value a machine did not
    measure (NaN) shown as 'not measured'."""
    frame = frame.round(digits) if not frame.empty else frame
    return frame.astype(object).where(frame.notna(), NOT_MEASURED)


def merged_records(out: dict) -> dict:
    """A merge (merge()'s dict) as plain data for JSON: the machines; each claim's verdict
    and measured value per machine and whether they all agree; each entry's median ns per
    switch and ratio to `asm` per machine (null where a machine did not measure it); and
    the machines' hardware fields."""
    import math

    def value(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        return x.item() if hasattr(x, "item") else x

    machines = out["machines"]
    v = out["verdicts"]
    verdict_rows = [{"claim_id": claim,
                     "same_verdict": bool(row[("all machines", "same verdict")]),
                     "machines": {m: {"verdict": row[(m, "verdict")],
                                      "measured_value": value(row[(m, "measured_value")])}
                                  for m in machines}}
                    for claim, row in v.iterrows()]
    lad = out["ladder"]
    ladder_rows = [{"entry": entry,
                    "machines": {m: {"median_ns": value(row.get((m, "median ns"), math.nan)),
                                     "ratio_to_asm": value(row.get((m, "ratio to asm"),
                                                                   math.nan))}
                                 for m in machines}}
                   for entry, row in lad.iterrows()]
    return {"machines": machines, "verdicts": verdict_rows, "ladder": ladder_rows,
            "hardware": {m: out["hardware"][m].to_dict() for m in machines}}
