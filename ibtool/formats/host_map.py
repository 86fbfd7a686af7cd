"""A site's host map for `verify topology --host-map`: which host (or GUID) each planned device is.

One device a line, `#` starts a comment; names with spaces in double quotes:

    # plan name   host name, node description, or node/port GUID
    H[0,0]        node018
    H[0,1]        "node019 HCA-1"
    R[0,0]        0x0002c90300a1b2c0
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import open_input


class HostMap(dict):
    """plan name -> host; `line` says where each entry was (for messages naming file:line)."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path
        self.line: dict[str, int] = {}

    def check_plan(self, plan_names) -> None:
        """Every mapped name must be a device of the plan (a typo would silently identify nothing)."""
        known = set(plan_names)
        for name in self:
            if name not in known:
                raise InputError(f"{name!r} is not a device of the plan", path=self.path, line=self.line[name])


def read(path: str | Path) -> HostMap:
    out = HostMap(str(path))
    first = out.line
    with open_input(path) as fh:
        for ln, line in enumerate(fh, 1):
            try:
                words = shlex.split(line, comments=True)
            except ValueError as e:
                raise InputError(f"{e}: {line.strip()[:60]!r}", path=str(path), line=ln) from None
            if not words:
                continue
            if len(words) != 2:
                raise InputError(f"expected '<plan name> <host, description or GUID>', got {line.strip()[:60]!r}",
                                 path=str(path), line=ln)
            name, host = words
            if name in out:
                raise InputError(f"{name} mapped twice (first at line {first[name]})", path=str(path), line=ln)
            if host.lower().startswith("0x"):
                try:
                    int(host, 16)
                except ValueError:
                    raise InputError(f"not a GUID: {host!r}", path=str(path), line=ln) from None
            out[name] = host
            first[name] = ln
    return out
