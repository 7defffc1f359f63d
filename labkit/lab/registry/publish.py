"""Publishing a bundle to a registry, nothing taken on trust: the bundle must read whole,
be of a format and a labkit commit this labkit knows (and not of a format older than the
one its commit writes), hold only rows of the machine it names, not be in the store
already (the same run packed again included), and every verdict it states must come out
the same when recomputed here from its verdict runs with the claims' written rules
(labkit.lab.judging.rules, the engine's path). Its signature, if it has one, must verify;
a store that admits keys (labkit.lab.registry.admission) takes only bundles signed by one
of them. Anything else is refused with a Refused (a ValueError) naming the bundle and the
one reason, and the store is left as it was.

Stored bundles record their publisher (the admitted name, else the name the key states,
else "unsigned") and key fingerprint, and are flagged where their verdict runs and their
own measurements disagree (labkit.lab.registry.consistency).
"""
from __future__ import annotations

import datetime
import io
import os
import re
import subprocess
from pathlib import Path

import pandas as pd

from labkit.core import results
from labkit.errors import BundleError
from labkit.lab.registry import admission, consistency, keys
from labkit.lab.registry import store as stores
from labkit.lab.sharing import bundle as bundles
from labkit.lab.sharing.recompute import AGREES, recompute

# The fields of machine.json's machine a registry keeps: the CPU as CPUID reports it and
# the layers under the process. Never the host's name or a path.
MACHINE_FIELDS = ("cpu_model", "cpu_vendor", "cpu_family", "cpu_model_id", "cpu_stepping",
                  "microcode", "vector_isa", "xcr0", "xstate_components", "xsave_bytes",
                  "xsave_max_bytes", "arch", "cpu_count", "tsc_ghz", "kernel_release",
                  "compiler", "opt_level", "virtualization", "hypervisor", "container",
                  "governor", "turbo", "smt", "env_warnings")
HOST_FIELDS = ("hostname",)


class Refused(ValueError):
    """A bundle the registry will not take; str() is the one line to show, `duplicate` says
    whether the registry holds it already."""

    def __init__(self, path, reason: str, *, duplicate: bool = False):
        reason = " ".join(str(reason).split())  # one line, whatever the reason quoted
        super().__init__(f"refused {path}: {reason}")
        self.reason, self.duplicate = reason, duplicate


# Where a labkit commit declares the bundle format it writes (FORMAT = n), newest first.
BUNDLE_MODULES = ("labkit/lab/sharing/bundle.py", "labkit/lab/bundle.py")


def written_format(commit: str, repo: Path | None = None) -> int | None:
    """The bundle format a labkit commit writes, read from its source (None: not found)."""
    repo = repo or results.checkout()
    if repo is None:
        return None
    for module in BUNDLE_MODULES:
        done = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{module}"],
                              capture_output=True, text=True)
        m = re.search(r"^FORMAT\s*=\s*(\d+)", done.stdout, re.M) if done.returncode == 0 else None
        if m:
            return int(m.group(1))
    return None


def _one_machine(path, b: dict) -> None:
    """Refused unless every row the bundle carries was measured on the machine it names."""
    stated = str(b["machine"]["machine_id"])
    for name, frame in (("measurements", b["measurements"]), ("verdict runs", b["runs"]),
                        ("parts", b["parts"])):
        other = bundles._foreign_runs(frame, stated)
        if other:
            raise Refused(path, f"its {name} were measured on machine {', '.join(other)}, but "
                          f"its machine.json names {stated}")


def known_commit(commit: str, repo: Path | None = None) -> bool:
    """Whether `commit` is a commit of this labkit's git history."""
    repo = repo or results.checkout()
    if repo is None or not commit or not all(c in "0123456789abcdef" for c in commit):
        return False
    done = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True)
    return done.returncode == 0


def layers(machine: dict) -> str:
    """The virtualisation layers under the process, outermost first ('kvm+docker'), from
    the machine's hypervisor and container fields (or its older `virtualization` text)."""
    words = []
    hv, ct = machine.get("hypervisor"), machine.get("container")
    if hv is None and ct is None:
        text = str(machine.get("virtualization", "")).lower()
        words = [w for w in ("kvm", "xen", "vmware", "hyperv", "docker", "podman", "lxc")
                 if w in text]
    else:
        words = [str(w) for w in (hv, ct) if w and str(w) not in ("none", "")]
    return "+".join(words) or ("not recorded" if "virtualization" not in machine
                               else "bare metal")


def vendor(machine: dict) -> str:
    """CPUID's vendor string; for a bundle before the field, a guess from the brand string
    that says it is one (the --vendor filter still finds it)."""
    if machine.get("cpu_vendor"):
        return str(machine["cpu_vendor"])
    model = str(machine.get("cpu_model", ""))
    guess = "GenuineIntel" if "Intel" in model else "AuthenticAMD" if "AMD" in model else ""
    return f"{guess} (from the brand string: not recorded)" if guess else "not recorded"


def _parquet(df) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def _signer(path, store):
    """Whose key signed the bundle (None: unsigned), with the registry owner's name for an
    admitted key; Refused if the signature does not verify, or if the store admits keys
    and the bundle is unsigned or its key is not admitted."""
    try:
        signer = keys.verify(path)
    except keys.BadSignature as exc:
        raise Refused(path, str(exc)) from None
    allowed = None if store is None else admission.admitted(store)
    if allowed is None:
        return signer
    if signer is None:
        raise Refused(path, "unsigned, and this registry takes only bundles signed by the keys "
                      "its owner admitted: make a key (labkit key new), bundle again, and "
                      "ask the owner to admit it (labkit registry admit)")
    if signer.fingerprint not in allowed:
        raise Refused(path, f"signed by {signer.name} ({signer.fingerprint}), a key this "
                      "registry has not admitted: its owner admits it with `labkit registry "
                      "admit 'LINE OF labkit key show' --name NAME`")
    return allowed[signer.fingerprint]


