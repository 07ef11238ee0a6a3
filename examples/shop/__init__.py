"""An application built on durable agents through its public API only: a shop assistant whose
order tool waits for a person's approval (see README.md here)."""
