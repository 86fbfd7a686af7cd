"""Topology families. Each module defines builder functions decorated with @topology; the CLI
(`ibtool topo <name>`) and `ibtool topo list` find them here without edits elsewhere."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from ibtool.fabric import Fabric

# Modules holding builders; adding a family means adding its module name here.
FAMILIES = ["kns", "fattree", "sft", "kantc", "equality", "direct", "skywalk", "slimfly", "dragonfly_canonical"]


@dataclass(frozen=True)
class Param:
    name: str
    type: type
    default: Any
    help: str


@dataclass(frozen=True)
class EngineFile:
    """A file an OpenSM routing engine reads, written beside the plan and named in its opensm.conf
    by `key` (e.g. ftree's root_guid_file). With `filename` empty it is a plain option instead:
    `key content` in opensm.conf and no file (e.g. torus-2QoS needs `qos TRUE`)."""
    key: str
    filename: str
    content: str


@dataclass(frozen=True)
class Topology:
    name: str
    build: Callable[..., Fabric]
    params: tuple[Param, ...]
    summary: str
    reference: str
    example: str = ""
    engine: str = "minhop"  # the routing_engine list the plan's opensm.conf names
    # the files that engine needs, derived from the built fabric (roles, GUIDs)
    engine_files: Callable[[Fabric], list[EngineFile]] | None = None
    layout: str | None = None  # the ibtool.layout policy that places the family (layout.json)
    # the source paper's own figures of a plan, from its parameters (fabric.json's params): a dict
    # with "figures" (rows: name, value, formula, source) and/or "bisection" (the paper's own
    # bisection measure, reported beside the true one); `ibtool analyze` prints them
    figures: Callable[[dict], dict] | None = None


REGISTRY: dict[str, Topology] = {}


def topology(name: str, *, params: list[Param], summary: str, reference: str, example: str = "",
             engine: str = "minhop", engine_files: Callable[[Fabric], list[EngineFile]] | None = None,
             layout: str | None = None, figures: Callable[[dict], dict] | None = None):
    """Register a builder. `engine` is the OpenSM routing_engine list an admin would use on the
    family; `engine_files(fabric)` returns the files that engine reads (root GUIDs, compute-node
    GUIDs, torus-2QoS.conf ...), which `ibtool topo` writes beside the plan. `layout` names the
    ibtool.layout policy that places the family on its floor (`ibtool topo` writes layout.json).
    `figures(params)` gives the source paper's own figures of a plan (see Topology.figures)."""
    def wrap(fn: Callable[..., Fabric]):
        REGISTRY[name] = Topology(name, fn, tuple(params), summary, reference, example, engine, engine_files,
                                  layout, figures)
        return fn
    return wrap


def qos_on(fabric: Fabric) -> list[EngineFile]:
    """`qos TRUE`, for engines whose layers need SL2VL tables (dfsssp, torus-2QoS): OpenSM
    programs them (and dumps them, which `ibtool verify` checks per VL) only with QoS on."""
    return [EngineFile("qos", "", "TRUE")]


def figure(name: str, value, formula: str, source: str) -> dict:
    """One of a paper's figures as `ibtool analyze` reports it (a row of Topology.figures)."""
    return {"name": name, "value": value, "formula": formula, "source": source}


def guid_list(fabric: Fabric, nodes) -> str:
    """The GUID-per-line format of OpenSM's root_guid_file, cn_guid_file and io_guid_file (for a
    CA, the GUID of its port 1, the one cabled to the fabric)."""
    return "".join(f"0x{fabric.port_guid(i, 1):016x}\n" for i in nodes)


def load_all() -> dict[str, Topology]:
    for mod in FAMILIES:
        importlib.import_module(f"ibtool.topologies.{mod}")
    return REGISTRY
