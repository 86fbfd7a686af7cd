"""Benchmarks: one module per benchmark, each registering itself with @BENCHMARKS.register(name)."""
