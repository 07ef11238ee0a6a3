"""What the tests (`tests/`) and the benchmarks (`bench/`) both use, so neither imports the
other: the fake OpenAI-compatible server (`fake_openai`), waiting for a condition
(`eventually`), real `worker.py` processes and the exactly-once `crash_effect` tool they load
(`crash_tools`), the benchmarks' `fixed_output` tool and the directives the fake model reads
(`fixed_output`, `bench_model`), and reading where a history stores what (`history_copies`,
`history_reading`). Not part of the installed application."""
