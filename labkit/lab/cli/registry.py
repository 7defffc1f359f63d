"""`labkit publish` and `labkit registry`: a bundle sent to a registry of machines, and the
registry asked about its machines, claims, ladder and machine effects, or served."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from labkit.errors import ParameterError
from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag
# The registry's modules load when a command runs: parsing loads only the parsers.

QUESTIONS = {"claims": "each claim's verdicts across machines, with a tally",
             "ladder": "each design's median ns per switch across CPUs",
             "machines": "the machines in the registry and their hardware",
             "effects": "machine effects: does a claim's value differ between machines?"}


def _publish_arguments(pb) -> None:
    pb.add_argument("bundle", help="a bundle folder (<name>.labkit)")
    pb.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
    flag(pb, "--include-host", "also store the bundle's hostname and results path, if it has them")
    flag(pb, "--json", "print what was stored as JSON")


def _publish(args) -> int:
    from labkit.lab.registry import publish

    out = publish.publish(args.bundle, args.registry, include_host=args.include_host)
    print(json.dumps(out, indent=1) if args.json else
          f"published {out['bundle']} as {out['stored_as']} ({out['recomputed_agree']} of "
          f"{out['claims']} verdicts recomputed and agree"
          + ("" if out["recomputable"] else "; not recomputable: no verdict runs") + ")")
    return 0


def _registry_arguments(p) -> None:
    sub = p.add_subparsers(dest="registry_command", required=True, metavar="QUESTION")
    for name, help in QUESTIONS.items():
        q = sub.add_parser(name, help=help, description=help)
        q.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
        _machine_filters(q)
        flag(q, "--quick", "the quick runs' bundles (kept apart from full ones)")
        flag(q, "--json", "print as JSON")
        if name == "effects":
            q.add_argument("--claim", action="append", default=None,
                           help="a claim to test (repeatable; default: every claim whose "
                                "verdicts differ between machines)")
            q.add_argument("--method", default="holm", choices=("holm", "bonferroni"),
                           help="correction across comparisons (default holm)")
    gl = sub.add_parser("gallery", help="write the registry's gallery: one offline HTML page",
                        description="Write OUT/index.html: claims against machines, the "
                        "ladder across CPUs, each machine's hardware and machine effects; "
                        "static, fetching nothing.")
    gl.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
    gl.add_argument("-o", "--out", required=True, help="folder to write index.html into")
    _machine_filters(gl)
    flag(gl, "--quick", "the quick runs' bundles (kept apart from full ones)")
    c = sub.add_parser("compact", help="compact a registry's index: one file per partition",
                       description="Fold each partition's index files into one (publishes "
                       "do it themselves every 200), and index any whole bundle folder the "
                       "index lacks. Prints what it did as JSON.")
    c.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
    flag(c, "--no-adopt", "leave bundle folders the index lacks unindexed")
    s = sub.add_parser("serve", help="start an S3 store (SeaweedFS) for a registry",
                       description="Start SeaweedFS's S3 server for a registry, on loopback "
                       "unless --address says otherwise; prints the registry URL and where "
                       "the data live; Ctrl-C stops it.")
    s.add_argument("--data", default="labkit-registry-data",
                   help="folder for the store's data (default labkit-registry-data)")
    s.add_argument("--address", default="127.0.0.1:8333",
                   help="HOST:PORT to serve S3 on (default 127.0.0.1:8333)")
    s.add_argument("--bucket", default="labkit", help="the registry's bucket (default labkit)")


def _cpuid_number(text: str) -> str:
    """A CPUID family or model as the registry stores it (decimal), given in decimal or
    0x hex."""
    try:
        return str(int(text, 0))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number such as 25 or 0x19; got {text!r}")


def _model_or_brand(text: str) -> str:
    """A CPUID model number in decimal (given in decimal or 0x hex), else brand text."""
    try:
        return str(int(text, 0))
    except ValueError:
        return text


def _machine_filters(p) -> None:
    """The registry's machine filters (labkit.lab.registry.query.FILTERS)."""
    p.add_argument("--vendor", default=None,
                   help="only machines whose CPUID vendor contains this: amd, GenuineIntel")
    p.add_argument("--family", default=None, type=_cpuid_number,
                   help="only this CPUID family: 25 or 0x19")
    p.add_argument("--model", default=None, type=_model_or_brand,
                   help="only this CPUID model number (17 or 0x11), or brand strings "
                   "containing this text (EPYC)")
    p.add_argument("--layers", default=None, help="only machines under exactly these "
                   "virtualisation layers, outermost first: kvm+docker, bare metal")
    p.add_argument("--commit", default=None, help="only bundles of labkit commits starting "
                   "with this: 1f2bac5")


