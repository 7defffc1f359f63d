"""Results bundles: one machine's results in a folder that travels (packed, read and
checked here; several machines' bundles are put side by side by labkit.lab.sharing.merge).

A bundle is a folder `<name>.labkit/` holding
    machine.json          machine_info() of the machine, the labkit commit, when, quick or
                          not, the environment check of the run, the bundle format (no
                          hostname or absolute path unless asked for with include_host)
    measurements.parquet  every experiment's tidy rows (data/<notebook>.csv), with a
                          `notebook` column; every row already carries its machine_id
    verdicts.parquet      the claims ledger of that machine (one row per claim)
    verdict_runs.parquet  the per-process runs the verdicts stand on (data/<notebook>_
                          verdict_runs.csv, with a `notebook` column), so that anyone can
                          recompute every verdict with labkit.lab.judging.rules (format 4)
    parts.parquet         the data each experiment writes beside its rows and verdicts (its
                          parts, data/<notebook>_<part>.csv, and data under names of its
                          own such as advisor_calibration.csv), with a `data` column naming
                          the file, so that `labkit advise --bundle` reads what it reads
                          here (format 5)
    signature.json        the publisher's signature over every other file, when it has a
                          key (labkit key new; labkit.lab.registry.keys)
Parquet keeps the columns typed and compact; any Arrow/pandas reader opens it.

A bundle carries only what was measured on the machine that packs it: rows with another
machine_id (say, the development VM's results committed in a fresh clone) are refused.
This labkit reads bundles of the formats in READS (2 to 5); a bundle before format 4 has no
verdict runs and reads as not recomputable, one before format 5 no parts.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd

from labkit.core import envcheck, results
from labkit.core.machine import machine_info
from labkit.errors import BundleError
from labkit.lab import experiment
from labkit.lab.judging import ledger
from labkit.lab.registry import keys
from labkit.lab.running import notebooks

SUFFIX = ".labkit"
# 5: parts.parquet; 4: verdict_runs.parquet; 3: the catalogue entry's column is `entry`
# (2: `kernel`)
FORMAT = 5
READS = (2, 3, 4, 5)  # the formats merge and compare read; older frames get today's column names
RECOMPUTABLE_FROM = 4  # the first format that carries the verdict runs
PARTS_FROM = 5  # the first format that carries the experiments' parts
RUNS_SUFFIX = "_verdict_runs"  # data/<notebook>_verdict_runs.csv: a verdict design's runs
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


def make_bundle(out: str | Path, *, quick: bool = False, include_host: bool = False,
                replace: bool = False) -> Path:
    """Write this machine's results (from labkit.core.results.root()) as a bundle folder; the
    folder is built under a temporary name and renamed into place when complete, and an
    existing one is replaced only with `replace`. Raises ForeignResultsError (a ValueError)
    if any row was measured on another machine."""
    if not isinstance(quick, bool) or not isinstance(include_host, bool) \
            or not isinstance(replace, bool):
        raise TypeError("quick, include_host and replace must be True or False")
    out = _free(_bundle_path(out), replace)
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
        raise FileNotFoundError(f"no results in {results.data_dir()}: run `labkit reproduce"
                                f"{' --quick' if quick else ''}` first")
    runs = _runs_of(results.data_dir(), set(notebooks.experiments()) - failed)
    parts = _parts_of(results.data_dir(), set(notebooks.experiments()) - failed)
    for what, df in (("verdict runs", runs), ("parts", parts)):
        foreign = _foreign_runs(df, info["machine_id"])
        if foreign:
            raise ForeignResultsError(
                f"refusing to bundle {what} measured on another machine: machine_id "
                f"{', '.join(foreign)} in {results.data_dir()}, not this machine "
                f"({info['machine_id']}). Run `labkit reproduce{' --quick' if quick else ''}` "
                "here first")
    meta = {"machine": dict(info),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "quick": quick, "environment": envcheck.latest(), "format": FORMAT}
    if include_host:
        meta["results_root"] = str(results.root())
    return _write(out, meta, pd.concat(frames, ignore_index=True), ledger.ledger(), runs,
                  parts, include_host=include_host)


def _runs_of(data_dir: Path, names):
    """The verdict runs of the notebooks `names` found in data_dir, one frame with a
    `notebook` column (None when there are none)."""
    frames = []
    for nb in sorted(names):
        path = Path(data_dir) / f"{nb}{RUNS_SUFFIX}.csv"
        if path.exists():
            frames.append(results.read_csv(path, low_memory=False, float_precision="round_trip")
                          .assign(notebook=nb))
    return pd.concat(frames, ignore_index=True) if frames else None


def _parts_of(data_dir: Path, names):
    """The data the notebooks `names` write beside their rows (experiment.Experiment.
    written_beside) found in data_dir, one frame with a `data` column (None when there is
    none)."""
    frames = []
    for nb in sorted(names):
        for name in experiment.of(nb).written_beside():
            path = Path(data_dir) / f"{name}.csv"
            if path.exists():
                frames.append(results.read_csv(path, low_memory=False,
                                               float_precision="round_trip").assign(data=name))
    return pd.concat(frames, ignore_index=True) if frames else None


# What machine.json says of the packing, not of the run: the same run packed twice is one.
PACKING_FIELDS = ("created",)


def content_hash(path) -> str:
    """sha256 over the bundle's files, names and bytes, in name order; machine.json without
    its PACKING_FIELDS, and no signature: the same run signed or not is one bundle."""
    h = hashlib.sha256()
    for f in sorted(Path(path).iterdir()):
        if f.is_file() and f.name != keys.SIGNATURE:
            data = f.read_bytes()
            if f.name == "machine.json":
                meta = {k: v for k, v in json.loads(data).items() if k not in PACKING_FIELDS}
                data = json.dumps(meta, sort_keys=True).encode()
            h.update(f.name.encode() + b"\0")
            h.update(data)
            h.update(b"\0")
    return h.hexdigest()


def _foreign_runs(runs, machine_id: str) -> list[str]:
    if runs is None or "machine_id" not in runs:
        return []
    return sorted(set(runs.machine_id.dropna().astype(str)) - {str(machine_id)})


def _write(out: Path, meta: dict, measurements, verdict_table, runs, parts=None, *,
           include_host: bool):
    """Write a bundle folder under a temporary name and rename it into place."""
    measurements = _stringify_objects(measurements)
    if not include_host:
        meta["machine"].pop("hostname", None)
        measurements = _scrub(measurements)
        verdict_table = _scrub(verdict_table)
        runs = None if runs is None else _scrub(runs)
        parts = None if parts is None else _scrub(parts)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    measurements.to_parquet(tmp / "measurements.parquet", index=False)
    _stringify_objects(verdict_table).to_parquet(tmp / "verdicts.parquet", index=False)

    # Always written from format 4 on: an empty table says no design ran, not an old bundle.
    runs = pd.DataFrame({"notebook": pd.Series(dtype=str)}) if runs is None else runs
    _stringify_objects(runs).to_parquet(tmp / "verdict_runs.parquet", index=False)
    parts = pd.DataFrame({"data": pd.Series(dtype=str)}) if parts is None else parts
    _stringify_objects(parts).to_parquet(tmp / "parts.parquet", index=False)
    (tmp / "machine.json").write_text(json.dumps(meta, indent=1, default=str))
    keys.sign(tmp)  # the publisher's key, if it has one (labkit key new): signature.json
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def _free(out: Path, replace: bool) -> Path:
    """`out`, refused if something is there already and `replace` was not asked for: a
    bundle is often another machine's, and is not overwritten by surprise."""
    if out.exists() and not replace:
        raise FileExistsError(f"out {out} exists already: choose another name, or replace it "
                              "(labkit bundle --replace)")
    return out


