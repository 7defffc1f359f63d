"""`labkit bundle` and `labkit merge`: this machine's results packed to travel, and
several machines' bundles side by side."""
from __future__ import annotations

import os
import sys

from labkit.lab.cli.command import Command
from labkit.lab.cli.options import flag, print_json
# The lab's modules load when a command runs: parsing loads only the parsers.


def _bundle_arguments(b) -> None:
    b.add_argument("-o", "--out", required=True, help="bundle path (.labkit is appended)")
    flag(b, "--quick", "bundle the quick run's results")
    flag(b, "--include-host", "also record the hostname and the results' absolute path")
    flag(b, "--replace", "replace the bundle at --out if there is one (without it, an "
         "existing bundle is left alone and the command stops)")


def _bundle(args) -> int:
    from labkit.lab.running.reproduce import reports_dir
    from labkit.lab.sharing import bundle

    if args.quick:
        os.environ["LABKIT_RESULTS_DIR"] = str(reports_dir(True))
    from labkit.lab.registry import keys

    out = bundle.make_bundle(args.out, quick=args.quick, include_host=args.include_host,
                             replace=args.replace)
    print(out)
    signer = keys.verify(out)
    print(f"signed by {signer.name} ({signer.fingerprint})" if signer else keys.HOW_TO_SIGN,
          file=sys.stderr)
    return 0


def _merge_arguments(g) -> None:
    g.description = _merge_description()
    g.add_argument("bundles", nargs="+", help="bundle folders (<name>.labkit)")
    g.add_argument("-o", "--out", help="also write <out>-verdicts.csv, <out>-ladder.csv and "
                                       "<out>-hardware.csv")
    flag(g, "--json", "print the comparison as JSON (null where a machine measured nothing)")
    flag(g, "--allow-other-commits", "merge bundles made from different labkit commits")


def _merge(args) -> int:
    from labkit.lab.sharing import merge

    out = merge.merge(args.bundles, same_commit=not args.allow_other_commits)
    if args.json:
        print_json(args, "merge", merge.merged_records(out))
    else:
        _print_comparison(merge, out)
    if args.out:
        out["verdicts"].to_csv(f"{args.out}-verdicts.csv")
        out["ladder"].to_csv(f"{args.out}-ladder.csv")
        out["hardware"].to_csv(f"{args.out}-hardware.csv")
    return 0


def _print_comparison(merge, out: dict) -> None:
    """The machines and how their verdicts were checked, their hardware, the verdicts and
    the ladder side by side."""
    said = merge.checked(out)
    print("machines (how their verdicts were checked):",
          *(f"{m}: {said[m]}" for m in out["machines"]), sep="\n  ")
    print(out["hardware"].to_string())
    print(merge.shown(out["verdicts"]).to_string())
    if not out["ladder"].empty:
        print(merge.shown(out["ladder"]).to_string())


def _merge_description() -> str:
    from labkit.lab.sharing.bundle import READS

    return ("Put several machines' bundles side by side. Each bundle must be of a format this "
            "labkit reads (" + " or ".join(map(str, READS)) + "), and all of one mode "
            "(quick/full) and one labkit commit.")


BUNDLE = Command("bundle", "pack this machine's results into a bundle folder",
                 "Pack the results measured on THIS machine into <out>.labkit/ to compare "
                 "with other machines. Rows measured elsewhere are refused.",
                 _bundle_arguments, _bundle)

# merge.merge's paths are the BUNDLES given (read_bundle says `path` of one of them), and
# same_commit=False is --allow-other-commits.
MERGE = Command("merge", "merge bundles from several machines into one comparison",
                "Put several machines' bundles side by side.", _merge_arguments, _merge,
                options={"paths": "bundles", "path": "bundles",
                         "same_commit": "--allow-other-commits"})
