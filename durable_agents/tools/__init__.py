"""Tools the agent can call: each one a typed async function, run as its own Temporal activity.

`tools.definition` says what a tool is, `tools.registry` holds them, `tools.catalog` lists the
ones this application offers, and `tools.builtin` has the built-in tools.
"""
