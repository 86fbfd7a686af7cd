"""Linear forwarding tables as dump_fts, ibroute and OpenSM's opensm-lfts.dump print them, and
the LFT file that OpenSM's `file` routing engine loads (`-R file -U FILE`).

    Unicast lids [0x0-0x4] of switch DR path slid 0; dlid 0; 0,3 guid 0x0002c90000000102 (sw2):
      Lid  Out   Destination
           Port     Info
    0x0001 004 : (Switch portguid 0x0002c90000000101: 'router-0-0')
    3 valid lids dumped

Tables are kept as one uint8 array per switch (index = LID, 255 = no route), keyed by the
switch's node GUID.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ibtool.errors import InputError
from ibtool.formats import atomic_write

NO_ROUTE = 255
_HEADER = re.compile(rb"^Unicast lids \[[^\]]*\] of switch .*?guid (0x[0-9a-fA-F]+)")
_ENTRY = re.compile(rb"^(0x[0-9a-fA-F]+)\s+(\d+)")


@dataclass
class Tables:
    lft: dict[int, np.ndarray] = field(default_factory=dict)  # switch GUID -> ports by LID
    names: dict[int, str] = field(default_factory=dict)

    @property
    def max_lid(self) -> int:
        return max((len(a) - 1 for a in self.lft.values()), default=0)


def read(path: str | Path) -> Tables:
    t = Tables()
    cur: np.ndarray | None = None
    cur_guid = 0
    entries: list[tuple[int, int]] = []

    def close():
        if cur_guid:
            top = max((lid for lid, _ in entries), default=0)
            arr = np.full(top + 1, NO_ROUTE, dtype=np.uint8)
            if entries:
                e = np.asarray(entries, dtype=np.int64)
                arr[e[:, 0]] = e[:, 1]
            t.lft[cur_guid] = arr

    try:
        fh = open(path, "rb")
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror}", path=str(path)) from None
    seen_header = False
    with fh:
        for ln, line in enumerate(fh, 1):
            s = line.lstrip()
            if s.startswith(b"0x"):
                m = _ENTRY.match(s)
                if not m or not seen_header:
                    raise InputError(f"malformed LFT entry {line[:40].decode(errors='replace')!r}"
                                     if seen_header else "LFT entry before any 'Unicast lids' header",
                                     path=str(path), line=ln)
                lid, port = int(m.group(1), 16), int(m.group(2))
                if not 0 < lid <= 0xBFFF or port > 254:
                    raise InputError(f"LID {lid:#x} or port {port} out of range", path=str(path), line=ln)
                entries.append((lid, port))
                continue
            if s.startswith(b"Unicast lids"):
                m = _HEADER.match(s)
                if not m:
                    raise InputError("malformed 'Unicast lids' header", path=str(path), line=ln)
                close()
                seen_header = True
                cur_guid = int(m.group(1), 16)
                if cur_guid in t.lft:
                    raise InputError(f"switch {cur_guid:#018x} listed twice", path=str(path), line=ln)
                nm = re.search(rb"\((?:')?([^()']*)(?:')?\):\s*$", s)
                t.names[cur_guid] = nm.group(1).decode(errors="replace") if nm else ""
                entries = []
                continue
            if s.startswith((b"Multicast", b"#")) or not s.strip() or b"lids dumped" in s \
                    or s.startswith((b"Lid", b"Port")):
                continue
            raise InputError(f"unrecognised line {line[:60].decode(errors='replace')!r}", path=str(path), line=ln)
    close()
    if not t.lft:
        raise InputError("no 'Unicast lids' tables found (not a dump_fts/ibroute/opensm-lfts.dump file?)",
                         path=str(path))
    return t


def write_file_engine(tables: Tables, path: str | Path, port_guids: dict[int, int] | None = None) -> None:
    """Write tables for OpenSM's `file` engine: every switch, every LID, newline-terminated.

    `port_guids` (LID -> port GUID) adds ` portguid 0x...` so OpenSM remaps LIDs that moved.
    """
    with atomic_write(path) as fh:
        for guid in sorted(tables.lft):
            arr = tables.lft[guid]
            name = tables.names.get(guid, "")
            fh.write(f"Unicast lids [0x0-{len(arr) - 1:#x}] of switch Lid 0 guid {guid:#018x} ('{name}'):\n")
            lines = []
            for lid in np.nonzero(arr != NO_ROUTE)[0]:
                pg = (port_guids or {}).get(int(lid))
                tail = f" portguid {pg:#018x}" if pg else ""
                lines.append(f"{int(lid):#06x} {int(arr[lid]):03d}{tail}\n")
            fh.write("".join(lines))
