"""Runners: one module per backend, each registering itself with @RUNNERS.register(name)."""
