"""Linear forwarding tables as dump_fts, ibroute and OpenSM's opensm-lfts.dump print them, and
the LFT file that OpenSM's `file` routing engine loads (`-R file -U FILE`).

    Unicast lids [0x0-0x4] of switch DR path slid 0; dlid 0; 0,3 guid 0x0002c90000000102 (sw2):
      Lid  Out   Destination
           Port     Info
    0x0001 004 : (Switch portguid 0x0002c90000000101: 'router-0-0')
    3 valid lids dumped

Tables are kept as one uint8 array per switch (index = LID, 255 = no route), keyed by the
switch's node GUID. All arrays of one file are rows of one matrix (`Tables.matrix`), so route
tracing indexes it directly.

Parsing is vectorised and takes one pass: the file is read into one reused buffer in chunks of
whole lines, entry lines in the fixed layouts every tool prints (`0xLLLL PPP ...`) are decoded
with numpy without touching Python per line, and each chunk's entries go straight into their
switch's row of the table matrix, so memory is one chunk's work plus the matrix whatever the
file's size. Anything else (headers, trailers, odd entries) goes through the line-by-line checks,
so malformed input still fails with file:line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ibtool.errors import InputError
from ibtool.formats import atomic_write, check_guid, open_input

NO_ROUTE = 255
MAX_UNICAST_LID = 0xBFFF
_HEADER = re.compile(rb"^\s*Unicast lids \[[^\]]*\] of switch .*?guid (0x[0-9a-fA-F]+)")
_FDBS_HEADER = re.compile(rb"^\s*dump_ucast_routes: Switch (0x[0-9a-fA-F]+)")
_ENTRY = re.compile(rb"^\s*(0x[0-9a-fA-F]+)\s+(?::\s*)?(\d+)(?:\s|$)")
_NAME = re.compile(rb"\((?:')?([^()']*)(?:')?\):\s*$")
_CHUNK = 2 << 20  # a chunk's numpy temporaries are ~7x its size on short lines; as fast as 8 MiB

_HEX = np.full(256, -1, dtype=np.int32)
for _c in b"0123456789":
    _HEX[_c] = _c - 48
for _c in b"abcdef":
    _HEX[_c] = _c - 87
for _c in b"ABCDEF":
    _HEX[_c] = _c - 55
_DEC = np.full(256, -1, dtype=np.int32)
for _c in b"0123456789":
    _DEC[_c] = _c - 48
# two ASCII digits read as one little-endian uint16 -> their value (-1: not two digits)
_lo, _hi = np.arange(65536) & 0xFF, np.arange(65536) >> 8
_HEX2 = np.where((_HEX[_lo] >= 0) & (_HEX[_hi] >= 0), _HEX[_lo] * 16 + _HEX[_hi], -1).astype(np.int32)
_DEC2 = np.where((_DEC[_lo] >= 0) & (_DEC[_hi] >= 0), _DEC[_lo] * 10 + _DEC[_hi], -1).astype(np.int32)
_SPACE = np.zeros(256, dtype=bool)
for _c in b" \t\r\n":
    _SPACE[_c] = True
# "0x" at bytes 0-1 and the space at byte 6 of "0xLLLL PPP", as one uint64 of bytes 0-7
_FIXED_MASK, _FIXED = 0x00FF00000000FFFF, 0x0020000000007830


@dataclass
class Tables:
    lft: dict[int, np.ndarray] = field(default_factory=dict)  # switch GUID -> ports by LID
    names: dict[int, str] = field(default_factory=dict)
    lines: dict[int, int] = field(default_factory=dict)  # switch GUID -> line of its header
    path: str | None = None

    @property
    def max_lid(self) -> int:
        return max((len(a) - 1 for a in self.lft.values()), default=0)

    def matrix(self, guids: list[int], top: int | None = None) -> np.ndarray:
        """One row per GUID in `guids` (NO_ROUTE rows for switches without a table), LIDs 0..top."""
        top = self.max_lid if top is None else top
        m = np.full((len(guids), top + 1), NO_ROUTE, dtype=np.uint8)
        for i, g in enumerate(guids):
            a = self.lft.get(g)
            if a is not None:
                n = min(len(a), top + 1)
                m[i, :n] = a[:n]
        return m


def _bad(path: str, ln: int, msg: str):
    raise InputError(msg, path=path, line=ln)


def read(path: str | Path) -> Tables:
    """Read a dump_fts / ibroute / opensm-lfts.dump / file-engine LFT file."""
    path = str(path)
    fh = open_input(path, binary=True)
    with fh:
        size = fh.seek(0, 2)
        if size == 0:
            raise InputError("empty file (not a dump_fts/ibroute/opensm-lfts.dump file?)", path=path)
        fh.seek(0)
        try:
            return _parse(_chunks(fh), path)
        except _LongLine:
            raise InputError("a line longer than 1 MiB (not a dump_fts/ibroute/opensm-lfts.dump file?)",
                             path=path) from None


_PAD = 16  # every line's first 16 bytes are read, even the last line's


class _LongLine(Exception):
    """A line of over 1 MiB: no table has one."""


def _chunks(fh):
    """Whole lines, about _CHUNK bytes at a time, read into one reused buffer (no page faults of a
    fresh mapping or allocation per chunk), each followed by _PAD newlines so that fixed-offset
    reads past the last line stay inside. Yields (array, bytes of lines); a last line without
    its newline gets one."""
    buf = np.empty(_CHUNK + (1 << 20) + _PAD, dtype=np.uint8)
    mv = memoryview(buf)
    have = 0
    while True:
        n = fh.readinto(mv[have:have + _CHUNK])
        total = have + n
        if total == 0:
            return
        if n == 0:  # end of file
            end = total
            if buf[end - 1] != 10:
                buf[end] = 10
                end += 1
                total = end
        else:
            for back in (4096, 1 << 20):  # the last newline is near the end: copy 4 KiB, not 1 MiB
                tail = bytes(mv[max(0, total - back):total])
                cut = tail.rfind(b"\n")
                if cut >= 0:
                    break
            if cut < 0:  # no whole line yet: read on while the buffer has room for another chunk
                if total <= (1 << 20):
                    have = total
                    continue
                raise _LongLine(total)
            end = total - len(tail) + cut + 1
        carry = buf[end:total].copy()
        buf[end:end + _PAD] = 10
        yield buf[:end + _PAD], end
        buf[:len(carry)] = carry
        have = len(carry)


def _fixed(chunk: np.ndarray, starts: np.ndarray):
    """(entry?, LID, port) of every line, for the fixed layouts every tool prints:
        dump_fts, ibroute, opensm-lfts.dump, file engine: "0xLLLL PPP ..."
        opensm.fdbs:                                       "0xLLLL : PPP  : HH   : yes"
    LID and port are int32 (0..0xffff, 0..999), meaningless where entry? is False. A line too
    short for a layout fails it: its newline falls on a byte the layout wants to be a digit."""
    # the first 16 bytes of every line in one gather, as two little-endian int64s (signed:
    # numpy indexes with them without a conversion pass)
    view = np.ndarray((len(chunk) - 15,), dtype="V16", buffer=chunk, strides=(1,))
    w = view[starts].view("<i8").reshape(-1, 2)
    a, b = w[:, 0], w[:, 1]  # bytes 0-7 "0xLLLL P", bytes 8-15 "PP ..."
    hi, lo = _HEX2[(a >> 16) & 0xFFFF], _HEX2[(a >> 32) & 0xFFFF]
    p1, p2 = _DEC[(a >> 56) & 0xFF], _DEC2[b & 0xFFFF]
    # a negative lookup (not a digit) makes the OR negative
    ok = ((a & _FIXED_MASK) == _FIXED) & _SPACE[(b >> 16) & 0xFF] & ((hi | lo | p1 | p2) >= 0)
    lid = (hi << 8) | lo
    port = p1 * 100 + p2
    rest = np.flatnonzero(~ok)
    if len(rest):  # opensm.fdbs: ':' at byte 7, ' ' at 8, digits at 9-11, a space at 12
        ar, br = a[rest], b[rest]
        q2, q1 = _DEC2[(br >> 8) & 0xFFFF], _DEC[(br >> 24) & 0xFF]
        f = ((ar & _FIXED_MASK) == _FIXED) & (((ar >> 56) & 0xFF) == 0x3A) & ((br & 0xFF) == 0x20) \
            & _SPACE[(br >> 32) & 0xFF] & ((hi[rest] | lo[rest] | q2 | q1) >= 0)
        if f.any():
            i = rest[f]
            ok[i] = True
            port[i] = q2[f] * 10 + q1[f]
    return ok, lid, port


def _grown(mat: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """`mat` with room for at least rows x cols (doubling, so growing table by table stays linear),
    new cells NO_ROUTE."""
    r0, c0 = mat.shape
    if rows <= r0 and cols <= c0:
        return mat
    new = np.full((max(rows, 2 * r0) if rows > r0 else r0,
                   max(cols, min(2 * c0, MAX_UNICAST_LID + 1)) if cols > c0 else c0), NO_ROUTE, dtype=np.uint8)
    new[:r0, :c0] = mat
    return new


def _parse(chunks, path: str) -> Tables:
    """One pass: each chunk's entries are decoded (fixed layouts with numpy, anything else line by
    line) and scattered straight into their switch's row of the table matrix, so memory stays at
    one chunk plus the matrix. Errors found after a table's lines were read (entries before any
    header, a truncated file, no tables, a bad entry, a switch listed twice) are raised after the
    whole file, in that order, as the first of each kind."""
    names: dict[int, str] = {}
    heads: list[tuple[int, int]] = []  # (guid, line no) of each unicast table = matrix row
    seen: dict[int, int] = {}
    twice = None  # first switch listed twice: (line no, guid, first line no)
    early = None  # line index of the first entry before any header
    bad = None  # (line index, LID, port) of the first bad entry of a unicast table
    last_trailer = last_head = -1  # line indices of the last 'N valid lids dumped' and unicast header
    owner = None  # the table the current line belongs to: a row, -1 for multicast, None before any
    mat = np.empty((0, 0), dtype=np.uint8)
    top = 0
    line_base = 0
    for chunk, clen in chunks:
        nls = np.flatnonzero(chunk[:clen] == 10)
        starts = np.empty(len(nls), dtype=np.int64)
        starts[0] = 0
        starts[1:] = nls[:-1] + 1
        ok, lid, port = _fixed(chunk, starts)
        owners, cuts = [owner], [0]  # the tables of this chunk's runs of lines
        # everything else: line by line (headers, trailers, unusual entries)
        for i in np.flatnonzero(~ok).tolist():
            a = int(starts[i])
            line = bytes(chunk[a:int(nls[i])])
            s = line.lstrip()
            ln = line_base + i + 1
            if s.startswith(b"0x"):
                if b"UNREACHABLE" in s:  # opensm.fdbs: no route to this LID
                    continue
                m = _ENTRY.match(s)
                # judged once we know whether it is in a unicast or a multicast block; clipped here:
                # a 2**64 must not overflow the int32 arrays (judged below)
                if m:
                    lid[i] = min(int(m.group(1), 16), 1 << 30)
                    port[i] = min(int(m.group(2)), 1 << 30) if len(m.group(2)) < 12 else 1 << 30
                else:
                    lid[i], port[i] = -2, 0
                ok[i] = True
                continue
            if s.startswith(b"Unicast lids"):
                m = _HEADER.match(s)
                if not m:
                    _bad(path, ln, "malformed 'Unicast lids' header")
                g = check_guid(int(m.group(1), 16), path, ln)
                nm = _NAME.search(s)
                names.setdefault(g, nm.group(1).decode(errors="replace") if nm else "")
            elif s.startswith(b"dump_ucast_routes"):
                m = _FDBS_HEADER.match(s)
                if not m:
                    _bad(path, ln, "malformed 'dump_ucast_routes: Switch' header")
                g = check_guid(int(m.group(1), 16), path, ln)
                names.setdefault(g, "")
            elif s.startswith((b"Multicast", b"dump_mcast_routes")):
                owners.append(-1)
                cuts.append(i)
                continue
            else:
                if b"lids dumped" in s:
                    last_trailer = line_base + i
                elif s.strip() and not s.startswith((b"#", b"Lid", b"LID", b"Port", b"Switch", b"Dumping")):
                    _bad(path, ln, f"unrecognised line {line[:60].decode(errors='replace')!r}")
                continue
            if g in seen:
                twice = twice or (ln, g, seen[g])
            else:
                seen[g] = ln
            owners.append(len(heads))
            cuts.append(i)
            heads.append((g, ln))
            last_head = line_base + i
        cuts.append(len(starts))
        # unsigned: one comparison per field catches both ends of its range
        wrong = ok & (((lid - 1).view(np.uint32) >= MAX_UNICAST_LID) | (port.view(np.uint32) > 254))
        anywrong = bool(wrong.any())
        lid0 = np.where(ok, lid, 0)  # LID 0 is never routed: other lines write NO_ROUTE there
        port8 = np.where(ok, port, NO_ROUTE).astype(np.uint8)
        for k, r in enumerate(owners):
            a, b = cuts[k], cuts[k + 1]
            if a >= b:
                continue
            if r is None:
                if early is None and ok[a:b].any():
                    early = line_base + a + int(np.argmax(ok[a:b]))
                continue
            if r < 0 or bad is not None:  # a multicast block's entries; or nothing to build
                continue
            if anywrong and wrong[a:b].any():
                j = a + int(np.argmax(wrong[a:b]))
                bad = (line_base + j, int(lid[j]), bytes(chunk[int(starts[j]):int(nls[j])]))
                continue
            seg = lid0[a:b]
            need = int(seg.max())
            if need >= mat.shape[1] or r >= mat.shape[0]:
                mat = _grown(mat, len(heads), need + 1)
            mat[r, seg] = port8[a:b]
            top = max(top, need)
        owner = owners[-1]
        line_base += len(starts)
    if early is not None:
        _bad(path, early + 1, "LFT entry before any 'Unicast lids' header")
    if last_head > last_trailer >= 0:
        g, ln = heads[-1]
        _bad(path, line_base, f"truncated: the table of switch {g:#018x} (line {ln}) has no "
                              f"'N valid lids dumped' line, as every table before it has")
    if not heads:
        raise InputError("no 'Unicast lids' tables found (not a dump_fts/ibroute/opensm-lfts.dump file?)", path=path)
    if bad is not None:
        j, lv, line = bad
        if lv == -2:
            _bad(path, j + 1, "malformed LFT entry (expected '0x<lid> <port>')")
        _bad(path, j + 1, _out_of_range(line))
    if twice is not None:
        ln, g, first = twice
        _bad(path, ln, f"switch {g:#018x} listed twice (first at line {first})")
    # rows of the matrix, room left for growth and all: a copy without it would need both at once
    mat = _grown(mat, len(heads), top + 1)
    t = Tables(path=path)
    for r, (g, ln) in enumerate(heads):
        t.lft[g] = mat[r, :top + 1]
        t.lines[g] = ln
        t.names[g] = names.get(g, "")
    return t


def _out_of_range(line: bytes) -> str:
    """Which field of an entry is beyond its range, with its value as the file writes it."""
    m = _ENTRY.match(line.lstrip())
    if m is None:  # not expected: every entry judged here matched a layout _ENTRY also reads
        return f"LFT entry {line[:40].decode(errors='replace')!r} out of range"
    lid, port = m.group(1).decode(), m.group(2).decode()

    def shown(text: str) -> str:
        return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} characters)"
    if not 1 <= int(lid, 16) <= MAX_UNICAST_LID:
        return f"LID {shown(lid)} is outside 0x0001..{MAX_UNICAST_LID:#06x} (the unicast LIDs)"
    return f"port {shown(port)} of LID {lid} is outside 0..254"


def write_file_engine(tables: Tables, path: str | Path, port_guids: dict[int, int] | None = None) -> None:
    """Write tables for OpenSM's `file` engine: every switch, every LID, newline-terminated.

    `port_guids` (LID -> port GUID) adds ` portguid 0x...` so OpenSM remaps LIDs that moved.
    """
    top = tables.max_lid
    pg = port_guids or {}
    # Every line is "<lid> <port><tail>": format each LID and port once, not once per switch.
    head = [f"{lid:#06x} " for lid in range(top + 1)]
    tail = [f" portguid {pg[lid]:#018x}\n" if pg.get(lid) else "\n" for lid in range(top + 1)]
    ports = [f"{p:03d}" for p in range(256)]
    with atomic_write(path) as fh:
        for guid in sorted(tables.lft):
            arr = tables.lft[guid]
            name = tables.names.get(guid, "")
            fh.write(f"Unicast lids [0x0-{len(arr) - 1:#x}] of switch Lid 0 guid {guid:#018x} ('{name}'):\n")
            lids = np.nonzero(arr != NO_ROUTE)[0].tolist()
            out = arr[lids].tolist()
            fh.write("".join([head[l] + ports[p] + tail[l] for l, p in zip(lids, out)]))
