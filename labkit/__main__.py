"""`python -m labkit ...`: the same as the `labkit` command (labkit/cli.py)."""
import sys

from labkit.cli import main

if __name__ == "__main__":
    sys.exit(main())
