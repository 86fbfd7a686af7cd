"""OpenSM's `opensm-sl2vl.dump` (written with log flag 0x40 when QoS is on or the engine sets SL2VL):

    Switch 0x0002c90000000010, base LID 1, "R[0,0]"
    #in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15
    #--------------------------------------------------------
    0   1   : 0  1  2  3  4  5  6  7  0  1  2  3  4  5  6  7
    ...

A Channel Adapter block has one row per port (`0 <port> : ...`). The result maps a node GUID
to {(in port, out port): 16 VLs indexed by SL}.
"""

from __future__ import annotations

import re
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import MAX_GUID, MAX_PORT, as_int, check_guid, check_port, open_input

_NODE = re.compile(r'^(Switch|Channel Adapter|Router)\s+(0x[0-9a-fA-F]+)\b')
_ROW = re.compile(r"^(\d+)\s+(\d+)\s*:\s*((?:\d+\s*){16})$")


class SL2VL(dict):
    """node GUID -> {(in_port, out_port): tuple of 16 VLs}; `kind` GUID -> 'Switch'/'Channel Adapter'."""

    def __init__(self):
        super().__init__()
        self.kind: dict[int, str] = {}
        self.path: str | None = None
        self.lines: dict[int, int] = {}

    def vl(self, guid: int, in_port: int, out_port: int, sl: int = 0) -> int:
        """The VL for SL `sl` from in_port to out_port; the SL itself when the dump says nothing."""
        t = self.get(guid)
        if t is None:
            return sl & 7
        row = t.get((in_port, out_port))
        return row[sl] if row is not None else sl & 7


# the whole-file reading of _read_whole(): a node line, and a row (`[ \t]`, not `\s`: a row never runs
# onto the next line)
_NODE_LINE = re.compile(r"^[ \t]*(Switch|Channel Adapter|Router)[ \t]+(0x[0-9a-fA-F]+)\b[^\n]*$", re.M)
_ROW_LINE = re.compile(r"^[ \t]*(\d+)[ \t]+(\d+)[ \t]*:[ \t]*((?:\d+[ \t]*){16})$", re.M)


def read(path: str | Path) -> SL2VL:
    """The dump as SL2VL; a file of only node lines, rows, comments and blank lines with every
    number in range is read whole (regexes over the text, each distinct row parsed once: a
    KNS 12^3 dump of 450,000 rows in about a second), any other line by line, with its errors."""
    path = str(path)
    out = _read_whole(path)
    return out if out is not None else _read_lines(path)


def _read_whole(path: str) -> SL2VL | None:
    try:
        return _parse_whole(path)
    except ValueError:  # a number beyond int()'s digit limit: the line-by-line reader names it
        return None


def _parse_whole(path: str) -> SL2VL | None:
    with open_input(path) as fh:
        text = fh.read()
    parts = _NODE_LINE.split(text)  # [before, kind, guid, body, kind, guid, body, ...]
    if len(parts) < 4 or _ROW_LINE.search(parts[0]) or not _only_comments(parts[0]):
        return None
    out = SL2VL()
    out.path = path
    parsed: dict[str, tuple] = {}
    ports: dict[tuple[str, str], tuple[int, int]] = {}
    for kind, guid, body in zip(parts[1::3], parts[2::3], parts[3::3]):
        g = int(guid, 16)
        if g > MAX_GUID or g in out:
            return None
        cur = out[g] = {}
        out.kind[g] = kind
        for i, o, vl_text in _ROW_LINE.findall(body):
            vls = parsed.get(vl_text)
            if vls is None:
                vls = parsed[vl_text] = tuple(int(x) for x in vl_text.split())
                if max(vls) > 15:
                    return None
            key = ports.get((i, o))
            if key is None:
                key = ports[(i, o)] = (int(i), int(o))
                if max(key) > MAX_PORT:
                    return None
            cur[key] = vls
        if not _only_comments(_ROW_LINE.sub("", body)):
            return None
    at, pos = 1, 0  # node lines' line numbers, as the line-by-line reader keeps them
    for m in _NODE_LINE.finditer(text):
        at += text.count("\n", pos, m.start())
        pos = m.start()
        out.lines[int(m.group(2), 16)] = at
    return out


