"""Routing-engine switching: restart OpenSM on the SM node with one engine and prove it routed.

OpenSM falls back to minhop silently when an engine fails, so "OpenSM is up" is not enough:
the log must say ``<engine> tables configured on all switches`` for the requested engine.
The log is read by ibtool.sim.opensm.routing_outcome (shared with ``ibtool sim``).
"""

from __future__ import annotations

import json
import posixpath
import shlex
import sys
import time
from pathlib import Path

from ibtool import children, rundir
from ibtool.bench.runners.base import Local, Transport
from ibtool.errors import CheckFailed, EnvironmentProblem, InputError, NotChecked
from ibtool.sim.live import last_error, vls_needed
from ibtool.sim import opensm_options
from ibtool.sim.opensm import parse_engines, routing_outcome


def sm_transport(inv, runner) -> Transport:
    if inv.sm is None:
        raise InputError("--engines needs an 'sm' section in the inventory (the SM node and how to start OpenSM)",
                         path=inv.path)
    host = inv.sm["host"]
    return Local() if host == "local" else runner.transport(inv.host(host))


def stop(t: Transport, sm: dict) -> None:
    """Stop the OpenSM a previous switch started (pid file), then run the inventory's `stop` command."""
    pidfile = shlex.quote(f"{sm['workdir']}/opensm.pid")
    t.run(f"if [ -f {pidfile} ]; then p=$(cat {pidfile}); kill $p 2>/dev/null; "
          f"for i in 1 2 3 4 5 6 7 8 9 10; do kill -0 $p 2>/dev/null || break; sleep 0.5; done; "
          f"kill -9 $p 2>/dev/null; rm -f {pidfile}; fi", 60)
    if sm.get("stop"):
        t.run(sm["stop"], 120)


def keep_output(outcome: dict, dest: Path, live) -> dict:
    """Copy a LiveFabric's OpenSM log and output into `dest` (OUT/engines/<engine>/)."""
    dest.mkdir(parents=True, exist_ok=True)
    for key, name in (("log", "opensm.log"), ("output", "opensm.out")):
        src = Path(outcome[key])
        if src.exists():
            (dest / name).write_bytes(src.read_bytes())
            outcome[key] = str(dest / name)
    return outcome


def _config_arg(args: list[str]) -> str | None:
    """The configuration file OpenSM's command line names (-F FILE, --config FILE, --config=FILE)."""
    for i, a in enumerate(args):
        if a in ("-F", "--config") and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--config="):
            return a.split("=", 1)[1]
        if a.startswith("-F") and len(a) > 2:
            return a[2:]
    return None


def switch(t: Transport, sm: dict, engine: str, say=lambda msg: None, dest: Path | None = None) -> dict:
    """Restart OpenSM with `engine`; return what its log says. A configuration given in sm.args
    (-F FILE, relative to sm.workdir) must set force_log_flush TRUE, or the log is only written
    when OpenSM exits: checked before the running OpenSM is stopped (CheckFailed). Raises
    CheckFailed when the subnet did not come up or another engine (a fallback) configured the
    tables."""
    if parse_engines(engine) != [engine]:  # raises for names OpenSM does not know (it would fall back)
        raise InputError(f"invalid routing engine name {engine!r}")
    d = sm["workdir"]
    log = f"{d}/opensm-{engine}.log"
    pidfile = f"{d}/opensm.pid"
    args = list(sm["args"])
    # OpenSM buffers its log unless force_log_flush is set: SUBNET UP would appear only at exit
    given = _config_arg(args)
    if given is not None:
        try:
            options = opensm_options.read(t.get(posixpath.join(d, given)).decode(errors="replace"))
        except (OSError, EnvironmentProblem) as e:
            raise CheckFailed(f"sm.args -F {given}: cannot read it on the SM node ({e})") from None
        if options.get("force_log_flush", "").upper() != "TRUE":
            raise CheckFailed(f"sm.args -F {given}: it must set force_log_flush TRUE (OpenSM writes its log only "
                              "at exit otherwise, and ibtool reads SUBNET UP and the routing engine from it)")
    t.mkdirs(d)
    stop(t, sm)
    t.run(f"rm -f {shlex.quote(log)}", 30)
    if given is None:
        conf = f"{d}/ibtool-opensm.conf"
        t.put(conf, "# written by ibtool bench\nforce_log_flush TRUE\n")
        args = ["-F", conf, *args]
    argv = [sm["opensm"], "-R", engine, "-f", log, *args]
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(sm["env"].items()))
    start = (f"cd {shlex.quote(d)} && nohup env {env} {' '.join(shlex.quote(a) for a in argv)} "
             f"</dev/null >{shlex.quote(d + '/opensm.out')} 2>&1 & echo $! > {shlex.quote(pidfile)}")
    say(f"restarting OpenSM with routing engine {engine}")
    rc, _, err = t.run(start, 60)
    if rc != 0:
        raise CheckFailed(f"cannot start OpenSM on the SM node: {err.strip()}")
    deadline = time.monotonic() + sm["timeout"]
    text = ""
    alive = True
    while time.monotonic() < deadline:
        _, text, _ = t.run(f"cat {shlex.quote(log)} 2>/dev/null", 30)
        if "SUBNET UP" in text:
            break
        rc, _, _ = t.run(f"kill -0 $(cat {shlex.quote(pidfile)}) 2>/dev/null", 30)
        if rc != 0:
            alive = False
            _, text, _ = t.run(f"cat {shlex.quote(log)} 2>/dev/null", 30)
            break
        time.sleep(0.5)
    outcome = routing_outcome(text, [engine]).as_dict()
    outcome["requested_engine"] = engine
    outcome["log"] = log
    outcome["command"] = start
    outcome["vls_needed"] = vls_needed(text)
    _, said, _ = t.run(f"cat {shlex.quote(d + '/opensm.out')} 2>/dev/null", 30)
    if dest is not None:  # each engine's OpenSM output is kept with the campaign, not overwritten
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "opensm.log").write_text(text)
        (dest / "opensm.out").write_text(said)
        outcome["log"] = str(dest / "opensm.log")
    if not outcome["subnet_up"]:
        why = "OpenSM exited" if not alive else f"no SUBNET UP within {sm['timeout']:g} s"
        last = last_error(said, text)
        outcome["error"] = f"{why} with routing engine {engine}" + (f": {last}" if last else "")
    elif outcome["engine"] != engine:
        got = outcome["engine"] or "no engine"
        outcome["error"] = (f"OpenSM fell back: {got} configured the tables, not {engine} "
                            f"(see {log} on the SM node)")
    return outcome


