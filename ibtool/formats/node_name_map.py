"""infiniband-diags' node-name-map: `<node GUID> "<name>"` per line (`--node-name-map FILE`)."""

from __future__ import annotations

import re
from pathlib import Path

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.formats import as_int, atomic_write, check_guid, open_input

_LINE = re.compile(r'^\s*(0x[0-9a-fA-F]+|[0-9]+)\s+"?([^"]*?)"?\s*$')


def write(fabric: Fabric, path: str | Path) -> None:
    with atomic_write(path) as fh:
        fh.write(f"# node-name-map for {fabric.name}: node GUID -> name (infiniband-diags --node-name-map)\n")
        fh.write("".join(f'{g:#018x} "{n}"\n' for g, n in zip(fabric.guids, fabric.names)))


def read(path: str | Path) -> dict[int, str]:
    out: dict[int, str] = {}
    with open_input(path) as fh:
        lines = fh.read().splitlines()
    for ln, line in enumerate(lines, 1):
        s = line.split("#", 1)[0].strip() if not line.lstrip().startswith('"') else line.strip()
        if not s:
            continue
        m = _LINE.match(s)
        if not m:
            raise InputError(f"expected '<guid> \"<name>\"', got {line[:60]!r}", path=str(path), line=ln)
        g = m.group(1)
        out[check_guid(int(g, 16) if g.startswith("0x") else as_int(g, str(path), ln), str(path), ln)] = m.group(2)
    return out
