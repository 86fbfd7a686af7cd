"""`ibtool sim`: emulate a fabric in ibsim under a real OpenSM."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from ibtool.cli import OutPath, finite_seconds
from ibtool.errors import InputError
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


@group.command(name="run")
@click.argument("net", metavar="NET|PLAN", type=click.Path(path_type=Path))
@click.option("--engine", "-R", default=None,
              help="Routing engines for OpenSM, tried in order (e.g. hdor,minhop). hdor is loaded from "
                   "opensm_plugin/libhdor.so automatically. Default: the plan's opensm.conf beside NET "
                   "(its engine and the files it names, as `ibtool topo` wrote them), else minhop.")
@click.option("--out", "-o", type=OutPath(), required=True, help="Run directory.")
@click.option("--timeout", default=300.0, show_default=True, type=float, callback=finite_seconds,
              help="Seconds for OpenSM and each client (1..604800).")
@click.option("--log-flags", default="0x47", show_default=True,
              help="OpenSM -D flags; 0x40 makes OpenSM write its dump files (costly on big fabrics).")
@click.option("--conf", "conf_options", multiple=True, callback=_kv, metavar="KEY=VALUE",
              help="Extra opensm.conf option (repeatable), e.g. --conf lmc=1 --conf root_guid_file=roots.")
@click.option("--opensm-config", type=click.Path(exists=True, dir_okay=False),
              help="An opensm.conf to start from; ibtool's keys are appended.")
@click.option("--opensm-arg", "opensm_args", multiple=True, help="Extra OpenSM command-line argument (repeatable).")
@click.option("--no-discover", is_flag=True, help="Skip ibnetdiscover and dump_fts.")
@click.option("--path-sls/--no-path-sls", default=None,
              help="Keep OpenSM up as the SA after routing and save every HCA's PathRecords (saquery -p) in "
                   "saquery-paths.out: the SL of each path, which `verify` needs for engines that use virtual "
                   "lanes (dfsssp, lash, nue, torus-2QoS). With faults: at every step, on by default for "
                   "engines that program SLs (hdor too); --no-path-sls skips it (faster, VL check without SLs).")
@click.option("--faults", type=click.Path(path_type=Path),
              help="A fault scenario (YAML: steps of cables/switches down, up, port errors; docs/faults.md): "
                   "one OpenSM keeps running, each step's tables are collected into OUT/step-N/.")
@click.option("--fail", "fail", multiple=True, metavar="'DEVICE [PORT]'",
              help="One fault step: this cable (device and port, either end) or switch down (repeatable: "
                   "all in the same step).")
@click.option("--random-faults", type=click.IntRange(min=1), default=None,
              help="N steps, each one more random switch cable or switch down (never the SM's switch, "
                   "never cutting the switches in two).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --random-faults.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json.")
def run_cmd(net, engine, out, timeout, log_flags, conf_options, opensm_config, opensm_args, no_discover, path_sls,
            faults, fail, random_faults, seed, as_json):
    """Bring NET up in ibsim, route it once with OpenSM, discover it (PLAN: a plan directory, its
    topology.net with its opensm.conf).

    \b
    Writes into OUT:
      summary.json         subnet up?, the engine that really configured the tables, timings
      opensm.log, opensm.conf, osm/   OpenSM's log, config and dump files
      ibnetdiscover.out, dump_fts.out the discovered topology and forwarding tables
      saquery-paths.out    with --path-sls: the SA's PathRecords (the SL of every path)

    Exits 0 only when the subnet came up and one of the requested engines configured the
    tables (OpenSM falls back to minhop silently; ibtool reads the log to tell). When OpenSM
    exits early its own last error lines are printed; exit 2 when it refused its command line
    (an --opensm-arg it does not know, -h, a value out of its range).

    \b
    Example:
      ibtool sim run cellia --out run                         # the plan's engine (hdor)
      ibtool sim run cellia/topology.net --engine hdor --out run
      ibtool sim run cellia/topology.net --engine dfsssp --path-sls --conf qos=TRUE --out run-dfsssp
    """
    if net.is_dir():  # a plan directory: its topology.net (and so its opensm.conf)
        if not (net / "topology.net").is_file():
            raise InputError("is a directory, not a net file; a plan directory (`ibtool topo --out DIR`) holds "
                             "topology.net, and this one has none", path=str(net))
        net = net / "topology.net"
    if engine is None and opensm.plan_engines(net) is not None:
        engines = opensm.plan_engines(net)  # the plan's engine, with its options (root GUIDs ...)
        opensm_config = opensm_config or str(net.with_name("opensm.conf"))
    else:
        engines = opensm.parse_engines("minhop" if engine is None else engine)
    try:
        flags = int(log_flags, 0)
    except ValueError:
        raise InputError(f"--log-flags: not a number: {log_flags!r}") from None
    if not 0 <= flags <= 0xFF:  # OpenSM's log flags are one byte (OSM_LOG_ERROR 0x01 .. OSM_LOG_SYS 0x80)
        raise InputError(f"--log-flags: {log_flags} is outside 0x00..0xff")
    if faults or fail or random_faults:
        return _scenario(net, out, engines, timeout, faults, fail, random_faults, seed, as_json, path_sls, flags,
                         opensm_config, conf_options)
    opts = RunOptions(engines=engines, timeout=timeout, log_flags=flags, conf_options=conf_options,
                      conf_base=opensm_config, opensm_args=list(opensm_args), discover=not no_discover,
                      path_sls=bool(path_sls))
    progress = None if as_json else (lambda m: click.echo(f"  {m}", err=True))
    s = run(net, out, opts, progress)
    if as_json:
        click.echo(json.dumps(s, indent=2))
    else:
        t = s["timings"]
        state = "UP" if s.get("subnet_up") else "NOT UP"
        click.echo(f"subnet {state}; tables configured by {s.get('engine') or 'no engine'}"
                   + (f" (FALLBACK: requested {','.join(engines)})" if s.get("fallback") else "")
                   + (f"; declined: {','.join(s['declined'])}" if s.get("declined") else ""))
        step = s.get("routing_step_s")
        click.echo(f"opensm {t.get('opensm_s')} s" + (f", routing step {step:.3f} s" if step is not None else "")
                   + f", total {t.get('total_s')} s; results in {out}")
        if s.get("opensm_error"):
            click.echo(f"  {s['opensm_error']}", err=True)
        for e in s.get("errors", [])[:3]:
            click.echo(f"  opensm: {e}", err=True)
    if not s.get("ok"):
        raise SystemExit(1)


def _scenario(net, out, engines, timeout, faults, fail, random_faults, seed, as_json, path_sls, flags, conf_base,
              conf_options):
    """`sim run` with faults: a live fabric, one OpenSM, a step at a time (ibtool.sim.faults)."""
    from ibtool.formats import ibnetdiscover
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
        sc = fault_scenarios.Scenario([step])
    else:
        sc = fault_scenarios.random_scenario(plan, random_faults, seed)
    progress = None if as_json else (lambda m: click.echo(f"  {m}", err=True))
    s = fault_scenarios.run(Path(net), out, engines, sc, timeout, progress, path_sls=path_sls, log_flags=flags,
                            conf_base=conf_base, conf_options=conf_options)
    if as_json:
        click.echo(json.dumps(s, indent=2))
    else:
        for st in s["steps"]:
            click.echo(f"step {st['step']}: {st['faults']}: tables by {st['engine'] or 'no engine'}"
                       + (f" in {st['seconds_to_tables']} s" if st["seconds_to_tables"] is not None else "")
                       + (" (FALLBACK)" if st["fallback"] else "") + (" (TIMED OUT)" if st["timed_out"] else ""))
        click.echo(f"results in {out}; verify every step with: ibtool verify all {out}")
    if not s["ok"]:
        raise SystemExit(1)