def _only_comments(text: str) -> bool:
    return all(not ln.strip() or ln.strip().startswith("#") for ln in text.splitlines())


def _read_lines(path: str) -> SL2VL:
    out = SL2VL()
    out.path = path
    fh = open_input(path)
    cur: dict | None = None
    parsed: dict[str, tuple] = {}  # a row's 16 VLs by their text: a dump repeats a few rows ~100,000 times
    ports: dict[tuple[str, str], tuple[int, int]] = {}  # (in, out) by their text
    with fh:
        for ln, raw in enumerate(fh, 1):
            s = raw.strip()
            m = _ROW.match(s)  # most lines: tried first (a row starts with a digit, a node line never)
            if m:
                if cur is None:
                    raise InputError("SL2VL row before any 'Switch'/'Channel Adapter' line", path=path, line=ln)
                i, o, text = m.groups()
                vls = parsed.get(text)
                if vls is None:
                    vls = tuple(as_int(x, path, ln) for x in text.split())
                    if any(v > 15 for v in vls):
                        raise InputError(f"VL out of range 0..15 in {s[:60]!r}", path=path, line=ln)
                    parsed[text] = vls
                key = ports.get((i, o))
                if key is None:
                    key = ports[(i, o)] = (check_port(as_int(i, path, ln), path, ln, what="in port"),
                                           check_port(as_int(o, path, ln), path, ln, what="out port"))
                cur[key] = vls
                continue
            if not s or s.startswith("#"):
                continue
            m = _NODE.match(s)
            if m:
                g = check_guid(int(m.group(2), 16), path, ln)
                if g in out:
                    raise InputError(f"node {g:#018x} listed twice (first at line {out.lines[g]})", path=path, line=ln)
                cur = out[g] = {}
                out.kind[g] = m.group(1)
                out.lines[g] = ln
                continue
            raise InputError(f"unrecognised line {s[:60]!r} (not an opensm-sl2vl.dump?)", path=path, line=ln)
    if not out:
        raise InputError("no SL2VL tables found (not an opensm-sl2vl.dump?)", path=path)
    return out


def write(tables: SL2VL, fabric, path: str | Path) -> None:
    """Every switch's table as OpenSM dumps it (opensm-sl2vl.dump), for the ports that are cabled:
    rows `tables` does not list are VL 0 for every SL (hdor's degraded pass lists only the entries
    it sets). CA ports are all VL 0, a block per port named by its port GUID (as OpenSM's)."""
    from ibtool.fabric import SWITCH
    from ibtool.formats import atomic_write
    head = "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15\n" + "#" + "-" * 56 + "\n"
    zero = (0,) * 16

    def row(i: int, o: int, vls) -> str:
        return f"{i:<3d} {o:<3d} : " + "".join(f"{v:<2d} " for v in vls) + "\n"

    with atomic_write(path) as fh:
        for x in sorted(range(fabric.num_nodes), key=lambda i: fabric.guids[i]):
            g = fabric.guids[x]
            cabled = [p for p, _, _ in fabric.neighbors(x)]
            if not cabled:
                continue
            mine = tables.get(g, {})
            if fabric.types[x] == SWITCH:
                lid = fabric.port_lids.get((x, 0), (0, 0))[0]
                fh.write(f'Switch {g:#018x}, base LID {lid}, "{fabric.names[x]}"\n' + head)
                for i in [0, *cabled]:
                    fh.write("".join(row(i, o, mine.get((i, o), zero)) for o in cabled if o != i))
            else:  # one block per port, named by its port GUID, as OpenSM writes them
                for p in cabled:
                    lid = fabric.port_lids.get((x, p), (0, 0))[0]
                    fh.write(f'Channel Adapter {fabric.port_guid(x, p):#018x}, base LID {lid}, '
                             f'"{fabric.names[x]}"\n' + head + row(0, 0, zero))
            fh.write("#" + "-" * 56 + "\n\n")