def prepare(path, *, include_host: bool = False, store=None) -> tuple[str, dict, dict]:
    """Every check of a publish, without writing: (rel_dir, files, summary), or Refused.
    Given the store, a bundle it already holds is refused before the recomputation."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"bundle must be a bundle folder (str or Path), not {type(path).__name__}")
    path = Path(path)
    try:
        b = bundles.read_bundle(path)
    except BundleError as exc:
        raise Refused(path, exc.reason) from exc
    signer = _signer(path, store)
    meta, machine = b["meta"], b["machine"]
    fmt = meta.get("format")
    if fmt not in bundles.READS:
        raise Refused(path, f"unknown format {fmt!r}: this labkit reads formats "
                      f"{', '.join(map(str, bundles.READS))}")
    raw = str(machine.get("labkit_commit", ""))
    commit = raw.removesuffix("-dirty")
    if not known_commit(commit):
        raise Refused(path, f"unknown labkit commit {raw!r}: not a commit of this labkit's "
                      "history, so its experiments cannot be known")
    written = written_format(commit)
    if written is not None and fmt < written:
        # An older format carries no verdict runs, so its verdicts would go unchecked.
        raise Refused(path, f"it says format {fmt}, but its labkit commit {commit} writes "
                      f"format {written}: a bundle's format is never lowered")
    _one_machine(path, b)
    digest = bundles.content_hash(path)
    mode = stores.run_mode(bool(meta.get("quick")))
    parts = {"run_mode": mode, "format": str(fmt), "commit": commit,
             "machine": str(machine["machine_id"]), "bundle": digest[:16]}
    rel = "/".join(f"{k}={v}" for k, v in parts.items())
    if store is not None and store.has(rel):
        raise Refused(path, _duplicate(rel), duplicate=True)
    checks = recompute(b)
    wrong = [(c, why) for c, (why, _) in checks.items() if why.startswith("disagrees")]
    if wrong:
        c, why = wrong[0]
        more = f" (and {len(wrong) - 1} more claims)" if len(wrong) > 1 else ""
        raise Refused(path, f"forged or stale verdicts: {c} {why}{more}")
    row = {k: machine.get(k) for k in MACHINE_FIELDS}
    row = {k: (None if v is None else str(v)) for k, v in row.items()}
    row.update(cpu_vendor=vendor(machine), layers=layers(machine), machine_id=parts["machine"],
               labkit_commit=raw, dirty=raw.endswith("-dirty"), content_hash=digest,
               created=str(meta.get("created", "")), quick=mode == "quick",
               published=datetime.datetime.now(datetime.timezone.utc).isoformat(),
               recomputable=b["recomputable"],
               recomputed=sum(why == AGREES for why, _ in checks.values()),
               synthetic=bool(meta.get("synthetic", False)),
               flags=consistency.flag(b),
               publisher=signer.name if signer else "unsigned",
               fingerprint=signer.fingerprint if signer else None)
    if include_host:
        row.update(hostname=machine.get("hostname"), results_root=meta.get("results_root"))
    v = b["verdicts"].copy()
    v["check"] = v.claim_id.map(lambda c: checks.get(c, ("not recomputable", None))[0])
    measurements, runs, part_rows = b["measurements"], b["runs"], b["parts"]
    if not include_host:
        measurements = measurements.drop(columns=[c for c in HOST_FIELDS if c in measurements])
        runs = None if runs is None else runs.drop(columns=[c for c in HOST_FIELDS if c in runs])
        part_rows = None if part_rows is None else part_rows.drop(
            columns=[c for c in HOST_FIELDS if c in part_rows])
    files = {"verdicts.parquet": _parquet(bundles._stringify_objects(v)),
             "measurements.parquet": _parquet(bundles._stringify_objects(measurements.copy())),
             stores.MARKER: _parquet(pd.DataFrame([row]))}
    if runs is not None and not runs.empty:
        files["verdict_runs.parquet"] = _parquet(bundles._stringify_objects(runs.copy()))
    if part_rows is not None and not part_rows.empty:
        files["parts.parquet"] = _parquet(bundles._stringify_objects(part_rows.copy()))
    for name, frame in {"verdicts": v, "measurements": measurements, "verdict_runs": runs,
                        "parts": part_rows}.items():
        clash = set(stores.PARTITIONS) & set(() if frame is None else frame.columns)
        if clash:
            raise Refused(path, f"its {name} has a column named like a partition key: "
                          f"{', '.join(sorted(clash))}")
    summary = {"bundle": str(path), "stored_as": rel, "machine": parts["machine"],
               "cpu_model": machine.get("cpu_model"), "run_mode": mode, "format": fmt,
               "commit": commit, "recomputable": b["recomputable"],
               "recomputed_agree": row["recomputed"], "claims": len(v),
               "publisher": row["publisher"], "fingerprint": row["fingerprint"],
               "flags": row["flags"]}
    return rel, files, summary


def publish(path, registry, *, include_host: bool = False) -> dict:
    """Check a bundle (prepare) and store it in the registry, atomically; returns what was
    stored. Raises Refused (a ValueError) with the one line to show."""
    store = stores.open_store(registry)
    rel, files, summary = prepare(path, include_host=include_host, store=store)
    try:
        store.put(rel, files)
    except stores.DuplicateBundle:  # published by another client meanwhile
        raise Refused(path, _duplicate(rel), duplicate=True) from None
    return summary


def _duplicate(rel: str) -> str:
    return f"a duplicate: the registry already holds this bundle ({rel.rsplit('=', 1)[-1]})"
