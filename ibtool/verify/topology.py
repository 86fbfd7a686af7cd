"""Plan vs. discovered: every difference explained as a technician's action (`verify topology`).

The devices are first matched (`ibtool.verify.matching`: by identity where the plan and the fabric
share one, by structure where not); then the cables are diffed in plan terms and each difference
explained: move one end (a cable in the wrong port whose right port is free), swap two ends (a
swapped pair), add a missing cable, remove an extra one; devices not found; loopback cables and
devices the dump saw only as peers; links below the plan's rate (or both ends' capability) and
links whose ends report different rates.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ibtool.errors import NotChecked
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.verify.matching import Matching, host_map_nodes, match

SPEEDS = ["SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR"]
_RATE = re.compile(r"^(\d+)x(\w+)$")


def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """'4xEDR' -> (4, index of EDR); None when unknown."""
    if not rate:
        return None
    m = _RATE.match(rate)
    if not m:
        return None
    sp = m.group(2).upper()
    return int(m.group(1)), (SPEEDS.index(sp) if sp in SPEEDS else -1)


# which findings fail which `--fail-on` category, and the exit status of each verdict
CATEGORIES = {
    "miswire": ("miswired", "extra_cables", "extra_devices", "loopbacks"),
    "missing": ("missing_cables", "missing_devices", "partial_discovery", "not_checked"),
    "degraded": ("degraded_links", "rate_mismatches"),
}
EXIT_MISWIRED = 1  # cabling differs from the plan (miswired, missing, extra, not the planned topology)
EXIT_DEGRADED = 4  # cabled as planned, but links run below their rate


@dataclass
class TopologyReport:
    plan_name: str
    found_name: str
    planned: dict
    found: dict
    method: str = ""
    anchors: int = 0
    identities: dict = field(default_factory=dict)
    matched_devices: int = 0
    correct_cables: int = 0
    not_planned_topology: bool = False
    reason: str = ""
    miswired: list[dict] = field(default_factory=list)  # one entry per wrongly placed cable
    fixes: list[dict] = field(default_factory=list)  # one per action: a move or a swap
    misplaced_devices: list[dict] = field(default_factory=list)  # identified hosts not where planned
    missing_cables: list[dict] = field(default_factory=list)
    extra_cables: list[dict] = field(default_factory=list)
    missing_devices: list[dict] = field(default_factory=list)
    extra_devices: list[dict] = field(default_factory=list)
    loopbacks: list[dict] = field(default_factory=list)
    partial_discovery: list[dict] = field(default_factory=list)
    degraded_links: list[dict] = field(default_factory=list)
    rate_mismatches: list[dict] = field(default_factory=list)
    # planned cables (and devices) the discovery could not see: never counted as right (stage checks)
    not_checked: list[dict] = field(default_factory=list)
    fabric_rate: str | None = None
    warnings: list[str] = field(default_factory=list)
    device_names: dict = field(default_factory=dict)  # plan name -> discovered identity, when they differ
    unseen: list[dict] = field(default_factory=list, repr=False)  # planned cables on devices not found
    to_plan: dict = field(default_factory=dict, repr=False)  # the matching: discovered node -> plan node

    def failing(self, fail_on=tuple(CATEGORIES)) -> set[str]:
        """The `--fail-on` categories with findings."""
        out = {c for c in fail_on if any(getattr(self, k) for k in CATEGORIES[c])}
        if self.not_planned_topology and "miswire" in fail_on:
            out.add("miswire")
        return out

    def verdict(self, fail_on=tuple(CATEGORIES)) -> str:
        bad = self.failing(fail_on)
        if bad == {"missing"} and not any(getattr(self, k) for k in CATEGORIES["missing"] if k != "not_checked"):
            return "NOT CHECKED"  # all that was seen is right, but not all of it could be seen
        return "PASS" if not bad else ("MISWIRED" if bad - {"degraded"} else "DEGRADED")

    def exit_code(self, fail_on=tuple(CATEGORIES)) -> int:
        return {"PASS": 0, "MISWIRED": EXIT_MISWIRED, "NOT CHECKED": NotChecked.exit_code,
                "DEGRADED": EXIT_DEGRADED}[self.verdict(fail_on)]

    @property
    def ok(self) -> bool:
        return not self.failing()

    def _involved(self) -> dict:
        text = " ".join(x["text"] for lst in (self.miswired, self.missing_cables, self.extra_cables,
                                              self.missing_devices, self.loopbacks) for x in lst)
        return {name: ident for name, ident in sorted(self.device_names.items())
                if f"{name} port " in text or f"{name}[" in text}

    def as_dict(self, fail_on=tuple(CATEGORIES)) -> dict:
        return {
            "ok": not self.failing(fail_on), "verdict": self.verdict(fail_on), "fail_on": list(fail_on),
            "plan": self.planned, "discovered": self.found,
            "matching": {"method": self.method, "anchors": self.anchors, "matched_devices": self.matched_devices,
                         "identities": self.identities},
            "not_planned_topology": self.not_planned_topology, "reason": self.reason,
            "correct_cables": self.correct_cables,
            "counts": {"miswired_cables": len(self.miswired), "fixes": len(self.fixes),
                       "misplaced_devices": len(self.misplaced_devices),
                       "missing_cables": len(self.missing_cables), "extra_cables": len(self.extra_cables),
                       "missing_devices": len(self.missing_devices), "extra_devices": len(self.extra_devices),
                       "loopbacks": len(self.loopbacks), "partial_discovery": len(self.partial_discovery),
                       "degraded_links": len(self.degraded_links), "rate_mismatches": len(self.rate_mismatches),
                       "not_checked": len(self.not_checked)},
            "miswired": self.miswired, "fixes": self.fixes, "misplaced_devices": self.misplaced_devices,
            "missing_cables": self.missing_cables, "extra_cables": self.extra_cables,
            "missing_devices": self.missing_devices, "extra_devices": self.extra_devices,
            "loopbacks": self.loopbacks, "partial_discovery": self.partial_discovery,
            "degraded_links": self.degraded_links, "rate_mismatches": self.rate_mismatches,
            "not_checked": self.not_checked,
            "fabric_rate": self.fabric_rate, "warnings": self.warnings,
            # how the fabric itself calls the planned devices named in the findings
            "devices": self._involved(),
            # the short forms of the first version of this report (kept for scripts)
            "links_planned": self.planned["cables"], "links_found": self.found["cables"],
            "missing": [" <-> ".join(c["ends"]) for c in self.missing_cables],
            "extra": [" <-> ".join(c["ends"]) for c in self.extra_cables],
            "missing_nodes": [d["device"] for d in self.missing_devices],
            "extra_nodes": [d["device"] for d in self.extra_devices],
        }


def _counts(f: Fabric) -> dict:
    return {"switches": f.count(kind=SWITCH), "hcas": f.count(kind=CA), "cables": f.num_links}


def compare(plan: Fabric, found: Fabric, names: bool = False, host_map: dict[str, str] | None = None) -> TopologyReport:
    """Match `found` to `plan` and explain every difference (see the module docstring)."""
    rep = TopologyReport(plan.name, found.name, _counts(plan), _counts(found))
    rep.warnings = list(found.discovery.get("warnings", ()))
    m = match(plan, found, names, host_map)
    rep.method, rep.anchors, rep.identities = m.method, m.anchors, m.identities
    if host_map:
        known = set(host_map_nodes(found, host_map))
        rep.warnings += [f"host map: {n} -> {h!r} names no single device of the fabric"
                         for n, h in host_map.items() if n not in known]
    to_plan = rep.to_plan = m.to_plan
    rep.matched_devices = len(to_plan)
    to_found = {i: j for j, i in to_plan.items()}

    def ident(j: int) -> str:
        """How the technician finds a discovered device: its plan name, and what it calls itself."""
        i = to_plan.get(j)
        desc = found.names[j]
        g = f"{found.guids[j]:#018x}"
        if i is None:
            return f"unplanned device {desc!r} (GUID {g})"
        return plan.names[i] if desc == plan.names[i] else f"{plan.names[i]} (found as {desc!r}, GUID {g})"

    # ends in plan terms: ("p", plan node, port) or ("f", found node, port) for unmatched devices
    def fend(j: int, p: int):
        i = to_plan.get(j)
        return ("p", i, p) if i is not None else ("f", j, p)

    def end_name(e) -> str:
        kind, n, p = e
        if kind == "p":
            return f"{plan.names[n]} port {p}"
        return f"{found.names[n]} (GUID {found.guids[n]:#018x}, not in the plan) port {p}"

    P = {frozenset((("p", a, pa), ("p", b, pb))): li for li, (a, pa, b, pb) in
         enumerate(zip(plan.link_a, plan.link_pa, plan.link_b, plan.link_pb))}
    F: dict[frozenset, int] = {}
    for li, (a, pa_, b, pb) in enumerate(zip(found.link_a, found.link_pa, found.link_b, found.link_pb)):
        F[frozenset((fend(a, pa_), fend(b, pb)))] = li
    common = set(P) & set(F)
    rep.correct_cables = len(common)
    only_p = set(P) - common
    only_f = set(F) - common

    # devices
    missing_nodes = [i for i in range(plan.num_nodes) if i not in to_found]
    for i in missing_nodes:
        cables = sorted(end_name(e) for c in P if any(x[:2] == ("p", i) for x in c) for e in c if e[:2] != ("p", i))
        rep.missing_devices.append({"device": plan.names[i], "type": "switch" if plan.types[i] == SWITCH else "HCA",
                                    "cabled_to": cables,
                                    "text": f"{plan.names[i]} not found" + (f" (planned cables to {', '.join(cables)})"
                                                                             if cables else "")})
    for j in range(found.num_nodes):
        if j not in to_plan:
            nb = [f"{ident(k)} port {q}" for p, k, q in found.neighbors(j)]
            rep.extra_devices.append({"device": found.names[j], "guid": f"{found.guids[j]:#018x}",
                                      "cabled_to": nb,
                                      "text": f"unplanned device {found.names[j]!r} (GUID {found.guids[j]:#018x})"
                                              + (f" cabled to {', '.join(nb)}" if nb else "")})
    gone = {("p", i) for i in missing_nodes}
    only_f_extra_dev = {c for c in only_f if any(e[0] == "f" for e in c)}
    only_f = only_f - only_f_extra_dev

    def short(e) -> str:
        kind, n, p = e
        return f"{plan.names[n]}[{p}]" if kind == "p" else f"{found.names[n]}[{p}]"

    # planned cables with an end on a device not found: neither right nor missing, unseen (a stage
    # check reports them as not checked)
    rep.unseen = [{"cable": f"{end_name(a)} - {end_name(b)}", "ends": [short(a), short(b)]}
                  for a, b in (sorted(c, key=lambda e: (e[1], e[2])) for c in only_p if any(e[:2] in gone for e in c))]
    only_p = {c for c in only_p if not any(e[:2] in gone for e in c)}

    _explain(rep, only_p, only_f, end_name, short)
    _misplaced(rep, plan, found, m, fend, end_name)
    _fold_hosts(rep)
    _discovery_findings(rep, plan, found, fend, end_name, short, ident)

    # not the planned topology at all?
    if plan.num_links and (rep.correct_cables < 0.5 * plan.num_links or len(to_plan) < 0.5 * plan.num_nodes):
        rep.not_planned_topology = True
        rep.reason = (f"only {rep.correct_cables} of {plan.num_links} planned cables could be found "
                      f"({len(to_plan)} of {plan.num_nodes} devices matched): the fabric is not the planned "
                      f"topology (plan: {rep.planned['switches']} switches, {rep.planned['hcas']} HCAs, "
                      f"{rep.planned['cables']} cables; found: {rep.found['switches']} switches, "
                      f"{rep.found['hcas']} HCAs, {rep.found['cables']} cables)")

    plan_rate = {F[c]: plan.link_rate[P[c]] for c in common}
    _rates(rep, found, plan_rate, lambda j, p: _fmt_end(ident(j), p), lambda j, p: short(fend(j, p)))
    for j, i in to_plan.items():
        if found.names[j] != plan.names[i]:
            rep.device_names[plan.names[i]] = {"description": found.names[j], "guid": f"{found.guids[j]:#018x}"}
    return rep


def _misplaced(rep: TopologyReport, plan: Fabric, found: Fabric, m: Matching, fend, end_name) -> None:
    """Hosts known by identity whose cables are not where the plan has them, said the way an
    operator checks a deployment: 'H[0,0] (node018) is on R[0,1] port 1; it belongs on R[0,0] port 1'."""
    for j, i in sorted(m.fixed.items(), key=lambda x: x[1]):
        if plan.types[i] != CA:
            continue
        now, want, ports = [], [], []
        for p in range(1, max(plan.nports[i], found.nports[j]) + 1):
            pp = plan.peer(i, p) if p <= plan.nports[i] else None
            fp = found.peer(j, p) if p <= found.nports[j] else None
            should = ("p", pp[0], pp[1]) if pp else None
            is_ = fend(*fp) if fp else None
            if should != is_:
                now.append(end_name(is_) if is_ else f"nothing (port {p} not cabled)")
                want.append(end_name(should) if should else f"nothing (port {p} stays free)")
                ports.append(f"{plan.names[i]}[{p}]")
        if now:
            who = plan.names[i] if found.names[j] == plan.names[i] else f"{plan.names[i]} ({found.names[j]})"
            rep.misplaced_devices.append({"device": plan.names[i], "identity": found.names[j], "is_on": now,
                                          "belongs_on": want, "ports": ports, "who": who,
                                          "text": host_text(who, now, want)})


def host_text(who: str, now: list[str], want: list[str]) -> str:
    return f"{who} is on {', '.join(now)}; it belongs on {', '.join(want)}"


def _fold_hosts(rep: TopologyReport) -> None:
    """One fault, one action: a host on the wrong port is one of the cable fixes (a swapped pair of
    hosts is the swap of their cables), so it is said in that fix, not again as a 'move device'
    that would undo the fix if both were done."""
    keep = []
    for m in rep.misplaced_devices:
        fx = next((x for x in rep.fixes if set(m["ports"]) <= {e for pair in x.get("now", ()) for e in pair}
                   | {x.get("to")}), None)
        if fx is None:
            keep.append(m)
            continue
        fx.setdefault("hosts", []).append(m)
    rep.misplaced_devices = keep
    for fx in rep.fixes:
        hosts = fx.get("hosts")
        if not hosts:
            continue
        fx["hosts"] = [m["device"] for m in hosts]
        where = "; ".join(f"{m['who']} is on {', '.join(m['is_on'])}" for m in hosts)
        what = (f"hosts {' and '.join(m['who'] for m in hosts)} are swapped" if fx["kind"] == "swap" and len(hosts) == 2
                else f"host{'s' if len(hosts) > 1 else ''} {', '.join(m['who'] for m in hosts)} on the wrong port")
        fx["text"] = f"{what} ({where}); fix: {fx['fix']}"


def _discovery_findings(rep: TopologyReport, plan: Fabric, found: Fabric, fend, end_name, short, ident) -> None:
    """What the reader noticed in the dump itself: loopback cables and a partial discovery."""
    for lb in found.discovery.get("loopbacks", ()):
        j, (p1, p2) = lb["node"], lb["ports"]
        e1, e2 = fend(j, p1), fend(j, p2)
        wants = [f"the plan wants {end_name(e)} cabled to {end_name(('p',) + plan.peer(e[1], e[2]))}"
                 for e in (e1, e2) if e[0] == "p" and plan.peer(e[1], e[2])]
        fix = f"remove the cable {end_name(e1)} - {end_name(e2)}"
        rep.loopbacks.append({"device": short(e1).rsplit("[", 1)[0], "ports": [p1, p2], "ends": [short(e1), short(e2)],
                              "fix": fix,
                              "text": f"loopback cable: {end_name(e1)} is cabled to its own port {p2}"
                                      + (f" ({'; '.join(wants)})" if wants else "") + f"; fix: {fix}"})
    for j in found.discovery.get("seen_only_as_peer", ()):
        seen = [f"{ident(k)} port {q}" for _p, k, q in found.neighbors(j)]
        rep.partial_discovery.append({"device": ident(j), "guid": f"{found.guids[j]:#018x}", "seen_from": seen,
                                      "text": f"{ident(j)} has no record of its own in the dump, only as the peer "
                                              f"of {', '.join(seen) or 'a port'} (a partial discovery: its ports "
                                              f"were not read; run ibnetdiscover again, check its links)"})


def _rates(rep: TopologyReport, found: Fabric, plan_rate: dict, long, short) -> None:
    """Degraded links: below the plan's rate for the cable or, with none, below the lower
    capability of the two ends (the best width and speed each runs on any of its links). Both
    ends' rates are read; ends that disagree are a finding of their own."""
    ends = found.discovery.get("rate_ends", {})
    rates: list = []
    for li, r in enumerate(found.link_rate):
        pr = [parse_rate(x) for x in ((ends[li]["a"], ends[li]["b"]) if li in ends else (r,))]
        pr = [x for x in pr if x is not None]
        rates.append(min(pr) if pr else None)  # the slower end is what the link delivers
    known = [r for r in found.link_rate if r]
    rep.fabric_rate = Counter(known).most_common(1)[0][0] if known else None
    cap_w: dict[int, int] = defaultdict(int)
    cap_s: dict[int, int] = defaultdict(lambda: -1)
    for li, r in enumerate(rates):
        if r is None:
            continue
        for n in (found.link_a[li], found.link_b[li]):
            cap_w[n] = max(cap_w[n], r[0])
            cap_s[n] = max(cap_s[n], r[1])
    for li, r in enumerate(rates):
        a, pa_, b, pb = found.link_a[li], found.link_pa[li], found.link_b[li], found.link_pb[li]
        cable = f"{long(a, pa_)} - {long(b, pb)}"
        if li in ends:
            e = ends[li]
            rep.rate_mismatches.append({"cable": cable, "ends": [short(a, pa_), short(b, pb)], "rates": [e["a"], e["b"]],
                                        "text": f"{cable}: the ends disagree ({long(a, pa_)} reports {e['a']}, "
                                                f"{long(b, pb)} reports {e['b']}); check the cable and both ports"})
        if r is None:
            continue
        planned = parse_rate(plan_rate.get(li))
        if planned is not None:
            width, speed, why = planned[0], planned[1], f"the plan says {plan_rate[li]}"
        else:
            width, speed = min(cap_w[a], cap_w[b]), min(cap_s[a], cap_s[b])
            why = f"both ends run {_rate_str(width, speed)} on other links"
        if r[0] >= width and r[1] >= speed:
            continue
        what = []
        if r[0] < width:
            what.append(f"{r[0]}x wide instead of {width}x")
        if r[1] < speed:
            what.append(f"{SPEEDS[r[1]] if r[1] >= 0 else '?'} instead of {SPEEDS[speed]}")
        now = _rate_str(*r)
        rep.degraded_links.append({"cable": cable, "ends": [short(a, pa_), short(b, pb)], "rate": now,
                                   "expected": _rate_str(width, speed), "fabric_rate": _rate_str(width, speed),
                                   "text": f"{cable} came up {now}: {' and '.join(what)} ({why}); reseat or "
                                           f"replace the cable, check both ports"})


