"""Registries: the one way a room lists its kinds of thing (ReFrame-style).

A module registers what it defines under a name, ``@RUNNERS.register("ssh")`` above a class or
``REG.add(name, record)`` from a decorator of its own (``@topology``, ``@policy``); the rest of
ibtool asks the registry for names and never keeps a list. ``load()`` imports every module of the
registry's package, so adding a backend, a benchmark or a topology family is one new module. A
registry may name one module instead (layout policies, MPI launchers: a few lines each, sharing
that module's helpers); it is then the names' lookup. A name registered twice is refused: two
modules never silently replace each other; an unknown name is one line naming the known ones.

The registries whose entries a lower room looks up live here, in the lowest room, so that room
needs no import of the higher one: TOPOLOGIES (ibtool.topologies' families, whose layout policy
ibtool.layout asks for) is found by package name, loaded on first use.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

from ibtool.errors import InputError


class Registry:
    def __init__(self, kind: str, package: str):
        self.kind = kind
        self.package = package
        self._entries: dict[str, Any] = {}
        self._loaded = False

    def add(self, name: str, entry: Any) -> Any:
        """Register `entry` under `name`; a second, different entry of that name is refused."""
        old = self._entries.get(name)
        if old is not None and old is not entry:
            raise RuntimeError(f"{self.kind} {name!r} registered twice")
        self._entries[name] = entry
        return entry

    def register(self, name: str):
        """Class decorator: register the class under `name` (and give it `name`)."""
        def deco(cls):
            self.add(name, cls)
            cls.name = name
            return cls
        return deco

    def load(self) -> None:
        """Import the package and every module of it (not those named _...)."""
        if self._loaded:
            return
        pkg = importlib.import_module(self.package)
        for mod in pkgutil.iter_modules(getattr(pkg, "__path__", [])):
            if not mod.name.startswith("_"):
                importlib.import_module(f"{self.package}.{mod.name}")
        self._loaded = True

    def names(self) -> list[str]:
        self.load()
        return sorted(self._entries)

    def get(self, name: str) -> Any:
        """The entry of `name`; an unknown name is bad input (one line naming the known ones)."""
        self.load()
        try:
            return self._entries[name]
        except KeyError:
            raise InputError(f"unknown {self.kind} {name!r} (known: {', '.join(self.names())})") from None

    def find(self, name: str) -> Any | None:
        """The entry of `name`, or None."""
        self.load()
        return self._entries.get(name)

    def items(self) -> list[tuple[str, Any]]:
        return [(n, self._entries[n]) for n in self.names()]

    __getitem__ = get

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load()
        return len(self._entries)


TOPOLOGIES = Registry("topology family", "ibtool.topologies")
