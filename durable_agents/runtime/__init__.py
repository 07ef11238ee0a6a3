"""Process-level plumbing: worker settings from the environment, the Temporal client, the
embedded dev server, and assembling workers. Never imported by workflow code."""
