"""`ibtool watch run`: rounds every interval, until stopped.

Each round: collected (`collector`), judged (`events`), written (`store`, one transaction), served
(`exporter`), printed (one line a round, one line an event). A round that cannot be collected at
all (no local port, ibsim or the HCA gone) is recorded as failed and the next one tried; a device
that does not answer is an event. SIGTERM (systemctl stop) or Ctrl-C ends the round under way
without writing it (its child, the MAD process, is stopped with it) and exits 143 / 130; kill -9
loses at most the round being written. Counters are cleared only with `reset_counters`: a port
with a counter at half its range or more (as the field's exporter does with
--can-reset-counter), after the round that read it, so nothing counted is lost (the store has it).

The clock is injectable (`clock`, `sleep`): the tests run hours of fabric time in seconds.
"""

from __future__ import annotations

import time
from pathlib import Path

from ibtool.errors import EnvironmentProblem
from ibtool.watch.collector import SCAN_EVERY, Collector, Round
from ibtool.watch.events import Judge
from ibtool.watch.plan import End, PlanView
from ibtool.watch.store import MAX_BYTES, RAW_DAYS, Store


class Watcher:
    def __init__(self, store: str | Path, plan: PlanView, clients, thresholds: dict | None = None,
                 interval: float = 60.0, window: float = 3600.0, reset_counters: bool = False,
                 raw_days: float = RAW_DAYS, max_bytes: int = MAX_BYTES, timeout: float = 60.0,
                 local: tuple[str, ...] = (), exporter=None, clock=time.time, sleep=time.sleep, say=None,
                 scan_every: int = SCAN_EVERY):
        self.plan, self.interval, self.clock, self.sleep = plan, interval, clock, sleep
        self.reset_counters = reset_counters
        self.exporter = exporter
        self.say = say or (lambda m: None)
        self.store = Store(store, write=True, raw_days=raw_days, max_bytes=max_bytes)
        try:
            self.store.set_meta(plan=str(plan.path) if plan.path else None,
                                node_name_map=str(plan.node_name_map) if plan.node_name_map else None,
                                interval=str(interval), raw_days=str(raw_days), max_bytes=str(max_bytes))
            last = self.store.last_round()
            st = self.store.state()
            self.judge = Judge(plan, thresholds, window, state=st.get("view"), counters=self.store.last_counters(),
                               last_t=last["t"] if last else None)
        except BaseException:
            self.store.close()
            raise
        self.collector = Collector(clients, plan, timeout, local, scan_every=scan_every)
        self.cleared: set[End] = set()
        self.rounds = self.collected = 0
        self.last_error: str | None = None

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def step(self) -> tuple[Round, list[dict]]:
        """One round: collect, judge, write (one transaction), serve. Returns it and its events."""
        t = self.clock()
        try:
            rnd = self.collector.round(t)
        except EnvironmentProblem as e:  # nothing answered: recorded, tried again next interval
            rnd = Round(t, error=str(e))
        events = self.judge.judge(rnd, self.cleared)
        state = {"view": self.judge.state()} if self.judge.changed else None
        reset = {tuple(e["port"]) for e in events if e["kind"] == "counter_reset"} | self.cleared
        self.store.write_round(rnd, events, state, reset)
        self.rounds += 1
        self.collected += not rnd.error
        self.last_error = rnd.error
        self.cleared = set()
        if self.reset_counters and not rnd.error:
            full = sorted(e for e, p in rnd.ports.items()
                          if any(b < 64 and p.counters.get(n, 0) >= 1 << (b - 1) for n, b in p.bits.items()))
            if full:
                failed = self.collector.reset(full)
                self.cleared = set(full) - {_end_of(f, self.collector.lids) for f in failed}
                self.say(f"counters cleared on {len(self.cleared)} ports at half their range or more "
                         f"(--reset-counters): {', '.join(f'{d} port {p}' for d, p in full[:5])}"
                         + (" ..." if len(full) > 5 else "") + (f"; {len(failed)} failed: {failed[0]}" if failed else ""))
        self.store.retain(t)
        if self.exporter is not None:
            self.exporter.update(rnd, events, self.judge.view["seen"] if self.judge.view else None)
        return rnd, events

    def run(self, rounds: int | None = None, on_round=None) -> None:
        """Rounds every `interval` s of the clock (a round that took longer starts the next at
        once) until `rounds` are done or a signal ends it (KeyboardInterrupt, raised by the CLI's
        SIGTERM handler: the round under way is not written)."""
        next_t = self.clock()
        while rounds is None or self.rounds < rounds:
            rnd, events = self.step()
            if on_round is not None:
                on_round(rnd, events)
            if rounds is not None and self.rounds >= rounds:
                break
            next_t += self.interval
            wait = next_t - self.clock()
            if wait > 0:
                self.sleep(wait)
            else:
                next_t = self.clock()


def _end_of(failed: str, lids: dict) -> End | None:
    """"LID:PORT: reason" (a reset that failed) -> the port's end."""
    head = failed.split(":")
    try:
        lid, port = int(head[0]), int(head[1])
    except (ValueError, IndexError):
        return None
    return next((e for e, x in lids.items() if x == lid and e[1] == port), None)
