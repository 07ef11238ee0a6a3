"""`agent a2a`: durable agents served to other agents over Google's A2A protocol with `a2a-sdk`:
an agent card listing the agent profiles as skills, a task per run, `input-required` while a
run waits for a person. See docs/mcp-and-a2a.md."""