def _rate_str(width: int, speed: int) -> str:
    return f"{width}x{SPEEDS[speed] if speed >= 0 else '?'}"


def _fmt_end(dev: str, port: int) -> str:
    return f"{dev} port {port}"


def _explain(rep: TopologyReport, only_p: set, only_f: set, end_name, short) -> None:
    """Turn the cables only in the plan and only in the fabric into moves, swaps, adds and removals."""
    plan_at: dict = {}
    for c in only_p:
        a, b = tuple(c)
        plan_at[a] = b
        plan_at[b] = a
    cur: dict = {}  # port -> far end: the differing cables as they are now
    for c in only_f:
        a, b = tuple(c)
        cur[a] = b
        cur[b] = a

    def key(e):
        return (str(e[0]), e[1], e[2])

    def cable(u, v) -> str:
        return f"{end_name(u)} - {end_name(v)}"

    def cables_now():
        return sorted({tuple(sorted((a, b), key=key)) for a, b in cur.items()}, key=lambda c: (key(c[0]), key(c[1])))

    def wrong(anchor, now, should, fix, kind):
        rep.miswired.append({"kind": kind, "port": short(anchor), "found": short(now), "expected": short(should),
                             "cable": cable(anchor, now), "should_be": cable(anchor, should), "fix": fix,
                             "text": f"cable {cable(anchor, now)} should go to {end_name(should)}; fix: {fix}"})

    done_p: set = set()
    changed = True
    while changed:
        changed = False
        # 1. moves: a cable with one end right (u), the other end (v) where the plan wants nothing or
        #    something else, and u's planned partner w free now
        for a, b in cables_now():
            if cur.get(a) != b:
                continue
            options = []
            for u, v in ((a, b), (b, a)):
                w = plan_at.get(u)
                if w is None or w == v or w in cur:
                    continue
                # prefer an end that slipped on the same device, then one whose port the plan leaves empty
                options.append((w[:2] != v[:2], v in plan_at, key(u), u, v, w))
            if not options:
                continue
            options.sort(key=lambda o: o[:3])
            u, v, w = options[0][3:]
            del cur[u], cur[v]
            fix = f"move the end at {end_name(v)} to {end_name(w)}"
            wrong(u, v, w, fix, "move")
            rep.fixes.append({"kind": "move", "cables": 1, "fix": fix, "from": short(v), "to": short(w),
                              "now": [[short(u), short(v)]],
                              "text": f"cable {cable(u, v)} is in the wrong port: {fix}"})
            done_p.add(frozenset((u, w)))
            changed = True
        # 2. swapped pairs: A-D and B-C where the plan has A-B and C-D: exchange the ends at D and B
        #    (or, equivalently, at A and C: whichever two sit on the same device)
        for a, d in cables_now():
            if cur.get(a) != d:
                continue
            for A, D in ((a, d), (d, a)):
                B = plan_at.get(A)
                if B is None or B == D or B not in cur:
                    continue
                C = cur[B]
                if plan_at.get(C) != D or C == A:
                    continue
                opts = sorted([(D, B, A, C), (A, C, D, B)], key=lambda o: (o[0][:2] != o[1][:2], key(o[0])))
                x, y, k1, k2 = opts[0]
                for e in (A, B, C, D):
                    cur.pop(e, None)
                fix = f"swap the cable ends at {end_name(x)} and {end_name(y)}"
                wrong(k1, x, y, fix, "swap")
                wrong(k2, y, x, fix, "swap")
                rep.fixes.append({"kind": "swap", "cables": 2, "fix": fix, "ends": [short(x), short(y)],
                                  "now": [[short(k1), short(x)], [short(k2), short(y)]],
                                  "text": f"swapped pair: cables {cable(k1, x)} and {cable(k2, y)} should be "
                                          f"{cable(k1, y)} and {cable(k2, x)}; fix: {fix}"})
                done_p.add(frozenset((A, B)))
                done_p.add(frozenset((C, D)))
                changed = True
                break
            if changed:
                break
    for a, b in cables_now():
        wants = [f"the plan wants {end_name(e)} cabled to {end_name(plan_at[e])}" for e in (a, b) if e in plan_at]
        fix = f"remove the cable {cable(a, b)}"
        rep.extra_cables.append({"cable": cable(a, b), "ends": [short(a), short(b)], "fix": fix,
                                 "text": f"cable {cable(a, b)} is not in the plan"
                                         + (f" ({'; '.join(wants)})" if wants else "") + f"; fix: {fix}"})
    for c in sorted(only_p - done_p, key=lambda c: sorted(key(e) for e in c)):
        a, b = sorted(c, key=key)
        fix = f"connect {end_name(a)} to {end_name(b)}"
        rep.missing_cables.append({"cable": cable(a, b), "ends": [short(a), short(b)], "fix": fix,
                                   "text": f"cable {cable(a, b)} is missing; fix: {fix}"})
