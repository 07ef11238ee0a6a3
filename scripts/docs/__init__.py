"""Generators of the documentation site's reference pages (issue 34)."""
