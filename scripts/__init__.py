"""Maintenance scripts, run from the project folder as `python -m scripts.<name>`."""
