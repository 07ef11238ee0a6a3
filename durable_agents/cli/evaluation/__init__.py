"""`agent eval SUITE.yaml`: run a suite of scenarios as real `AgentWorkflow` runs and score them.

Where things are:
- `suite.py`: the suite file format (pydantic models: scenarios, expectations, scripted
  people, prices) and `load_suite`, whose errors name the scenario and the field;
- `scoring.py`: pure functions: a run's record, its expectations checked, and the metrics
  (completion rate, average steps, tokens and cost, latency p50/p95, failure-recovery rate);
- `runner.py`: one run on the Temporal server: start it under the evaluation's id prefix, play
  the scripted people (approve, reject, reply, cancel), read the result and the history;
- `report.py`: the terminal table, `results.json` and the chart (`chart.png`);
- `command.py`: the `agent eval` subcommand: models × scenarios × repeats, concurrency, the
  progress bar.

The shipped suite built from the seed cases is `evals/seed_cases.yaml`.
"""
