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
as 4xEDR, 4xHDR, 2xNDR, multi-port CAs, LMC), what real saved dumps contain (tool noise such
as `ibwarn:` lines, `-g` chassis headers, `-f` extras, the `-p` ports report, peers without a
record of their own, loopback cables, IB router records) and names nodes by their node
description.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ibtool.errors import InputError
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.formats import as_int, atomic_write, check_guid, check_lid, check_port, open_input

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
# a CA's far end that is another CA prints its port GUID after a space: `"H-..."[1] (guid) `
_PORT = re.compile(r'^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s+"([^"]*)"\[(\d+)\](?:\[ext \d+\])?'
                   r'(?:\s*\(([0-9a-fA-F]+)\))?\s*(.*)$')
_GUIDLINE = re.compile(r"^(sysimgguid|switchguid|caguid|rtguid|rtrguid)=(0x[0-9a-fA-F]+)")
_RATE = re.compile(r"\b(\d+x(?:SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR|[0-9.]+))\b")
_LID = re.compile(r"\blid (\d+)(?: lmc (\d+))?")
_QUOTED = re.compile(r'"([^"]*)"')
_WIDTH = re.compile(r"\bw=(\d+)")
# what tools print on stderr and saved dumps (`ibnetdiscover > f 2>&1`) carry: skipped, counted
_NOISE = re.compile(r"^(?:ibwarn|ibpanic|ibdebug|iberror)\b|^\S+\.c:\d+;|^\S+: iberror:|^\S*ibnetdiscover: ")
# `ibnetdiscover -g` grouping headers: nothing the Fabric needs (the records follow as usual)
_GROUPING = re.compile(r"^(?:Chassis \d+\b|Non-Chassis Nodes\s*$|Hostname: )")
# `ibnetdiscover -p` ports report, one line per port:
#   SW  1719 10 0x7cfe9003009ce5b0 4x EDR - CA   134  1 0x7cfe9003003b4bde ( 'ib-i1l1s01' - 'o0001 HCA-1' )
#   SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'      (not cabled)
_PLINE = re.compile(r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]+)\s+(\S+)\s+(\S+)\s*"
                    r"(?:-\s+(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]+)\s+\(\s*'(.*)'\s+-\s+'(.*)'\s*\)|(.*))$")


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
    seen_only_as_peer: bool = False


def read(path: str | Path, node_name_map: dict[int, str] | None = None, both_ends: bool = False) -> Fabric:
    """Parse an ibnetdiscover dump (plain, `-g` grouped, `-f` full, or the `-p` ports report) or an
    ibsim net file into a Fabric.

    Nodes are named by the node-name-map (GUID -> name) when given, else by their node
    description (with the GUID added where several devices share one), else by their id in the
    file. Tool noise (`ibwarn: ...`, `src/query_smp.c:195; umad ... Connection timed out`) is
    skipped and counted in `fabric.discovery["warnings"]`; devices seen only as the peer of a
    port (a partial discovery) and loopback cables are recorded in `fabric.discovery`, not fatal.
    Malformed input raises InputError naming file:line; every number is checked against its
    InfiniBand range where it is read. both_ends: every cable must be listed from both of its ends,
    as ibsim requires of a net file.
    """
    path = str(path)
    nodes: dict[str, _Node] = {}
    order: list[str] = []
    cur: _Node | None = None
    pending_guid: int | None = None
    guid_line = 0
    noise: list[tuple[int, str]] = []
    routers: list[int] = []  # lines of router records: skipped, with their cables
    in_router = False
    ports_report = False
    fh = open_input(path)
    with fh:
        for ln, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                if not line:
                    cur = None
                    in_router = False
                continue
            if _NOISE.match(line):
                noise.append((ln, line))
                continue
            if line.startswith(("vendid=", "devid=")) or _GROUPING.match(line):
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
                if kind_s == "Rt":  # an IB router (between subnets): not part of this subnet's Fabric
                    routers.append(ln)
                    in_router, cur, pending_guid = True, None, None
                    continue
                in_router = False
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
            if m and (in_router or re.fullmatch(r"R-[0-9a-fA-F]{16}", m.group(3))):
                continue  # a router's own port, or a switch port cabled to a router
            if m:
                if cur is None:
                    raise InputError("port line outside a node record", path=path, line=ln)
                if pending_guid is not None:  # ibsim ends the record there and loses the ports after it
                    raise InputError(f"the GUID line {guid_line} sits inside the record of {cur.nid!r} (line "
                                     f"{cur.line}); it belongs before that record's header", path=path, line=ln)
                _port_line(path, ln, cur, m)
                continue
            m = _PLINE.match(line)
            if m and (ports_report or not nodes):
                ports_report = True
                _ports_report_line(path, ln, m, nodes, order)
                continue
            raise InputError(f"unrecognised line: {line[:60]!r}", path=path, line=ln)
    if not nodes:
        raise InputError("no nodes found (not an ibnetdiscover dump or ibsim net file?)", path=path)
    if pending_guid is not None:
        raise InputError("a GUID line with no node header after it", path=path, line=guid_line)
    f = _build(path, nodes, order, node_name_map, both_ends)
    if routers:
        f.discovery.setdefault("warnings", []).append(
            f"{path}: skipped {len(routers)} router record{'s' if len(routers) > 1 else ''} (Rt, first at line "
            f"{routers[0]}) and the cables to {'them' if len(routers) > 1 else 'it'}: verify covers one subnet")
    if noise:
        ln, text = noise[0]
        f.discovery.setdefault("warnings", []).insert(
            0, f"{path}: skipped {len(noise)} line{'s' if len(noise) > 1 else ''} of tool noise "
               f"(first at line {ln}: {text[:70]!r})")
        f.discovery["skipped_lines"] = len(noise)
    return f


