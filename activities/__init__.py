"""This repository's application: its own tools, written as plain async functions.

The engine (`durable_agents`) runs each tool as a Temporal activity named after it; the agents
in `workflows/` say which tools they use. Replace these with your own.
"""
