"""OpenSM's `opensm-subnet.lst` (written at every SUBNET UP): one line per link end,

    { CA Ports:01 SystemGUID:... NodeGUID:0002c90000000100 PortGUID:0002c90000000101 VenID:0002C9
      DevID:1003 Rev:000000A1 {H[2,1]} LID:0002 PN:01 } { SW Ports:08 ... {R[2,1]} LID:0018 PN:01 }
      PHY=4x LOG=ACT SPD=10

(one line in the file). Port counts, LIDs and port numbers are hex. Each link appears once from
each end. The result is a Fabric like ibnetdiscover's reader gives (nodes named by description),
so `ibtool verify routes --fabric opensm-subnet.lst` works from OpenSM's dumps alone, as ibdmchk
does.
"""

from __future__ import annotations

import re
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import check_guid, check_lid, check_port, open_input
from ibtool.fabric import CA, SWITCH, Fabric

_END = (r"\{\s*(CA|SW-SM|SW|CA-SM|RT)\s+Ports:([0-9A-Fa-f]+)\s+SystemGUID:[0-9A-Fa-f]+\s+NodeGUID:([0-9A-Fa-f]+)\s+"
        r"PortGUID:([0-9A-Fa-f]+)\s+VenID:\w+\s+DevID:\w+\s+Rev:\w+\s+\{(.*?)\}\s+LID:([0-9A-Fa-f]+)\s+"
        r"PN:([0-9A-Fa-f]+)\s*\}")
_LINE = re.compile(r"^\s*" + _END + r"\s*" + _END + r"\s*(.*)$")
_PHY = re.compile(r"PHY=(\d+)x")
_SPD = re.compile(r"SPD=([\d.]+)")
SPEED_NAMES = {"2.5": "SDR", "5": "DDR", "10": "QDR", "14": "FDR", "25": "EDR", "50": "HDR", "100": "NDR",
               "200": "XDR"}


def read(path: str | Path, node_name_map: dict[int, str] | None = None) -> Fabric:
    path = str(path)
    with open_input(path) as fh:
        lines = fh.read().splitlines()
    nodes: dict[int, dict] = {}  # node GUID -> kind, ports, desc, line
    ends: list[tuple] = []
    for ln, line in enumerate(lines, 1):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            raise InputError(f"unrecognised line {line[:60]!r} (not an opensm-subnet.lst?)", path=path, line=ln)
        g = m.groups()
        pair = []
        for o in (0, 7):
            kind, nports, nguid, pguid, desc, lid, pn = g[o:o + 7]
            guid = check_guid(int(nguid, 16), path, ln)
            nports = check_port(int(nports, 16), path, ln, 1, "port count")
            lid = int(lid, 16)
            if lid:  # 0: not assigned yet
                check_lid(lid, path, ln)
            k = SWITCH if kind.startswith("SW") else CA
            if kind == "RT":
                raise InputError("router nodes (RT) are not supported", path=path, line=ln)
            nd = nodes.setdefault(guid, {"kind": k, "ports": nports, "desc": desc, "line": ln,
                                         "lids": {}, "pguids": {}})
            port = check_port(int(pn, 16), path, ln)
            if k == CA:
                nd["lids"][port] = lid
                nd["pguids"][port] = check_guid(int(pguid, 16), path, ln)
            else:
                nd["lids"][0] = lid
            pair.append((guid, port))
        rest = g[14] or ""
        phy, spd = _PHY.search(rest), _SPD.search(rest)
        rate = None
        if phy:
            rate = f"{phy.group(1)}x" + (SPEED_NAMES.get(spd.group(1), spd.group(1) + "G") if spd else "")
        ends.append((pair[0], pair[1], rate, ln))
    if not nodes:
        raise InputError("no links found (not an opensm-subnet.lst?)", path=path)
    f = Fabric(Path(path).stem)
    index: dict[int, int] = {}
    used: set[str] = set()
    for guid in sorted(nodes, key=lambda x: nodes[x]["line"]):
        nd = nodes[guid]
        name = (node_name_map or {}).get(guid) or nd["desc"] or f"{guid:#018x}"
        if name in used:
            name = f"{name} ({guid:#x})"
        used.add(name)
        try:
            i = f.add_node(nd["kind"], name, nd["ports"], "switch" if nd["kind"] == SWITCH else "hca", guid=guid)
        except InputError as e:
            raise InputError(str(e), path=path, line=nd["line"]) from None
        index[guid] = i
        for port, lid in nd["lids"].items():
            if lid:
                f.port_lids[(i, port)] = (lid, 0)
        for port, pg in nd["pguids"].items():
            f.port_guids[(i, port)] = pg
    seen = set()
    for (ga, pa), (gb, pb), rate, ln in ends:
        key = frozenset(((ga, pa), (gb, pb)))
        if key in seen:
            continue
        seen.add(key)
        try:
            f.add_link(index[ga], index[gb], pa, pb, rate=rate)
        except InputError as e:
            raise InputError(str(e), path=path, line=ln) from None
    return f