def _port_line(path: str, ln: int, cur: _Node, m: re.Match) -> None:
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
    q = _QUOTED.search(comment)  # the far end's description, for a peer that has no record
    cur.ports[port] = (rid, rport, ln, rate, check_guid(int(lguid, 16), path, ln) if lguid else None, plid, plmc,
                       check_guid(int(rguid, 16), path, ln) if rguid else None, q.group(1) if q else None)


def _ports_report_line(path: str, ln: int, m: re.Match, nodes: dict, order: list) -> None:
    """One line of `ibnetdiscover -p`. Switches are keyed by their (node = port) GUID; a CA's
    ports by description and port GUID - port number (ConnectX-3 ports share a node GUID one
    below port 1's)."""
    (t, lid, port, pguid, width, speed, rt, rlid, rport, rpguid, desc, rdesc, tail) = m.groups()
    if t == "RT" or rt == "RT":  # an IB router: not part of this subnet's Fabric (as in the records)
        return
    if tail is not None:  # a port with nothing cabled: only the description
        desc = tail.strip().strip("'")
    rate = None if "?" in width + speed else f"{width}{speed}"

    def node(kind: str, guid_s: str, p: int, d: str, lid_s: str) -> _Node:
        g = check_guid(int(guid_s, 16), path, ln)
        nid = f"S-{g:016x}" if kind == "SW" else f"H-{g - p + 1:016x}"
        nd = nodes.get(nid)
        if nd is None:
            nd = nodes[nid] = _Node(SWITCH if kind == "SW" else CA, p, nid, ln, guid=_guid_from_id(nid), desc=d,
                                    seen_only_as_peer=True)
            order.append(nid)
        nd.nports = max(nd.nports, p)
        if kind == "SW" and as_int(lid_s, path, ln):
            nd.lid = check_lid(as_int(lid_s, path, ln), path, ln)
        return nd

    port, lid_n = check_port(as_int(port, path, ln), path, ln, 1), as_int(lid, path, ln)
    a = node(t, pguid, port, desc, lid)
    a.seen_only_as_peer = False
    if rt is None:
        return
    if port in a.ports:
        raise InputError(f"port {port} of {a.nid!r} listed twice", path=path, line=ln)
    rport = check_port(as_int(rport, path, ln), path, ln, 1, "remote port")
    b = node(rt, rpguid, rport, rdesc, rlid)
    plid = check_lid(lid_n, path, ln) if t == "CA" and lid_n else None
    a.ports[port] = (b.nid, rport, ln, rate, int(pguid, 16) if t == "CA" else None, plid, 0,
                     int(rpguid, 16) if rt == "CA" else None, rdesc)


def _guid_from_id(nid: str) -> int | None:
    m = re.fullmatch(r"[SH]-([0-9a-fA-F]{1,16})", nid)
    return int(m.group(1), 16) if m else None


def _peers_without_record(path: str, nodes: dict[str, _Node], order: list[str]) -> None:
    """A partial discovery: port lines name devices that have no record of their own. Real dump
    ids (S-/H-<guid>) become devices flagged `seen_only_as_peer`; anything else is a typo."""
    for nid in list(order):
        for port, (rid, rport, ln, *_rest, rdesc) in sorted(nodes[nid].ports.items()):
            nd = nodes.get(rid)
            if nd is None:
                if _guid_from_id(rid) is None:
                    raise InputError(f"port {port} of {nid!r} links to unknown node {rid!r}", path=path, line=ln)
                nd = nodes[rid] = _Node(SWITCH if rid.startswith("S-") else CA, rport, rid, ln,
                                        guid=_guid_from_id(rid), desc=rdesc, seen_only_as_peer=True)
                order.append(rid)
            if nd.seen_only_as_peer:
                nd.nports = max(nd.nports, rport)


def partial(f: Fabric, most: int = 20) -> str | None:
    """The reader's partial-discovery finding in words (the devices seen only as peers, the one
    `verify topology` reports), None for a complete discovery."""
    seen = f.discovery.get("seen_only_as_peer", ())
    if not seen:
        return None
    names = [f.names[j] + ("" if f"{f.guids[j]:016x}" in f.names[j].lower() else f" ({f.guids[j]:#018x})")
             for j in seen]
    shown = ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
    return (f"partial discovery: {len(seen)} device{'s' if len(seen) > 1 else ''} seen only as the peer "
            f"of a port, with no record of their own: {shown}")


