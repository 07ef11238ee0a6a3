"""An agent that asks the person a question and waits for the answer (issue 34)."""
