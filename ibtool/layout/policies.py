"""Placement policies: where each switch and node of a fabric stands.

A policy is a function (fabric, site) -> Placement, registered with @policy(name, site=defaults)
where `defaults` are the paper's numbers. `place()` picks the policy (explicit, else the one the
fabric's family names in its @topology registration, else "sequential"), overlays the user's site
description, places, and refuses a fabric that does not fit the room.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric, attached_switch, switch_stages
from ibtool.layout.model import FLOOR, Layout
from ibtool.layout.site import Site, key_line, make_site, read_site
from ibtool.registry import TOPOLOGIES, Registry


@dataclass
class Placement:
    cabinet: np.ndarray  # per node, FLOOR = not placed
    u: np.ndarray  # per node, lowest slot, 0 = none
    side: np.ndarray  # per node, 0 front / 1 back
    kinds: list[str]  # per cabinet: "switch", "node" or "mixed"


@dataclass(frozen=True)
class Policy:
    name: str
    place: Callable[[Fabric, Site], Placement]
    site: Site
    summary: str


POLICIES = Registry("layout policy", "ibtool.layout.policies")


def policy(name: str, *, site: Site, summary: str):
    """Register a placement policy with its default site. A family names the policy that places it
    in its own registration (@topology(..., layout=name)), the one place that fact is kept."""
    def wrap(fn):
        POLICIES.add(name, Policy(name, fn, site, summary))
        return fn
    return wrap


def switch_order(fabric: Fabric) -> list[int]:
    """Switches in the family's order: by labels['cabinet'] where every switch has one (a family
    built cabinet by cabinet), else in node order."""
    sw = [i for i, t in enumerate(fabric.types) if t == SWITCH]
    if sw and all("cabinet" in fabric.labels[i] for i in sw):
        return sorted(sw, key=lambda i: (fabric.labels[i]["cabinet"], i))
    return sw


def _groups(fabric: Fabric) -> list[tuple[int | None, list[int]]]:
    """(switch, its HCAs) in the family's switch order; HCAs without a switch come last."""
    att = attached_switch(fabric)
    hcas: dict[int, list[int]] = {}
    loose = []
    for i, t in enumerate(fabric.types):
        if t == CA:
            (hcas.setdefault(int(att[i]), []) if att[i] >= 0 else loose).append(i)
    out = [(s, hcas.get(s, [])) for s in switch_order(fabric)]
    if loose:
        out.append((None, loose))
    return out


@policy("sequential", summary="paper 002 section 4: 42U 1 m x 1 m cabinets without aisle, filled in order, "
                              "routers at the top, their endpoints below or in the next cabinet",
        site=Site(cabinet_u=42, cabinet_width=1.0, cabinet_depth=1.0, aisle=0.0, cable_model="paper002",
                  overhead=1.0, side=0.5, copper_limit={"*": 8.0}))
def sequential(fabric: Fabric, site: Site) -> Placement:
    n = fabric.num_nodes
    cab, u, side = np.full(n, FLOOR), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int8)
    fresh_top, fresh_bottom = site.cabinet_u, site.reserved_u + 1
    c, top, bottom = 0, fresh_top, fresh_bottom  # slots bottom..top of cabinet c are free
    for sw, hcas in _groups(fabric):
        if sw is not None:
            if top - site.switch_u + 1 < bottom:
                c, top, bottom = c + 1, fresh_top, fresh_bottom
            cab[sw], u[sw] = c, top - site.switch_u + 1
            top -= site.switch_u
        for h in hcas:
            if bottom + site.hca_u - 1 > top:  # endpoints spill into the next cabinet
                c, top, bottom = c + 1, fresh_top, fresh_bottom
            cab[h], u[h] = c, bottom
            bottom += site.hca_u
    used = int(cab.max()) + 1 if n else 0
    return Placement(cab, u, side, ["mixed"] * used)


@policy("cabinet-aware", summary="paper 004 section III: z switches per cabinet in the family's order, "
                                 "cabinets 0.6 m x 2.1 m (aisle included) on a ceil(sqrt(c)) x ceil(c/x) grid",
        site=Site(cabinet_u=42, cabinet_width=0.6, cabinet_depth=2.1, aisle=0.0, switches_per_cabinet=8,
                  cable_model="paper004", overhead=4.0, intra_cabinet=2.0))
def cabinet_aware(fabric: Fabric, site: Site) -> Placement:
    """Switches at the top of their cabinet: the family's labels['cabinet'] when every switch has
    one, else z = switches_per_cabinet per cabinet in node order. Each switch's HCAs go from the
    bottom up while they fit, the rest on the floor (paper 004 leaves compute nodes out)."""
    n = fabric.num_nodes
    z = site.switches_per_cabinet or 8
    cab, u, side = np.full(n, FLOOR), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int8)
    labelled = all("cabinet" in fabric.labels[s] for s in switch_order(fabric))
    filled: dict[int, int] = {}  # cabinet -> switches placed
    sw_groups = [g for g in _groups(fabric) if g[0] is not None]
    for rank, (sw, _) in enumerate(sw_groups):
        c = int(fabric.labels[sw]["cabinet"]) if labelled else rank // z
        k = filled.get(c, 0)
        filled[c] = k + 1
        cab[sw], u[sw] = c, site.cabinet_u - (k + 1) * site.switch_u + 1
        if u[sw] <= site.reserved_u:
            raise InputError(f"{fabric.names[sw]} does not fit: cabinet {c} would hold {k + 1} switches of "
                             f"{site.switch_u}U in {site.usable_u} usable U")
    bottom: dict[int, int] = {}
    for sw, hcas in sw_groups:
        c = int(cab[sw])
        lowest_switch = site.cabinet_u - filled[c] * site.switch_u + 1
        for h in hcas:
            b = bottom.get(c, site.reserved_u + 1)
            if b + site.hca_u - 1 < lowest_switch:
                cab[h], u[h] = c, b
                bottom[c] = b + site.hca_u
    ncab = max(filled) + 1 if filled else 0
    return Placement(cab, u, side, ["mixed"] * ncab)


