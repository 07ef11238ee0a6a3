"""An agent that hands work to another agent, each call a child run (issue 34)."""
