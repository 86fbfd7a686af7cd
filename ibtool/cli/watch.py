"""`ibtool watch`: the fabric over time — counters, changes and events kept in a store, served to
Prometheus, drawn as a trend per cable (docs/watch.md)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import click

from ibtool.cli import InPath, OutPath
from ibtool.cli.verify import _thresholds
from ibtool.errors import InputError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_SIZE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _duration(ctx, param, value):
    """'90s', '30m', '2h', '3d', '1w' or plain seconds -> seconds."""
    if value is None or isinstance(value, (int, float)):
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", str(value))
    if not m or float(m.group(1)) <= 0:
        raise click.BadParameter(f"expected a duration such as 90s, 30m, 2h, 3d or 1w; got {value!r}")
    secs = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if secs > 10 * 365 * 86400:
        raise click.BadParameter(f"{value!r} is more than ten years")
    return secs


def _size(ctx, param, value):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", str(value))
    if not m or float(m.group(1)) <= 0:
        raise click.BadParameter(f"expected a size such as 500M or 2G; got {value!r}")
    n = int(float(m.group(1)) * _SIZE[m.group(2).lower()])
    if n < 1 << 20:
        raise click.BadParameter(f"{value!r} is less than 1M: a store needs room for a round")
    return n


def _listen(ctx, param, value):
    """'ADDR:PORT', ':PORT', 'PORT' or 'none' -> (addr, port) or None."""
    if value is None or value.strip().lower() == "none":
        return None
    addr, _, port = value.strip().rpartition(":")
    addr = addr.strip("[]") or "0.0.0.0"
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise click.BadParameter(f"expected ADDR:PORT (e.g. 127.0.0.1:9683, :9683) or none; got {value!r}")
    return addr, int(port)


def _store_opt(f, writes: bool = False):
    # `watch run` creates and writes it (never over a device or a FIFO); the others only read it
    return click.option("--store", type=OutPath() if writes else InPath(dir_okay=False), required=True,
                        help="The watcher's store (an SQLite file `watch run` writes).")(f)


def _store_written(f):
    return _store_opt(f, writes=True)


@click.group(name="watch")
def group():
    """The fabric over time: every port's counters and the fabric's changes in a store, events that
    name the cable, a trend per cable, a Prometheus exporter (docs/watch.md).

    \b
    On the SM host (or any host of the fabric), as a service (dist/ibtool-watch.service):
      ibtool watch run --store /var/lib/ibtool-watch/watch.db --plan /etc/ibtool/cellia \\
          --threshold-file /etc/infiniband-diags/error_thresholds
    Then, any time:
      ibtool watch events --store /var/lib/ibtool-watch/watch.db --since 2h
      ibtool watch report --store /var/lib/ibtool-watch/watch.db --html trend.html
      curl -s localhost:9683/metrics | grep symbolerror
    """


@group.command(name="run")
@_store_written
@click.option("--plan", type=InPath(),
              help="The plan (directory or topology.net): names, cable IDs and labels (its cabling/cables.csv), "
                   "racks and Us, the planned rates.")
@click.option("--node-name-map", type=InPath(dir_okay=False),
              help="The site's node-name-map (GUID \"name\" lines, as OpenSM and the diags read): names first.")
@click.option("--interval", default="60s", show_default=True, callback=_duration,
              help="Time between rounds (90s, 5m ...).")
@click.option("--window", default="1h", show_default=True, callback=_duration,
              help="The window error rates per hour are measured over.")
@click.option("--threshold-file", type=InPath(dir_okay=False),
              help="Thresholds per hour in infiniband-diags' format (COUNTER=N lines), e.g. "
                   "/etc/infiniband-diags/error_thresholds. Default: any increase.")
@click.option("--threshold", "thresholds", multiple=True, callback=_thresholds, metavar="COUNTER=N",
              help="Override a threshold per hour (repeatable), e.g. --threshold SymbolErrorCounter=10.")
@click.option("--listen", default=":9683", show_default=True, callback=_listen,
              help="Where Prometheus scrapes /metrics (ADDR:PORT; 9683 as the field's infiniband-exporter), "
                   "or none.")
@click.option("--reset-counters", is_flag=True,
              help="Clear a port's counters when one reaches half its range (as infiniband-exporter's "
                   "--can-reset-counter). Never needed: deltas come from the store.")
@click.option("--raw-days", default=7.0, show_default=True, type=click.FloatRange(min=0.01, max=3650),
              help="Days of raw rounds kept before they are folded into per-hour aggregates.")
@click.option("--max-size", default="2G", show_default=True, callback=_size,
              help="The store's bound; beyond it the oldest aggregates and events go.")
@click.option("--spare-ports-every", "scan_every", default=4, show_default=True, type=click.IntRange(1, 1000),
              help="Ask a switch's spare ports (neither planned nor ever up) once in this many rounds, the others "
                   "every round: a cable plugged into a spare port shows within that many rounds (1: every round).")
@click.option("--rounds", type=click.IntRange(min=1), default=None,
              help="Stop after this many rounds (default: run until stopped).")
@click.option("--ca", "-C", default=None, help="Local HCA to use (as the diags' -C).")
@click.option("--port", "-P", type=click.IntRange(1, 254), default=None, help="Local port to use (as the diags' -P).")
@click.option("--timeout", default=60.0, show_default=True, type=click.FloatRange(min=1, max=3600),
              help="Seconds a round's MAD process may stay silent before it is stopped.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object a round (its numbers and events) per line.")
def run_cmd(store, plan, node_name_map, interval, window, threshold_file, thresholds, listen, reset_counters,
            raw_days, max_size, scan_every, rounds, ca, port, timeout, as_json):
    """Watch the fabric: a round every --interval, stored, judged, served, until stopped.

    Each round discovers the fabric and reads every port's counters, link state, width and speed
    in bulk (one process, 64 MADs in flight), writes them to the store in one transaction, and
    prints its events: links down and up, rates below the plan, devices and cables new, gone or
    moved, counter resets, saturated counters, error rates over the thresholds, SM changes. Each
    names the cable (ID, both ends' labels, rack, U). SIGTERM stops it at once: the round under
    way is not written, and no process of it is left.

    \b
    Examples:
      ibtool watch run --store watch.db --plan cellia --threshold-file /etc/infiniband-diags/error_thresholds
      ibtool watch run --store watch.db --plan cellia --listen 127.0.0.1:9683 --interval 5m
      ibtool watch run --store /tmp/w.db --rounds 1 --listen none --json     # one round, then exit
    Under ibsim (any diags client works the same way): . RUN/sim/env.sh first (`ibtool sim up`).
    """
    import shutil
    import signal
    import tempfile

    from ibtool.errors import raise_interrupted
    from ibtool.sim.clients import Clients
    from ibtool.verify.health import read_threshold_file
    from ibtool.watch.exporter import Exporter
    from ibtool.watch.plan import PlanView
    from ibtool.watch.service import Watcher
    th = {**(read_threshold_file(threshold_file) if threshold_file else {}), **thresholds}
    pv = PlanView(plan, node_name_map)
    say = (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))
    exporter = Exporter(pv) if listen else None
    work = Path(tempfile.mkdtemp(prefix="ibtool-watch-"))  # umad2sim (ibsim's client side) writes ./sys-<pid> here
    old = {s: signal.signal(s, raise_interrupted) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        clients = Clients(work, ca, port, timeout)
        with Watcher(store, pv, clients, th, interval, window, reset_counters, raw_days, max_size, timeout,
                     tuple(clients.local()), exporter, say=say, scan_every=scan_every) as w:
            if exporter is not None:
                exporter.serve(*listen)
                say(f"metrics on http://{listen[0]}:{listen[1]}/metrics")

            def on_round(rnd, events):
                if as_json:
                    click.echo(json.dumps({"t": rnd.t, "seconds": rnd.seconds, "mads": rnd.mads,
                                           "devices": len(rnd.devices), "cables": len(rnd.cables),
                                           "ports": rnd.counted, "failed": rnd.failed, "error": rnd.error,
                                           "events": events}))
                    return
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rnd.t))
                if rnd.error:
                    click.echo(f"{when} round failed: {rnd.error}")
                else:
                    click.echo(f"{when} {len(rnd.devices)} devices, {len(rnd.cables)} cables up, {rnd.counted} ports "
                               f"counted; {rnd.mads} MADs in {rnd.seconds:.2f} s"
                               + (f"; {len(rnd.failed)} queries unanswered" if rnd.failed else ""))
                for e in events:
                    click.echo(f"  {e['kind']}: {e['text']}")
            w.run(rounds, on_round)
            if not w.collected:  # --rounds N and not one could be collected: say why, as the diags would
                from ibtool.errors import EnvironmentProblem
                raise EnvironmentProblem(f"no round could be collected: {w.last_error}")
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if exporter is not None:
            exporter.stop()
        shutil.rmtree(work, ignore_errors=True)


@group.command(name="events")
@_store_opt
@click.option("--since", default="24h", show_default=True, callback=_duration,
              help="How far back (90s, 30m, 2h, 3d, 1w) from the last round.")
@click.option("--kind", "kinds", multiple=True, help="Only these kinds (repeatable): link_down, rate_over ...")
@click.option("--json", "as_json", is_flag=True, help="A JSON list of the events, with every field.")
def events_cmd(store, since, kinds, as_json):
    """The events of the last --since, oldest first: each names its cable (ID, both ends' labels,
    rack and U) or device.

    \b
    Examples:
      ibtool watch events --store watch.db --since 2h
      ibtool watch events --store watch.db --since 7d --kind rate_over --kind link_down --json
    """
    from ibtool.watch.events import KINDS
    from ibtool.watch.store import open_for_reading
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise InputError(f"--kind {bad[0]}: not a kind of event; the kinds are {', '.join(KINDS)}")
    with open_for_reading(store) as st:
        last = st.last_round()
        ref = last["t"] if last else time.time()
        evs = st.events(ref - since, tuple(kinds))
    if as_json:
        click.echo(json.dumps(evs, indent=2))
        return
    if not evs:
        click.echo(f"no events in the {_ago(since)} before the last round")
    for e in evs:
        click.echo(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(e['t']))} {e['kind']}: {e['text']}")


def _ago(secs: float) -> str:
    for unit, n in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= n and secs % n == 0:
            return f"{int(secs // n)}{unit}"
    return f"{secs:g}s"


@group.command(name="report")
@_store_opt
@click.option("--plan", type=InPath(),
              help="The plan to draw on (default: the plan the watcher was given, recorded in the store).")
@click.option("--html", "html_out", type=OutPath(), required=True, help="The page to write.")
@click.option("--window", default="3d", show_default=True, callback=_duration,
              help="The span of the trends and of the error rates the cables are coloured by.")
@click.option("--json", "as_json", is_flag=True, help="Also print the ranking as JSON.")
def report_cmd(store, plan, html_out, window, as_json):
    """A page: the fabric drawn with each cable coloured by its error rate over --window, the
    cables whose rates rise ranked first with a small time series of their counters and the
    fix ("C0043: SymbolErrorCounter 40/h and rising for 3 days: reseat or replace"), and the
    events of the window. One self-contained file; prints on A4.

    \b
    Example:
      ibtool watch report --store watch.db --html trend.html --window 7d
    """
    from ibtool.watch.plan import PlanView
    from ibtool.watch.report import write_html
    from ibtool.watch.store import open_for_reading
    with open_for_reading(store) as st:
        recorded = st.meta().get("plan")
        pv = PlanView(plan or recorded, st.meta().get("node_name_map")) if (plan or recorded) else PlanView()
        rep = write_html(st, pv, html_out, window)
    if as_json:
        click.echo(json.dumps(rep, indent=2))
    else:
        click.echo(f"{html_out}: {len(rep['cables'])} cables with errors in the last {_ago(window)}, "
                   f"{sum(1 for c in rep['cables'] if c['rising'])} rising; {len(rep['events'])} events")


@group.command(name="status")
@_store_opt
@click.option("--json", "as_json", is_flag=True, help="Machine-readable.")
def status_cmd(store, as_json):
    """What the store holds: rounds, the last one, its size, events by kind.

    \b
    Example:
      ibtool watch status --store watch.db
    """
    from ibtool.watch.store import open_for_reading
    with open_for_reading(store) as st:
        s = st.summary()
    if as_json:
        click.echo(json.dumps(s, indent=2))
        return
    last = s["last_round"]
    click.echo(f"{store}: {s['rounds']} rounds, {s['bytes'] / 1e6:.1f} MB")
    if last:
        click.echo(f"  last round {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(last['t']))}: "
                   f"{last['devices']} devices, {last['cables']} cables up, {last['mads']} MADs in {last['seconds']:.2f} s"
                   + (f"; failed: {last['error']}" if last["error"] else ""))
    for k, n in sorted(s["events"].items()):
        click.echo(f"  {k}: {n}")
