"""Verification in the cabling crew's words: cable IDs, labels and wiring stages.

When the plan has a cable list (`ibtool cabling` writes PLAN/cabling/cables.csv), every finding
of `verify topology` that concerns a planned cable is given that cable's ID and labels, and moves
read as a technician would say them:

    C0043 (S[0,1] P1 -> R[1,0] P2) is in S[0,1] port 2: move it to port 1

`--stage N` checks a fabric cabled up to wiring stage N: the plan is cut to the cables of stages
1..N; cables of later stages already there are "cabled ahead of its stage", never an action
(neither "extra: remove" nor a host that "belongs on nothing"); a planned cable the discovery could not see (an end on a device it did not find, or in
a piece of the fabric not connected to the one discovered) is "not checked" and fails the check
(exit 1), never counted as right. `ibtool cabling` orders the stages so that the fabric grows
from the SM host as one piece: discover from it (cabling.json names it).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ibtool.errors import InputError
from ibtool.fabric import Fabric
from ibtool.verify.topology import host_text


@dataclass
class Cable:
    id: str
    stage: int
    a: tuple[str, int]
    b: tuple[str, int]
    a_label: str
    b_label: str
    a_at: str = ""  # where the end is: "C0 U42 front"
    b_at: str = ""

    def at(self, end: tuple[str, int]) -> str:
        return self.a_at if end == self.a else self.b_at


class CableList(dict):
    """(device, port) -> Cable, for both ends of every cable; `.cables` in wiring order; the SM
    host stages are discovered from (cabling.json beside the list), when known."""

    def __init__(self, cables: list[Cable], path: str, sm_host: str | None = None):
        super().__init__()
        self.cables = cables
        self.path = path
        self.sm_host = sm_host
        for c in cables:
            self[c.a] = c
            self[c.b] = c

    @property
    def stages(self) -> int:
        return max((c.stage for c in self.cables), default=0)


def _at(row: dict, tag: str) -> str:
    """'C0 U42 front' from a row's end (what a technician walks to); '' when the list lacks it."""
    rack, u, side = ((row.get(f"{tag}_{k}", "") or "").strip() for k in ("rack", "u", "side"))
    return " ".join(x for x in (rack, f"U{int(u):02d}" if u.isdigit() else "", side) if x)  # as the sheets print it


def read(path: Path) -> CableList:
    from ibtool.cabling.cables_csv import read_meta, read_rows
    p = str(path)
    cables = []
    need = ("cable_id", "stage", "a_device", "a_port", "b_device", "b_port", "a_label", "b_label")
    try:
        rows = read_rows(path, need)
    except InputError as e:
        if "missing column" in str(e):
            raise InputError(f"{str(e).split(': ', 1)[-1].split(' (')[0]} (not a cables.csv of `ibtool cabling`?)",
                             path=p, line=1) from None
        raise
    for line, row in rows:
        try:
            cables.append(Cable(row["cable_id"], int(row["stage"]), (row["a_device"], int(row["a_port"])),
                                (row["b_device"], int(row["b_port"])), row["a_label"], row["b_label"],
                                _at(row, "a"), _at(row, "b")))
        except (TypeError, ValueError):
            raise InputError("stage or port is not a whole number", path=p, line=line) from None
    meta = {}
    try:
        meta = read_meta(Path(path).with_name("cabling.json"))
    except InputError:
        pass  # the list alone still names the cables
    return CableList(cables, p, meta.get("sm_host"))


def stage_plan(plan: Fabric, cables: CableList, stage: int) -> tuple[Fabric, set]:
    """The plan cut to the cables of wiring stages 1..stage (every device kept, so a device of a
    later stage that is already there is still known by its name). Returns it and the set of later
    cables (as frozensets of (device, port))."""
    if not 1 <= stage <= cables.stages:
        raise InputError(f"--stage {stage}: the cable list {cables.path} has stages 1..{cables.stages}")
    keep = {frozenset((c.a, c.b)) for c in cables.cables if c.stage <= stage}
    later = {frozenset((c.a, c.b)) for c in cables.cables if c.stage > stage}
    n = plan.names
    links = [li for li in range(plan.num_links)
             if frozenset(((n[plan.link_a[li]], plan.link_pa[li]), (n[plan.link_b[li]], plan.link_pb[li]))) in keep]
    nodes = range(plan.num_nodes)
    out = Fabric(f"{plan.name} (stages 1..{stage})")
    out.params = plan.params
    new = {}
    for i in nodes:
        new[i] = out.add_node(plan.types[i], n[i], plan.nports[i], plan.roles[i], plan.labels[i], plan.guids[i])
    for li in links:
        out.add_link(new[plan.link_a[li]], new[plan.link_b[li]], plan.link_pa[li], plan.link_pb[li],
                     plan.link_rate[li])
    return out, later