def _registry(args) -> int:
    try:
        return _answer(args)
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("labkit"):  # a package of the registry extra
            print(f"labkit {args.command}: needs {exc.name}, which is not installed: "
                  "pip install 'labkit[registry]' (make test installs it)", file=sys.stderr)
            return 2
        raise


def _answer(args) -> int:
    from labkit.lab.registry import index, store

    if args.registry_command == "serve":
        from labkit.lab.registry import serve

        return serve.run_forever(args.data, args.address, args.bucket)
    where = store.open_store(args.registry)
    if where.kind == "local" and not Path(where.root).is_dir():
        raise ValueError(f"--registry {args.registry}: no registry there; publish a bundle to "
                         f"it first (labkit publish B.labkit --registry {args.registry})")
    if args.registry_command == "compact":
        print(json.dumps(index.compact(where, adopt=not args.no_adopt)))
        return 0
    filters = {f: getattr(args, f) for f in ("vendor", "family", "model", "layers", "commit")}
    kw = {"filters": filters, "quick": args.quick}
    if args.registry_command == "gallery":
        from labkit.lab.registry import gallery

        print(gallery.build(args.registry, args.out, **kw))
    elif args.registry_command == "machines":
        _print_machines(args, kw)
    elif args.registry_command == "claims":
        _print_claims(args, kw)
    elif args.registry_command == "ladder":
        _print_ladder(args, kw)
    else:
        _print_effects(args, kw)
    return 0


def _print_machines(args, kw) -> None:
    from labkit.lab.registry import query

    df = query.machines(args.registry, **kw)
    print(df.to_json(orient="records", indent=1) if args.json
          else df.to_string(index=False) if not df.empty else "no machines")


def _print_claims(args, kw) -> None:
    from labkit.lab.registry import query

    rows = query.tally(query.claims(args.registry, **kw))
    print(json.dumps(rows, indent=1, default=str) if args.json
          else "\n".join(f"{r['line']} ({r['recomputed']} recomputed on publish)"
                         for r in rows) or "no claims")


def _print_ladder(args, kw) -> None:
    from labkit.lab.registry import query

    df = query.ladder(args.registry, **kw)
    if args.json:
        print(df.to_json(orient="records", indent=1))
    elif df.empty:
        print("no ladder")
    else:
        print(df.pivot(index="entry", columns="label", values="median_ns").round(2).to_string())


def _print_effects(args, kw) -> None:
    from labkit.lab.judging import rules
    from labkit.lab.registry import effects, query

    if unknown := [c for c in args.claim or () if c not in rules.RULES]:
        raise ParameterError("claim", f"{unknown[0]}: no written rule "
                             "(labkit.lab.judging.rules) reduces it to one ratio per process, "
                             "so machines cannot be compared on it; claims with one: "
                             f"{', '.join(sorted(rules.RULES))}")
    runs = query.verdict_runs(args.registry, **kw)
    claim_ids = args.claim or effects.differing(query.claims(args.registry, **kw), runs)
    rows = effects.between(runs, claim_ids, method=args.method)
    why = (f"no claim's verdict differs among the {len(runs)} machines with verdict runs "
           "(--claim asks for one)" if len(runs) >= 2 else
           f"{len(runs)} machine with verdict runs (a bundle of format 4 or later carries "
           "them); a machine effect needs two")
    print(json.dumps(rows, indent=1, default=str) if args.json
          else "\n".join(effects.line(r) for r in rows) or f"no comparisons: {why}")


PUBLISH = Command("publish", "send a bundle to a registry of machines",
                  "Store a bundle in a registry (a folder, s3://BUCKET/PREFIX or "
                  "http://HOST:PORT/BUCKET), after recomputing every verdict it states. A "
                  "bundle that is damaged, of an unknown format or commit, already stored, or "
                  "whose verdicts disagree with their recomputation is refused (exit status "
                  "2).", _publish_arguments, _publish, options={"path": "bundle"})

REGISTRY = Command("registry", "query a registry of machines, or serve one",
                   "Ask a registry (docs/registry.md) about its machines, claims, ladder and "
                   "machine effects, or start an S3 store.", _registry_arguments, _registry)