def _bundle_path(out) -> Path:
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"out must be a path (str or Path), not {type(out).__name__}")
    out = Path(out)
    return out if out.suffix == SUFFIX else out.with_name(out.name + SUFFIX)


# The machine fields a data row carries (labkit.core.machine), read back by pack_folder.
ROW_MACHINE_FIELDS = ("machine_id", "cpu_model", "cpu_vendor", "cpu_family", "cpu_model_id",
                      "cpu_stepping", "microcode", "vector_isa", "xcr0", "xsave_bytes", "arch",
                      "cpu_count", "kernel_release", "compiler", "opt_level", "timer", "tsc_ghz",
                      "virtualization", "hypervisor", "container", "governor", "turbo", "smt",
                      "aslr", "isolated_cpus", "env_warnings", "labkit_commit")


def pack_folder(data_dir, out, *, quick: bool = False, replace: bool = False) -> Path:
    """A bundle of a data folder measured on one machine, wherever it is now (a checkout's
    committed data/): the machine is the one its rows record, never this one, and the
    folder's rows must all come from that one machine. The verdicts are the folder's
    00_claims_ledger.csv."""
    if not isinstance(data_dir, (str, os.PathLike)) or not Path(data_dir).is_dir():
        raise ValueError(f"data_dir must be a folder of results (data/); got {data_dir!r}")
    if not isinstance(quick, bool):
        raise TypeError("quick must be True or False")
    data_dir, out = Path(data_dir), _free(_bundle_path(out), replace)
    ledger_csv = data_dir / "00_claims_ledger.csv"
    if not ledger_csv.exists():
        raise ValueError(f"data_dir {data_dir} has no 00_claims_ledger.csv: no verdicts to bundle")
    frames = []
    for nb in notebooks.experiments():
        path = data_dir / f"{nb}.csv"
        if path.exists():
            frames.append(results.read_csv(path, low_memory=False).assign(notebook=nb))
    if not frames:
        raise ValueError(f"data_dir {data_dir} has no experiment's results")
    measurements = pd.concat(frames, ignore_index=True)
    runs = _runs_of(data_dir, notebooks.experiments())
    parts = _parts_of(data_dir, notebooks.experiments())
    ids = set(measurements.get("machine_id", pd.Series(dtype=str)).dropna().astype(str))
    for df in (runs, parts):
        if df is not None and "machine_id" in df:
            ids |= set(df.machine_id.dropna().astype(str))
    if len(ids) != 1:
        raise ValueError(f"data_dir {data_dir}: its rows come from {len(ids)} machines "
                         f"({', '.join(sorted(ids)) or 'none recorded'}); a bundle is one machine's")
    first = measurements[measurements.machine_id.astype(str) == next(iter(ids))].iloc[0]
    machine = {k: (first[k].item() if hasattr(first[k], "item") else first[k])
               for k in ROW_MACHINE_FIELDS if k in first and first[k] == first[k]}
    environment = data_dir / "environment.json"
    meta = {"machine": machine, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "quick": quick, "format": FORMAT, "packed_from": "a data folder (its rows' machine)",
            "environment": json.loads(environment.read_text()) if environment.exists() else None}
    return _write(out, meta, measurements, pd.read_csv(ledger_csv, dtype=str).fillna(""), runs,
                  parts, include_host=False)


