"""`labkit publish` and `labkit registry`: a bundle sent to a registry of machines, and the
registry asked about its machines, claims, ladder and machine effects, or served."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from labkit.errors import ParameterError
from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag, print_json
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
    if args.json:
        print_json(args, "publish", out)
        return 0
    print(f"published {out['bundle']} as {out['stored_as']} by {out['publisher']}"
          + (f" ({out['fingerprint']})" if out["fingerprint"] else "")
          + (f", flagged: {out['flags']}" if out.get("flags") else "")
          + f" ({out['recomputed_agree']} of "
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
                       "index lacks.")
    c.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
    flag(c, "--no-adopt", "leave bundle folders the index lacks unindexed")
    flag(c, "--json", "print what it did as JSON")
    b = sub.add_parser("bench", help="the registry at scale: synthetic bundles, timed",
                       description="Fill a scratch store with synthetic bundles, compact it "
                       "and time the claims query and the gallery there (and, with --seaweed "
                       "or --storm, on SeaweedFS on loopback): docs/registry.md, \"Scale\".")
    b.add_argument("--scratch", required=True, help="a scratch store folder (made if absent; "
                   "refused if it holds a real bundle)")
    b.add_argument("--bundles", type=int, default=1000, help="synthetic bundles in the scratch "
                   "store (0: skip the local figures)")
    b.add_argument("--seaweed", type=int, default=0, help="also synthesise this many bundles "
                   "into a SeaweedFS store on loopback and time the queries there")
    b.add_argument("--storm", type=int, default=0,
                   help="clients publishing at once to SeaweedFS")
    flag(b, "--json", "print the figures as JSON")
    a = sub.add_parser("admit", help="admit a publisher's key: only admitted keys publish",
                       description="Add a public key (the line `labkit key show` prints) to "
                       "the registry's list of admitted keys. A registry with the list takes "
                       "only bundles signed by a key on it; without one it is open.")
    a.add_argument("key", help="the public key: the line `labkit key show` prints, its "
                   "base64 key, or a file holding the line (publisher.pub)")
    a.add_argument("--name", default=None, help="the publisher's name, as answers show it "
                   "(default: the name the line carries)")
    a.add_argument("--registry", required=True, help="folder path or S3 URL of the registry")
    s = sub.add_parser("serve", help="start an S3 store (SeaweedFS) for a registry",
                       description="Start SeaweedFS's S3 server for a registry, on loopback "
                       "unless --address says otherwise (its other services stay on "
                       "loopback); only the writer key kept beside the data (printed at "
                       "first start) writes. Prints the registry URL and where the data "
                       "live; Ctrl-C stops it.")
    s.add_argument("--data", default="labkit-registry-data",
                   help="folder for the store's data (default labkit-registry-data)")
    s.add_argument("--address", default="127.0.0.1:8333",
                   help="HOST:PORT to serve S3 on (default 127.0.0.1:8333)")
    s.add_argument("--bucket", default="labkit", help="the registry's bucket (default labkit)")
    flag(s, "--private", "no anonymous reads either: every request needs the writer key "
         "(by default anyone may read and list the registry, only the key writes)")


def _admit(args, where) -> int:
    from labkit.errors import ParameterError
    from labkit.lab.registry import admission

    text = args.key
    if Path(text).is_file():
        text = Path(text).read_text()
    try:
        who = admission.admit(where, text, args.name)
    except ParameterError as exc:
        if exc.param != "key":
            raise
        raise ValueError(f"KEY {exc.message}") from None  # the positional, not an option
    print(f"admitted {who.name} ({who.fingerprint}) to {args.registry}: it takes only "
          "bundles signed by its admitted keys")
    return 0


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

        return serve.run_forever(args.data, args.address, args.bucket, args.private)
    if args.registry_command == "bench":
        return _bench(args)
    where = store.open_store(args.registry)
    if args.registry_command == "admit":
        return _admit(args, where)
    if where.kind == "local" and not Path(where.root).is_dir():
        raise ValueError(f"--registry {args.registry}: no registry there; publish a bundle to "
                         f"it first (labkit publish B.labkit --registry {args.registry})")
    if args.registry_command == "compact":
        done = index.compact(where, adopt=not args.no_adopt)
        if args.json:
            print_json(args, "registry.compact", done)
        else:
            print(f"{done['compacted']} index files written in place of {done['absorbed']}; "
                  f"{done['adopted']} bundle folders indexed")
        return 0
    from labkit.lab.registry import admission

    args.open_note = admission.header(where)
    filters = {f: getattr(args, f) for f in ("vendor", "family", "model", "layers", "commit")}
    kw = {"filters": filters, "quick": args.quick}
    if args.registry_command == "gallery":
        from labkit.lab.registry import gallery

        page = gallery.build(args.registry, args.out, **kw)
        _note(args)
        print(page)
    elif args.registry_command == "machines":
        _print_machines(args, kw)
    elif args.registry_command == "claims":
        _print_claims(args, kw)
    elif args.registry_command == "ladder":
        _print_ladder(args, kw)
    else:
        _print_effects(args, kw)
    return 0


def _note(args) -> None:
    """An open registry's line, above the answer (on stderr: --json stays JSON)."""
    if getattr(args, "open_note", None):
        print(args.open_note, file=sys.stderr)


