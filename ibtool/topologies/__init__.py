"""Topology families. Each module of this package defines builders decorated with @topology; the
registry (ibtool.registry.TOPOLOGIES) finds them by importing every module here, so `ibtool topo
<name>`, `ibtool topo list`, the layout policy and the paper figures of a family need no edit
elsewhere: adding a family is one module (and its tests).

A registration holds every fact about the family once: its parameters with their ranges (checked
before the builder runs, one line naming the option), the OpenSM engine and its files, the layout
policy that places it (ibtool.layout.place, `topo`, `cabling` and `analyze` all take it from here),
the source paper's figures and, where known, the closed form of its bisection."""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.registry import TOPOLOGIES

MAX_RADIX = 254  # InfiniBand switches have at most 254 ports


@dataclass(frozen=True)
class Param:
    """One option of a family: `--name`, its type, default (None = required), help, and the range
    `low`..`high` an int must lie in (None: unbounded), checked by @topology before building."""
    name: str
    type: type
    default: Any
    help: str
    low: int | None = None
    high: int | None = None

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    def check(self, value) -> None:
        if self.type is not int or isinstance(value, bool) or not isinstance(value, int):
            return
        if self.low is not None and value < self.low:
            raise InputError(f"{self.option} must be >= {self.low}, got {value}")
        if self.high is not None and value > self.high:
            why = " (InfiniBand switches have at most 254 ports)" if self.high == MAX_RADIX else ""
            raise InputError(f"{self.option} must be <= {self.high}{why}, got {value}")


def radix_param(default: int, help: str, low: int = 2) -> Param:
    """--radix, ports per switch: 2..254 (low = 0 where 0 means the family's own choice)."""
    return Param("radix", int, default, help, low=low, high=MAX_RADIX)


def check_radix(radix: int) -> None:
    """A switch radix InfiniBand allows (for a radix the family computed itself)."""
    radix_param(0, "").check(radix)


def need_ports(device: str, need: int, detail: str, radix: int, hint: str = "") -> None:
    """Refuse, before anything is built, a switch that needs more ports than it has, naming it."""
    if need > radix:
        raise InputError(f"{device} needs {need} ports ({detail}) but the switch radix is {radix}{hint}")


@dataclass(frozen=True)
class EngineFile:
    """A file an OpenSM routing engine reads, written beside the plan and named in its opensm.conf
    by `key` (e.g. ftree's root_guid_file). With `filename` empty it is a plain option instead:
    `key content` in opensm.conf and no file (e.g. torus-2QoS needs `qos TRUE`). With `key` empty
    the engine finds the file by its place beside opensm.conf (hdor's hdor.conf): not named."""
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
    layout: str = "sequential"  # the ibtool.layout policy that places the family
    # the source paper's own figures of a plan, from its parameters (fabric.json's params): a dict
    # with "figures" (rows: name, value, formula, source) and/or "bisection" (the paper's own
    # bisection measure, reported beside the true one); `ibtool analyze` prints them
    figures: Callable[[dict], dict] | None = None
    # the exact bisection in links from the plan's parameters, where a closed form is known
    # (`ibtool analyze` then reports it instead of solving for it)
    bisection: Callable[[dict], int] | None = None

    def places(self, fabric: Fabric) -> bool:
        """Whether the family builds on a cabinet floor (every switch has labels['cabinet']: paper
        004's families, Slim Fly, Dragonfly), so `ibtool topo` writes its layout.json; the others
        are placed by the same policy when a command needs a floor (cabling, analyze)."""
        sw = [i for i in range(fabric.num_nodes) if fabric.is_switch(i)]
        return bool(sw) and all("cabinet" in fabric.labels[i] for i in sw)


def topology(name: str, *, params: list[Param], summary: str, reference: str, example: str = "",
             engine: str = "minhop", engine_files: Callable[[Fabric], list[EngineFile]] | None = None,
             layout: str = "sequential", figures: Callable[[dict], dict] | None = None,
             bisection: Callable[[dict], int] | None = None):
    """Register a builder as family `name`. Each Param's range is checked before the builder runs
    and the built fabric's params start with {"topology": name}. `engine` is the OpenSM
    routing_engine list an admin would use on the family; `engine_files(fabric)` returns the files
    that engine reads (root GUIDs, compute-node GUIDs, torus-2QoS.conf ...), which `ibtool topo`
    writes beside the plan. `layout` names the ibtool.layout policy that places the family.
    `figures(params)` gives the source paper's own figures of a plan (see Topology.figures),
    `bisection(params)` its closed-form bisection."""
    from ibtool.layout.policies import POLICIES  # the policy must exist: a typo fails at import
    POLICIES.get(layout)

    def wrap(fn: Callable[..., Fabric]):
        sig = inspect.signature(fn)
        # a Param is the builder's argument of the same name (--N is the argument n)
        args = [(p, p.name if p.name in sig.parameters else p.name.lower()) for p in params]

        @functools.wraps(fn)
        def build(*a, **kw) -> Fabric:
            bound = sig.bind(*a, **kw)
            bound.apply_defaults()
            for p, arg in args:
                p.check(bound.arguments.get(arg))
            f = fn(*a, **kw)
            f.params = {"topology": name, **{k: v for k, v in f.params.items() if k != "topology"}}
            return f

        TOPOLOGIES.add(name, Topology(name, build, tuple(params), summary, reference, example, engine, engine_files,
                                      layout, figures, bisection))
        return build
    return wrap


def load_all() -> dict[str, Topology]:
    """Every family, by name."""
    return dict(TOPOLOGIES.items())


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