def verify_routes(t: Transport | None, sm: dict, engine: str, dest: Path, live=None) -> dict:
    """Discover the fabric and dump its forwarding tables on the SM node (or the emulated fabric
    `live`), then trace every route here with `ibtool verify routes` (black holes, loops, deadlock,
    balance). Files kept in `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(sm["env"].items()))
    d = shlex.quote(sm["workdir"])
    for tool in ("ibnetdiscover", "dump_fts"):
        if live is not None:
            try:
                live.client([tool], dest / f"{tool}.out", sm["timeout"])
            except EnvironmentProblem as e:
                return {"ok": False, "error": f"{tool} failed on the emulated fabric: {e}"}
            continue
        remote = f"{sm['workdir']}/{tool}.out"
        rc, _, err = t.run(f"cd {d} && env {env} {tool} > {shlex.quote(remote)}", sm["timeout"])
        if rc != 0:
            return {"ok": False, "error": f"{tool} failed on the SM node (exit {rc}): {err.strip()[-300:]}"}
        (dest / f"{tool}.out").write_bytes(t.get(remote))
    p = children.run([sys.executable, "-m", "ibtool.cli.main", "verify", "routes", "--fabric",
                      str(rundir.fabric(dest)), "--lfts", str(dest / rundir.LFTS), "--engine", engine, "--json"],
                     capture_output=True, text=True)
    (dest / "verify_routes.json").write_text(p.stdout)
    try:
        report = json.loads(p.stdout)
    except ValueError:
        return {"ok": False, "error": f"ibtool verify routes failed: {p.stderr.strip()[-300:]}"}
    out = {"ok": bool(report.get("ok")) and p.returncode == 0, "exit_code": p.returncode,
           "report": str(dest / "verify_routes.json")}
    if p.returncode == NotChecked.exit_code and report.get("verdict") == "NOT CHECKED":
        # nothing failed; what could not be judged (an engine's credit loop without its path SLs) is said
        why = [f"{c.get('name')}: NOT CHECKED: {c.get('summary')}" for c in report.get("checks", [])
               if isinstance(c, dict) and c.get("not_checked")]
        return {**out, "ok": None, "checked": False, "verdict": "NOT CHECKED", "reason": "; ".join(why[:2])}
    if not out["ok"]:
        # what is wrong with the tables, in the report's words ("credit loop: a cycle of 8 channels ...")
        failed = [f"{c.get('name')}: {c.get('summary')}" for c in report.get("checks", [])
                  if isinstance(c, dict) and not c.get("ok")]
        out["error"] = (f"routing engine {engine} is in effect, but its tables fail verification: "
                        f"{'; '.join(failed[:2]) or f'ibtool verify routes exit {p.returncode}'} "
                        f"(see {dest / 'verify_routes.json'})")
        out["failed_checks"] = failed
    return out


def require(outcome: dict) -> None:
    if outcome.get("error"):
        raise CheckFailed(outcome["error"])
