"""The plan as the watcher reads it: what to call a device the fabric reports, which cable a port
is on (its permanent ID and printed labels, from `ibtool cabling`'s cables.csv), where its ends
are (rack and U), and the rate the plan gives it.

A device is named, in this order, by the site's node-name-map (`--node-name-map`, the file
OpenSM and the diags read), by the plan's GUID, by its NodeDescription (a plan's names are node
descriptions: ibsim carries them, and sites set them), else by its GUID. A cable is the set of its
two ends (device name, port), so a device replaced by one of another GUID but the same name keeps
its cables. Without a plan the watcher still names cables by their ends; IDs, labels, racks and
planned rates are then unknown (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ibtool.fabric import SWITCH

End = tuple[str, int]
_U = re.compile(r"^U(\d+)$")


def cable_key(a: End, b: End) -> frozenset:
    return frozenset((a, b))


def ends_of(key: frozenset) -> tuple[End, End]:
    """A cable's two ends in a stable order (the switch-side or lower name first)."""
    a, b = sorted(key, key=lambda e: (e[0], e[1])) if len(key) == 2 else (next(iter(key)),) * 2
    return a, b


def rack_u(at: str) -> tuple[str | None, int | None]:
    """'C0 U42 front' (as the cable list prints an end's place) -> ('C0', 42)."""
    rack = u = None
    for tok in at.split():
        m = _U.match(tok)
        if m:
            u = int(m.group(1))
        elif rack is None and tok not in ("front", "rear"):
            rack = tok
    return rack, u


@dataclass
class Where:
    """What a technician reads about one cable: its ID, both ends, their labels, racks and Us."""
    cable: str | None
    ends: tuple[End, End]
    labels: tuple[str | None, str | None]
    racks: tuple[str | None, str | None]
    us: tuple[int | None, int | None]
    rate: str | None  # the plan's

    def as_dict(self) -> dict:
        return {"cable": self.cable, "ends": [list(e) for e in self.ends], "labels": list(self.labels),
                "racks": list(self.racks), "us": list(self.us), "plan_rate": self.rate}

    def text(self) -> str:
        """'C0043 (R[1,0] P2, C0 U42 - S[0,1] P1, C0 U33)' or the ends alone."""
        def one(k):
            (d, p), r, u = self.ends[k], self.racks[k], self.us[k]
            place = " ".join(x for x in (r, f"U{u}" if u is not None else None) if x)
            return f"{d} P{p}" + (f", {place}" if place else "")
        return (f"{self.cable} " if self.cable else "") + f"({one(0)} - {one(1)})"


class PlanView:
    """Names, cables and places from a plan directory (or none)."""

    def __init__(self, plan: str | Path | None = None, node_name_map: str | Path | None = None):
        self.path = Path(plan).resolve() if plan else None
        self.node_name_map = Path(node_name_map).resolve() if node_name_map else None
        self.fabric = None
        self.dir: Path | None = None
        self.plan = None  # ibtool.plan.Plan
        self.cables = None  # verify.cables.CableList
        self.by_guid: dict[int, str] = {}
        self.planned: dict[frozenset, str | None] = {}  # planned cable -> its rate ("4xQDR")
        self.end_cable: dict[End, frozenset] = {}
        self.ports_of: dict[str, set[int]] = {}  # a device's planned cabled ports
        self.devices: dict[str, bool] = {}  # planned device -> is a switch
        self.place: dict[str, tuple[str | None, int | None]] = {}  # device -> (rack, U)
        if plan:
            from ibtool.plan import read_plan
            from ibtool.verify import cables
            f, self.plan, _ = read_plan(plan)
            self.dir = self.plan.dir
            self.fabric = f
            for i in range(f.num_nodes):
                self.by_guid[f.guids[i]] = f.names[i]
                self.devices[f.names[i]] = f.types[i] == SWITCH
            for li in range(f.num_links):
                k = cable_key((f.names[f.link_a[li]], f.link_pa[li]), (f.names[f.link_b[li]], f.link_pb[li]))
                self.planned[k] = f.link_rate[li]
                for e in k:
                    self.end_cable[e] = k
                    self.ports_of.setdefault(e[0], set()).add(e[1])
            found = self.plan.cable_list()
            if found:
                self.cables = cables.read(found)
                for c in self.cables.cables:
                    for end, at in ((c.a, c.a_at), (c.b, c.b_at)):
                        if at and end[0] not in self.place:
                            self.place[end[0]] = rack_u(at)
        if node_name_map:
            from ibtool.formats import node_name_map as nnm
            self.by_guid.update(nnm.read(node_name_map))

    # ------------------------------------------------------------------ names
    def name(self, guid: int, desc: str | None) -> str:
        return self.by_guid.get(guid) or (desc or "").strip() or f"{guid:#018x}"

    def cable_of(self, end: End):
        """The plan's Cable (cable list entry) with this end, if the plan has a cable list."""
        return self.cables.get(end) if self.cables else None

    def where(self, key: frozenset) -> Where:
        """A cable (two ends) as a technician finds it: the plan's cable if it is one, else by
        its ends (their devices' racks and Us where the plan places them)."""
        a, b = ends_of(key)
        c = self.cable_of(a) or self.cable_of(b)
        planned = c is not None and {c.a, c.b} == {a, b}
        if planned:
            a, b = c.a, c.b
        racks, us, labels = [], [], []
        for e in (a, b):
            if planned:
                r, u = rack_u(c.at(e))
            else:
                r, u = self.place.get(e[0], (None, None))
            racks.append(r)
            us.append(u)
            labels.append((c.a_label if e == c.a else c.b_label) if planned else None)
        return Where(c.id if planned else None, (a, b), tuple(labels), tuple(racks), tuple(us),
                     self.planned.get(cable_key(a, b)))

    def device_place(self, device: str) -> tuple[str | None, int | None]:
        return self.place.get(device, (None, None))

    def home(self, end: End) -> frozenset | None:
        """The planned cable this end belongs to."""
        return self.end_cable.get(end)
