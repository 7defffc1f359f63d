"""Sharing: bundles, merging them, and the workshop room."""
