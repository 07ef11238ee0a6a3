"""The agent loop's decisions as small pure functions: no Temporal, no I/O, no clock.

The workflow calls them in order each round: `validate_agent_input` once, then
`start_conversation`, `normalize_reply`, `read_final_answer` or `plan_tool_calls`,
`append_round`, and `check_max_iterations`. Each is unit-tested alone.
"""
