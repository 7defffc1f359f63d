"""Sharing: bundles, and merging them side by side."""
