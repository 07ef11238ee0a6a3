"""Typed models that cross a boundary: workflow input and result, activity input and output.

Everything here is plain pydantic, with no Temporal or I/O, so workflow code, activities,
the worker and tests all share one vocabulary.
"""
