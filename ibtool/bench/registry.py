"""The campaign's registries (ibtool.registry.Registry): a backend module says
``@RUNNERS.register("ssh")`` above its class; dropping a new module into ``runners/`` or
``benchmarks/`` is all it takes to add a backend."""

from __future__ import annotations

from ibtool.registry import Registry

RUNNERS = Registry("runner", "ibtool.bench.runners")
BENCHMARKS = Registry("benchmark", "ibtool.bench.benchmarks")
