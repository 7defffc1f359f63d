"""The `labkit` command: `python -m labkit <command>`.

    python -m labkit kernels                      what can be measured here
    python -m labkit measure asm_fpu              one measurement, summarised
    python -m labkit bundle -o mylaptop           pack this machine's results
    python -m labkit merge a.labkit b.labkit      compare machines side by side
"""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="labkit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("kernels", help="list the kernels and peers, available here or why not")
    m = sub.add_parser("measure", help="measure one kernel and print its summary")
    m.add_argument("kernel")
    m.add_argument("--switches", type=int, default=1_000_000)
    m.add_argument("--repeats", type=int, default=10)
    m.add_argument("--stack-size", type=int, default=None)
    m.add_argument("--cpu", type=int, default=None)
    b = sub.add_parser("bundle", help="pack this machine's results into a bundle folder")
    b.add_argument("-o", "--out", required=True, help="bundle path (.labkit is appended)")
    b.add_argument("--quick", action="store_true", help="bundle the quick run's results")
    g = sub.add_parser("merge", help="merge bundles from several machines into one comparison")
    g.add_argument("bundles", nargs="+")
    g.add_argument("-o", "--out", help="write the comparison as <out>-verdicts.csv and "
                                       "<out>-ladder.csv")
    args = parser.parse_args(argv)

    import pandas as pd

    pd.set_option("display.width", 200)
    pd.set_option("display.max_colwidth", 60)
    try:
        if args.command == "kernels":
            import labkit

            print(labkit.kernels()[["kernel", "system", "kind", "available", "why_not"]]
                  .to_string(index=False))
        elif args.command == "measure":
            import labkit

            df = labkit.measure(args.kernel, switches=args.switches, repeats=args.repeats,
                                stack_size=args.stack_size, cpu=args.cpu)
            s = labkit.summarize(df)
            for w in labkit.noise_warnings(s):
                print(w)
            print(s.T.to_string(header=False))
        elif args.command == "bundle":
            import os

            from labkit import bundle
            from labkit.reproduce import reports_dir

            if args.quick:
                os.environ["LABKIT_RESULTS_DIR"] = str(reports_dir(True))
            print(bundle.make_bundle(args.out, quick=args.quick))
        elif args.command == "merge":
            from labkit import bundle

            out = bundle.merge(args.bundles)
            print("machines:", *out["machines"], sep="\n  ")
            print(out["verdicts"].to_string())
            if not out["ladder"].empty:
                print(out["ladder"].round(2).to_string())
            if args.out:
                out["verdicts"].to_csv(f"{args.out}-verdicts.csv")
                out["ladder"].to_csv(f"{args.out}-ladder.csv")
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(f"labkit {args.command}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
