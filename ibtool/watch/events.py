"""What changed: one round against the watcher's last view of the fabric (and, the first time,
against the plan), in the words of a fix sheet. Each event names the cable (its ID, both ends,
their labels, racks and Us) or the device (its rack and U, its cables).

Kinds:

    link_down     a cable that was up is down (both its devices still answer)
    link_up       a cable that was down (or planned) is up again
    below_plan    a cable runs narrower or slower than the plan's rate (else than the fabric's usual rate)
    cable_new     a cable up where the plan (and the watcher) knew none
    cable_moved   an end of a planned cable is in another port (the other end where the plan has it)
    device_gone   a device that answered (or is planned) does not answer: removed, off, or cut off
    device_back   a device known before (or planned) answers again
    device_new    a device never seen and not in the plan
    unanswered    a device answers discovery but not its PMA: its counters are unknown
    counter_reset a port's counters went down since the last round (cleared by someone, a reboot)
    saturated     a counter at its maximum (16, 8, 4 or 32 bits): the count is at least that, no rate
    rate_over     an error counter's rate per hour over its threshold (infiniband-diags' threshold
                  file, as `verify health` reads it; default: any increase, as ibqueryerrors)
    sm_change     the master SM (its GUID, priority or state) changed, or none answers
    round_failed  nothing could be collected (no local port, the HCA or ibsim gone); said once

Rates are per hour of fabric time (the rounds' times), over the last `window` (default an hour):
the increase since the last value before the window, divided by the time between them. A
counter the watcher cleared (`--reset-counters`) starts anew without a reset event.
"""

from __future__ import annotations

from collections import deque

from ibtool.verify.health import CABLE, THRESHOLDS
from ibtool.verify.topology import parse_rate
from ibtool.watch.collector import Round
from ibtool.watch.plan import End, PlanView, cable_key, ends_of

KINDS = ("link_down", "link_up", "below_plan", "cable_new", "cable_moved", "device_gone", "device_back",
         "device_new", "unanswered", "counter_reset", "saturated", "rate_over", "sm_change", "round_failed")
SM_STATES = {0: "NOTACTIVE", 1: "DISCOVERING", 2: "STANDBY", 3: "MASTER"}


def _key(k: frozenset) -> list:
    (a, pa), (b, pb) = ends_of(k)
    return [a, pa, b, pb]


def _unkey(x: list) -> frozenset:
    return cable_key((x[0], x[1]), (x[2], x[3]))


def _end(e: End) -> str:
    return f"{e[0]} port {e[1]}"


