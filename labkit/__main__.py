"""`python -m labkit ...`: the same as the `labkit` command (labkit/lab/cli/)."""
import sys

from labkit.lab.cli import main

if __name__ == "__main__":
    sys.exit(main())