def _bench(args) -> int:
    from labkit.lab.registry import bench

    figures = bench.figures(args.scratch, args.bundles, args.seaweed, args.storm)
    if args.json:
        print_json(args, "registry.bench", figures)
        return 0
    print(f"measured on {bench.machine_text()}")
    print(f"each time the median of {figures.pop('repeats')} runs")
    for store_kind, found in figures.items():
        for name, value in found.items():
            if name != "plan":  # the query plan's filter lines stand for it
                print(f"{store_kind}.{name}: {value}")
    return 0


def _print_machines(args, kw) -> None:
    from labkit.lab.registry import query

    df = query.machines(args.registry, **kw)
    _note(args)
    if args.json:
        print_json(args, "registry.machines", df)
    else:
        print(df.to_string(index=False) if not df.empty else "no machines")


def _print_claims(args, kw) -> None:
    from labkit.lab.registry import query

    rows = query.tally(query.claims(args.registry, **kw))
    _note(args)
    if args.json:
        print_json(args, "registry.claims", rows)
        return
    lines = []
    for r in rows:
        lines.append(f"{r['line']} ({r['recomputed']} recomputed on publish)")
        for v in r["verdicts"]:
            if v.get("disagreement"):
                lines.append(f"  ! {v['label']}, same commit, opposite verdicts: "
                             f"{v['disagreement']}")
    flagged = sorted({(v["label"], v["flags"]) for r in rows for v in r["verdicts"]
                      if v.get("flags")})
    lines += [f"! {label}: {flags}" for label, flags in flagged]
    print("\n".join(lines) or "no claims")


def _print_ladder(args, kw) -> None:
    from labkit.lab.registry import query

    df = query.ladder(args.registry, **kw)
    _note(args)
    if args.json:
        print_json(args, "registry.ladder", df)
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
    _note(args)
    why = (f"no claim's verdict differs among the {len(runs)} machines with verdict runs "
           "(--claim asks for one)" if len(runs) >= 2 else
           f"{len(runs)} machine with verdict runs (a bundle of format 4 or later carries "
           "them); a machine effect needs two")
    if args.json:
        print_json(args, "registry.effects", rows)
    else:
        print("\n".join(effects.line(r) for r in rows) or f"no comparisons: {why}")


PUBLISH = Command("publish", "send a bundle to a registry of machines",
                  "Store a bundle in a registry (a folder, s3://BUCKET/PREFIX or "
                  "http://HOST:PORT/BUCKET), after recomputing every verdict it states. A "
                  "bundle that is damaged, of an unknown format or commit, already stored, or "
                  "whose verdicts disagree with their recomputation is refused (exit status "
                  "2).", _publish_arguments, _publish, options={"path": "bundle"})

REGISTRY = Command("registry", "query a registry of machines, admit publishers, or serve one",
                   "Ask a registry (docs/registry.md) about its machines, claims, ladder and "
                   "machine effects, admit a publisher's key, or start an S3 store.",
                   _registry_arguments, _registry)


def _key_arguments(p) -> None:
    sub = p.add_subparsers(dest="key_command", required=True, metavar="ACTION")
    n = sub.add_parser("new", help="make a publisher's key pair",
                       description="Make an Ed25519 key pair in the key folder (private key "
                       "mode 0600); `labkit bundle` then signs every bundle with it.")
    n.add_argument("--name", default=None,
                   help="the name your bundles are signed with (default: your login name)")
    flag(n, "--replace", "replace the key there (bundles signed with the old one stay "
         "signed by it)")
    s = sub.add_parser("show", help="print your public key, to hand to a registry's owner",
                       description="Print the public key line a registry's owner admits "
                       "with `labkit registry admit`.")
    for q in (n, s):
        q.add_argument("--key-dir", default=None, help="the key folder (default "
                       "$LABKIT_KEY_DIR, else $XDG_CONFIG_HOME/labkit or ~/.config/labkit)")


def _key(args) -> int:
    import importlib.util

    if importlib.util.find_spec("cryptography") is None:
        print("labkit key: needs cryptography, which is not installed: pip install "
              "'labkit[registry]' (make test installs it)", file=sys.stderr)
        return 2
    return _key_action(args)


def _key_action(args) -> int:
    import getpass

    from labkit.lab.registry import keys

    if args.key_command == "new":
        me = keys.new_key(args.name or getpass.getuser(), args.key_dir, replace=args.replace)
        where = keys.key_dir(args.key_dir)
        print(f"key {me.fingerprint} for {me.name} in {where} ({keys.PRIVATE} mode 0600)\n"
              f"public: {keys.ALGORITHM} {me.public_key} {me.name}\n"
              "hand that line to a registry's owner: labkit registry admit 'LINE' --registry R")
        return 0
    me = keys.own_key(args.key_dir)
    if me is None:
        from labkit.errors import ParameterError

        raise ParameterError("key_dir", f"{keys.key_dir(args.key_dir)} holds no key: make "
                             "one with `labkit key new --name NAME`")
    print(f"{keys.ALGORITHM} {me.public_key} {me.name}")
    return 0


KEY = Command("key", "make or show your publisher's key (bundles are signed with it)",
              "Make an Ed25519 key pair (labkit key new) or print its public key (labkit key "
              "show). `labkit bundle` signs each bundle with it; a registry admits keys.",
              _key_arguments, _key)
