"""Judging: the claims registry, the rules, the verdict engine and its calibration, the ledger, stability."""
