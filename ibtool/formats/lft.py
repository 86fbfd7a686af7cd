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

Parsing is vectorised: the file is read into one reused buffer in chunks of whole lines and
processed with numpy. Entry lines in the fixed layout every tool prints (`0xLLLL PPP ...`) are decoded without
touching Python per line; anything else (headers, trailers, odd entries) goes through the
line-by-line checks, so malformed input still fails with file:line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ibtool.errors import InputError
from ibtool.formats import atomic_write, check_guid, open_input

NO_ROUTE = 255
MAX_UNICAST_LID = 0xBFFF
_HEADER = re.compile(rb"^\s*Unicast lids \[[^\]]*\] of switch .*?guid (0x[0-9a-fA-F]+)")
_FDBS_HEADER = re.compile(rb"^\s*dump_ucast_routes: Switch (0x[0-9a-fA-F]+)")
_ENTRY = re.compile(rb"^\s*(0x[0-9a-fA-F]+)\s+(?::\s*)?(\d+)(?:\s|$)")
_NAME = re.compile(rb"\((?:')?([^()']*)(?:')?\):\s*$")
_CHUNK = 8 << 20  # smaller chunks: temporaries stay in cache and the allocator reuses them

_HEX = np.full(256, -1, dtype=np.int32)
for _c in b"0123456789":
    _HEX[_c] = _c - 48
for _c in b"abcdef":
    _HEX[_c] = _c - 87
for _c in b"ABCDEF":
    _HEX[_c] = _c - 55
# two ASCII hex digits read as one little-endian uint16 -> their byte value (-1: not hex)
_lo, _hi = _HEX[np.arange(65536) & 0xFF], _HEX[np.arange(65536) >> 8]
_HEX2 = np.where((_lo >= 0) & (_hi >= 0), _lo * 16 + _hi, -1).astype(np.int32)
_DEC = np.full(256, -1, dtype=np.int32)
for _c in b"0123456789":
    _DEC[_c] = _c - 48
_SPACE = np.zeros(256, dtype=bool)
for _c in b" \t\r\n":
    _SPACE[_c] = True


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


_PAD = 4


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
            tail = bytes(mv[max(0, total - (1 << 20)):total])
            cut = tail.rfind(b"\n")
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