# switch racks cabled front and back, node racks beside them (CELLIA's room, paper 000)
RACKS = Site(cabinet_u=42, cabinet_width=0.6, cabinet_depth=1.2, aisle=0.0, cable_model="routed", overhead=1.0,
             side=0.5)


@policy("switch-rack", summary="paper 000 (CELLIA): every switch in dedicated switch racks cabled front and "
                               "back, nodes in node racks beside them", site=RACKS)
def switch_rack(fabric: Fabric, site: Site) -> Placement:
    """Switch racks first (front from the top down, then the back), then node racks filled from the
    bottom up, at most `hcas_per_cabinet` nodes each (CELLIA: 50 nodes in two racks, 25 each)."""
    n = fabric.num_nodes
    cab, u, side = np.full(n, FLOOR), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int8)
    per_face = site.usable_u // site.switch_u
    switches = switch_order(fabric)
    for k, s in enumerate(switches):
        c, rest = divmod(k, 2 * per_face)
        face, slot = divmod(rest, per_face)
        cab[s], u[s], side[s] = c, site.cabinet_u - (slot + 1) * site.switch_u + 1, face
    nsw = -(-len(switches) // (2 * per_face)) if switches else 0
    per_rack = site.usable_u // site.hca_u
    if site.hcas_per_cabinet:
        per_rack = min(per_rack, site.hcas_per_cabinet)
    hcas = [h for _, hs in _groups(fabric) for h in hs]
    for k, h in enumerate(hcas):
        c, slot = divmod(k, per_rack)
        cab[h], u[h] = nsw + c, site.reserved_u + 1 + slot * site.hca_u
    nnode = -(-len(hcas) // per_rack) if hcas else 0
    return Placement(cab, u, side, ["switch"] * nsw + ["node"] * nnode)


@policy("tree-stages", site=RACKS,
        summary="trees: switch racks by stage (leaf stage first, each stage from a new rack, front then "
                "back), nodes in node racks in the order of their leaf switches")
def tree_stages(f: Fabric, site: Site) -> Placement:
    """Stages from the wiring alone (ibtool.fabric.switch_stages), so a plan read back from a file,
    without the family's labels, is placed the same way."""
    n = f.num_nodes
    cab, u, side = np.full(n, FLOOR), np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int8)
    st = switch_stages(f)
    per_face = site.usable_u // site.switch_u
    c = -1
    for s_ in sorted(set(st.values())):
        row = sorted(i for i, x in st.items() if x == s_)
        for j, s in enumerate(row):
            rack, rest = divmod(j, 2 * per_face)
            face, slot = divmod(rest, per_face)
            cab[s], u[s], side[s] = c + 1 + rack, site.cabinet_u - (slot + 1) * site.switch_u + 1, face
        c += -(-len(row) // (2 * per_face))
    nsw = c + 1
    per_rack = site.usable_u // site.hca_u
    if site.hcas_per_cabinet:
        per_rack = min(per_rack, site.hcas_per_cabinet)
    att = attached_switch(f)
    hcas = sorted((i for i in range(n) if f.types[i] == CA),
                  key=lambda h: (st.get(int(att[h]), 0), int(att[h]), h))
    for j, h in enumerate(hcas):
        r, slot = divmod(j, per_rack)
        cab[h], u[h] = nsw + r, site.reserved_u + 1 + slot * site.hca_u
    nnode = -(-len(hcas) // per_rack) if hcas else 0
    return Placement(cab, u, side, ["switch"] * nsw + ["node"] * nnode)


def default_policy(fabric: Fabric) -> str:
    """The policy of the fabric's family (its @topology registration), else "sequential" (a
    fabric of no family: a dump, an edited plan of an unknown family)."""
    fam = TOPOLOGIES.find(str(fabric.params.get("topology")))
    return fam.layout if fam is not None else "sequential"


def resolve_site(name: str, site: Site | dict | str | Path | None) -> Site:
    """The policy's defaults overlaid with a YAML file, a dict of keys, or a complete Site."""
    base = POLICIES[name].site
    if site is None:
        return base
    if isinstance(site, Site):
        return site
    if isinstance(site, dict):
        return make_site(base, **site)
    return read_site(site, base)


def place(fabric: Fabric, policy: str | None = None, site: Site | dict | str | Path | None = None) -> Layout:
    """Place `fabric` with `policy` (default: the family's, else "sequential") on `site`."""
    name = policy or default_policy(fabric)
    pol = POLICIES.get(name)  # an unknown name: one line naming the known ones
    s = resolve_site(name, site)
    p = pol.place(fabric, s)
    cap = s.capacity()
    if cap is not None and len(p.kinds) > cap:
        first = int(np.flatnonzero(p.cabinet >= cap)[0])
        path = str(site) if isinstance(site, (str, Path)) else None
        raise InputError(f"grid: {fabric.names[first]} does not fit the room: the {name} policy needs "
                         f"{len(p.kinds)} cabinets, the grid {s.grid[0]}x{s.grid[1]} holds {cap}",
                         path=path, line=key_line(path, "grid") if path else None)
    return Layout(fabric, s, name, p.cabinet, p.u, p.side, p.kinds)
