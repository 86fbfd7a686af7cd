"""The watcher as a Prometheus exporter (the prometheus-client package): the last round's counters,
under the names the field's exporter (github.com/guilbaults/infiniband-exporter) gives them, with
its labels and the plan's beside them.

Names, as that exporter's: `infiniband_<counter in lower case>_total` (a counter: SymbolErrorCounter
is infiniband_symbolerrorcounter_total), the gauges `infiniband_speed` (a lane's Gb/s, as
ibqueryerrors prints it: 10.0 for QDR) and `infiniband_width` (lanes), `infiniband_scrape_ok` and
`infiniband_scrape_duration_seconds` (here: of the last round, collected every interval rather
than at each scrape). Its labels: component (switch, ca), local_name, local_guid, local_port,
remote_guid, remote_port, remote_name. Ours beside them: cable (the plan's cable ID), local_plan and
remote_plan (the plan's names of the ends: device and port), local_label and remote_label (the
cable's printed labels), local_rack, local_u, remote_rack, remote_u, plan_rate. Of our own:
`ibtool_watch_cable_up` (1 up, 0 down; every cable planned or seen), `ibtool_watch_counter_saturated`
(a counter at its maximum), `ibtool_watch_round_mads`, `ibtool_watch_round_timestamp_seconds`,
`ibtool_watch_events_total` (by kind, since the watcher started). The default port is the field
exporter's, 9683.
"""

from __future__ import annotations

import threading

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily

from ibtool.watch.collector import Round
from ibtool.watch.plan import PlanView, cable_key

PORT = 9683
FIELD_LABELS = ["component", "local_name", "local_guid", "local_port", "remote_guid", "remote_port", "remote_name"]
PLAN_LABELS = ["cable", "local_plan", "remote_plan", "local_label", "remote_label", "local_rack", "local_u",
               "remote_rack", "remote_u", "plan_rate"]
LABELS = FIELD_LABELS + PLAN_LABELS
HELP = {  # the field exporter's words where it has the counter
    "SymbolErrorCounter": "Total number of minor link errors detected on one or more physical lanes.",
    "LinkErrorRecoveryCounter": "Total number of times the Port Training state machine has successfully completed "
                                "the link error recovery process.",
    "LinkDownedCounter": "Total number of times the Port Training state machine has failed the link error recovery "
                         "process and downed the link.",
    "PortRcvErrors": "Total number of packets containing an error that were received on the port.",
    "PortRcvRemotePhysicalErrors": "Total number of packets marked with the EBP delimiter received on the port.",
    "PortRcvSwitchRelayErrors": "Total number of packets received on the port that were discarded because they "
                                "could not be forwarded by the switch relay.",
    "PortXmitDiscards": "Total number of outbound packets discarded by the port because the port is down or "
                        "congested.",
    "PortXmitConstraintErrors": "Total number of packets not transmitted from the switch physical port",
    "PortRcvConstraintErrors": "Total number of packets received on the port that are discarded for constraint "
                               "reasons (raw, partition, version checks).",
    "LocalLinkIntegrityErrors": "The number of times that the count of local physical errors exceeded the threshold "
                                "specified by LocalPhyErrors.",
    "ExcessiveBufferOverrunErrors": "The number of times that consecutive flow control update periods had at least "
                                    "one overrun error.",
    "VL15Dropped": "The number of incoming VL15 packets dropped due to resource limitations (for example, lack of "
                   "buffers) in the port.",
    "PortXmitData": "Total number of data octets, divided by 4 (lanes), transmitted on all VLs.",
    "PortRcvData": "Total number of data octets, divided by 4 (lanes), received on all VLs.",
    "PortXmitPkts": "Total number of packets transmitted on all VLs from this port. This may include packets with "
                    "errors.",
    "PortRcvPkts": "Total number of packets received. This may include packets containing errors.",
    "PortXmitWait": "The number of ticks during which the port had data to transmit but no data was sent during the "
                    "entire tick (either because of insufficient credits or because of lack of arbitration).",
    "PortUnicastXmitPkts": "Total number of unicast packets transmitted on all VLs from the port. This may include "
                           "unicast packets with errors.",
    "PortUnicastRcvPkts": "Total number of unicast packets, including unicast packets containing errors.",
    "PortMulticastXmitPkts": "Total number of multicast packets transmitted on all VLs from the port. This may "
                             "include multicast packets with errors.",
    "PortMulticastRcvPkts": "Total number of multicast packets, including multicast packets containing errors.",
}


def metric_name(counter: str) -> str:
    """The field exporter's name of a counter, without the `_total` prometheus-client adds."""
    return "infiniband_" + counter.lower()


