"""Where the advisor's numbers come from: this machine's rows in data/ (a row counts only if
its `machine_id` is this machine's), another machine's bundle, or a short measurement made
now for what is missing, announced on stderr. Nothing here is a cost typed into code.

Each term is drawn as resampled values (`draws`): over fresh processes where the data has
per-process runs (the median of each process's repeats, then the mean over processes, as
the verdict engine reduces them), otherwise over the repeats of one process.
"""
from __future__ import annotations

import math
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from labkit.core import results
from labkit.core.machine import machine_info
from labkit.errors import ParameterError
from labkit.lab.experiment import YOUR_WORKLOAD
from labkit.lab.sharing import bundle, merge

# The cold switches among many contexts that notebook 10's grid measured (cold.cold_rows):
# this machine's advice measures its own now, another machine's reads them from its bundle.
COLD_SWITCHES = YOUR_WORKLOAD.part("cold_switches")
# The data files the model reads, by the name of their data/ file.
FILES = (
    "01_stack_size", "04_latency_ladder", "04_latency_ladder_copy_stack",
    "04_latency_ladder_verdict_runs", "05_kernel_switches", "05_kernel_switches_verdict_runs",
    "06_fp_state_and_return", "06_fp_state_and_return_verdict_runs",
    "06_fp_state_and_return_xstate", "07b_coroutine_memory", "07b_coroutine_memory_copy_stack",
    "08_switch_frequency", YOUR_WORKLOAD.own("advisor_calibration"), COLD_SWITCHES,
)
DRAWS = 2000  # resamples per term: enough for stable 2.5/97.5 percentiles
ONE_PROCESS = "repeats of one process"  # a Term's basis when not resampled over processes


@dataclass
class Term:
    """A measured quantity as resampled values, and what the resampling stood on."""
    draws: object  # numpy array of DRAWS values
    basis: str     # "16 processes" or "9 repeats of one process" or "measured now: ..."

    @property
    def value(self) -> float:
        return float(np.median(self.draws))


@dataclass
class Evidence:
    """The frames the model reads, where they came from, and the machine they describe."""
    source: str
    machine: dict
    frames: dict
    local: bool  # this machine: a missing term may be measured now
    quick: bool = False
    measured_now: list = field(default_factory=list)
    status: object = None  # a file for the status lines (stderr)
    seed: int = 0
    lacks: str = ""  # what the source is too old to hold, said where it is missed

    def rows(self, name: str):
        return self.frames.get(name, pd.DataFrame())

    def announce(self, what: str, why: str) -> None:
        line = f"labkit advise: measuring now {what}: {why}"
        self.measured_now.append((what, why))
        print(line, file=self.status or sys.stderr, flush=True)

    def add(self, name: str, df) -> None:
        self.frames[name] = pd.concat([self.rows(name), df], ignore_index=True)

    def rng(self, salt: str):
        return np.random.default_rng([self.seed, zlib.crc32(salt.encode())])

    def ticks_per_ns(self) -> float:
        """This machine's (or the bundle's) TSC rate, from the rows' metadata."""
        for name in ("04_latency_ladder", "01_stack_size"):
            df = self.rows(name)
            if "ticks_per_ns" in df and df.ticks_per_ns.notna().any():
                return float(df.ticks_per_ns.median())
        ghz = self.machine.get("tsc_ghz")
        if ghz:
            return float(ghz)
        raise ParameterError("work", "in cycles needs the TSC rate, which neither the data rows "
                             "nor the machine's metadata give; give work in ns, us or ms")


def draws(values, rng, processes=None) -> Term:
    """Resampled estimates of a measured quantity. With `processes` (the process of each value):
    each process's median, then the bootstrap mean over processes; without: the bootstrap
    median of the repeats."""
    v = np.asarray(values, float)
    ok = np.isfinite(v)
    if processes is not None:
        w = np.asarray(processes)[ok]
        v = v[ok]
        per = np.array([np.median(v[w == k]) for k in np.unique(w)])
        if per.size >= 2:
            idx = rng.integers(0, per.size, (DRAWS, per.size))
            return Term(per[idx].mean(axis=1), f"{per.size} fresh processes")
        v = per
    else:
        v = v[ok]
    if v.size == 0:
        raise LookupError("no finite measurement")
    idx = rng.integers(0, v.size, (DRAWS, v.size))
    return Term(np.median(v[idx], axis=1), f"{v.size} {ONE_PROCESS}"
                if processes is None else f"{v.size} process")


def from_data(data_dir=None, *, quick: bool = False, status=None) -> Evidence:
    """This machine's rows of data/ (rows whose machine_id is another's are left out)."""
    info = machine_info()
    here = str(info["machine_id"])
    d = Path(data_dir) if data_dir is not None else results.data_dir()
    frames, foreign = {}, []
    for name in FILES:
        path = d / f"{name}.csv"
        if not path.exists():
            continue
        df = results.read_csv(path, low_memory=False)
        if "machine_id" in df:
            mine = df.machine_id.astype(str) == here
            if not mine.all():
                foreign.append(name)
            df = df[mine].reset_index(drop=True)
        frames[name] = df
    ev = Evidence(f"this machine's data/ ({d})", dict(info), frames, local=True, quick=quick,
                  status=status)
    if foreign:
        print(f"labkit advise: rows of {', '.join(foreign)} come from another machine "
              f"(machine_id differs from this one's {here}) and are not used",
              file=status or sys.stderr, flush=True)
    return ev


def from_bundle(path, *, status=None) -> Evidence:
    """Another machine's bundle (labkit.lab.sharing.bundle's reader): its experiments' rows,
    their verdict runs and their parts, each under its data/ name. Its
    measurements are that machine's, so nothing missing is measured here; a row whose
    machine_id is not the bundle's machine is left out."""
    b = bundle.read_bundle(path)
    there = str(b["machine"]["machine_id"])
    frames = {}
    for df, column, suffix in ((b["measurements"], "notebook", ""),
                               (b["runs"], "notebook", bundle.RUNS_SUFFIX),
                               (b["parts"], "data", "")):
        if df is None or column not in df:
            continue
        if "machine_id" in df:
            df = df[df.machine_id.astype(str) == there]
        for name, part in df.groupby(column):
            frames[f"{name}{suffix}"] = part.drop(columns=column).reset_index(drop=True)
    fmt = b["meta"].get("format")
    lacks = ("" if b["parts"] is not None else
             f"its format {fmt} predates the cold switches, which bundles carry from format "
             f"{bundle.PARTS_FROM}: pack the machine's data again with labkit bundle")
    return Evidence(f"bundle {path} ({merge.label(b['machine'])})", dict(b["machine"]), frames,
                    local=False, status=status, lacks=lacks)


_CACHE: dict = {}


def load(bundle=None, data_dir=None, *, quick: bool = False, status=None) -> Evidence:
    """The evidence for one source, read once per process (the grid calls predict often)."""
    key = (str(bundle) if bundle is not None else None,
           str(data_dir) if data_dir is not None else None, quick)
    if key not in _CACHE:
        _CACHE[key] = (from_bundle(bundle, status=status) if bundle is not None
                       else from_data(data_dir, quick=quick, status=status))
    return _CACHE[key]


def nearest_size(df, size: int) -> int:
    """The stack_size of df's rows nearest `size` in log2."""
    sizes = np.sort(df.stack_size.unique())
    return sizes[np.argmin(np.abs(np.log2(sizes) - math.log2(size)))]