class Judge:
    """The watcher's view of the fabric between rounds; `judge(round)` -> its events."""

    def __init__(self, plan: PlanView, thresholds: dict[str, int] | None = None, window: float = 3600.0,
                 state: dict | None = None, counters: dict | None = None, last_t: float | None = None):
        self.plan = plan
        self.th = {**THRESHOLDS, **(thresholds or {})}
        self.window = window
        self.prev: dict[End, dict[str, int]] = dict(counters or {})
        self.prev_t = last_t
        self.hist: dict[tuple[End, str], deque] = {}
        self.view = self._from_state(state) if state and "devices" in state else None
        self.failing = bool(state and state.get("failing"))
        self.changed = False

    # ------------------------------------------------------------------ the view, as stored
    @staticmethod
    def _from_state(s: dict) -> dict:
        return {"devices": dict(s["devices"]), "cables": {_unkey(c[:4]): c[4] for c in s["cables"]},
                "known": set(s.get("known", [])), "seen": {_unkey(c) for c in s.get("seen", [])}, "sm": s.get("sm"),
                "over": {(d, p, n) for d, p, n in s.get("over", [])},
                "saturated": {(d, p, n) for d, p, n in s.get("saturated", [])},
                "silent": set(s.get("silent", []))}

    def state(self) -> dict:
        v = self.view
        if v is None:
            return {"failing": self.failing}
        return {"devices": v["devices"], "cables": sorted(_key(k) + [r] for k, r in v["cables"].items()),
                "known": sorted(v["known"]), "seen": sorted(_key(k) for k in v["seen"]), "sm": v["sm"],
                "over": sorted(map(list, v["over"])),
                "saturated": sorted(map(list, v["saturated"])), "silent": sorted(v["silent"]), "failing": self.failing}

    def _baseline(self, rnd: Round) -> dict:
        """The view before the first round: the plan when there is one, else the round itself."""
        p = self.plan
        if p.devices:
            devices = {d: {"guid": None, "switch": sw} for d, sw in p.devices.items()}
            cables = dict(p.planned)
        else:
            devices = {d: {"guid": f"{x.guid:#018x}", "switch": x.switch} for d, x in rnd.devices.items()}
            cables = {k: _rate(rnd, k) for k in rnd.cables}
        return {"devices": devices, "cables": cables, "known": set(devices), "seen": set(cables), "sm": None,
                "over": set(), "saturated": set(), "silent": set()}

    # ------------------------------------------------------------------ events
    def _cable(self, kind: str, key: frozenset, text: str, **extra) -> dict:
        w = self.plan.where(key)
        return {"kind": kind, "cable": w.cable, "device": None, **w.as_dict(), "text": text.format(w=w.text()), **extra}

    def _device(self, kind: str, name: str, text: str, cables=(), **extra) -> dict:
        rack, u = self.plan.device_place(name)
        place = " ".join(x for x in (rack, f"U{u}" if u is not None else None) if x)
        ids = sorted(self.plan.where(k).cable or " - ".join(_end(e) for e in ends_of(k)) for k in cables)
        n = f"{len(ids)} cable" + ("s" if len(ids) != 1 else "")
        listed = ", ".join(ids[:8]) + (" ..." if len(ids) > 8 else "")
        return {"kind": kind, "cable": None, "device": name, "rack": rack, "u": u, "cables": ids,
                "text": name + (f" ({place})" if place else "") + " " + text.format(n=n, ids=listed), **extra}

    def judge(self, rnd: Round, cleared: set[End] = frozenset()) -> list[dict]:
        """The events of this round; the view moves on to it. `cleared`: ports the watcher reset
        since the round before."""
        self.changed = False
        ev: list[dict] = []
        if rnd.error:  # nothing was collected: nothing is judged (the next round compares with the last view)
            if not self.failing:
                ev.append({"kind": "round_failed", "cable": None, "device": None,
                           "text": f"the round could not be collected: {rnd.error}"})
                self.failing = self.changed = True
            return ev
        if self.failing:
            self.failing, self.changed = False, True
        first = self.view is None
        if first:
            self.view = self._baseline(rnd)
            self.changed = True
        v = self.view
        now_dev = {d: {"guid": f"{x.guid:#018x}", "switch": x.switch} for d, x in rnd.devices.items()}
        gone = [d for d in v["devices"] if d not in now_dev]
        came = [d for d in now_dev if d not in v["devices"]]
        lost = {k for k in v["cables"] if k not in rnd.cables}
        got = {k for k in rnd.cables if k not in v["cables"]}
        touching = lambda devs, ks: {k for k in ks if any(e[0] in devs for e in k)}  # noqa: E731
        for d in sorted(gone):
            mine = touching({d}, lost)
            ev.append(self._device("device_gone", d, "does not answer: gone from the fabric (removed, off or cut "
                                   "off)" + (" with its {n} {ids}" if mine else ""), mine))
        for d in sorted(came):
            mine = touching({d}, got)
            if d in v["known"] or d in self.plan.devices:
                ev.append(self._device("device_back", d, "answers again" + (" with its {n} {ids}" if mine else ""),
                                       mine))
            else:
                ev.append(self._device("device_new", d, f"(GUID {now_dev[d]['guid']}) is new" +
                                       (": not in the plan" if self.plan.devices else "") +
                                       (", cabled by {ids}" if mine else ""), mine))
        lost -= touching(set(gone), lost)
        # a cable up where one end's home (its planned cable, else the cable it was last in) is down:
        # moved (also when its device comes back with it, e.g. a host re-plugged into another port)
        for k in sorted(got, key=_key):
            if k in self.plan.planned or (k in v["seen"] and not self.plan.planned):
                continue
            for end in sorted(k):
                home = self.plan.home(end) or next((c for c in sorted(v["seen"], key=_key) if end in c and c != k),
                                                   None)
                if home is None or home in rnd.cables or home == k:
                    continue
                want = next(e for e in home if e != end) if len(home) == 2 else end
                now = next(e for e in k if e != end)
                ev.append(self._cable("cable_moved", home, f"{{w}}: the end that belongs in {_end(want)} is in "
                                      f"{_end(now)}: move it from {_end(now)} to {_end(want)}",
                                      now=list(now), expected=list(want)))
                lost.discard(home)
                got.discard(k)
                break
        got -= touching(set(came), got)
        for k in sorted(lost, key=_key):
            ev.append(self._cable("link_down", k, "{w} went down: check both ends (seated, the ports' LEDs), "
                                                  "reseat or replace the cable"))
        for k in sorted(got, key=_key):
            if k in self.plan.planned or k in v["seen"]:
                ev.append(self._cable("link_up", k, f"{{w}} is up ({_rate(rnd, k) or 'rate unknown'})"))
            else:
                ev.append(self._cable("cable_new", k, "{w}: a cable up that " +
                                      ("the plan does not have: remove it, or add it to the plan"
                                       if self.plan.devices else "was not there before")))
        # rates below the plan (or the fabric's usual rate), as a cable comes up or drops
        rates = {k: _rate(rnd, k) for k in rnd.cables}
        usual = _usual(rates)
        for k in sorted(rnd.cables, key=_key):
            now = rates[k]
            want = self.plan.planned.get(k) or usual
            was = v["cables"].get(k)
            if now and want and _below(now, want) and (k not in v["cables"] or was != now):
                src = "the plan says" if self.plan.planned.get(k) else "the fabric's usual rate is"
                ev.append(self._cable("below_plan", k, f"{{w}} runs {now}; {src} {want}: reseat or replace the "
                                      f"cable, check both ports", rate=now, expected=want))
        # devices whose PMA did not answer
        silent = set(rnd.silent) & set(now_dev)
        for d in sorted(silent - v["silent"]):
            ev.append(self._device("unanswered", d, "answers discovery but not its counters (PMA): its counters "
                                   "are unknown this round"))
        marks = (set(v["over"]), set(v["saturated"]))
        ev += self._counters(rnd, cleared)
        # the master SM
        sm = rnd.sm
        smv = {k: sm[k] for k in ("guid", "name", "priority", "state")} if sm else None
        if not first and smv != v["sm"]:
            def say(s):
                return (f"{s['name']} (GUID {s['guid']}, priority {s['priority']}, "
                        f"{SM_STATES.get(s['state'], s['state'])})") if s else "none"
            ev.append({"kind": "sm_change", "cable": None, "device": smv["name"] if smv else None,
                       "rack": None, "u": None, "was": v["sm"], "now": smv,
                       "text": f"the master SM changed: {say(v['sm'])} -> {say(smv)}" if smv else
                               f"no master SM answers (it was {say(v['sm'])}): is OpenSM running?"})
        # the view moves on
        new_cables = rates
        if (first or gone or came or lost or got or smv != v["sm"] or silent != v["silent"]
                or new_cables != v["cables"] or ev or marks != (v["over"], v["saturated"])):
            self.changed = True
        v["devices"] = now_dev
        v["known"] |= set(now_dev)
        v["seen"] |= set(new_cables)
        v["cables"] = new_cables
        v["sm"] = smv
        v["silent"] = silent
        self.prev_t = rnd.t
        return ev

    def _counters(self, rnd: Round, cleared: set[End]) -> list[dict]:
        ev: list[dict] = []
        v = self.view
        t = rnd.t
        peers = {}
        for k, (a, b) in rnd.cables.items():
            peers[a], peers[b] = k, k
        judged = list(self.th.items())
        hot = {e for e, _ in self.hist}  # ports whose rates are being measured
        for end, port in rnd.ports.items():
            now = port.counters
            if not now:
                continue
            before = self.prev.get(end)
            self.prev[end] = now
            key = peers.get(end) or self.plan.home(end) or cable_key(end, end)
            down = []
            if before is not None and end not in cleared:
                down = [(n, before[n], x) for n, x in now.items() if x < before.get(n, x)]
                if down:
                    what = ", ".join(f"{n} {a} -> {b}" for n, a, b in down[:4]) + (" ..." if len(down) > 4 else "")
                    ev.append(self._cable("counter_reset", key, f"{{w}}: the counters of {_end(end)} went down "
                                          f"({what}): cleared since the last round (perfquery -R, a reboot); "
                                          "counted anew from here", port=list(end)))
            if before is None or end in cleared or down:
                for n in now:  # counted anew from these values: no rate this round
                    self.hist.pop((end, n), None)
                    v["over"].discard((end[0], end[1], n))
                before = None
            elif end not in hot and all(now.get(n) == before.get(n) for n, _ in judged):
                continue  # nothing judged moved (most ports, most rounds)
            for n, limit in judged:
                x = now.get(n)
                if x is None:
                    continue
                tag = (end[0], end[1], n)
                if port.saturated(n):
                    if tag not in v["saturated"]:
                        v["saturated"].add(tag)
                        ev.append(self._cable("saturated", key, f"{{w}}: {n} of {_end(end)} is at its maximum "
                                              f"{x} ({port.bits[n]} bits): the count is at least that and its rate "
                                              "unknown; clear it to count again (--reset-counters, perfquery -R)",
                                              port=list(end), counter=n, value=x))
                    self.hist.pop((end, n), None)
                    continue
                v["saturated"].discard(tag)
                h = self.hist.get((end, n))
                b = before.get(n) if before else None
                if h is None:
                    if b is None or x == b or self.prev_t is None:
                        continue
                    h = self.hist[end, n] = deque([(self.prev_t, b)])
                h.append((t, x))
                while len(h) > 2 and h[1][0] <= t - self.window:
                    h.popleft()
                (t0, x0) = h[0]
                if t <= t0:
                    continue
                rate = (x - x0) / ((t - t0) / 3600.0)
                if x == x0 and t0 < t - self.window:
                    del self.hist[end, n]
                if rate > limit and tag not in v["over"]:
                    v["over"].add(tag)
                    action = "reseat or replace" if n in CABLE else "check"
                    over = f"over the threshold of {limit}/h" if limit else "(threshold: any error)"
                    ev.append(self._cable("rate_over", key, f"{{w}}: {n} {_num(rate)}/h on {_end(end)} {over}: "
                                          f"{action}" + (" the cable" if n in CABLE else " the port and its traffic"),
                                          port=list(end), counter=n, rate=round(rate, 3), threshold=limit,
                                          value=x))
                elif rate <= limit:
                    v["over"].discard(tag)
        return ev


def _num(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def _rate(rnd: Round, key: frozenset) -> str | None:
    """The slower end's rate of an up cable ("4xQDR")."""
    rates = [rnd.ports[e].rate for e in key if e in rnd.ports and rnd.ports[e].rate]
    if not rates:
        return None
    return min(rates, key=lambda r: parse_rate(r) or (0, 0))


def _usual(rates: dict) -> str | None:
    """The most common rate of the cables up."""
    from collections import Counter
    c = Counter(r for r in rates.values() if r)
    return c.most_common(1)[0][0] if c else None


def _below(now: str, want: str) -> bool:
    a, b = parse_rate(now), parse_rate(want)
    return a is not None and b is not None and (a[0] < b[0] or a[1] < b[1])
