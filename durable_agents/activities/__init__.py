"""Temporal activities: thin adapters from the workflow to the outside world.

`call_model` asks a chat model; every tool runs as an activity named after the tool.
"""
