"""hdor's coordinates dump, `opensm-hdor.dump` (docs/hdor.md section 5):

    # hdor k=6 n=2 routers=36 switches=12 hcas=36 lids=84
    router 0x0002c90000010000 [0,0] "R[0,0]"
    switch 0x0002c90000020000 dim=0 [0] "S[0,0]"
    hca    0x0002c90000030000 [0,0] "H[0,0]"
    spread 0x0002c90000010000 dim=0 ports=2:21,3:21
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import as_int, check_guid, check_port, open_input

_HEAD = re.compile(r"^#\s*hdor\s+(.*)$")
_KV = re.compile(r"(\w+)=(\d+)")
_NODE = re.compile(r'^(router|switch|hca)\s+(0x[0-9a-fA-F]+)\s+(?:dim=(\d+)\s+)?\[([0-9,\s-]*)\]\s*(?:"(.*)")?\s*$')
_SPREAD = re.compile(r"^spread\s+(0x[0-9a-fA-F]+)\s+dim=(\d+)\s+ports=((?:\d+:\d+,?)+)\s*$")


@dataclass
class HdorDump:
    header: dict = field(default_factory=dict)  # k, n, routers, switches, hcas, lids
    role: dict[int, str] = field(default_factory=dict)  # GUID -> router/switch/hca
    coords: dict[int, tuple] = field(default_factory=dict)
    dim: dict[int, int] = field(default_factory=dict)  # switch GUID -> dimension
    names: dict[int, str] = field(default_factory=dict)
    lines: dict[int, int] = field(default_factory=dict)
    spread: dict[tuple[int, int], dict[int, int]] = field(default_factory=dict)
    path: str | None = None


def read(path: str | Path) -> HdorDump:
    path = str(path)
    d = HdorDump(path=path)
    fh = open_input(path)
    with fh:
        for ln, raw in enumerate(fh, 1):
            s = raw.strip()
            if not s:
                continue
            m = _HEAD.match(s)
            if m:
                d.header.update({k: as_int(v, path, ln) for k, v in _KV.findall(m.group(1))})
                continue
            if s.startswith("#"):
                continue
            m = _NODE.match(s)
            if m:
                role, g, dim, coords, name = m.groups()
                g = check_guid(int(g, 16), path, ln)
                if g in d.role:
                    raise InputError(f"GUID {g:#018x} listed twice (first at line {d.lines[g]})", path=path, line=ln)
                try:
                    c = tuple(as_int(x, path, ln) for x in coords.split(",") if x.strip()) if coords.strip() else ()
                except ValueError:
                    raise InputError(f"bad coordinates [{coords}]", path=path, line=ln) from None
                if role == "switch" and dim is None:
                    raise InputError("switch line without dim=", path=path, line=ln)
                d.role[g] = role
                d.coords[g] = c
                d.names[g] = name or ""
                d.lines[g] = ln
                if dim is not None:
                    d.dim[g] = as_int(dim, path, ln)
                continue
            m = _SPREAD.match(s)
            if m:
                d.spread[(check_guid(int(m.group(1), 16), path, ln), as_int(m.group(2), path, ln))] = {
                    check_port(as_int(p, path, ln), path, ln, 1): as_int(c, path, ln)
                    for p, c in (x.split(":") for x in m.group(3).strip(",").split(","))}
                continue
            raise InputError(f"unrecognised line {s[:60]!r} (not an opensm-hdor.dump?)", path=path, line=ln)
    if not d.role:
        raise InputError("no router/switch/hca lines (not an opensm-hdor.dump?)", path=path)
    counts = Counter(d.role.values())
    for role, key in (("router", "routers"), ("switch", "switches"), ("hca", "hcas")):
        if key in d.header and counts[role] != d.header[key]:
            cut = "truncated? " if counts[role] < d.header[key] else ""
            raise InputError(f"{cut}the header says {key}={d.header[key]}, the file lists {counts[role]}",
                             path=path, line=ln)
    return d
