"""Exploring: the explorer and the workshop."""
