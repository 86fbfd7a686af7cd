"""Port counters as infiniband-diags prints them.

`perfquery LID PORT[,PORT...]` (one block per port):

    # Port counters: Lid 1 port 2 (CapMask: 0x1300)
    PortSelect:......................2
    CounterSelect:...................0x0000
    SymbolErrorCounter:..............250
    ...

and `ibqueryerrors` (only ports beyond the thresholds):

    Errors for 0x2c90000000130 "S[0,0]"
       GUID 0x2c90000000130 port 2: [SymbolErrorCounter == 250] [LinkDownedCounter == 3]

`read` returns {(lid, port): {counter: value}} for perfquery output and `read_ibqueryerrors`
{(guid, port): {counter: value}}; malformed numbers are InputErrors naming file:line.
"""

from __future__ import annotations

import re
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import open_input

_BLOCK = re.compile(r"^# Port (?:extended )?counters: Lid (\d+) port (\d+)")
_VALUE = re.compile(r"^([A-Za-z][A-Za-z0-9]*):\.*\s*(\S+)\s*$")
_IBQE = re.compile(r"^\s*GUID (0x[0-9a-fA-F]+) port (\d+|ALL):\s*(.*)$")
_IBQE_ITEM = re.compile(r"\[([A-Za-z0-9]+) == (\d+)\]")
# Counters PortSelect/CounterSelect are the query's own fields, not counters.
_NOT_COUNTERS = {"PortSelect", "CounterSelect", "CounterSelect2"}


def parse(text: str, path: str = "perfquery output") -> dict[tuple[int, int], dict[str, int]]:
    out: dict[tuple[int, int], dict[str, int]] = {}
    cur: dict[str, int] | None = None
    for ln, line in enumerate(text.splitlines(), 1):
        m = _BLOCK.match(line)
        if m:
            lid, port = int(m.group(1)), int(m.group(2))
            if not (0 < lid <= 0xFFFF and 0 <= port <= 255):
                raise InputError(f"LID {lid} port {port} out of range", path=path, line=ln)
            cur = out.setdefault((lid, port), {})
            continue
        m = _VALUE.match(line)
        if m and cur is not None:
            key, val = m.groups()
            if key in _NOT_COUNTERS:
                continue
            try:
                cur[key] = int(val, 0)
            except ValueError:
                raise InputError(f"{key}: not a counter value: {val!r}", path=path, line=ln) from None
    return out


def read(path: str | Path) -> dict[tuple[int, int], dict[str, int]]:
    with open_input(path) as fh:
        return parse(fh.read(), str(path))


def read_ibqueryerrors(path: str | Path) -> dict[tuple[int, int], dict[str, int]]:
    out: dict[tuple[int, int], dict[str, int]] = {}
    with open_input(path) as fh:
        for ln, line in enumerate(fh, 1):
            m = _IBQE.match(line)
            if not m or m.group(2) == "ALL":
                continue
            guid = int(m.group(1), 16)
            if guid >= 2 ** 64:
                raise InputError(f"GUID {m.group(1)} is longer than 64 bits", path=str(path), line=ln)
            items = {k: int(v) for k, v in _IBQE_ITEM.findall(m.group(3))}
            out.setdefault((guid, int(m.group(2))), {}).update(items)
    return out