def _end(short: str) -> tuple[str, int] | None:
    """'R[1,0][2]' (the report's short form of an end) -> ('R[1,0]', 2)."""
    name, sep, port = short.rpartition("[")
    if not sep or not port.endswith("]") or not port[:-1].isdigit():
        return None
    return name, int(port[:-1])


def _tag(c: Cable) -> str:
    return f"{c.id} ({c.a[0]} P{c.a[1]} -> {c.b[0]} P{c.b[1]})"


def not_checked(rep, plan: Fabric, cables: CableList, stage: int) -> None:
    """A stage check sees only what the discovery reached: the planned cables it could not see
    (an end on a device not found, or in a piece of the stage's fabric not connected to the
    discovered one) go into `rep.not_checked`, which fails the check; devices of pieces not
    reached move there too (devices the discovery should have reached stay missing)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    n = plan.num_nodes
    g = coo_matrix(([1] * plan.num_links, (plan.link_a, plan.link_b)), shape=(n, n))
    _, comp = connected_components(g, directed=False)
    reached = {int(comp[i]) for i in rep.to_plan.values()}
    how = (f"discover from the SM host {cables.sm_host} after stage {stage}" if cables.sm_host else
           "discover from a host of that part of the fabric")

    def far(name: str) -> bool:
        try:
            return int(comp[plan.index(name)]) not in reached
        except InputError:
            return False

    cabled = set(plan.link_a) | set(plan.link_b)
    keep = []
    for d in rep.missing_devices:
        if plan.index(d["device"]) not in cabled:
            continue  # no cable of it yet by this stage: not expected
        if far(d["device"]):
            rep.not_checked.append({"device": d["device"], "text": f"{d['device']} not checked: not connected to the "
                                                                  f"part of the fabric discovered ({how})"})
        else:
            keep.append(d)
    rep.missing_devices = keep
    unseen = {d["device"] for d in rep.missing_devices} | {x["device"] for x in rep.not_checked}
    keep = []
    for c in rep.missing_cables:
        ends = [_end(e) for e in c["ends"]]
        (rep.unseen if ends[0] and far(ends[0][0]) else keep).append(c)
    rep.missing_cables = keep
    for c in rep.unseen:
        ends = [_end(e) for e in c["ends"]]
        cab = cables.get(ends[0]) if ends[0] else None
        dev = next((e[0] for e in ends if e and e[0] in unseen), ends[0][0] if ends[0] else "")
        item = {"ends": c["ends"], "text": f"{_tag(cab) if cab else c['cable']} not checked: {dev} was not seen "
                                          f"by this discovery ({how})"}
        if cab is not None:
            item["cable_id"], item["labels"] = cab.id, [cab.a_label, cab.b_label]
        rep.not_checked.append(item)
    if rep.not_planned_topology:  # judged again on the pieces the discovery reached
        cables_n = sum(1 for a in plan.link_a if int(comp[a]) in reached)
        nodes = sum(1 for c in comp if int(c) in reached)
        if rep.correct_cables >= 0.5 * cables_n and len(rep.to_plan) >= 0.5 * nodes:
            rep.not_planned_topology, rep.reason = False, ""


def ahead_of_stage(rep, cables: CableList, later: set) -> list[dict]:
    """Take the cables and devices of later stages that are already cabled out of a stage check's
    TopologyReport (they are not errors) and return them as `ahead_of_plan` findings."""
    ahead, keep = [], []
    for x in rep.extra_cables:
        ends = [_end(e) for e in x["ends"]]
        if all(ends) and frozenset(ends) in later:
            c = cables[ends[0]]
            ahead.append({"cable_id": c.id, "stage": c.stage, "labels": [c.a_label, c.b_label],
                          "text": f"{_tag(c)}: cabled ahead of its stage (stage {c.stage}); leave it"})
        else:
            keep.append(x)
    rep.extra_cables = keep
    later_devices = {e[0] for pair in later for e in pair}
    dev_keep = []
    for d in rep.extra_devices:
        if d["device"] in later_devices:
            ahead.append({"device": d["device"], "text": f"{d['device']}: cabled ahead of its stage (a device of a "
                                                        f"later stage); leave it"})
        else:
            dev_keep.append(d)
    rep.extra_devices = dev_keep
    # a planned host whose cable is of a later stage: the cut plan leaves its port free, but the
    # cable there is that later cable (said above), never a "move device"; cabled elsewhere, the
    # host belongs where its later cable goes, never "on nothing"
    def belongs(port: str, want: str) -> str:
        c = cables.get(_end(port))
        if c is None or frozenset((c.a, c.b)) not in later:
            return want
        far = c.b if c.a == _end(port) else c.a
        return f"{far[0]} port {far[1]} ({c.id}, stage {c.stage})"

    host_keep = []
    for m in rep.misplaced_devices:
        rest = [(now, belongs(port, want), port) for now, want, port in zip(m["is_on"], m["belongs_on"], m["ports"])
                if frozenset((_end(port), _long_end(now))) not in later]
        if rest:
            now, want, ports = (list(x) for x in zip(*rest))
            host_keep.append(dict(m, is_on=now, belongs_on=want, ports=ports,
                                  text=host_text(m["who"], now, want)))
    rep.misplaced_devices = host_keep
    return ahead


def _long_end(s: str) -> tuple[str, int] | None:
    """'R[0,1] port 1' (a report's long form of an end) -> ('R[0,1]', 1)."""
    name, sep, port = s.rpartition(" port ")
    return (name, int(port)) if sep and port.isdigit() else None


def annotate(t: dict, cables: CableList) -> dict:
    """Add cable IDs and labels to a `verify topology` section (TopologyReport.as_dict), in place,
    and say every fix where the technician stands: rack, U and side of each port ("C0 U42 front,
    R[0,0] port 2"). A swapped pair is fixed by the labels: each of the two cables goes back to
    the link its labels name (so a short cable never lands on a long run)."""
    where: dict[str, str] = {}
    for c in cables.cables:
        where.setdefault(c.a[0], c.a_at)
        where.setdefault(c.b[0], c.b_at)

    def cable_at(short: str) -> Cable | None:
        e = _end(short)
        return cables.get(e) if e else None

    def loc(e: tuple[str, int]) -> str:
        at = where.get(e[0])
        return f"{at}, {e[0]} port {e[1]}" if at else f"{e[0]} port {e[1]}"

    def run(c: Cable) -> str:
        return f"{loc(c.a)} to {loc(c.b)}"

    def add(item: dict, c: Cable | None, text: str | None = None):
        if c is None:
            return
        item["cable_id"], item["labels"] = c.id, [c.a_label, c.b_label]
        item["text"] = text or f"{_tag(c)}: {item['text']}"

    renamed: dict[str, str] = {}  # a fix said anew -> the miswired cables it fixes say it the same way
    for fx in t.get("fixes", []):
        before = fx["fix"]
        hosts = f"hosts {' and '.join(fx['hosts'])} are swapped: " if fx.get("hosts") and len(fx["hosts"]) == 2 \
            else (f"{', '.join(fx['hosts'])} on the wrong port: " if fx.get("hosts") else "")
        if fx["kind"] == "move":
            c = cable_at(fx["to"])
            frm, to = _end(fx["from"]), _end(fx["to"])
            if c and frm and to:
                fx["fix"] = f"move the end of {c.id} from {loc(frm)} to {loc(to)}"
                fx["where"] = [loc(frm), loc(to)]
                add(fx, c, f"{hosts}{_tag(c)} is in {loc(frm)}: move it to {loc(to)}")
        elif fx["kind"] == "swap":
            cs = [cable_at(e) for e in fx["ends"]]
            ends = [_end(e) for e in fx["ends"]]
            if all(cs) and all(ends):
                fx["cable_id"] = [c.id for c in cs]
                fx["labels"] = [[c.a_label, c.b_label] for c in cs]
                fx["where"] = [loc(e) for e in ends]
                fx["fix"] = (f"put {cs[0].id} and {cs[1].id} each back on its own link, as its labels say: "
                             f"{cs[0].id} {run(cs[0])}; {cs[1].id} {run(cs[1])}")
                fx["text"] = (f"{hosts}{cs[0].id} and {cs[1].id} are swapped, crossed at {loc(ends[0])} and "
                              f"{loc(ends[1])}: {fx['fix']}")
        renamed[before] = fx["fix"]
    fixes = {id_ for fx in t.get("fixes", []) for id_ in
             ([fx["cable_id"]] if isinstance(fx.get("cable_id"), str) else fx.get("cable_id") or [])}
    for m in t.get("miswired", []):
        m["fix"] = renamed.get(m["fix"], m["fix"])
        c = cable_at(m["port"])
        add(m, c, c and f"{_tag(c)} is wrong (now {m['cable']}); it belongs {run(c)}"
            + (" (see its fix)" if c.id in fixes else ""))
    for item in t.get("missing_cables", []):
        c = cable_at(item["ends"][0])
        add(item, c, c and f"{_tag(c)} is missing: connect {run(c)}")
    for key in ("degraded_links", "rate_mismatches"):
        for item in t.get(key, []):
            c = cable_at(item["ends"][0])
            add(item, c, c and f"{_tag(c)} ({run(c)}): {item['text']}")
    t["cable_list"] = cables.path
    return t
