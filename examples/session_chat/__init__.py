"""A chat with an agent defined in code: a durable session, turn after turn (issue 34)."""
