"""Judging: the claims, their rules, the verdicts and their engine, the ledger, stability."""
