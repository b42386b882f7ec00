"""Chaos checks against real kafkars broker processes: `make chaos`, `make chaos-smoke`."""
