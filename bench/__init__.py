"""Benchmarks: history growth, throughput. Run with `make bench`; results in BENCHMARKS.md."""
