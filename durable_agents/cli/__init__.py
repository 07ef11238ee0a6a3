"""`agent`: a companion command line for `AgentWorkflow` runs.

It starts runs and follows them live (turns, tool steps, tokens), answers approvals and
questions inline or from another shell, and reads status and results. Everything it does is
also possible with the plain `temporal` CLI; this one knows the workflow's signals, update and
queries, so a person types `agent approve ID CALL` instead of hand-written JSON.
"""
