"""One round of the watcher: the fabric as it is now, asked in bulk by one process (`ibtool.mad`'s
`fabric_round`: discovery by directed route, PortInfo, PortCounters and PortCountersExtended,
SMInfo; 64 MADs in flight), named after the plan.

Counters: the 64-bit PortCountersExtended values (data and packets, unicast and multicast) where
the port's PMA has them (ClassPortInfo's IsExtendedWidthSupported; the NOIETF kind has the first
four), else PortCounters' 32-bit ones; the error counters are PortCounters' (16, 8 and 4 bits).
Each value keeps its width, so a counter at its maximum is known to be saturated (it stops there:
the real count is at least that) and never judged as a rate.

    c = Collector(clients, plan)      # clients: ibtool.sim.clients.Clients (the local port, env)
    r = c.round(t=clock())            # a Round
    c.reset([("R[1,1]", 3)])          # clear these ports' counters (--reset-counters)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ibtool import mad
from ibtool.watch.plan import End, PlanView, cable_key

# a switch's ports neither planned nor ever up (its spare ports) are asked once in SCAN_EVERY rounds: on a
# KNS 12^3 of 36-port switches they are 82 % of the PortInfo queries; a cable plugged into one shows
# within SCAN_EVERY rounds, every other change in the next round
SCAN_EVERY = 4
TRAFFIC = ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortUnicastXmitPkts", "PortUnicastRcvPkts",
           "PortMulticastXmitPkts", "PortMulticastRcvPkts")
WIDTHS = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}  # LinkWidthActive -> lanes
SPEEDS = {1: ("SDR", 2.5), 2: ("DDR", 5.0), 4: ("QDR", 10.0)}  # LinkSpeedActive -> name, Gb/s a lane
EXT_SPEEDS = {1: ("FDR", 14.0625), 2: ("EDR", 25.78125), 4: ("HDR", 53.125), 8: ("NDR", 106.25)}  # LinkSpeedExtActive
STATES = {1: "Down", 2: "Init", 3: "Armed", 4: "Active"}


@dataclass
class Device:
    name: str
    guid: int
    switch: bool
    nports: int
    desc: str | None = None


@dataclass
class Port:
    device: str
    port: int
    guid: int
    lid: int
    state: int  # PortState: 1 Down, 2 Init, 3 Armed, 4 Active
    phys: int  # PortPhysicalState: 2 Polling, 3 Disabled, 5 LinkUp ...
    width: int  # lanes (0: unknown)
    speed: str | None  # "QDR"
    gbps: float  # a lane's signalling rate, as ibqueryerrors prints it (10.0 for QDR)
    counters: dict[str, int] = field(default_factory=dict)
    bits: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> str | None:
        return f"{self.width}x{self.speed}" if self.width and self.speed else None

    def saturated(self, name: str) -> bool:
        b = self.bits.get(name)
        return b is not None and b < 64 and self.counters.get(name) == (1 << b) - 1


@dataclass
class Round:
    t: float
    seconds: float = 0.0
    mads: int = 0
    devices: dict[str, Device] = field(default_factory=dict)
    ports: dict[End, Port] = field(default_factory=dict)  # every port reported (switch ports 1..N, CA ports)
    cables: dict[frozenset, tuple[End, End]] = field(default_factory=dict)  # up: key -> its two ends
    sm: dict | None = None  # the master SM: guid, priority, state, lid
    failed: list[str] = field(default_factory=list)
    silent: set[str] = field(default_factory=set)  # devices whose PMA did not answer
    error: str | None = None  # the round could not be collected at all

    @property
    def counted(self) -> int:
        return sum(1 for p in self.ports.values() if p.counters)


class Collector:
    """Rounds of one fabric, with what a round tells the next: devices' descriptions and PMA
    capabilities (not asked again), the ports that were up (read even when they went down)."""

    def __init__(self, clients, plan: PlanView, timeout: float = 60.0, local: tuple[str, ...] = (),
                 window: int = mad.WINDOW, scan_every: int = SCAN_EVERY):
        self.clients, self.plan, self.timeout, self.local, self.window = clients, plan, timeout, local, window
        self.scan_every = scan_every
        self.caps: dict[int, int | None] = {}
        self.descs: dict[int, str | None] = {}
        self.lids: dict[End, int] = {}
        self._up: set[tuple[int, int]] = set()
        self._used: dict[int, set[int]] = {}  # a switch's ports planned or ever up: asked every round
        self.port_guids: dict[int, int] = {}  # a CA port's GUID -> its node's
        self.rounds = 0

    def round(self, t: float) -> Round:
        raw = mad.fabric_round(self.clients, {g: self.caps.get(g) for g in self.descs}, self._up, self.timeout,
                               self.local, self.window, self._used, self.rounds, self.scan_every)
        self.rounds += 1
        return self.build(raw, t)

    def build(self, raw: dict, t: float) -> Round:
        r = Round(t, raw["seconds"], raw["mads"])
        for g, n in raw["nodes"].items():
            if n.get("desc") is not None or g not in self.descs:
                self.descs[g] = n.get("desc")
        self.caps.update(raw["caps"])
        names: dict[int, str] = {}
        for g, n in raw["nodes"].items():
            if "type" not in n:
                continue
            name = self.plan.name(g, self.descs.get(g))
            names[g] = name
            r.devices[name] = Device(name, g, n["type"] == 2, n["nports"], self.descs.get(g))
        for (g, p), (lid, state, phys, width, speed, ext) in raw["ports"].items():
            if g not in names or (p == 0 and r.devices[names[g]].switch):
                continue
            # a spare port (down, never planned, not up last round) is not one of the fabric's ports
            if phys != 5 and state < 2 and (g, p) not in self._up and p not in self.plan.ports_of.get(names[g], ()):
                continue
            sp = EXT_SPEEDS.get(ext) or SPEEDS.get(speed)
            r.ports[names[g], p] = Port(names[g], p, g, lid if not r.devices[names[g]].switch else
                                        raw["ports"].get((g, 0), (0,))[0], state, phys, WIDTHS.get(width, 0),
                                        sp[0] if sp else None, sp[1] if sp else 0.0)
        for (g, p), vals in raw["pc"].items():
            port = r.ports.get((names.get(g), p))
            if port is None:
                continue
            port.counters = dict(zip(_PC_NAMES, vals))
            port.bits = _PC_BITS
            ext = raw["pcx"].get((g, p))
            caps = self.caps.get(g) or 0
            if ext is not None and caps & (mad.EXT_WIDTH | mad.EXT_NOIETF):
                n = len(mad.PCX_FIELDS) if caps & mad.EXT_WIDTH else 4
                port.counters.update(zip(mad.PCX_FIELDS[:n], ext[:n]))
                port.bits = _EXT_BITS[n]
        for a, b in raw["links"].items():
            if a[0] in names and b[0] in names:
                ea, eb = (names[a[0]], a[1]), (names[b[0]], b[1])
                r.cables[cable_key(ea, eb)] = (ea, eb)
        self._up = {(p.guid, p.port) for p in r.ports.values() if p.phys == 5 or p.state >= 2}
        for name, dev in r.devices.items():
            if dev.switch and dev.guid not in self._used:
                self._used[dev.guid] = set(self.plan.ports_of.get(name, ()))
        for g, p in self._up:
            if g in self._used:
                self._used[g].add(p)
        self.lids = {e: p.lid for e, p in r.ports.items() if p.lid}
        self.port_guids.update(raw.get("port_guids", {}))
        if raw["sm"]:
            s = raw["sm"]
            node = self.port_guids.get(s["guid"], s["guid"])  # SMInfo names the SM's port (a CA's differs)
            r.sm = {"guid": f"{s['guid']:#018x}", "name": self.plan.name(node, self.descs.get(node)),
                    "priority": s["priority"], "state": s["state"], "lid": s["lid"]}
        for what, g, p, why in raw["failed"]:
            dev = names.get(g) or (f"{g:#018x}" if g is not None else "the SM")
            if what in ("pc", "pcx", "cpi"):
                r.silent.add(dev)
            r.failed.append(f"{_WHAT.get(what, what)} of {dev}" + (f" port {p}" if p is not None else "") + f": {why}")
        return r

    def reset(self, ends: list[End]) -> list[str]:
        """Clear the counters of these ports (their LIDs from the last round); failures as text."""
        ports = [(self.lids[e], e[1]) for e in ends if e in self.lids]
        return mad.reset_counters(self.clients, ports, self.timeout, self.local) if ports else []


_PC_NAMES = tuple(n for n, _, _ in mad.PC_FIELDS)
_PC_BITS = {n: b for n, _, b in mad.PC_FIELDS}  # shared by every port: a port's widths are these
_EXT_BITS = {n: {**_PC_BITS, **dict.fromkeys(mad.PCX_FIELDS[:n], 64)} for n in (4, len(mad.PCX_FIELDS))}
_WHAT = {"ni": "NodeInfo through", "pi": "PortInfo", "nd": "NodeDescription", "cpi": "ClassPortInfo",
         "pc": "PortCounters", "pcx": "PortCountersExtended", "sm": "SMInfo"}