def attach_runs(path, runs_dir, out, *, replace: bool = False) -> Path:
    """A copy in today's format of an older bundle with its machine's verdict runs added from
    runs_dir (the data/*_verdict_runs.csv its `make reproduce` wrote beside it). Every
    run must carry the bundle's machine_id."""
    b = read_bundle(path)
    if not isinstance(runs_dir, (str, os.PathLike)) or not Path(runs_dir).is_dir():
        raise ValueError(f"runs_dir must be a folder of *{RUNS_SUFFIX}.csv files; got {runs_dir!r}")
    runs = _runs_of(Path(runs_dir), notebooks.experiments())
    if runs is None:
        raise ValueError(f"runs_dir {runs_dir} holds no *{RUNS_SUFFIX}.csv")
    foreign = _foreign_runs(runs, b["machine"]["machine_id"])
    if foreign:
        raise ValueError(f"runs_dir {runs_dir}: runs of machine_id {', '.join(foreign)}, not "
                         f"the bundle's machine ({b['machine']['machine_id']})")
    meta = dict(b["meta"], format=FORMAT, runs_added=f"from format {b['meta'].get('format')}")
    return _write(_free(_bundle_path(out), replace), meta, b["measurements"], b["verdicts"],
                  runs, b["parts"],
                  include_host="results_root" in meta)


