"""ibnetdiscover's topology format: read real dumps, and write plans that ibsim 0.10 loads.

ibsim reads the same format ibnetdiscover prints, so a plan written here is both the emulator's
input and directly comparable with what `ibnetdiscover` reports back:

    vendid=0x2c9
    devid=0xbd36
    sysimgguid=0x2c90000000010
    switchguid=0x2c90000000010(2c90000000010)
    Switch	8 "S-0002c90000000010"		# "R[0,0]" enhanced port 0 lid 1 lmc 0
    [1]	"H-0002c90000000020"[1](2c90000000021) 		# "H[0,0]" lid 3 4xQDR
    [2]	"S-0002c900000000e0"[1]		# "S[0,0]" lid 2 4xQDR

    caguid=0x2c90000000020
    Ca	1 "H-0002c90000000020"		# "H[0,0]"
    [1](2c90000000021) 	"S-0002c90000000010"[1]		# lid 3 lmc 0 "R[0,0]" lid 1 4xQDR

The reader also accepts ibsim's hand-written style (`Switch 8 "Switch1"` / `[1] "Hca1"[1]`,
optional `w=4`), real-fabric extras (`[1][ext 1]`, `enhanced port 0`, `base port 0`, rates such
as 4xEDR, 4xHDR, 2xNDR, multi-port CAs, LMC) and names nodes by their node description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import atomic_write, open_input
from ibtool.fabric import CA, SWITCH, Fabric

SWITCH_DEVID = 0xBD36  # Mellanox InfiniScale IV (IS5022, CELLIA's switch)
CA_DEVID = 0x1003  # Mellanox ConnectX-3


def node_id(fabric: Fabric, i: int) -> str:
    return ("S-" if fabric.types[i] == SWITCH else "H-") + f"{fabric.guids[i]:016x}"


def write(fabric: Fabric, path: str | Path, rate: str | None = "4xQDR") -> None:
    """Write `fabric` as an ibnetdiscover/ibsim topology file. Links carry their own rate if set."""
    # Walks the port adjacency (Fabric.ports(), already in port order) with plain lists: a million
    # nodes take seconds, where per-node neighbour lists and sorting took minutes.
    n = fabric.num_nodes
    ids = [node_id(fabric, i) for i in range(n)]
    names = fabric.names
    types = fabric.types
    guids = fabric.guids
    pguids = fabric.port_guids
    pt = fabric.ports()
    offset = pt.offset.tolist()
    peer = pt.peer.tolist()
    peer_port = pt.peer_port.tolist()
    default = rate or ""
    if any(r is not None for r in fabric.link_rate):
        rates: list = [default] * len(peer)
        for a, pa, b, pb, r in zip(fabric.link_a, fabric.link_pa, fabric.link_b, fabric.link_pb, fabric.link_rate):
            if r is not None:
                rates[offset[a] + pa] = rates[offset[b] + pb] = r
    else:
        rates = None
    with atomic_write(path) as fh:
        out: list[str] = [f"# ibtool plan: {fabric.name}\n# {fabric.params}\n\n"]
        for i in range(n):
            g = guids[i]
            o = offset[i]
            if types[i] == SWITCH:
                out.append(f"vendid=0x2c9\ndevid={SWITCH_DEVID:#x}\nsysimgguid={g:#x}\nswitchguid={g:#x}({g:x})\n"
                           f'Switch\t{fabric.nports[i]} "{ids[i]}"\t\t# "{names[i]}" enhanced port 0 lid 0 lmc 0\n')
                for p in range(1, offset[i + 1] - o):
                    b = peer[o + p]
                    if b < 0:
                        continue
                    pb = peer_port[o + p]
                    r = rates[o + p] if rates else default
                    if types[b] == CA:
                        rg = f"({pguids.get((b, pb), guids[b] + pb):x}) "
                    else:
                        rg = ""
                    out.append(f'[{p}]\t"{ids[b]}"[{pb}]{rg}\t\t# "{names[b]}" lid 0 {r}\n')
            else:
                out.append(f"vendid=0x2c9\ndevid={CA_DEVID:#x}\nsysimgguid={g:#x}\ncaguid={g:#x}\n"
                           f'Ca\t{fabric.nports[i]} "{ids[i]}"\t\t# "{names[i]}"\n')
                for p in range(1, offset[i + 1] - o):
                    b = peer[o + p]
                    if b < 0:
                        continue
                    r = rates[o + p] if rates else default
                    out.append(f'[{p}]({pguids.get((i, p), g + p):x}) \t"{ids[b]}"[{peer_port[o + p]}]\t\t'
                               f'# lid 0 lmc 0 "{names[b]}" lid 0 {r}\n')
            out.append("\n")
            if len(out) > 50_000:
                fh.write("".join(out))
                out.clear()
        fh.write("".join(out))


# ---------------------------------------------------------------------------------- reader

_HEADER = re.compile(r'^(Switch|Ca|Hca|Rt)\s+(\d+)\s+"([^"]*)"\s*(.*)$')
_PORT = re.compile(r'^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s+"([^"]*)"\[(\d+)\](?:\[ext \d+\])?'
                   r'(?:\(([0-9a-fA-F]+)\))?\s*(.*)$')
_GUIDLINE = re.compile(r"^(sysimgguid|switchguid|caguid|rtrguid)=(0x[0-9a-fA-F]+)")
_RATE = re.compile(r"\b(\d+x(?:SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|[0-9.]+))\b")
_LID = re.compile(r"\blid (\d+)(?: lmc (\d+))?")
_QUOTED = re.compile(r'"([^"]*)"')
_WIDTH = re.compile(r"\bw=(\d+)")


@dataclass
class _Node:
    kind: int
    nports: int
    nid: str
    line: int
    guid: int | None = None
    desc: str | None = None
    lid: int | None = None
    lmc: int = 0
    ports: dict = field(default_factory=dict)  # port -> (remote id, remote port, line, rate, port guid, lid, lmc)


def read(path: str | Path, node_name_map: dict[int, str] | None = None) -> Fabric:
    """Parse an ibnetdiscover dump or ibsim net file into a Fabric.

    Nodes are named by the node-name-map (GUID -> name) when given, else by their node
    description, else by their id in the file. Malformed input raises InputError naming file:line.
    """
    path = str(path)
    nodes: dict[str, _Node] = {}
    order: list[str] = []
    cur: _Node | None = None
    pending_guid: int | None = None
    fh = open_input(path)
    with fh:
        for ln, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                if not line:
                    cur = None
                continue
            if line.startswith(("vendid=", "devid=")):
                continue
            m = _GUIDLINE.match(line)
            if m:
                if m.group(1) != "sysimgguid":
                    pending_guid = int(m.group(2), 16)
                continue
            m = _HEADER.match(line)
            if m:
                kind_s, np_s, nid, rest = m.groups()
                if kind_s == "Rt":
                    raise InputError("router nodes (Rt) are not supported", path=path, line=ln)
                if nid in nodes:
                    raise InputError(f"node {nid!r} listed twice (first at line {nodes[nid].line})", path=path, line=ln)
                nports = int(np_s)
                if not 1 <= nports <= 254:
                    raise InputError(f"node {nid!r} has {nports} ports; expected 1..254", path=path, line=ln)
                cur = _Node(SWITCH if kind_s == "Switch" else CA, nports, nid, ln, guid=pending_guid)
                pending_guid = None
                if cur.guid is None:
                    cur.guid = _guid_from_id(nid)
                comment = rest.split("#", 1)[1] if "#" in rest else ""
                q = _QUOTED.search(comment)
                if q:
                    cur.desc = q.group(1)
                lm = _LID.search(comment)
                if lm and int(lm.group(1)):  # plans say "lid 0": not assigned yet
                    cur.lid = int(lm.group(1))
                    cur.lmc = int(lm.group(2) or 0)
                nodes[nid] = cur
                order.append(nid)
                continue
            m = _PORT.match(line)
            if m:
                if cur is None:
                    raise InputError("port line outside a node record", path=path, line=ln)
                port, lguid, rid, rport, rguid, rest = m.groups()
                port, rport = int(port), int(rport)
                if not 1 <= port <= cur.nports:
                    raise InputError(f"port {port} of {cur.nid!r} is outside 1..{cur.nports}", path=path, line=ln)
                if port in cur.ports:
                    raise InputError(f"port {port} of {cur.nid!r} listed twice", path=path, line=ln)
                comment = rest.split("#", 1)[1] if "#" in rest else ""
                rates = _RATE.findall(comment)
                rate = rates[-1] if rates else None
                wm = _WIDTH.search(rest.split("#", 1)[0])
                if wm and rate is None:
                    rate = f"{wm.group(1)}x"
                plid, plmc = None, 0
                if cur.kind == CA:
                    lm = _LID.search(comment)
                    if lm and int(lm.group(1)):
                        plid, plmc = int(lm.group(1)), int(lm.group(2) or 0)
                cur.ports[port] = (rid, rport, ln, rate, int(lguid, 16) if lguid else None, plid, plmc,
                                   int(rguid, 16) if rguid else None)
                continue
            raise InputError(f"unrecognised line: {line[:60]!r}", path=path, line=ln)
    if not nodes:
        raise InputError("no nodes found (not an ibnetdiscover dump or ibsim net file?)", path=path)
    return _build(path, nodes, order, node_name_map)


def _guid_from_id(nid: str) -> int | None:
    m = re.fullmatch(r"[SH]-([0-9a-fA-F]{1,16})", nid)
    return int(m.group(1), 16) if m else None


def _build(path: str, nodes: dict[str, _Node], order: list[str], nnm: dict[int, str] | None) -> Fabric:
    f = Fabric(Path(path).stem)
    index: dict[str, int] = {}
    used_names: set[str] = set()
    synthetic = 1 << 60  # for hand-written files without GUIDs: stable, clearly not real
    for nid in order:
        nd = nodes[nid]
        if nd.guid is None:
            nd.guid = synthetic + len(index)
        name = (nnm or {}).get(nd.guid) or nd.desc or nid
        if name in used_names:  # real fabrics repeat descriptions (e.g. "MF0;switch:MQM9700/U1")
            name = f"{name} ({nd.guid:#x})"
        used_names.add(name)
        try:
            i = f.add_node(nd.kind, name, nd.nports, "switch" if nd.kind == SWITCH else "hca", guid=nd.guid)
        except InputError as e:
            raise InputError(str(e), path=path, line=nd.line) from None
        index[nid] = i
    for nid in order:
        nd = nodes[nid]
        i = index[nid]
        if nd.kind == SWITCH and nd.lid is not None:
            f.port_lids[(i, 0)] = (nd.lid, nd.lmc)
        for port, (rid, rport, ln, rate, lguid, plid, plmc, rguid) in sorted(nd.ports.items()):
            if lguid is not None:
                f.port_guids[(i, port)] = lguid
            if plid is not None:
                f.port_lids[(i, port)] = (plid, plmc)
            j = index.get(rid)
            if j is None:
                raise InputError(f"port {port} of {nid!r} links to unknown node {rid!r}", path=path, line=ln)
            other = nodes[rid].ports.get(rport)
            if other is not None and (other[0] != nid or other[1] != port):
                raise InputError(f"{nid!r}[{port}] says it links to {rid!r}[{rport}], but that port links to "
                                 f"{other[0]!r}[{other[1]}] (line {other[2]})", path=path, line=ln)
            if other is not None and (j, rport) < (i, port):
                continue  # listed from the other end already
            if rguid is not None and nodes[rid].kind == CA:
                f.port_guids[(j, rport)] = rguid
            if not 1 <= rport <= nodes[rid].nports:
                raise InputError(f"remote port {rport} of {rid!r} is outside 1..{nodes[rid].nports}", path=path, line=ln)
            try:
                f.add_link(i, j, port, rport, rate=rate)
            except InputError as e:
                raise InputError(str(e), path=path, line=ln) from None
    return f
