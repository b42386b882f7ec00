"""Coordinators: the group coordinator (consumer groups and committed offsets)."""
