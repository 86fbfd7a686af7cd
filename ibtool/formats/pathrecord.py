"""Path SLs from `saquery -p` (infiniband-diags): the SA's PathRecords, one block each:

    PathRecord dump:
    		service_id..............0x0000000000000000
    		dlid....................20
    		slid....................5
    		...
    		sl......................0x6

Engines that spread routes over virtual lanes (dfsssp, lash, nue, torus-2QoS) hand each path its
SL through the SA; with the SL2VL tables that gives the VL of every hop. The result maps
(source LID, destination LID) to the SL.
"""

from __future__ import annotations

import re
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import open_input

_FIELD = re.compile(r"^\s*(\w+)\.{2,}(\S+)\s*$")
MAX_UNICAST_LID = 0xBFFF


class PathSLs(dict):
    """(slid, dlid) -> SL (0..15); `path` the file it came from."""

    path: str | None = None


def read(path: str | Path) -> PathSLs:
    path = str(path)
    out = PathSLs()
    out.path = path
    rec: dict[str, tuple[str, int]] = {}

    def close(ln: int) -> None:
        if not rec:
            return
        missing = [k for k in ("slid", "dlid", "sl") if k not in rec]
        if missing:
            raise InputError(f"PathRecord without {', '.join(missing)}", path=path, line=ln)
        vals = {}
        for k in ("slid", "dlid", "sl"):
            text, at = rec[k]
            try:
                vals[k] = int(text, 0)
            except ValueError:
                raise InputError(f"{k} {text!r} is not a number", path=path, line=at) from None
        if not 0 <= vals["sl"] <= 15:
            raise InputError(f"SL {vals['sl']} out of range 0..15", path=path, line=rec["sl"][1])
        for k in ("slid", "dlid"):
            if not 0 <= vals[k] <= MAX_UNICAST_LID:
                raise InputError(f"{k} {vals[k]} out of the unicast range", path=path, line=rec[k][1])
        if vals["slid"] and vals["dlid"]:  # the SA pads a table with empty records (LID 0)
            out[(vals["slid"], vals["dlid"])] = vals["sl"]
        rec.clear()

    fh = open_input(path)
    ln = 0
    with fh:
        for ln, raw in enumerate(fh, 1):
            s = raw.strip()
            if not s or s.startswith(("ibwarn", "#")):
                continue
            if s == "PathRecord dump:":
                close(ln)
                continue
            m = _FIELD.match(raw)
            if m and m.group(1) in ("slid", "dlid", "sl"):
                rec[m.group(1)] = (m.group(2), ln)
            elif not m:
                raise InputError(f"unrecognised line {s[:60]!r} (not `saquery -p` output?)", path=path, line=ln)
    close(ln)
    if not out:
        raise InputError("no PathRecords with LIDs found (not `saquery -p` output?)", path=path)
    return out


def write(sls: dict, path: str | Path) -> None:
    """(SLID, DLID) -> SL as `saquery -p` prints PathRecords (the fields the reader takes), by
    destination then source LID."""
    from ibtool.formats import atomic_write
    with atomic_write(path) as fh:
        for (s, d) in sorted(sls, key=lambda k: (k[1], k[0])):
            fh.write(f"PathRecord dump:\n\t\tdlid....................{d}\n\t\tslid....................{s}\n"
                     f"\t\tsl......................{sls[(s, d)]:#x}\n")
