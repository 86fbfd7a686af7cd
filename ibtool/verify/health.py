"""Cable health from port error counters: which cable to reseat or replace, and why.

Counters are read per port (perfquery) and judged per cable, since an error counted at one end
(symbol errors, receive errors, link recoveries, link downs ...) means trouble on the cable into
that port or on the port itself. A port counter beyond its threshold is a finding named by the
cable (both ends, and its cable ID and labels when the plan has a cable list).

Default thresholds (`THRESHOLDS`) are what `ibqueryerrors` applies on a stock install, and
ibdiagnet's `-pc` rule: any error counted is reported (threshold 0; checked against
ibqueryerrors' own output in the tests). A site sets its own with a threshold file in
infiniband-diags' format (`COUNTER=N` lines, as /etc/infiniband-diags/error_thresholds, whose
commented suggestions are `SUGGESTED`: 10 symbol errors, 10 link downs, 100 discards ...) or per
counter on the command line. Counters are
cumulative since the last reset: with a baseline collection (`--baseline RUN0`) the deltas and
their rates per hour are judged instead, and a counter below its baseline was reset (or wrapped)
in between, which is said, not turned into a negative delta. A 16-bit error counter at 65535 is
saturated: the real count is at least that.
"""

from __future__ import annotations

from ibtool.fabric import SWITCH, Fabric
from ibtool.formats.perfquery import PORT_COUNTERS

SUGGESTED = {
    "SymbolErrorCounter": 10, "LinkErrorRecoveryCounter": 10, "LinkDownedCounter": 10, "PortRcvErrors": 10,
    "PortRcvRemotePhysicalErrors": 100, "PortRcvSwitchRelayErrors": 100, "PortXmitDiscards": 100,
    "PortXmitConstraintErrors": 100, "PortRcvConstraintErrors": 100, "LocalLinkIntegrityErrors": 10,
    "ExcessiveBufferOverrunErrors": 10, "VL15Dropped": 100, "PortXmitWait": 1000,
}
THRESHOLDS = dict.fromkeys(SUGGESTED, 0)
# Counters that point at the cable (or its connectors) rather than at congestion or configuration.
CABLE = {"SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
         "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "PortRcvRemotePhysicalErrors"}
SATURATED = {k: (1 << PORT_COUNTERS[k]) - 1 for k in ("SymbolErrorCounter", "LinkErrorRecoveryCounter",
             "LinkDownedCounter", "PortRcvErrors", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors")}


def port_counters(fabric: Fabric, by_lid: dict[tuple[int, int], dict[str, int]]) -> dict[tuple[int, int], dict]:
    """perfquery's (LID, port) -> counters, as (node, port) -> counters of `fabric`."""
    lid_node: dict[int, tuple[int, bool]] = {}
    for (node, port), (lid, _) in fabric.port_lids.items():
        if lid:
            lid_node[lid] = (node, fabric.types[node] == SWITCH)
    out = {}
    for (lid, port), c in by_lid.items():
        hit = lid_node.get(lid)
        if hit is not None and port:
            out[hit[0], port] = c
    return out


def _cable_of(cables, a: str, pa: int, b: str, pb: int):
    if not cables:
        return None
    return cables.get((a, pa)) or cables.get((b, pb))


def check(fabric: Fabric, counters: dict[tuple[int, int], dict[str, int]], *, baseline=None, hours: float | None = None,
          thresholds: dict[str, int] | None = None, cables: dict | None = None) -> dict:
    """Findings per cable. `counters`/`baseline`: (node, port) -> counters; `cables`: the plan's
    cable list (ibtool.verify.cables.CableList: (device, port) -> Cable)."""
    th = {**THRESHOLDS, **(thresholds or {})}
    findings, resets, missing = [], [], []
    checked = 0
    for li in range(fabric.num_links):
        a, pa, b, pb = fabric.link_a[li], fabric.link_pa[li], fabric.link_b[li], fabric.link_pb[li]
        na, nb = fabric.names[a], fabric.names[b]
        cab = _cable_of(cables, na, pa, nb, pb)
        what = f"cable {cab.id}" if cab else "the cable"
        ends = f"{na} port {pa} - {nb} port {pb}"
        for node, port in ((a, pa), (b, pb)):
            now = counters.get((node, port))
            if now is None:
                if (node, port) in fabric.port_lids or fabric.types[node] == SWITCH:
                    missing.append(f"{fabric.names[node]} port {port}")
                continue
            checked += 1
            base = baseline.get((node, port)) if baseline else None
            for key, limit in th.items():
                v = now.get(key)
                if v is None:
                    continue
                delta = v
                if base is not None and key in base:
                    if v < base[key]:
                        resets.append(f"{fabric.names[node]} port {port} {key}: {v} < {base[key]} at the baseline "
                                      f"(reset or wrapped in between; judged on its current value)")
                    else:
                        delta = v - base[key]
                if delta <= limit:
                    continue
                sat = SATURATED.get(key) == v
                since = f" in {hours:.2g} h ({delta / hours:.3g}/h)" if base is not None and hours else ""
                count = f"{'at least ' if sat else ''}{delta} {key}{since}"
                action = (f"reseat or replace {what}: {count} on {fabric.names[node]} port {port} ({ends})"
                          if key in CABLE else
                          f"check {fabric.names[node]} port {port} ({ends}): {count}")
                findings.append({"cable": cab.id if cab else None, "labels": [cab.a_label, cab.b_label] if cab else None,
                                 "device": fabric.names[node], "port": port, "counter": key, "value": v,
                                 "delta": delta if base is not None else None, "threshold": limit,
                                 "saturated": sat, "link": ends, "action": action})
    return {"ok": not findings, "ports_checked": checked, "findings": findings, "resets": resets,
            "unanswered": missing, "thresholds": th, "baseline": baseline is not None,
            "hours": hours}



def read_threshold_file(path) -> dict[str, int]:
    """infiniband-diags' error_thresholds format: `COUNTER=N` per line, `#` comments."""
    from ibtool.errors import InputError
    from ibtool.formats import open_input
    out = {}
    with open_input(path) as fh:
        for ln, line in enumerate(fh, 1):
            s = line.split("#", 1)[0].strip()
            if not s:
                continue
            k, sep, v = s.partition("=")
            k, v = k.strip(), v.strip()
            if not sep or k not in THRESHOLDS or not v.isdigit():
                raise InputError(f"expected COUNTER=N with COUNTER one of {', '.join(THRESHOLDS)}: {s[:60]!r}",
                                 path=str(path), line=ln)
            out[k] = int(v)
    return out
