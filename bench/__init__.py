"""Benchmarks: pytest-benchmark suites, scripts, and the broker harness
(`python -m bench.harness`, bench/harness/)."""
