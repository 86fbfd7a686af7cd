"""Small registries filled by a class decorator (ReFrame-style).

A backend module says ``@RUNNERS.register("ssh")`` above its class; the core asks the registry
for names and never lists backends itself. ``Registry.load()`` imports every module of the
package the registry belongs to, so dropping a new module into ``runners/`` or ``benchmarks/``
is all it takes to add a backend.
"""

from __future__ import annotations

import importlib
import pkgutil

from ibtool.errors import InputError


class Registry:
    def __init__(self, kind: str, package: str):
        self.kind = kind
        self.package = package
        self._classes: dict[str, type] = {}
        self._loaded = False

    def register(self, name: str):
        def deco(cls):
            if name in self._classes and self._classes[name] is not cls:
                raise RuntimeError(f"{self.kind} {name!r} registered twice")
            cls.name = name
            self._classes[name] = cls
            return cls
        return deco

    def load(self) -> None:
        if self._loaded:
            return
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(getattr(pkg, "__path__", [])):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{self.package}.{mod.name}")
        self._loaded = True

    def names(self) -> list[str]:
        self.load()
        return sorted(self._classes)

    def get(self, name: str) -> type:
        self.load()
        try:
            return self._classes[name]
        except KeyError:
            raise InputError(f"unknown {self.kind} {name!r} (known: {', '.join(self.names())})") from None


RUNNERS = Registry("runner", "ibtool.bench.runners")
BENCHMARKS = Registry("benchmark", "ibtool.bench.benchmarks")