def refuse_partial(f: Fabric, path: str | Path, allow: bool = False, warn=None) -> None:
    """Routing computed from part of a fabric is wrong for the rest of it: a fabric with devices
    seen only as peers is refused, naming them; with `allow`, `warn` gets the same text instead."""
    what = partial(f)
    if what is None:
        return
    if not allow:
        raise InputError(f"{what}; routing tables from part of a fabric are refused (run ibnetdiscover again; "
                         "--allow-partial routes the part that was read)", path=str(path))
    if warn:
        warn(f"{path}: {what}; routing only the part that was read (--allow-partial)")


def _build(path: str, nodes: dict[str, _Node], order: list[str], nnm: dict[int, str] | None,
           both_ends: bool = False) -> Fabric:
    _peers_without_record(path, nodes, order)
    f = Fabric(Path(path).stem)
    index: dict[str, int] = {}
    synthetic = 1 << 60  # for hand-written files without GUIDs: stable, clearly not real
    for nid in order:
        if nodes[nid].guid is None:
            nodes[nid].guid = synthetic + order.index(nid)
    names = {nid: (nnm or {}).get(nodes[nid].guid) or nodes[nid].desc or nid for nid in order}
    # real fabrics repeat descriptions ("SwitchIB Mellanox Technologies", "MF0;switch:MQM9700/U1"):
    # every device sharing one is named with its GUID, so each name in a report is one device
    shared = {n for n, c in Counter(names.values()).items() if c > 1}
    for nid in order:
        nd = nodes[nid]
        name = names[nid]
        if name in shared:
            name = f"{name} ({nd.guid:#018x})"
        try:
            i = f.add_node(nd.kind, name, nd.nports, "switch" if nd.kind == SWITCH else "hca", guid=nd.guid)
        except InputError as e:
            raise InputError(str(e), path=path, line=nd.line) from None
        index[nid] = i
    disc = f.discovery
    link_at: dict[tuple[int, int], int] = {}
    loops: set = set()
    for nid in order:
        nd = nodes[nid]
        i = index[nid]
        if nd.kind == SWITCH and nd.lid is not None:
            f.port_lids[(i, 0)] = (nd.lid, nd.lmc)
        for port, (rid, rport, ln, rate, lguid, plid, plmc, rguid, _rdesc) in sorted(nd.ports.items()):
            if lguid is not None:
                f.port_guids[(i, port)] = lguid
            if plid is not None:
                f.port_lids[(i, port)] = (plid, plmc)
            j = index[rid]
            if j == i:  # a loopback cable: reported by verify, not a link of the fabric
                key = (i, min(port, rport), max(port, rport))
                if key not in loops:
                    loops.add(key)
                    disc.setdefault("loopbacks", []).append(
                        {"node": i, "ports": [key[1], key[2]], "rate": rate, "line": ln})
                continue
            other = nodes[rid].ports.get(rport)
            if other is not None and (other[0] != nid or other[1] != port):
                raise InputError(f"{nid!r}[{port}] says it links to {rid!r}[{rport}], but that port links to "
                                 f"{other[0]!r}[{other[1]}] (line {other[2]})", path=path, line=ln)
            if other is None and both_ends:
                raise InputError(f"{nid!r}[{port}] links to {rid!r}[{rport}], but {rid!r} does not list that cable "
                                 f"(ibsim needs every cable from both ends)", path=path, line=ln)
            if other is not None and (j, rport) < (i, port):
                li = link_at[(j, rport)]  # listed from the other end already: do both ends agree?
                if rate and f.link_rate[li] and rate != f.link_rate[li]:
                    disc.setdefault("rate_ends", {})[li] = {"a": f.link_rate[li], "b": rate, "line": ln}
                continue
            if rguid is not None and nodes[rid].kind == CA:
                f.port_guids[(j, rport)] = rguid
            if not 1 <= rport <= nodes[rid].nports:
                raise InputError(f"remote port {rport} of {rid!r} is outside 1..{nodes[rid].nports}", path=path, line=ln)
            try:
                li = f.add_link(i, j, port, rport, rate=rate)
            except InputError as e:
                raise InputError(str(e), path=path, line=ln) from None
            link_at[(i, port)] = li
            link_at[(j, rport)] = li
    partial = [index[nid] for nid in order if nodes[nid].seen_only_as_peer]
    if partial:
        disc["seen_only_as_peer"] = partial
        disc.setdefault("warnings", []).append(
            f"{path}: partial discovery: {len(partial)} device{'s' if len(partial) > 1 else ''} seen only as "
            f"the peer of a port, with no record of their own (e.g. {f.names[partial[0]]!r})")
    return f
