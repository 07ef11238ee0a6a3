"""An agent that plans first, then runs the plan's tool actions (issue 34)."""
