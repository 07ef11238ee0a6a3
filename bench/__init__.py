"""Benchmarks: issue 14's targets against the naive loop (`make bench`, `bench.run_all`), each lever
(`bench.levers`), history growth (`bench.history_growth`) and the soak (`bench.soak`); results and
how to read them in BENCHMARKS.md."""
