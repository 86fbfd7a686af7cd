"""Topology families. Each module defines builder functions decorated with @topology; the CLI
(`ibtool topo <name>`) and `ibtool topo list` find them here without edits elsewhere."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ibtool.fabric import Fabric

# Modules holding builders; adding a family means adding its module name here.
FAMILIES = ["kns"]


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any
    help: str


@dataclass(frozen=True)
class Topology:
    name: str
    build: Callable[..., Fabric]
    params: tuple[Param, ...]
    summary: str
    reference: str
    example: str = ""


REGISTRY: dict[str, Topology] = {}


def topology(name: str, *, params: list[Param], summary: str, reference: str, example: str = ""):
    def wrap(fn: Callable[..., Fabric]):
        REGISTRY[name] = Topology(name, fn, tuple(params), summary, reference, example)
        return fn
    return wrap


def load_all() -> dict[str, Topology]:
    for mod in FAMILIES:
        importlib.import_module(f"ibtool.topologies.{mod}")
    return REGISTRY
