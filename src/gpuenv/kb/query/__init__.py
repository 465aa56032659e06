"""Lookups over the loaded knowledge base: pure functions, one module per subject area."""
