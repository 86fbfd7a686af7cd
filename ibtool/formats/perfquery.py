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
# The PortCounters attribute's counters (IBA vol. 1, PortCounters) and their widths in bits, as
# perfquery names them and ibsim's PerformanceSet sets them
PORT_COUNTERS = {
    "SymbolErrorCounter": 16, "LinkErrorRecoveryCounter": 8, "LinkDownedCounter": 8, "PortRcvErrors": 16,
    "PortRcvRemotePhysicalErrors": 16, "PortRcvSwitchRelayErrors": 16, "PortXmitDiscards": 16,
    "PortXmitConstraintErrors": 8, "PortRcvConstraintErrors": 8, "LocalLinkIntegrityErrors": 4,
    "ExcessiveBufferOverrunErrors": 4, "VL15Dropped": 16, "PortXmitData": 32, "PortRcvData": 32,
    "PortXmitPkts": 32, "PortRcvPkts": 32, "PortXmitWait": 32,
}


def check_counter(name, value, where: str) -> int:
    """A value to set a PortCounters counter to: a known counter name, a whole number within its
    width (ibsim would skip an unknown name and an out-of-range value, saying so only on its
    console). InputError naming `where` otherwise."""
    if name not in PORT_COUNTERS:
        raise InputError(f"{where}: {name!r} is not a PortCounters counter (known: {', '.join(PORT_COUNTERS)})")
    top = (1 << PORT_COUNTERS[name]) - 1
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        raise InputError(f"{where}: {name} {str(value)[:40]} is not a whole number 0..{top} "
                         f"(a {PORT_COUNTERS[name]}-bit counter)")
    return value


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
