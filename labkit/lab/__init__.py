"""The lab around the measurements: rules and verdicts, the articles' tables, the ledger, the
report, running the notebooks, bundles and rooms, the explorer and the workshop, the
`labkit` command."""
