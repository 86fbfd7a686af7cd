"""Cable IDs that never move: the plan's record of every cable's ID and wiring stage.

`PLAN/cable-ids.json` is written by `ibtool cabling` (the first time it numbers a plan, and each
time after) and by `ibtool cabling import` (from the edited cable list). A re-plan keeps every
existing cable's ID (and so its labels) and stage, whatever else changed; a cable the plan gains
gets the next free ID; a cable it loses is retired, and a retired ID is never given again.

    {"format": "ibtool-cable-ids/1", "width": 4, "next": 109, "sm_host": "H[0,0]",
     "stages": ["the SM host H[0,0]'s cable; ...", ...],
     "cables": [["C0001", 1, "H[0,0]", 1, "R[0,0]", 1], ...],        # ID, stage, both ends
     "retired": [["C0042", 2, "R[1,0]", 2, "S[0,1]", 1], ...]}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ibtool.errors import InputError
from ibtool.formats import atomic_write, read_tagged_json

FORMAT = "ibtool-cable-ids/1"
_ID = re.compile(r"^C(\d+)$")


def ends_key(a: tuple[str, int], b: tuple[str, int]) -> frozenset:
    """A cable by its two ends (device name, port), whichever is listed first."""
    return frozenset((a, b))


def number(cable_id: str) -> int | None:
    """C0042 -> 42 (None for an ID of another form, which a site may use)."""
    m = _ID.match(cable_id)
    return int(m.group(1)) if m else None


@dataclass
class CableIds:
    """cable (ends_key) -> (ID, stage); the stages' names; retired cables; the next free number."""
    cables: dict = field(default_factory=dict)
    stages: list[str] = field(default_factory=list)
    retired: list[list] = field(default_factory=list)  # [ID, stage, a, port, b, port]
    next: int = 1
    width: int = 4
    sm_host: str | None = None

    def taken(self) -> set[str]:
        return {c for c, _ in self.cables.values()} | {r[0] for r in self.retired}

    def new_id(self) -> str:
        cid = f"C{self.next:0{self.width}d}"
        self.next += 1
        return cid

    def to_dict(self) -> dict:
        cables = sorted(((cid, st, *sorted(k)[0], *sorted(k)[1]) for k, (cid, st) in self.cables.items()),
                        key=lambda c: (c[1], number(c[0]) or 0, c[0]))
        return {"format": FORMAT, "width": self.width, "next": self.next, "sm_host": self.sm_host,
                "stages": self.stages, "cables": [list(c) for c in cables], "retired": self.retired}


def read(path: Path) -> CableIds | None:
    """The plan's cable IDs, or None when the plan has none yet."""
    if not path.is_file():
        return None
    d = read_tagged_json(path, FORMAT, "a cable ID record")
    try:
        out = CableIds(stages=[str(s) for s in d["stages"]], next=int(d["next"]), width=int(d["width"]),
                       sm_host=d.get("sm_host"), retired=[list(r) for r in d.get("retired", [])])
        for cid, st, a, pa, b, pb in d["cables"]:
            out.cables[ends_key((str(a), int(pa)), (str(b), int(pb)))] = (str(cid), int(st))
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"malformed cable ID record: {e}", path=str(path)) from None
    return out


def write(ids: CableIds, path: Path) -> None:
    with atomic_write(path) as fh:
        fh.write(json.dumps(ids.to_dict(), separators=(",", ":")))  # dumps: C's encoder
        fh.write("\n")
