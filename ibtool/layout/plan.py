"""Reading a plan directory back: its Fabric (with the family's labels where it can be rebuilt)
and its Layout.

A plan directory is what `ibtool topo` (or `ibtool cabling import`) wrote: topology.net, fabric.json,
and for families placed on a floor, layout.json. topology.net is the truth. The family's labels
(KNS coordinates and dimensions, tree levels, cabinets), which the wiring stages and drawings use,
are not in that file: they come from rebuilding the family from fabric.json's parameters, kept
only when the rebuilt fabric has exactly the plan's devices and cables (an edited plan keeps its
own wiring, with generic stages).
"""

from __future__ import annotations

import json
from pathlib import Path

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import ibnetdiscover, open_input


def _rebuild(build: dict) -> Fabric | None:
    """The family's fabric, built again with the arguments `ibtool topo` recorded."""
    from ibtool.topologies import load_all
    topo = load_all().get(str(build.get("family")))
    args = build.get("args")
    if topo is None or not isinstance(args, dict):
        return None
    try:
        return topo.build(**args)
    except (InputError, TypeError, ValueError):
        return None


def read_plan(plan: str | Path) -> tuple[Fabric, Path, dict | None]:
    """(fabric, plan directory, build): PLAN is a plan directory or its topology.net; `build` (the
    family and its arguments) is given when the fabric was rebuilt with the family's labels."""
    plan = Path(plan)
    net = plan / "topology.net" if plan.is_dir() else plan
    d = net.parent
    found = ibnetdiscover.read(net)
    fj = d / "fabric.json"
    summary = {}
    if fj.exists():
        with open_input(fj) as fh:
            try:
                summary = json.load(fh)
            except (json.JSONDecodeError, RecursionError):
                summary = None
        if not isinstance(summary, dict):
            raise InputError("not a plan summary (fabric.json of `ibtool topo`)", path=str(fj))
    if isinstance(summary.get("build"), dict):
        rebuilt = _rebuild(summary["build"])
        if (rebuilt is not None and rebuilt.names == found.names and rebuilt.guids == found.guids
                and rebuilt.link_set() == found.link_set()):
            rebuilt.link_rate = [None] * rebuilt.num_links  # as planned: the writer's default rate
            return rebuilt, d, summary["build"]
    if isinstance(summary.get("name"), str):
        found.name = summary["name"]
    if isinstance(summary.get("params"), dict):
        found.params = summary["params"]
    return found, d, None


def read_layout(fabric: Fabric, plan_dir: Path, policy: str | None = None, site=None):
    """The plan's layout.json when present (and no other policy or site is asked for), else the
    fabric placed by `policy` (default: the family's) on `site`."""
    from ibtool.layout import Layout, place
    lj = plan_dir / "layout.json"
    if lj.exists() and policy is None and site is None:
        return Layout.read(lj, fabric)
    return place(fabric, policy, site)
