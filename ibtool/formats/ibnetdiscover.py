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
from ibtool.formats import as_int, atomic_write, check_guid, check_lid, check_port, open_input
from ibtool.fabric import CA, SWITCH, Fabric

SWITCH_DEVID = 0xBD36  # Mellanox InfiniScale IV (IS5022, CELLIA's switch)
CA_DEVID = 0x1003  # Mellanox ConnectX-3


def node_id(fabric: Fabric, i: int) -> str:
    return ("S-" if fabric.types[i] == SWITCH else "H-") + f"{fabric.guids[i]:016x}"


def write(fabric: Fabric, path: str | Path, rate: str | None = "4xQDR") -> None:
    """Write `fabric` as an ibnetdiscover/ibsim topology file. Links carry their own rate if set."""
    ids = [node_id(fabric, i) for i in range(fabric.num_nodes)]
    names = fabric.names
    nb: list[list[tuple[int, int, int, str | None]]] = [[] for _ in range(fabric.num_nodes)]
    for li, (a, pa, b, pb) in enumerate(zip(fabric.link_a, fabric.link_pa, fabric.link_b, fabric.link_pb)):
        r = fabric.link_rate[li] or rate
        nb[a].append((pa, b, pb, r))
        nb[b].append((pb, a, pa, r))
    with atomic_write(path) as fh:
        out: list[str] = [f"# ibtool plan: {fabric.name}\n# {fabric.params}\n\n"]
        for i in range(fabric.num_nodes):
            g = fabric.guids[i]
            ports = sorted(nb[i])
            if fabric.types[i] == SWITCH:
                out.append(f"vendid=0x2c9\ndevid={SWITCH_DEVID:#x}\nsysimgguid={g:#x}\nswitchguid={g:#x}({g:x})\n"
                           f'Switch\t{fabric.nports[i]} "{ids[i]}"\t\t# "{names[i]}" enhanced port 0 lid 0 lmc 0\n')
                for p, b, pb, r in ports:
                    rg = f"({fabric.port_guid(b, pb):x}) " if fabric.types[b] == CA else ""
                    out.append(f'[{p}]\t"{ids[b]}"[{pb}]{rg}\t\t# "{names[b]}" lid 0 {r or ""}\n')
            else:
                out.append(f"vendid=0x2c9\ndevid={CA_DEVID:#x}\nsysimgguid={g:#x}\ncaguid={g:#x}\n"
                           f'Ca\t{fabric.nports[i]} "{ids[i]}"\t\t# "{names[i]}"\n')
                for p, b, pb, r in ports:
                    out.append(f'[{p}]({fabric.port_guid(i, p):x}) \t"{ids[b]}"[{pb}]\t\t'
                               f'# lid 0 lmc 0 "{names[b]}" lid 0 {r or ""}\n')
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


def read(path: str | Path, node_name_map: dict[int, str] | None = None, both_ends: bool = False) -> Fabric:
    """Parse an ibnetdiscover dump or ibsim net file into a Fabric.

    Nodes are named by the node-name-map (GUID -> name) when given, else by their node
    description, else by their id in the file. Malformed input raises InputError naming file:line.
    both_ends: every cable must be listed from both of its ends, as ibsim requires of a net file.
    """
    path = str(path)
    nodes: dict[str, _Node] = {}
    order: list[str] = []
    cur: _Node | None = None
    pending_guid: int | None = None
    guid_line = 0
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
                g = check_guid(int(m.group(2), 16), path, ln)
                if m.group(1) != "sysimgguid":
                    pending_guid, guid_line = g, ln
                continue
            m = _HEADER.match(line)
            if m:
                kind_s, np_s, nid, rest = m.groups()
                if kind_s == "Rt":
                    raise InputError("router nodes (Rt) are not supported", path=path, line=ln)
                if nid in nodes:
                    raise InputError(f"node {nid!r} listed twice (first at line {nodes[nid].line})", path=path, line=ln)
                nports = as_int(np_s, path, ln)
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
                if lm and as_int(lm.group(1), path, ln):  # plans say "lid 0": not assigned yet
                    cur.lmc = as_int(lm.group(2) or "0", path, ln)
                    cur.lid = check_lid(as_int(lm.group(1), path, ln), path, ln, cur.lmc)
                nodes[nid] = cur
                order.append(nid)
                continue
            m = _PORT.match(line)
            if m:
                if cur is None:
                    raise InputError("port line outside a node record", path=path, line=ln)
                if pending_guid is not None:  # ibsim ends the record there and loses the ports after it
                    raise InputError(f"the GUID line {guid_line} sits inside the record of {cur.nid!r} (line "
                                     f"{cur.line}); it belongs before that record's header", path=path, line=ln)
                port, lguid, rid, rport, rguid, rest = m.groups()
                port, rport = as_int(port, path, ln), check_port(as_int(rport, path, ln), path, ln, 1, "remote port")
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
                    if lm and as_int(lm.group(1), path, ln):
                        plmc = as_int(lm.group(2) or "0", path, ln)
                        plid = check_lid(as_int(lm.group(1), path, ln), path, ln, plmc)
                cur.ports[port] = (rid, rport, ln, rate, check_guid(int(lguid, 16), path, ln) if lguid else None,
                                   plid, plmc, check_guid(int(rguid, 16), path, ln) if rguid else None)
                continue
            raise InputError(f"unrecognised line: {line[:60]!r}", path=path, line=ln)
    if not nodes:
        raise InputError("no nodes found (not an ibnetdiscover dump or ibsim net file?)", path=path)
    if pending_guid is not None:
        raise InputError("a GUID line with no node header after it", path=path, line=guid_line)
    return _build(path, nodes, order, node_name_map, both_ends)


def _guid_from_id(nid: str) -> int | None:
    m = re.fullmatch(r"[SH]-([0-9a-fA-F]{1,16})", nid)
    return int(m.group(1), 16) if m else None


def _build(path: str, nodes: dict[str, _Node], order: list[str], nnm: dict[int, str] | None,
           both_ends: bool = False) -> Fabric:
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
            if other is None and both_ends:
                raise InputError(f"{nid!r}[{port}] links to {rid!r}[{rport}], but {rid!r} does not list that cable "
                                 f"(ibsim needs every cable from both ends)", path=path, line=ln)
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