def relabel(path, machine_id: str) -> None:
    """Name a bundle's machine `machine_id`, in machine.json and in every row, keeping the
    real one beside it (real_machine_id): several workers of one machine standing for
    several, in a room's tests and the registry's benchmarks."""
    path = Path(path)
    meta = json.loads((path / "machine.json").read_text())
    real = str(meta["machine"]["machine_id"])
    if machine_id == real:
        return
    meta["machine"].setdefault("real_machine_id", real)
    meta["machine"]["machine_id"] = machine_id
    for table in ("measurements", "verdict_runs", "parts"):
        file = path / f"{table}.parquet"
        if file.exists():
            rows = pd.read_parquet(file)
            if "machine_id" in rows:
                rows["machine_id"] = rows.machine_id.where(rows.machine_id.astype(str) != real,
                                                           machine_id)
                rows.to_parquet(file, index=False)
    (path / "machine.json").write_text(json.dumps(meta, indent=1, default=str))
    if (path / keys.SIGNATURE).exists():  # the old signature covers the old names
        (path / keys.SIGNATURE).unlink()
        keys.sign(path)


def relabel_data(data_dir, machine_id: str) -> list[str]:
    """Name every row of a results folder's data files (`data_dir`/*.csv) as measured on
    `machine_id`: a checkout's committed data/ as a newcomer's machine sees it, measured
    elsewhere (CI runs the tests so). Returns the files changed."""
    if not isinstance(machine_id, str) or not machine_id.strip():
        raise ValueError(f"machine_id must be a non-empty str; got {machine_id!r}")
    changed = []
    for path in sorted(Path(data_dir).glob("*.csv")):
        # As text, so that every other value is written back as it was.
        rows = pd.read_csv(path, dtype=str, keep_default_na=False)
        if "machine_id" not in rows:
            continue
        rows["machine_id"] = rows.machine_id.where(rows.machine_id == "", machine_id)
        with results.atomic_path(path) as tmp:
            rows.to_csv(tmp, index=False)
        changed.append(path.name)
    return changed


def read_bundle(path: str | Path) -> dict:
    """{meta, machine: dict, measurements, verdicts, runs, parts: DataFrames, recomputable:
    bool} of one bundle; runs is None and recomputable False before format 4, parts None
    before format 5."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a bundle's directory (str or Path), not "
                        f"{type(path).__name__}")
    path = Path(path)
    missing = [n for n in ("machine.json", "measurements.parquet", "verdicts.parquet")
               if not (path / n).exists()]
    if missing:
        raise BundleError(path, f"not a labkit bundle: missing {', '.join(missing)} (make one "
                          "with `labkit bundle -o NAME`)")
    meta = _parse(path, "machine.json", lambda f: json.loads(f.read_text()))
    machine = meta.get("machine") if isinstance(meta, dict) else None
    lacking = [k for k in ("machine_id", "cpu_model", "arch")
               if not isinstance(machine, dict) or k not in machine]
    if lacking:
        raise BundleError(path, f"the bundle's machine.json has no machine."
                          f"{', machine.'.join(lacking)}; {REMAKE}")
    fmt = meta.get("format")
    runs = _since(path, fmt, RECOMPUTABLE_FROM, "verdict_runs.parquet")
    parts = _since(path, fmt, PARTS_FROM, "parts.parquet")
    return {"meta": meta, "machine": machine,
            "measurements": results.current_columns(
                _parse(path, "measurements.parquet", pd.read_parquet)),
            "verdicts": _parse(path, "verdicts.parquet", pd.read_parquet),
            "runs": runs, "parts": parts, "recomputable": runs is not None}


def _since(path: Path, fmt, first: int, name: str):
    """The table `name` of a bundle of format `fmt`, which every format from `first` on must
    hold (None before it)."""
    if not isinstance(fmt, int) or fmt < first:
        return None
    if not (path / name).exists():
        raise BundleError(path, f"a bundle of format {fmt} must hold {name}; {REMAKE}")
    return results.current_columns(_parse(path, name, pd.read_parquet))


def _parse(path: Path, name: str, read):
    """read(path / name), or a BundleError naming the bundle and the file that is damaged."""
    try:
        return read(path / name)
    except Exception as exc:  # the JSON, Arrow, Thrift and snappy readers each raise their own
        raise BundleError(path, f"the bundle's {name} is damaged ({type(exc).__name__}: "
                          f"{exc}); {REMAKE}") from exc
