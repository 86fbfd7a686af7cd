"""hdor.conf: a KNS described for the hdor routing engine (docs/plugin.md "hdor.conf").

The same format is the description an admin deploys beside opensm.conf (written by `ibtool route
hdor --kns-conf` from a complete discovery, or by `ibtool topo kns` into a plan) and the state the
engine remembers in OpenSM's cache directory (hdor-kns.conf). One line per node, then one per cable:

    hdor-kns 1 k=4 n=2 s=1 routers=16 switches=8 hcas=16 links=48
    router 0x0002c90000000010 ports=8 [0,0] lids=0:1 "R[0,0]"
    switch 0x0002c90000000110 ports=8 dim=0 [0] lids=0:17 "S[0,0]"
    hca 0x0002c90000000020 ports=1 [0,0] lids=1:33 "H[0,0]"
    link 0x0002c90000000010 1 0x0002c90000000020 1

Coordinates are written most significant dimension first (`[r_{n-1},...,r_0]`); a switch gives
its dimension and its line (the coordinates without its dimension). `lids=PORT:LID[/LMC],...` is
optional (a plan has none); `was=0x...` names the device a replacement took the place of (it keeps
that one's coordinates and order); `phantom` marks a device hdor never saw (identification at
first sight). The C engine reads and writes the same lines (opensm_plugin/osm_hdor_conf.c).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import atomic_write, open_input

ROLES = ("router", "switch", "hca")
MAX_N = 16
PHANTOM = 0xFFFFFFFF00000000  # GUIDs hdor gives the devices it never saw


@dataclass
class Node:
    role: str  # "router", "switch" (indirect) or "hca"
    guid: int  # the device there
    ports: int
    coords: tuple[int, ...] = ()  # as written: most significant first; a switch: its line (n-1 values)
    dim: int | None = None  # a switch's dimension
    lids: dict[int, tuple[int, int]] = field(default_factory=dict)  # port -> (base LID, LMC)
    was: int | None = None  # the GUID whose place it took (a replacement)
    phantom: bool = False
    desc: str = ""

    @property
    def place(self) -> int:
        """The GUID that orders it (hdor's tie-breaks): the replaced device's, else its own."""
        return self.was if self.was is not None else self.guid


@dataclass
class KnsConf:
    k: int
    n: int
    s: int = 1
    nodes: list[Node] = field(default_factory=list)
    links: list[tuple[int, int, int, int]] = field(default_factory=list)  # (GUID, port, GUID, port)
    comment: str = ""
    path: str | None = None

    def by_guid(self) -> dict[int, Node]:
        return {x.guid: x for x in self.nodes}


_HEX = re.compile(r"0x[0-9a-fA-F]{1,16}|[0-9]+")


def _num(tok: str, what: str, path, line: int, lo: int = 0, hi: int = (1 << 64) - 1) -> int:
    if not _HEX.fullmatch(tok):
        raise InputError(f"{what}: {tok!r} is not a number", path=str(path), line=line)
    v = int(tok, 0)
    if not lo <= v <= hi:
        raise InputError(f"{what}: {v} is outside {lo}..{hi}", path=str(path), line=line)
    return v


def read(path: str | Path) -> KnsConf:
    """Read a KNS description; InputError naming the file and line when it is not one."""
    conf: KnsConf | None = None
    seen: dict[int, int] = {}
    ports_used: dict[tuple[int, int], int] = {}
    link_lines: list[tuple[int, int, int, int, int]] = []
    with open_input(path) as fh:
        for ln, raw in enumerate(fh, 1):
            text = raw.rstrip("\r\n")
            desc = None
            q = text.find('"')
            if q >= 0:
                e = text.rfind('"')
                if e == q:
                    raise InputError("a description without its closing quote", path=str(path), line=ln)
                desc, text = text[q + 1:e], text[:q]
            toks = []
            for t in text.split():
                if t.startswith("#"):
                    break
                toks.append(t)
            if not toks:
                continue
            if conf is None:
                if toks[:2] != ["hdor-kns", "1"]:
                    raise InputError('not a KNS description (it starts with "hdor-kns 1 k=.. n=..")', path=str(path),
                                     line=ln)
                kv = {}
                for t in toks[2:]:
                    if "=" not in t:
                        raise InputError(f"unknown header field {t!r}", path=str(path), line=ln)
                    key, _, v = t.partition("=")
                    kv[key] = v
                k = _num(kv.get("k", "0"), "k", path, ln, 0, 255)
                n = _num(kv.get("n", "0"), "n", path, ln, 0, MAX_N)
                s = _num(kv.get("s", "1"), "s", path, ln, 0, 255)
                if k < 2 or n < 1:
                    raise InputError("the header needs k >= 2 and n >= 1", path=str(path), line=ln)
                conf = KnsConf(k, n, s, path=str(path))
                continue
            if toks[0] == "link":
                if len(toks) != 5 or desc is not None:
                    raise InputError("a link is 'link GUID PORT GUID PORT'", path=str(path), line=ln)
                a = _num(toks[1], "GUID", path, ln)
                pa = _num(toks[2], "port", path, ln, 1, 254)
                b = _num(toks[3], "GUID", path, ln)
                pb = _num(toks[4], "port", path, ln, 1, 254)
                link_lines.append((a, pa, b, pb, ln))
                continue
            if toks[0] not in ROLES:
                raise InputError(f"{toks[0]!r} is not router, switch, hca or link", path=str(path), line=ln)
            if len(toks) < 2:
                raise InputError(f"a {toks[0]} line starts with its GUID (0x...)", path=str(path), line=ln)
            x = Node(toks[0], _num(toks[1], "GUID", path, ln), 0, desc=desc or "")
            for t in toks[2:]:
                key, eq, v = t.partition("=")
                if t.startswith("["):
                    if not t.endswith("]"):
                        raise InputError(f"bad coordinates {t!r}", path=str(path), line=ln)
                    inner = t[1:-1]
                    x.coords = tuple(_num(c, "coordinate", path, ln, 0, 255) for c in inner.split(",")) if inner else ()
                    if len(x.coords) > MAX_N:
                        raise InputError(f"bad coordinates {t!r}", path=str(path), line=ln)
                elif key == "ports" and eq:
                    x.ports = _num(v, "ports=", path, ln, 1, 254)
                elif key == "dim" and eq:
                    x.dim = _num(v, "dim=", path, ln, 0, MAX_N - 1)
                elif key == "was" and eq:
                    x.was = _num(v, "was=", path, ln)
                elif t == "phantom":
                    x.phantom = True
                elif key == "lids" and eq:
                    for item in v.split(","):
                        p, colon, rest = item.partition(":")
                        lid, slash, lmc = rest.partition("/")
                        if not colon or len(x.lids) >= 8:
                            raise InputError("lids= takes PORT:LID[/LMC],... (at most 8)", path=str(path), line=ln)
                        x.lids[_num(p, "lids= port", path, ln, 0, 254)] = (
                            _num(lid, "LID", path, ln, 1, 0xBFFF), _num(lmc, "LMC", path, ln, 0, 7) if slash else 0)
                else:
                    raise InputError(f"unknown field {t!r}", path=str(path), line=ln)
            if not x.ports:
                raise InputError("ports= is missing", path=str(path), line=ln)
            n, k = conf.n, conf.k
            if x.role == "switch":
                if x.dim is None or x.dim >= n or len(x.coords) != n - 1:
                    raise InputError("a switch needs dim=D (D < n) and its line's n-1 coordinates", path=str(path),
                                     line=ln)
            elif (len(x.coords) != n) if x.role == "router" else (x.coords and len(x.coords) != n):
                raise InputError(f"a {x.role} needs n coordinates", path=str(path), line=ln)
            for c in x.coords:
                if c >= k:
                    raise InputError(f"coordinate {c} is not below k = {k}", path=str(path), line=ln)
            for p in x.lids:
                if p > x.ports or (x.role != "hca" and p):
                    raise InputError(f"lids= names port {p} (a switch has its LID on port 0)", path=str(path), line=ln)
            if x.guid in seen:
                raise InputError(f"GUID {x.guid:#018x} is listed twice (line {seen[x.guid]})", path=str(path), line=ln)
            seen[x.guid] = ln
            conf.nodes.append(x)
    if conf is None:
        raise InputError('empty (no "hdor-kns 1 k=.. n=.." line)', path=str(path))
    if not conf.nodes:
        raise InputError("no nodes", path=str(path))
    places: dict[int, int] = {}
    for x in conf.nodes:
        if x.place in places and places[x.place] != x.guid:
            raise InputError(f"two devices have the place of {x.place:#018x}", path=str(path), line=seen[x.guid])
        places[x.place] = x.guid
    nodes = conf.by_guid()
    for a, pa, b, pb, ln in link_lines:
        for g, p in ((a, pa), (b, pb)):
            if g not in nodes:
                raise InputError(f"GUID {g:#018x} is not a node of the file", path=str(path), line=ln)
            if p > nodes[g].ports:
                raise InputError(f"port {p} of {g:#018x} is beyond its ports=", path=str(path), line=ln)
            if (g, p) in ports_used or (a, pa) == (b, pb):
                raise InputError(f"port {p} of {g:#018x} is cabled twice", path=str(path), line=ln)
        ports_used[(a, pa)] = ports_used[(b, pb)] = ln
        conf.links.append((a, pa, b, pb))
    return conf


def lines(conf: KnsConf) -> list[str]:
    """The file as lines (no comment): nodes by role then GUID, cables by their lower end."""
    nr = sum(x.role == "router" for x in conf.nodes)
    ns = sum(x.role == "switch" for x in conf.nodes)
    nh = sum(x.role == "hca" for x in conf.nodes)
    out = [f"hdor-kns 1 k={conf.k} n={conf.n} s={conf.s} routers={nr} switches={ns} hcas={nh} "
           f"links={len(conf.links)}"]
    for role in ROLES:
        for x in sorted((x for x in conf.nodes if x.role == role), key=lambda x: x.guid):
            parts = [role, f"0x{x.guid:016x}"]
            if x.was is not None and x.was != x.guid:
                parts.append(f"was=0x{x.was:016x}")
            parts.append(f"ports={x.ports}")
            if role == "switch":
                parts.append(f"dim={x.dim}")
            parts.append("[" + ",".join(str(c) for c in x.coords) + "]")
            if x.lids:
                parts.append("lids=" + ",".join(f"{p}:{lid}" + (f"/{lmc}" if lmc else "")
                                                for p, (lid, lmc) in sorted(x.lids.items())))
            if x.phantom:
                parts.append("phantom")
            out.append(" ".join(parts) + f' "{x.desc}"')
    ends = []
    for a, pa, b, pb in conf.links:
        if (b, pb) < (a, pa):
            a, pa, b, pb = b, pb, a, pa
        ends.append((a, pa, b, pb))
    for a, pa, b, pb in sorted(ends):
        out.append(f"link 0x{a:016x} {pa} 0x{b:016x} {pb}")
    return out


def text(conf: KnsConf) -> str:
    """The file's text: the comment, then lines()."""
    head = [f"# {c}" for c in conf.comment.splitlines()] if conf.comment else []
    head.append('# format: docs/plugin.md "hdor.conf"; node lines by role and GUID, then one line per cable')
    return "\n".join(head + lines(conf)) + "\n"


def write(conf: KnsConf, path: str | Path) -> None:
    """Write atomically (a temporary file beside it, then rename)."""
    with atomic_write(path) as fh:
        fh.write(text(conf))