class Exporter:
    """A prometheus-client collector over the last round; `update(round)` after each round."""

    def __init__(self, plan: PlanView):
        self.plan = plan
        self._families: list = []
        self._events: dict[str, int] = {}
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        self._server = None

    def collect(self):
        with self._lock:
            fams = list(self._families)
            events = dict(self._events)
        yield from fams
        ev = CounterMetricFamily("ibtool_watch_events", "Events the watcher reported since it started, by kind.",
                                 labels=["kind"])
        for k, n in sorted(events.items()):
            ev.add_metric([k], n)
        yield ev

    def update(self, rnd: Round, events: list[dict], cables_known: set | None = None) -> None:
        fams: dict[str, CounterMetricFamily] = {}
        speed = GaugeMetricFamily("infiniband_speed", "Link current speed per lane.", labels=LABELS)
        width = GaugeMetricFamily("infiniband_width", "Lanes per link.", labels=LABELS)
        sat = GaugeMetricFamily("ibtool_watch_counter_saturated", "1 when a counter is at its maximum (its count is "
                                "at least that; clear it to count again).", labels=LABELS + ["counter"])
        peers = {}
        for a, b in rnd.cables.values():
            peers[a], peers[b] = b, a
        for end, port in sorted(rnd.ports.items()):
            if not port.counters:
                continue
            dev = rnd.devices.get(end[0])
            peer = peers.get(end)
            rdev = rnd.devices.get(peer[0]) if peer else None
            labels = [("switch" if dev and dev.switch else "ca"), end[0], f"{port.guid:#x}", str(end[1]),
                      f"{rdev.guid:#x}" if rdev else "", str(peer[1]) if peer else "", peer[0] if peer else ""]
            labels += self._plan_labels(end, peer)
            for name, v in port.counters.items():
                fam = fams.get(name)
                if fam is None:
                    fam = fams[name] = CounterMetricFamily(metric_name(name), HELP.get(name, name), labels=LABELS)
                fam.add_metric(labels, v)
                if port.saturated(name):
                    sat.add_metric(labels + [name], 1)
            if peer:
                speed.add_metric(labels, port.gbps)
                width.add_metric(labels, port.width)
        up = GaugeMetricFamily("ibtool_watch_cable_up", "1 when the cable is up, 0 when down (every cable planned or "
                               "seen).", labels=["cable", "a", "b", "a_rack", "a_u", "b_rack", "b_u", "plan_rate"])
        for k in sorted(set(self.plan.planned) | set(rnd.cables) | set(cables_known or ()), key=lambda k: sorted(k)):
            w = self.plan.where(k)
            up.add_metric([w.cable or "", *(f"{d} P{p}" for d, p in w.ends), *(_s(x) for x in (w.racks[0], w.us[0],
                                                                                               w.racks[1], w.us[1])),
                           w.rate or ""], 1 if k in rnd.cables else 0)
        ok = GaugeMetricFamily("infiniband_scrape_ok", "1 when the last round was collected whole, else 0.")
        ok.add_metric([], 0 if (rnd.error or rnd.failed) else 1)
        dur = GaugeMetricFamily("infiniband_scrape_duration_seconds", "Seconds the last round took to collect.")
        dur.add_metric([], rnd.seconds)
        mads = GaugeMetricFamily("ibtool_watch_round_mads", "MADs the last round sent.")
        mads.add_metric([], rnd.mads)
        ts = GaugeMetricFamily("ibtool_watch_round_timestamp_seconds", "When the last round was taken (epoch s).")
        ts.add_metric([], rnd.t)
        with self._lock:
            self._families = [*fams.values(), speed, width, sat, up, ok, dur, mads, ts]
            for e in events:
                self._events[e["kind"]] = self._events.get(e["kind"], 0) + 1

    def _plan_labels(self, end, peer) -> list[str]:
        key = cable_key(end, peer) if peer else self.plan.home(end)
        if key is None:
            return [""] * len(PLAN_LABELS)
        w = self.plan.where(key)
        if w.cable is None and not self.plan.planned.get(key):
            return [""] * len(PLAN_LABELS)
        me = 0 if w.ends[0] == end else 1
        other = 1 - me
        return [w.cable or "", f"{w.ends[me][0]} P{w.ends[me][1]}", f"{w.ends[other][0]} P{w.ends[other][1]}",
                w.labels[me] or "", w.labels[other] or "", _s(w.racks[me]), _s(w.us[me]), _s(w.racks[other]),
                _s(w.us[other]), w.rate or ""]

    def serve(self, addr: str, port: int) -> None:
        """Serve /metrics on addr:port in a thread of this process."""
        from prometheus_client import start_http_server
        try:
            self._server, _ = start_http_server(port, addr=addr, registry=self.registry)
        except OSError as e:
            from ibtool.errors import EnvironmentProblem
            raise EnvironmentProblem(f"--listen {addr}:{port}: cannot serve metrics there ({e.strerror or e})") from None

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _s(x) -> str:
    return "" if x is None else str(x)
