"""The site description: cabinets, machine-room grid and cabling rules a layout is placed with.

Every key has a default that comes from the placement policy (the paper behind it); a YAML file
overrides any of them. Unknown keys and impossible values are refused with one line naming the
file, the line and the key.

    # site.yaml: every key optional
    cabinet_u: 42            # cabinet height in rack units
    reserved_u: 2            # U at the bottom kept free (PDUs, management switch)
    cabinet_width: 0.6       # m, along a cabinet row
    cabinet_depth: 2.1       # m, row pitch including the aisle
    aisle: 0.0               # m, added to the row pitch when cabinet_depth excludes it
    grid: [16, 16]           # rows x columns of the room; a fabric needing more cabinets is refused
    switch_u: 1              # height of one switch
    hca_u: 1                 # height of one node (one HCA per node)
    switches_per_cabinet: 8  # z of paper 004 (cabinet-aware policy)
    hcas_per_cabinet: 25     # cap on nodes per node rack (switch-rack policy)
    switch_depth: half       # half: a switch takes one face of its U (front or back); full: both
    hca_depth: full          # a node (server) takes both faces of its U
    cable_model: routed      # routed (the site default) | paper002 | paper004 (to reproduce the papers)
    side: 0.5                # m, from the port to the cabinet's cable management (routed, paper002)
    tray_height: 0.3         # m, overhead cable tray above the cabinet tops (routed)
    service_loop: 0.5        # m of slack per cable: routing, bend radius, reseating (routed)
    overhead: 1.0            # m, pathway above the cabinets (paper002); per-end overhead x2 (paper004)
    intra_cabinet: 2.0       # m, any cable inside one cabinet (paper004)
    u_height: 0.04445        # m per rack unit
    purchasable_lengths: [0.5, 1, 1.5, 2, 2.5, 3, 5, 7, 10, 15, 20, 30, 50, 100]
    copper_limit: {QDR: 7, EDR: 5, HDR: 2, "*": 8}   # m of passive copper per link speed
    active_copper_limit: {QDR: 15}   # m of active copper per speed, where the site buys it (default: none)
    optical: fiber           # beyond copper: fiber (+2 transceivers) | aoc (active optical cables)
    default_speed: QDR       # speed of links whose rate the fabric does not state
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import yaml

from ibtool.errors import InputError
from ibtool.formats import open_input

# Purchasable cable lengths (m): the catalogue steps of common InfiniBand DAC/AOC lines.
PURCHASABLE = (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0, 100.0)

# Longest passive copper (DAC) cable sold per link speed, m. Sources: NVIDIA LinkX product
# specifications (MCP4Y10 NDR DAC: 0.5-2 m, read on docs.nvidia.com); QDR MC2206130 up to 7 m,
# FDR MC2207130 up to 3 m, EDR MCP1600 up to 5 m, HDR MCP1650 up to 2 m are the catalogue maxima
# as recalled from the same LinkX line (not re-checked here). "*" is the rule when the speed is
# unknown: paper 002's "cables longer than 8 m are fiber".
COPPER_LIMIT = {"SDR": 10.0, "DDR": 10.0, "QDR": 7.0, "FDR10": 7.0, "FDR": 3.0, "EDR": 5.0,
                "HDR": 2.0, "NDR": 2.0, "*": 8.0}


@dataclass(frozen=True)
class Site:
    cabinet_u: int = 42
    reserved_u: int = 0
    cabinet_width: float = 0.6
    cabinet_depth: float = 2.1
    aisle: float = 0.0
    grid: tuple[int, int] | None = None
    switch_u: int = 1
    hca_u: int = 1
    switches_per_cabinet: int | None = None
    hcas_per_cabinet: int | None = None
    switch_depth: str = "half"
    hca_depth: str = "full"
    cable_model: str = "routed"
    overhead: float = 4.0
    side: float = 0.5
    tray_height: float = 0.3
    service_loop: float = 0.5
    intra_cabinet: float = 2.0
    u_height: float = 0.04445
    purchasable_lengths: tuple[float, ...] = PURCHASABLE
    copper_limit: dict = field(default_factory=lambda: dict(COPPER_LIMIT))
    active_copper_limit: dict = field(default_factory=dict)
    optical: str = "fiber"
    default_speed: str = "*"

    @property
    def usable_u(self) -> int:
        return self.cabinet_u - self.reserved_u

    @property
    def row_pitch(self) -> float:
        return self.cabinet_depth + self.aisle

    def to_dict(self) -> dict:
        d = asdict(self)
        d["purchasable_lengths"] = list(self.purchasable_lengths)
        d["grid"] = list(self.grid) if self.grid else None
        return d

    def grid_for(self, cabinets: int) -> tuple[int, int]:
        """(rows, columns): the site's grid, else paper 004's x = ceil(sqrt(c)), y = ceil(c/x)."""
        if self.grid:
            return self.grid
        x = max(1, math.isqrt(cabinets - 1) + 1) if cabinets > 1 else 1
        return x, max(1, -(-cabinets // x))

    def capacity(self) -> int | None:
        return self.grid[0] * self.grid[1] if self.grid else None


_KEYS = {f.name: f for f in fields(Site)}
_MODELS = ("routed", "paper002", "paper004")
_DEPTHS = ("half", "full")
_OPTICAL = ("fiber", "aoc")


def _check(site: Site, where=lambda key: None) -> Site:
    """Refuse impossible values; `where(key)` gives (path, line) for the message."""
    def bad(key, msg):
        path, line = where(key) or (None, None)
        raise InputError(f"{key}: {msg}", path=path, line=line)

    for key in ("cabinet_u", "switch_u", "hca_u"):
        if getattr(site, key) < 1:
            bad(key, f"must be >= 1, got {getattr(site, key)}")
    for key in ("reserved_u", "cabinet_width", "cabinet_depth", "aisle", "overhead", "side",
                "intra_cabinet", "u_height", "tray_height", "service_loop"):
        if getattr(site, key) < 0:
            bad(key, f"a length cannot be negative, got {getattr(site, key)}")
    if site.usable_u < site.switch_u:
        bad("cabinet_u", f"a cabinet of {site.cabinet_u}U with {site.reserved_u}U reserved is too small "
                         f"for one switch ({site.switch_u}U)")
    for key in ("switches_per_cabinet", "hcas_per_cabinet"):
        v = getattr(site, key)
        if v is not None and v < 1:
            bad(key, f"must be >= 1, got {v}")
    if site.switches_per_cabinet and site.switches_per_cabinet * site.switch_u > site.usable_u:
        bad("switches_per_cabinet", f"{site.switches_per_cabinet} switches of {site.switch_u}U do not fit "
                                    f"in {site.usable_u} usable U")
    if site.grid is not None and (len(site.grid) != 2 or min(site.grid) < 1):
        bad("grid", f"must be [rows, columns] >= 1, got {list(site.grid)}")
    if site.cable_model not in _MODELS:
        bad("cable_model", f"unknown model {site.cable_model!r} (known: {', '.join(_MODELS)})")
    if not site.purchasable_lengths or any(x <= 0 for x in site.purchasable_lengths):
        bad("purchasable_lengths", "must be a non-empty list of positive lengths")
    for key in ("copper_limit", "active_copper_limit"):
        for speed, v in getattr(site, key).items():
            if v < 0:
                bad(key, f"{speed}: a length cannot be negative, got {v}")
    for key, known in (("switch_depth", _DEPTHS), ("hca_depth", _DEPTHS), ("optical", _OPTICAL)):
        if getattr(site, key) not in known:
            bad(key, f"{getattr(site, key)!r} is not one of {', '.join(known)}")
    return site


def _coerce(key: str, value, bad):
    f = _KEYS[key]
    t = str(f.type)
    try:
        if key == "grid":
            return None if value is None else tuple(int(v) for v in value)
        if key == "purchasable_lengths":
            return tuple(sorted(float(v) for v in value))
        if key in ("copper_limit", "active_copper_limit"):
            if not isinstance(value, dict):
                raise TypeError
            return {str(k).upper() if k != "*" else "*": float(v) for k, v in value.items()}
        if value is None and "None" in t:
            return None
        if t.startswith("int"):
            if isinstance(value, bool) or float(value) != int(value):
                raise ValueError
            return int(value)
        if t.startswith("float"):
            return float(value)
        return str(value)
    except (TypeError, ValueError):
        bad(key, f"bad value {value!r}")


def make_site(base: Site | None = None, **overrides) -> Site:
    """`base` (a policy's defaults) with keyword overrides, validated."""
    base = base or Site()
    for k in overrides:
        if k not in _KEYS:
            raise InputError(f"unknown site key {k!r} (known: {', '.join(_KEYS)})")

    def bad(key, msg):
        raise InputError(f"{key}: {msg}")
    return _check(replace(base, **{k: _coerce(k, v, bad) for k, v in overrides.items()}))


def compose_yaml(path: str) -> yaml.Node | None:
    """The YAML node tree of `path` (keys keep their line numbers); bad YAML is one line naming
    path:line."""
    with open_input(path) as fh:
        text = fh.read()
    try:
        return yaml.compose(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise InputError(f"not valid YAML: {getattr(e, 'problem', e)}", path=path,
                         line=mark.line + 1 if mark else None) from None


def node_value(node: yaml.Node, path: str):
    """The value of a composed YAML node; an integer beyond Python's 4300-digit limit (a
    ValueError inside PyYAML) is one line naming path:line."""
    try:
        return yaml.safe_load(yaml.serialize(node))
    except ValueError:
        raise InputError("a number of more than 4300 digits", path=path, line=node.start_mark.line + 1) from None


def key_line(path: str | Path, key: str) -> int | None:
    """The line of top-level `key` in the YAML file `path` (for messages about its value)."""
    root = compose_yaml(str(path))
    if isinstance(root, yaml.MappingNode):
        for knode, _ in root.value:
            if knode.value == key:
                return knode.start_mark.line + 1
    return None


def read_site(path: str | Path, base: Site | None = None) -> Site:
    """Read a YAML site description over `base`; errors name path:line and the key."""
    path = str(path)
    root = compose_yaml(path)
    if root is None:
        return _check(base or Site())
    if not isinstance(root, yaml.MappingNode):
        raise InputError("a site description is a mapping of keys to values", path=path, line=1)
    lines = {}
    values = {}
    for knode, vnode in root.value:
        key = knode.value
        lines[key] = knode.start_mark.line + 1
        if key not in _KEYS:
            raise InputError(f"unknown site key {key!r} (known: {', '.join(_KEYS)})", path=path,
                             line=lines[key])
        values[key] = node_value(vnode, path)

    def where(key):
        return path, lines.get(key)

    def bad(key, msg):
        raise InputError(f"{key}: {msg}", path=path, line=lines.get(key))
    site = replace(base or Site(), **{k: _coerce(k, v, bad) for k, v in values.items()})
    return _check(site, where)


def site_from_dict(d: dict) -> Site:
    """The inverse of Site.to_dict (layout.json)."""
    return make_site(**d)
