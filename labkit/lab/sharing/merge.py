"""Several machines' bundles side by side (a workshop's laptops, an x86-64 and an AArch64
server): one comparison of their verdicts, their ladders and their hardware.

`merge` puts side by side only bundles of a format this labkit reads (bundle.READS), of
one mode (quick or full) and of one labkit commit, and only verdicts recomputed from each
bundle's own verdict runs (labkit.lab.sharing.recompute): a bundle whose stated verdicts
disagree with them is refused, and each verdict shown says how it was checked (`checks`;
a bundle before format 4 carries no runs, and says so). `shown` and `merged_records` give its
tables as a person reads them ('not measured', not NaN) and as JSON. Bundles made before a
machine field existed still merge: the field shows as not recorded.
"""
from __future__ import annotations

import math
import os

import pandas as pd

from labkit.errors import ParameterError
from labkit.lab.sharing import recompute
from labkit.lab.sharing.bundle import READS, read_bundle

# The machine fields merge puts side by side: the CPU as CPUID reports it and its layers.
MACHINE_FIELDS = ("cpu_model", "cpu_vendor", "cpu_family", "cpu_model_id", "cpu_stepping",
                  "microcode", "vector_isa", "xcr0", "xstate_components", "xsave_bytes",
                  "cpu_count", "tsc_ghz", "kernel_release", "compiler", "virtualization",
                  "hypervisor", "container", "governor", "turbo", "smt", "env_warnings")
NOT_RECORDED = "not recorded"


def _commit(machine: dict) -> str:
    return str(machine.get("labkit_commit", "unknown")).removesuffix("-dirty")


def label(machine: dict) -> str:
    """A short column label for a machine: CPU model, arch and fingerprint."""
    return f"{machine['cpu_model']} [{machine['arch']}] {machine['machine_id'][:6]}"


def merge(paths, *, same_commit: bool = True) -> dict:
    """Merge bundles into comparisons: `verdicts` (one row per claim, a verdict and a
    measured value per machine), `ladder` (median ns per switch of each kernel, one
    column per machine, with each machine's ratio to its own `asm`) and `hardware` (the
    MACHINE_FIELDS of each machine, 'not recorded' where its bundle predates one)."""
    if isinstance(paths, (str, bytes, os.PathLike)) or not hasattr(paths, "__iter__"):
        raise TypeError(f"paths must be a list of bundle directories, not "
                        f"{type(paths).__name__}")
    paths = list(paths)
    bundles = [read_bundle(p) for p in paths]
    if len(bundles) < 2:
        raise ParameterError("paths", f"must name at least two bundles to compare; got "
                             f"{len(bundles)}")
    for p, b in zip(paths, bundles):
        if b["meta"].get("format") not in READS:
            raise ParameterError("paths", f"hold {p}, a bundle of format "
                                 f"{b['meta'].get('format')}, this labkit reads formats "
                                 f"{', '.join(map(str, READS))}: remake it with "
                                 "`labkit bundle` from this labkit")
    modes = {("quick" if b["meta"].get("quick") else "full") for b in bundles}
    if len(modes) > 1:
        raise ParameterError("paths", "mix quick and full runs: " + ", ".join(
            f"{p} ({'quick' if b['meta'].get('quick') else 'full'})"
            for p, b in zip(paths, bundles)) + "; compare runs of the same mode")
    commits = {_commit(b["machine"]) for b in bundles}
    if same_commit and len(commits) > 1:
        raise ParameterError("paths", "come from different labkit commits (" + ", ".join(
            f"{p}: {_commit(b['machine'])}" for p, b in zip(paths, bundles)) + "): the "
            "experiments may differ; remake the bundles from one commit",
            other=("same_commit", False))
    labels = [label(b["machine"]) for b in bundles]
    if len(set(labels)) != len(labels):
        raise ParameterError("paths", "hold two bundles of the same machine: "
                             + ", ".join(labels))
    checks = {}
    for p, lab, b in zip(paths, labels, bundles):
        checks[lab] = {c: why for c, (why, _) in recompute.checks(p, b).items()}
        wrong = [(c, why) for c, why in checks[lab].items() if why.startswith("disagrees")]
        if wrong:
            raise ParameterError("paths", f"hold {p}, with forged or stale verdicts, not "
                                 f"shown beside others: {wrong[0][0]} {wrong[0][1]}"
                                 + (f" (and {len(wrong) - 1} more claims)"
                                    if len(wrong) > 1 else ""))
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
    return {"machines": labels, "verdicts": v, "ladder": ladder, "hardware": hardware,
            "checks": pd.DataFrame(checks).reindex(v.index).fillna("not stated")}


def checked(out: dict) -> dict:
    """label -> how its verdicts were checked, in words: '30 recomputed and agree, 15 not
    recomputable (...)'."""
    said = {}
    for lab in out["machines"]:
        col = out["checks"][lab]
        agree = int((col == recompute.AGREES).sum())
        other = col[col != recompute.AGREES].value_counts()
        said[lab] = ", ".join([f"{agree} recomputed and agree"]
                              + [f"{n} {why}" for why, n in other.items()])
    return said


NOT_MEASURED = "not measured"  # how a merge shows a value a machine has no measurement of


def shown(frame, digits: int = 2):
    """A merge's frame as a person reads it: numbers rounded, a value a machine did not
    measure (NaN) shown as 'not measured'."""
    frame = frame.round(digits) if not frame.empty else frame
    return frame.astype(object).where(frame.notna(), NOT_MEASURED)


def merged_records(out: dict) -> dict:
    """A merge (merge()'s dict) as plain data for JSON: the machines; each claim's verdict,
    measured value and check per machine and whether they all agree; each entry's median ns per
    switch and ratio to `asm` per machine (null where a machine did not measure it); and
    the machines' hardware fields."""
    def value(x):
        # a claim a machine did not measure: NaN, or the ledger's `not-measured` or empty
        if (isinstance(x, float) and not math.isfinite(x)) or x in ("not-measured", ""):
            return None
        return x.item() if hasattr(x, "item") else x

    machines = out["machines"]
    v = out["verdicts"]
    verdict_rows = [{"claim_id": claim,
                     "same_verdict": bool(row[("all machines", "same verdict")]),
                     "machines": {m: {"verdict": row[(m, "verdict")],
                                      "measured_value": value(row[(m, "measured_value")]),
                                      "check": out["checks"].at[claim, m]}
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
