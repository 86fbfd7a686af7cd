"""`ibtool sim`: emulate a fabric in ibsim under a real OpenSM."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import click

from ibtool.cli import InPath, OutPath, finite_seconds
from ibtool.errors import CheckFailed, InputError, raise_interrupted
from ibtool.formats import atomic_write, check_input, ibnetdiscover
from ibtool.plan import Plan
from ibtool.sim import opensm, opensm_options
from ibtool.sim.runner import RunOptions, run


@click.group(name="sim")
def group():
    """Emulate fabrics with ibsim and a real OpenSM (Debian's /usr/sbin/opensm)."""


def _kv(ctx, param, values):
    out = []
    for v in values:
        if "=" not in v:
            raise click.BadParameter(f"expected KEY=VALUE, got {v!r}")
        k, val = v.split("=", 1)
        if not re.fullmatch(r"[A-Za-z0-9_]+", k.strip()) or any(c in val for c in "\r\n\0"):
            # a newline would add a line of its own to opensm.conf
            raise click.BadParameter(f"expected KEY=VALUE on one line, KEY of letters, digits and _; got {v[:60]!r}")
        # OpenSM would skip an unknown key or a value beyond its range, saying so only in its log
        k, val = k.strip(), opensm_options.check(k.strip(), val.strip(), f"--conf {v[:80]}")
        if k in opensm_options.FILE_KEYS and val != "(null)":
            val = str(Path(val).resolve())  # OpenSM runs in a scratch directory, not here
        out.append((k, val))
    return out


def _plan(net, engine, opensm_config, log_flags, hdor_conf=None, say=None, plan=None
          ) -> tuple[Path, list[str], str | None, int, Path | None]:
    """NET (a plan directory: its topology.net), --engine (default: the plan's opensm.conf, with
    its options), the opensm.conf to start from, --log-flags as a number, and the KNS description
    hdor reads (--hdor-conf FILE|none; default: the plan's hdor.conf when hdor is one of the
    engines). `plan` (--plan): the plan that configures NET, and NET itself when none is given;
    without it the plan is NET's own directory. say(line): which engine OpenSM will use and why,
    when no --engine and no plan's opensm.conf chose it (said once the run has started: _say_notes)."""
    if net is None and plan is None:
        raise InputError("give the net file or plan to emulate: NET|PLAN, or --plan PLAN")
    p = Plan.at(plan if plan is not None else net)
    p.check_net()
    net = p.net if net is None else Plan.at(net).check_net()
    plan_engines = p.engines() if engine is None else None
    if plan_engines is not None:
        engines = plan_engines  # the plan's engine, with its options (root GUIDs ...)
        opensm_config = opensm_config or str(p.opensm_conf)
    else:
        engines = opensm.parse_engines("minhop" if engine is None else engine)
        if engine is None and say:
            say(p.default_engine_note())
    try:
        flags = int(log_flags, 0)
    except ValueError:
        raise InputError(f"--log-flags: not a number: {log_flags!r}") from None
    if not 0 <= flags <= 0xFF:  # OpenSM's log flags are one byte (OSM_LOG_ERROR 0x01 .. OSM_LOG_SYS 0x80)
        raise InputError(f"--log-flags: {log_flags} is outside 0x00..0xff")
    if "file" in engines:  # file says it deferred to OpenSM's default only at VERBOSE (0x04): read it
        flags |= 0x04
    if hdor_conf is None:
        desc = p.hdor_conf if "hdor" in engines and p.hdor_conf.is_file() else None
    elif hdor_conf == "none":
        desc = None
    else:
        desc = Path(hdor_conf)
        check_input(desc, "--hdor-conf", directory_ok=False)
        if not desc.is_file():
            raise InputError("--hdor-conf: no such file", path=str(hdor_conf))
    return net, engines, opensm_config, flags, desc


def hdor_conf_option(f):
    return click.option("--hdor-conf", "hdor_conf", metavar="FILE|none",
                        help="The KNS description hdor reads (copied beside every SM's opensm.conf; "
                             "docs/plugin.md). Default: the plan's hdor.conf beside NET when hdor is one of the "
                             "engines; 'none': no description (hdor identifies the KNS at first sight).")(f)


@group.command(name="run")
@click.argument("net", metavar="[NET|PLAN]", type=InPath(), required=False)
@click.option("--plan", "plan", type=InPath(),
              help="The plan (a directory of `ibtool topo`, or its topology.net) whose opensm.conf, engine "
                   "files and hdor.conf configure the run; without NET its topology.net is emulated. "
                   "Default: NET's own directory.")
@click.option("--engine", "-R", default=None,
              help="Routing engines for OpenSM, tried in order (e.g. hdor,minhop). hdor is loaded from "
                   "opensm_plugin/libhdor.so automatically. Default: the plan's opensm.conf (its engine and "
                   "the files it names, as `ibtool topo` wrote them), else minhop.")
@click.option("--out", "-o", type=OutPath(directory=True), required=True, help="Run directory.")
@click.option("--timeout", default=300.0, show_default=True, type=float, callback=finite_seconds,
              help="Seconds for OpenSM and each client (1..604800).")
@click.option("--log-flags", default="0x47", show_default=True,
              help="OpenSM -D flags; 0x40 makes OpenSM write its dump files (costly on big fabrics).")
@click.option("--conf", "conf_options", multiple=True, callback=_kv, metavar="KEY=VALUE",
              help="Extra opensm.conf option (repeatable), e.g. --conf lmc=1 --conf root_guid_file=roots.")
@click.option("--opensm-config", type=InPath(exists=True, dir_okay=False, path_type=None),
              help="An opensm.conf to start from; ibtool's keys are appended.")
@click.option("--opensm-arg", "opensm_args", multiple=True, help="Extra OpenSM command-line argument (repeatable).")
@click.option("--no-discover", is_flag=True, help="Skip ibnetdiscover and dump_fts.")
@click.option("--path-sls/--no-path-sls", default=None,
              help="Keep OpenSM up as the SA after routing and save every HCA's PathRecords (saquery -p) in "
                   "saquery-paths.out: the SL of each path, which `verify` needs to judge the deadlock freedom "
                   "of engines that give paths their own SLs (hdor, dfsssp, lash, nue, torus-2QoS). On by "
                   "default for those (with faults: at every step); --no-path-sls skips it (faster; a cycle "
                   "on one VL is then NOT CHECKED).")
@click.option("--accept-fallback", is_flag=True,
              help="Tables by a later engine of the routing_engine list pass (said as FALLBACK). Without it, "
                   "the first engine not routing fails the run (exit 1). OpenSM's own default (minhop, when "
                   "no engine of the list routed) passes only where the list names it.")
@click.option("--faults", type=InPath(),
              help="A fault scenario (YAML: steps of cables/switches down, up, port errors; docs/faults.md): "
                   "one OpenSM keeps running, each step's tables are collected into OUT/step-N/.")
@click.option("--fail", "fail", multiple=True, metavar="'DEVICE [PORT]'",
              help="One fault step: this cable (device and port, either end) or switch down (repeatable: "
                   "all in the same step).")
@click.option("--random-faults", type=click.IntRange(min=1), default=None,
              help="N steps, each one more random switch cable or switch down (never the SM's switch, "
                   "never cutting the switches in two).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --random-faults.")
@hdor_conf_option
@click.option("--json", "as_json", is_flag=True, help="Print summary.json.")
def run_cmd(net, plan, engine, out, timeout, log_flags, conf_options, opensm_config, opensm_args, no_discover, path_sls,
            accept_fallback, faults, fail, random_faults, seed, hdor_conf, as_json):
    """Bring NET up in ibsim, route it once with OpenSM, discover it (PLAN: a plan directory, its
    topology.net with its opensm.conf; or --plan PLAN).

    \b
    Writes into OUT:
      summary.json         subnet up?, the engine that really configured the tables, timings
      opensm.log, opensm.conf, osm/   OpenSM's log, config and dump files
      ibnetdiscover.out, dump_fts.out the discovered topology and forwarding tables
      saquery-paths.out    the SA's PathRecords (the SL of every path): --path-sls, the default
                           for engines that give paths their own SLs (hdor, dfsssp, lash, nue ...)

    Exits 0 only when the subnet came up and the first engine of the list configured the tables
    (or, with --accept-fallback, a later one of the list). OpenSM falls back silently (to the
    next engine, to minhop) and names an engine that deferred to its default (file without an
    lfts_file); ibtool reads the log to tell, and says FALLBACK. Without --engine and without
    a plan's opensm.conf (beside NET, or --plan's), OpenSM routes with minhop, and the run says
    so and why (a net file copied out of its plan: give --plan DIR).
    When OpenSM exits early its own last error lines are printed; exit 2 when it refused its
    command line (an --opensm-arg it does not know, -h, a value out of its range).

    \b
    Example:
      ibtool sim run cellia --out run                         # the plan's engine (hdor)
      ibtool sim run --plan cellia --out run                  # the same
      ibtool sim run edited.net --plan cellia --out run       # another net, configured as cellia
      ibtool sim run cellia/topology.net --engine hdor --out run
      ibtool sim run cellia/topology.net --engine dfsssp --conf qos=TRUE --out run-dfsssp   # path SLs too
      ibtool sim run cellia --accept-fallback --out run       # nue's tables pass where hdor declines
    """
    notes: list[str] = []
    net, engines, opensm_config, flags, plan_conf = _plan(net, engine, opensm_config, log_flags, hdor_conf,
                                                          say=notes.append, plan=plan)
    if faults or fail or random_faults:
        return _scenario(net, out, engines, timeout, faults, fail, random_faults, seed, as_json, path_sls, flags,
                         opensm_config, conf_options, plan_conf, accept_fallback, notes)
    if path_sls is None:  # judged with the SLs where the engine gives paths their own (issue 36)
        path_sls = not no_discover and any(e in opensm.SL_ENGINES for e in engines)
    opts = RunOptions(engines=engines, timeout=timeout, log_flags=flags, conf_options=conf_options,
                      conf_base=opensm_config, opensm_args=list(opensm_args), discover=not no_discover,
                      path_sls=bool(path_sls), hdor_conf=plan_conf, accept_fallback=accept_fallback,
                      note="; ".join(notes) or None)
    progress = None if as_json else (lambda m: click.echo(f"  {m}", err=True))
    s = run(net, out, opts, progress)
    if as_json:
        click.echo(json.dumps(s, indent=2))
    else:
        t = s["timings"]
        state = "UP" if s.get("subnet_up") else "NOT UP"
        click.echo(f"subnet {state}; tables configured by {s.get('engine') or 'no engine'}" + _fallback_said(s, engines)
                   + (f"; NO ROUTES: {s['no_routes']}" if s.get("no_routes") else "")
                   + (f"; declined: {','.join(s['declined'])}" if s.get("declined") else ""))
        step = s.get("routing_step_s")
        click.echo(f"opensm {t.get('opensm_s')} s" + (f", routing step {step:.3f} s" if step is not None else "")
                   + f", total {t.get('total_s')} s; results in {out}")
        if s.get("hdor_declined"):
            click.echo(f"  hdor declined: {s['hdor_declined']}", err=True)
        if s.get("opensm_error"):
            click.echo(f"  {s['opensm_error']}", err=True)
        for e in s.get("errors", [])[:3]:
            click.echo(f"  opensm: {e}", err=True)
    _say_notes(notes)
    if not s.get("ok"):
        raise SystemExit(1)


def _fallback_said(s: dict, engines: list[str]) -> str:
    """ (FALLBACK ...) after the engine, when the tables are not the first engine's."""
    if not s.get("fallback"):
        return ""
    why = (f"{s['default_for']} deferred to OpenSM's default" if s.get("default_for") else
           f"requested {','.join(engines)}")
    return f" (FALLBACK: {why}" + ("; accepted: --accept-fallback" if s.get("ok") else "") + ")"


def _say_notes(notes: list[str]) -> None:
    """Notes on stderr (also with --json, whose stdout stays JSON), once the run has happened: a
    refused input stays one line."""
    for m in notes:
        click.echo(f"ibtool: note: {m}", err=True)


def _scenario(net, out, engines, timeout, faults, fail, random_faults, seed, as_json, path_sls, flags, conf_base,
              conf_options, hdor_conf, accept_fallback=False, notes=()):
    """`sim run` with faults: a live fabric, one OpenSM, a step at a time (ibtool.sim.faults)."""
    from ibtool.formats import atomic_write, ibnetdiscover
    from ibtool.sim import faults as fault_scenarios
    if sum(bool(x) for x in (faults, fail, random_faults)) > 1:
        raise InputError("give one of --faults, --fail and --random-faults")
    if not Path(net).is_file():
        raise InputError("no such net file", path=str(net))
    plan = ibnetdiscover.read(net)
    if faults:
        sc = fault_scenarios.read(faults, plan)
    elif fail:
        step = fault_scenarios.Step(down=list(fail))
        for spec in step.down:
            fault_scenarios.target(plan, spec, "--fail")
        sc = fault_scenarios.Scenario([step], source="--fail")
    else:
        sc = fault_scenarios.random_scenario(plan, random_faults, seed)
    progress = None if as_json else (lambda m: click.echo(f"  {m}", err=True))
    s = fault_scenarios.run(Path(net), out, engines, sc, timeout, progress, path_sls=path_sls, log_flags=flags,
                            conf_base=conf_base, conf_options=conf_options, hdor_conf=hdor_conf,
                            accept_fallback=accept_fallback)
    if as_json:
        click.echo(json.dumps(s, indent=2))
    else:
        for st in s["steps"]:
            click.echo(f"step {st['step']}: {st['faults']}: tables by {st['engine'] or 'no engine'}"
                       + (f" in {st['seconds_to_tables']} s" if st["seconds_to_tables"] is not None else "")
                       + _fallback_said(st, engines) + (" (TIMED OUT)" if st["timed_out"] else ""))
        click.echo(f"results in {out}; verify every step with: ibtool verify all {out}")
    _say_notes(list(notes))
    if not s["ok"]:
        raise SystemExit(1)


# ---------------------------------------------------------------------- a fabric that stays up
def _live_dir(run: Path) -> Path:
    return Path(run) / "sim"


def _attach(run: Path):
    from ibtool.sim.live import LiveFabric
    return LiveFabric.attach(_live_dir(run))


def _describe(lf, run: Path) -> dict:
    """What runs and what reaches it, for people (printed) and machines (--json)."""
    from ibtool.sim.runner import UMAD2SIM
    sms = []
    for sm in lf.sms:
        o = sm.outcome
        sms.append({"sm": sm.n, "node": sm.name or sm.node or "ibsim's default node", "priority": sm.priority,
                    "pid": sm.pid if sm.running else None, "state": sm.state(),
                    "engine": o.get("engine") if sm.state() == "MASTER" else None,
                    "engines": sm.engines, "log": sm.log, "error": o.get("error"), "stalls": o.get("stalls", [])})
    return {"run": str(run), "up": lf.up, "net": str(lf.net), "ibsim_pid": lf.ibsim_pid if lf.up else None,
            "IBSIM_SOCKNAME": lf.sockname, "LD_PRELOAD": UMAD2SIM, "scratch": str(lf.scratch),
            "env": f"IBSIM_SOCKNAME={lf.sockname} LD_PRELOAD={UMAD2SIM}", "sms": sms,
            "console": str(lf.fifo), "ibsim_log": str(lf.ibsim_log)}


def _print(d: dict) -> None:
    if not d["up"]:
        click.echo(f"{d['run']}: the emulated fabric is down")
        return
    click.echo(f"ibsim (pid {d['ibsim_pid']}) emulates {d['net']}")
    for sm in d["sms"]:
        state = sm["state"] or "not running"
        what = f", tables by {sm['engine']}" if sm["engine"] else ""
        prio = f", priority {sm['priority']}" if sm["priority"] is not None else ""
        stalls = [x["message"] for x in sm.get("stalls", [])]
        click.echo(f"  SM {sm['sm']} on {sm['node']}{prio}: {state}"
                   + (f" (pid {sm['pid']})" if sm["pid"] else "") + what
                   + (f"; {sm['error']}" if sm["error"] and sm["state"] != "STANDBY" and sm["error"] not in stalls
                      else ""))
        for stall in stalls:
            click.echo(f"    {stall}", err=True)
    click.echo("infiniband-diags and `ibtool collect` reach it with these two variables (umad2sim makes and "
               "removes ./sys-<pid> in the current directory):")
    click.echo(f"  export IBSIM_SOCKNAME={d['IBSIM_SOCKNAME']}")
    click.echo(f"  export LD_PRELOAD={d['LD_PRELOAD']}")
    click.echo(f"  (or: . {d['run']}/sim/env.sh)   then: ibnetdiscover; perfquery; ibtool collect --out collect")
    click.echo(f"change it: ibtool sim set {d['run']} --down 'DEVICE PORT' ... ; "
               f"its SMs: ibtool sim sm {d['run']} --kill|--start|--restart --sm N")
    click.echo(f"stop it: ibtool sim down {d['run']}")


@group.command(name="up")
@click.argument("net", type=InPath())
@click.option("--out", "-o", type=OutPath(directory=True), required=True, help="Run directory (the fabric's state and logs in OUT/sim/).")
@click.option("--engine", "-R", default=None,
              help="Routing engines for OpenSM, tried in order. Default: the plan's opensm.conf beside NET, else minhop.")
@click.option("--sms", type=click.IntRange(1, 8), default=None,
              help="OpenSM instances (default 1): with several, each on its own HCA (first and last of the file "
                   "for two), master and standby by sm_priority (15, 14, ...).")
@click.option("--sm-on", "sm_on", multiple=True, metavar="DEVICE",
              help="Put an SM on this device (plan name such as 'H[0,0]', or ibsim node id); repeat for several.")
@click.option("--sm-priority", "sm_priority", multiple=True, type=click.IntRange(0, 15),
              help="sm_priority of each SM, in order (repeat once per SM).")
@click.option("--conf", "conf_options", multiple=True, callback=_kv, metavar="KEY=VALUE",
              help="Extra opensm.conf option for every SM (repeatable), e.g. --conf sminfo_polling_timeout=1000.")
@click.option("--opensm-config", type=InPath(exists=True, dir_okay=False, path_type=None),
              help="An opensm.conf to start from; ibtool's keys are appended.")
@hdor_conf_option
@click.option("--log-flags", default="0x03", show_default=True, help="OpenSM -D flags (0x40: OpenSM's dump files).")
@click.option("--timeout", default=300.0, show_default=True, type=float, callback=finite_seconds,
              help="Seconds to wait for ibsim and for each SM.")
@click.option("--accept-fallback", is_flag=True,
              help="Tables by a later engine of the list pass (as `sim run --accept-fallback`), here and in "
                   "`sim sm` on this fabric.")
@click.option("--json", "as_json", is_flag=True, help="Print what runs and how to reach it as JSON.")
def up_cmd(net, out, engine, sms, sm_on, sm_priority, conf_options, opensm_config, hdor_conf, log_flags, timeout,
           accept_fallback, as_json):
    """Start ibsim and OpenSM on NET and leave them running.

    The processes outlive this command: they are recorded in OUT/sim/sim.json, where `sim sm`,
    `sim set`, `sim status` and `sim down` find them. Prints the IBSIM_SOCKNAME and the
    LD_PRELOAD line that let infiniband-diags (and `ibtool collect`) reach the fabric.
    Exits 0 when the master SM configured the tables with the first engine of the list (or a
    later one with --accept-fallback) and every other SM came up as its standby, 1 otherwise (the
    fabric stays up to be looked at; `sim down` stops it).

    \b
    Examples:
      ibtool sim up cellia/topology.net --out run        # the plan's engine (hdor), one SM
      ibtool sim up plan/topology.net --sms 2 --conf sminfo_polling_timeout=1000 --out run
      ibtool sim up plan/topology.net --sm-on 'H[0,0]' --sm-on 'H[5,5]' --sm-priority 15 --sm-priority 1 --out run
      ibtool sim down run
    """
    from ibtool.sim.live import LiveFabric
    import signal as _signal
    notes: list[str] = []
    net, engines, opensm_config, flags, hdor_conf = _plan(net, engine, opensm_config, log_flags, hdor_conf,
                                                          say=notes.append)
    if not net.is_file():
        raise InputError("no such net file", path=str(net))
    if sms and sm_on and sms != len(sm_on):
        raise InputError(f"--sms {sms} but {len(sm_on)} --sm-on")
    conf = list(conf_options)
    if any(e in opensm.SL_ENGINES for e in engines) and "qos" not in dict(conf):
        conf.append(("qos", "TRUE"))  # OpenSM calls update_sl2vl only with QoS on (docs/faults.md)
    run = Path(out)
    live = _live_dir(run)
    try:
        old = LiveFabric.attach(live)
    except InputError:
        old = None
    if old is not None and old.up:
        raise InputError(f"--out {run}: an emulated fabric is up there (ibsim pid {old.ibsim_pid}); "
                         f"`ibtool sim down {run}` first")
    lf = LiveFabric(net, live, engines, timeout=timeout, conf_options=conf, opensm_args=["-D", hex(flags)],
                    conf_base=opensm_config, hdor_conf=hdor_conf, sms=sms or 1, sm_nodes=list(sm_on) or None,
                    sm_priorities=list(sm_priority) or None, detached=True, accept_fallback=accept_fallback)
    say = None if as_json else (lambda m: click.echo(f"  {m}", err=True))
    if say:
        say(f"starting ibsim and {len(lf.sms)} OpenSM with routing_engine {','.join(engines)}")
    old_term = _signal.signal(_signal.SIGTERM, raise_interrupted)
    try:
        lf.__enter__()  # on any failure (Ctrl-C too) everything started is stopped again
    finally:
        _signal.signal(_signal.SIGTERM, old_term)
    d = _describe(lf, run)
    with atomic_write(run / "sim" / "env.sh") as fh:
        fh.write(f"# . {run}/sim/env.sh: infiniband-diags and ibtool collect reach the fabric ibtool sim up started\n"
                 f"export IBSIM_SOCKNAME={lf.sockname}\nexport LD_PRELOAD={d['LD_PRELOAD']}\n")
    master = lf.master()
    # a standby that stalled and was given up on (docs/sim.md, "When an SM stalls") fails the start too
    broken = [f"SM {i}: {sm.outcome['error']}" for i, sm in enumerate(lf.sms, 1)
              if sm is not master and sm.outcome.get("error")]
    ok = master is not None and master.outcome.get("ok", False) and not broken
    d["ok"] = ok
    if as_json:
        click.echo(json.dumps(d, indent=2))
    else:
        _print(d)
        if master is None or not master.outcome.get("ok", False):
            click.echo("NOT UP with the requested engine: " + ((master.outcome.get("error") if master else None)
                       or "no SM is master"), err=True)
        for b in broken:
            click.echo(f"NOT UP: {b}", err=True)
    _say_notes(notes)
    if not ok:
        raise SystemExit(1)


@group.command(name="status")
@click.argument("run", type=InPath())
@click.option("--json", "as_json", is_flag=True)
def status_cmd(run, as_json):
    """What of the fabric `sim up` started in RUN still runs: ibsim, each SM's state (MASTER,
    STANDBY) and engine, and how to reach it. Exits 1 when ibsim is not running."""
    d = _describe(_attach(run), run)
    click.echo(json.dumps(d, indent=2)) if as_json else _print(d)
    if not d["up"]:
        raise SystemExit(1)


@group.command(name="sm")
@click.argument("run", type=InPath())
@click.option("--kill", "action", flag_value="kill", help="SIGKILL, as if the SM's host died (no goodbye).")
@click.option("--stop", "action", flag_value="stop", help="SIGTERM, as `systemctl stop opensm`.")
@click.option("--start", "action", flag_value="start", help="Start it again (after --kill or --stop).")
@click.option("--restart", "action", flag_value="restart", help="SIGTERM, then start (an upgrade, a restart).")
@click.option("--wait-master", "action", flag_value="wait-master",
              help="Wait until this SM is MASTER and has routed (a standby taking over).")
@click.option("--sm", "n", type=click.IntRange(1, 8), default=1, show_default=True, help="Which SM (1 = the first).")
@click.option("--engine", "-R", default=None, help="With --start/--restart: other routing engines.")
@click.option("--timeout", default=None, type=float, help="Seconds to wait (default: sim up's --timeout).")
@click.option("--json", "as_json", is_flag=True)
def sm_cmd(run, action, n, engine, timeout, as_json):
    """Kill, stop, start or restart one OpenSM of the fabric `sim up` started in RUN.

    --start and --restart wait until that SM is MASTER and has configured the tables (or is
    STANDBY under a master of higher priority); --wait-master waits for a standby to take over
    (after the master's death it does so once its polls time out: sminfo_polling_timeout x
    polling_retry_number, 10 s x 4 by default). Exits 1 when the SM did not end where asked.
    Two SMs on one ibsim can stall, waiting for a MAD nobody answers: a stall is seen within
    ~10 s of an idle fabric, said, and the SM restarted, at most twice (docs/sim.md).

    \b
    Examples:
      ibtool sim sm run --kill                      # the master's host dies
      ibtool sim sm run --wait-master --sm 2        # the standby takes over
      ibtool sim sm run --start                     # SM 1 back (a higher priority: it takes over again)
      ibtool sim sm run --restart --engine hdor     # OpenSM restarted, as after an upgrade
    """
    if action is None:
        raise InputError("give one of --kill, --stop, --start, --restart, --wait-master")
    lf = _attach(run)
    if not lf.up:
        raise CheckFailed(f"{run}: ibsim is not running (`ibtool sim down {run}` cleans up)")
    sm = lf.sm(n)
    if timeout:
        lf.timeout = timeout
    engines = opensm.parse_engines(engine) if engine else None
    outcome: dict = {}
    ok = True
    if action in ("kill", "stop"):
        if not sm.running:
            raise CheckFailed(f"SM {n} is not running")
        pid = sm.pid
        (lf.sm_kill if action == "kill" else lf.sm_stop)(n)
        outcome = {"sm": n, "stopped": pid, "signal": "SIGKILL" if action == "kill" else "SIGTERM"}
        msg = f"SM {n} (pid {pid}) {'killed' if action == 'kill' else 'stopped'}"
    else:
        if action == "start":
            outcome = lf.sm_start(n, engines)
        elif action == "restart":
            outcome = lf.sm_restart(n, engines)
        else:
            if not sm.running:
                raise CheckFailed(f"SM {n} is not running")
            outcome = lf.wait_master(n, timeout)
        ok = "error" not in outcome
        msg = (f"SM {n}: {outcome.get('state') or 'not running'}"
               + (f", tables by {outcome['engine']}" if outcome.get("state") == "MASTER" and outcome.get("engine") else "")
               + (f"; {outcome['error']}" if outcome.get("error") else ""))
    if as_json:
        click.echo(json.dumps({"ok": ok, **outcome}, indent=2))
    else:
        for stall in [x for x in outcome.get("stalls", []) if x["retried"]]:
            click.echo(f"  {stall['message']}", err=True)
        click.echo(msg)
    if not ok:
        raise SystemExit(1)


# ibsim answers these when a link already is as asked: a note, not a failure
_ALREADY = ("is not linked", "no previous link stored")


@group.command(name="set")
@click.argument("run", type=InPath())
@click.option("--down", multiple=True, metavar="'DEVICE [PORT]'",
              help="A cable (either end, names as in the plan) or a switch (every cable of it) down: ibsim's Unlink.")
@click.option("--up", multiple=True, metavar="'DEVICE [PORT]'",
              help="Back up: ibsim's ReLink (of a switch: every cable it had).")
@click.option("--counter", "counters", multiple=True, metavar="'DEVICE PORT NAME=VALUE'",
              help="Set a port counter (PortCounters field, e.g. SymbolErrorCounter=250): ibsim's PerformanceSet.")
@click.option("--console", "raw", multiple=True, metavar="COMMAND",
              help="Any other ibsim console command, sent as is (e.g. 'Guid \"S-...\" 0x...', 'Error \"H-...\"[1] 0.5').")
@click.option("--wait", is_flag=True, help="After cables change, wait for the master SM to configure new tables.")
@click.option("--timeout", default=120.0, show_default=True, type=float, callback=finite_seconds,
              help="Seconds --wait waits.")
@click.option("--json", "as_json", is_flag=True)
def set_cmd(run, down, up, counters, raw, wait, timeout, as_json):
    """Change the emulated fabric in RUN through ibsim's console: cables and switches down and up,
    port counters, any console command.

    Order: --up, then --down, then --counter, then --console (as a fault step of `sim run
    --faults`: docs/faults.md). Devices and ports are checked against the plan first; a command
    ibsim refuses is an error naming it (a cable already down or up is a note).

    \b
    ibsim's console commands used (ibsim's `help` lists them all):
      Unlink "NODEID"[PORT]        a cable down      Unlink "NODEID"      every cable of a node
      ReLink "NODEID"[PORT]        a cable back      ReLink "NODEID"      every cable it had
      PerformanceSet "NODEID"[PORT] PortCounters.FIELD=VALUE              a port counter
      Guid "NODEID" GUID  (a new GUID)   Error "NODEID"[PORT] RATE  (MADs dropped)   Baselid ...

    \b
    Examples:
      ibtool sim set run --down 'R[1,1] 3' --wait              # a cable down; the SM reroutes
      ibtool sim set run --up 'R[1,1] 3' --down 'S[0,1]' --wait
      ibtool sim set run --counter 'R[1,1] 3 SymbolErrorCounter=250'
    """
    from ibtool.formats.perfquery import check_counter
    from ibtool.sim import faults as fault_scenarios
    lf = _attach(run)
    if not lf.up:
        raise CheckFailed(f"{run}: ibsim is not running (`ibtool sim down {run}` cleans up)")
    plan = ibnetdiscover.read(lf.net)
    errors: dict[str, dict[str, int]] = {}
    for c in counters:
        spec, _, kv = c.strip().rpartition(" ")
        key, eq, value = kv.partition("=")
        if not spec or not eq or not re.fullmatch(r"[A-Za-z0-9]+", key) or not value.isdigit() or len(value) > 20:
            raise InputError(f"--counter {c[:80]!r}: expected 'DEVICE PORT COUNTER=VALUE', e.g. 'R[1,1] 3 "
                             f"SymbolErrorCounter=250'")
        errors.setdefault(spec, {})[key] = check_counter(key, int(value), f"--counter {c[:80]!r}")
    step = fault_scenarios.Step(down=list(down), up=list(up), errors=errors)
    for spec, _ in errors.items():
        if fault_scenarios.target(plan, spec, "--counter")[1] is None:
            raise InputError(f"--counter {spec!r}: name a port ('DEVICE PORT')")
    cmds = [c for c, *_ in fault_scenarios.commands(plan, step, "--down/--up/--counter")] + list(raw)
    if down or up or raw:
        lf.wait_quiet()  # not under a sweep: an SM's answer to another SM is lost if a cable on its way goes
    master = lf.master()
    before = lf.configured_count(master.n) if master else 0
    done = []
    for cmd in cmds:
        said = lf.console(cmd)
        done.append({"command": cmd, "ibsim": said})
        refused = said.startswith("#") or "unknown - skipped" in said
        if refused and not any(a in said for a in _ALREADY):
            applied = "; ".join(x["command"] for x in done[:-1]) or "nothing"
            raise InputError(f"ibsim refused {cmd!r}: {said.lstrip('# ')} (applied before it: {applied})")
    result: dict = {"ok": True, "commands": done}
    if wait and (down or up or raw):
        if master is None:
            raise CheckFailed("--wait: no SM is master")
        t0 = time.monotonic()
        o = lf.wait_routed(master.n, before, timeout)
        routed = lf.configured_count(master.n) > before
        result.update({"sm": master.n, "engine": o.get("engine") if routed else None,
                       "seconds": round(time.monotonic() - t0, 3), "ok": routed and o.get("ok", False)})
        if o.get("stalls"):
            result["stalls"] = o["stalls"]
        if not routed:
            result["error"] = (o["stalls"][-1]["message"] if o.get("stalls")
                               else f"SM {master.n} configured no new tables within {timeout:g} s")
        elif not o.get("ok"):
            result["error"] = o.get("error") or "not routed with the requested engine"
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        for x in done:
            click.echo(f"  {x['command']}" + (f": {x['ibsim']}" if x["ibsim"] else ""))
        for stall in [x for x in result.get("stalls", []) if x["retried"]]:
            click.echo(f"  {stall['message']}", err=True)
        if "sm" in result:
            click.echo(f"SM {result['sm']} configured new tables with {result['engine'] or 'no engine'} in "
                       f"{result['seconds']} s" if result["engine"] else result.get("error", ""))
    if not result["ok"]:
        raise SystemExit(1)


@group.command(name="down")
@click.argument("run", type=InPath())
@click.option("--json", "as_json", is_flag=True)
def down_cmd(run, as_json):
    """Stop the fabric `sim up` started in RUN: its OpenSMs, then ibsim — the processes it
    recorded (by pid and start time), nothing else. Logs stay in RUN/sim/. Safe to run twice."""
    lf = _attach(run)
    stopped = [f"SM {sm.n} (pid {sm.pid})" for sm in lf.sms if sm.running]
    if lf.up:
        stopped.append(f"ibsim (pid {lf.ibsim_pid})")
    lf.stop()
    if as_json:
        click.echo(json.dumps({"ok": True, "stopped": stopped}, indent=2))
    else:
        click.echo(f"stopped {', '.join(stopped)}" if stopped else f"{run}: nothing was running")