def _parse(chunks, path: str) -> Tables:
    headers: list[tuple[int, int, int]] = []  # (global line index, guid or -1 for multicast, line no)
    ent_line: list[np.ndarray] = []
    ent_lid: list[np.ndarray] = []
    ent_port: list[np.ndarray] = []
    names: dict[int, str] = {}
    trailers: list[int] = []  # lines 'N valid lids dumped' (dump_fts, ibroute, opensm-lfts.dump)
    line_base = 0
    for chunk, clen in chunks:
        nls = np.flatnonzero(chunk[:clen] == 10)
        starts = np.empty(len(nls), dtype=np.int64)
        starts[0] = 0
        starts[1:] = nls[:-1] + 1
        lens = nls - starts
        c0 = chunk[starts]
        cand = np.flatnonzero((c0 == 48) & (lens >= 10))  # "0x..." long enough for 0xLLLL PPP
        fast = np.zeros(len(starts), dtype=bool)
        if len(cand):
            # fixed layouts, one 2-D gather of 13 bytes a line:
            #   dump_fts, ibroute, opensm-lfts.dump, file engine: "0xLLLL PPP ..."
            #   opensm.fdbs:                                       "0xLLLL : PPP  : HH   : yes"
            win = as_strided(chunk, shape=(len(chunk) - 12, 13), strides=(1, 1))
            blk = win[starts[cand]]
            fdbs = blk[:, 7] == 58
            hp = _HEX2[np.ascontiguousarray(blk[:, 2:6]).view("<u2")]  # (n, 2): the LID's two bytes
            if fdbs.any():
                po = np.where(fdbs, 9, 7)[:, None] + np.arange(3)
                d = _DEC[np.take_along_axis(blk, po, axis=1)]
                after = np.where(fdbs, blk[:, 12], blk[:, 10])
                sep = (blk[:, 6] == 32) & np.where(fdbs, blk[:, 8] == 32, True)
            else:
                d = _DEC[blk[:, 7:10]]
                after = blk[:, 10]
                sep = blk[:, 6] == 32
            # a negative lookup (not a digit) makes the OR of the columns negative
            ok = (blk[:, 1] == 120) & ((hp[:, 0] | hp[:, 1] | d[:, 0] | d[:, 1] | d[:, 2]) >= 0) \
                & sep & _SPACE[after]
            hp, d = hp[ok], d[ok]
            lid = (hp[:, 0] << 8) | hp[:, 1]
            port = d[:, 0] * 100 + d[:, 1] * 10 + d[:, 2]
            good = cand[ok]
            ent_line.append(good + line_base)
            ent_lid.append(lid.astype(np.int32))
            ent_port.append(port.astype(np.int32))
            fast[good] = True
        # everything else: line by line (headers, trailers, unusual entries)
        slow = np.flatnonzero(~fast)
        sl_lid, sl_port, sl_line = [], [], []
        for i in slow.tolist():
            a = int(starts[i])
            line = bytes(chunk[a:a + int(lens[i])])
            s = line.lstrip()
            ln = line_base + i + 1
            if s.startswith(b"0x"):
                if b"UNREACHABLE" in s:  # opensm.fdbs: no route to this LID
                    continue
                m = _ENTRY.match(s)
                if m:  # judged after we know whether it is in a unicast or a multicast block
                    # clipped here: a 2**64 must not overflow the int64 array (judged below)
                    sl_lid.append(min(int(m.group(1), 16), 1 << 30))
                    sl_port.append(min(int(m.group(2)), 1 << 30) if len(m.group(2)) < 12 else 1 << 30)
                else:
                    sl_lid.append(-2)
                    sl_port.append(0)
                sl_line.append(line_base + i)
                continue
            if s.startswith(b"Unicast lids"):
                m = _HEADER.match(s)
                if not m:
                    _bad(path, ln, "malformed 'Unicast lids' header")
                g = check_guid(int(m.group(1), 16), path, ln)
                nm = _NAME.search(s)
                names.setdefault(g, nm.group(1).decode(errors="replace") if nm else "")
                headers.append((line_base + i, g, ln))
                continue
            if s.startswith(b"dump_ucast_routes"):
                m = _FDBS_HEADER.match(s)
                if not m:
                    _bad(path, ln, "malformed 'dump_ucast_routes: Switch' header")
                g = check_guid(int(m.group(1), 16), path, ln)
                names.setdefault(g, "")
                headers.append((line_base + i, g, ln))
                continue
            if s.startswith((b"Multicast", b"dump_mcast_routes")):
                headers.append((line_base + i, -1, ln))
                continue
            if b"lids dumped" in s:
                trailers.append(line_base + i)
                continue
            if not s.strip() or s.startswith((b"#", b"Lid", b"LID", b"Port")) \
                    or s.startswith(b"Switch") or s.startswith(b"Dumping"):
                continue
            _bad(path, ln, f"unrecognised line {line[:60].decode(errors='replace')!r}")
        if sl_lid:
            ent_line.append(np.asarray(sl_line, dtype=np.int64))
            ent_lid.append(np.asarray(sl_lid, dtype=np.int64).clip(-2, 1 << 30).astype(np.int32))
            ent_port.append(np.asarray(sl_port, dtype=np.int64).clip(-2, 1 << 30).astype(np.int32))
        line_base += len(starts)
    lines = np.concatenate(ent_line) if ent_line else np.zeros(0, np.int64)
    lids = np.concatenate(ent_lid) if ent_lid else np.zeros(0, np.int32)
    ports = np.concatenate(ent_port) if ent_port else np.zeros(0, np.int32)
    if len(ent_line) > 1 and np.any(lines[1:] < lines[:-1]):
        order = np.argsort(lines, kind="stable")
        lines, lids, ports = lines[order], lids[order], ports[order]
    hl = np.asarray([h[0] for h in headers], dtype=np.int64)
    if len(lines) and (not len(hl) or lines[0] < hl[0]):
        _bad(path, int(lines[0]) + 1, "LFT entry before any 'Unicast lids' header")
    # entries are in line order, so each header owns the run of entries up to the next header
    cuts = np.searchsorted(lines, hl)
    owner = np.repeat(np.arange(len(hl), dtype=np.int32), np.diff(np.append(cuts, len(lines))))
    uni_h = [h for h in headers if h[1] >= 0]
    if trailers and uni_h and uni_h[-1][0] > trailers[-1]:
        _bad(path, line_base, f"truncated: the table of switch {uni_h[-1][1]:#018x} (line {uni_h[-1][2]}) has no "
                              f"'N valid lids dumped' line, as every table before it has")
    if not any(g >= 0 for _, g, _ in headers):
        raise InputError("no 'Unicast lids' tables found (not a dump_fts/ibroute/opensm-lfts.dump file?)", path=path)
    hg = np.asarray([h[1] >= 0 for h in headers], dtype=bool)  # unicast block (GUIDs may not fit int64)
    if not hg.all():  # drop multicast blocks' entries (copies of every array: only when there are some)
        uni = hg[owner] if len(owner) else np.zeros(0, bool)
        lines, lids, ports, owner = lines[uni], lids[uni], ports[uni], owner[uni]
    # unsigned: one comparison per field catches both ends of its range
    bad = ((lids - 1).view(np.uint32) >= MAX_UNICAST_LID) | (ports.view(np.uint32) > 254)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        if lids[j] == -2:
            _bad(path, int(lines[j]) + 1, "malformed LFT entry (expected '0x<lid> <port>')")
        _bad(path, int(lines[j]) + 1, f"LID {int(lids[j]):#x} or port {int(ports[j])} out of range")
    t = Tables(path=path)
    seen: dict[int, int] = {}
    uh = [(k, g, ln) for k, (_, g, ln) in enumerate(headers) if g >= 0]
    for _, g, ln in uh:
        if g in seen:
            _bad(path, ln, f"switch {g:#018x} listed twice (first at line {seen[g]})")
        seen[g] = ln
    top = int(lids.max()) if len(lids) else 0
    mat = np.full((len(uh), top + 1), NO_ROUTE, dtype=np.uint8)
    row = np.full(len(headers), -1, dtype=np.int64)
    for r, (k, _, _) in enumerate(uh):
        row[k] = r
    mat[row[owner], lids] = ports.astype(np.uint8)
    for r, (_, g, ln) in enumerate(uh):
        t.lft[g] = mat[r]
        t.lines[g] = ln
        t.names[g] = names.get(g, "")
    return t


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
