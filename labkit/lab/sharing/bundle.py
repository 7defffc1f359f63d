"""Results bundles: one machine's results in a folder that travels (packed, read and
checked here; several machines' bundles are put side by side by labkit.lab.sharing.merge).

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
This labkit reads bundles of the formats in READS (2 and 3).
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


class ForeignResultsError(ValueError):
    """The results to bundle were measured on another machine."""


def _stringify_objects(df):
    # Parquet wants one type per column; columns mixing numbers and text become text.
    for col in df.columns:
        if df[col].dtype == object:
            df[col] = df[col].map(lambda v: None if v is None or v != v else str(v))
    return df


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
