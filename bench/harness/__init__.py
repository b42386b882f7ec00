"""The broker benchmark harness (issue 14): a real client drives a broker at a bootstrap
address, every figure beside the loopback limits measured in the same run.

    python -m bench.harness [--quick] [--scenarios produce,latency,...] [--peer NAME=HOST:PORT]

`make bench-broker` runs it; README.md ("Benchmarks") describes the options and results.
"""
