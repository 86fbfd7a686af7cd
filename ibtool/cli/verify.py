"""`ibtool verify`: the fabric against its plan, device coordinates, and every route."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ibtool import rundir
from ibtool.cli import InPath, OutPath
from ibtool.errors import InputError
from ibtool.formats import ibnetdiscover, node_name_map
from ibtool.plan import Plan
from ibtool.verify import report
from ibtool.verify.run import cables_for, check_health, check_routes, read_fabric


@click.group(name="verify")
def group():
    """Verify a fabric (emulated or real) against its plan, its coordinates and its routes.

    Every command prints a short summary first (PASS/FAIL/NOT CHECKED per check), details after;
    --json prints the report in a stable schema (docs/verify.md), --html FILE writes a web page.

    Exit status: 0 PASS (every check ran and passed), 1 FAIL (a check failed), 5 NOT CHECKED
    (nothing failed, but a check that could have failed did not run: its line says why and how
    to run it), 2 on bad input; `verify topology` exits 4 when the cabling is right but links
    run degraded.
    """


def _opts(f):
    f = click.option("--html", "html_out", type=OutPath(),
                     help="Also write an HTML report: the fabric drawn with the findings on it (docs/verify.md).")(f)
    f = click.option("--json", "as_json", is_flag=True, help="Machine-readable report (stable schema).")(f)
    return f


_junit = click.option("--junit", "junit_out", type=OutPath(),
                      help="Also write JUnit XML: one test case per check (and per fault step), a failure's message "
                           "the finding and its fix, for CI servers (docs/ci.md).")


# each permutation traces one flow per CA port; beyond this the estimate no longer moves, the run does not end
MAX_PERMUTATIONS = 10_000
_permutations = click.option("--permutations", default=16, show_default=True,
                             type=click.IntRange(min=0, max=MAX_PERMUTATIONS),
                             help=f"Random permutations for the load estimate (0..{MAX_PERMUTATIONS}).")


def _say(as_json: bool):
    return (lambda m: None) if as_json else (lambda m: click.echo(f"  {m}", err=True))


def _emit(rep: dict, as_json: bool, html_out: Path | None, flat: str | None = None, code: int = 1,
          junit_out: Path | None = None, suite: str = "ibtool verify") -> None:
    if html_out:
        from ibtool.verify import htmlreport
        htmlreport.write_html(rep, html_out)
    if junit_out:
        from ibtool.verify import junit
        junit.write(junit_out, [(suite, rep)])
    if as_json:
        out = dict(rep)
        if flat:  # single-section commands also put that section's fields at the top level (and its verdict)
            out = {**rep[flat], **{k: v for k, v in rep.items() if k != "verdict" or "verdict" not in rep[flat]}}
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(report.text(rep))
    if rep["verdict"] != report.PASS:  # a FAIL's own code (verify topology: 1 or 4), NOT CHECKED 5
        raise SystemExit(code if rep["verdict"] == report.FAIL else report.EXIT[rep["verdict"]])


def _warn_line(w: str) -> None:
    click.echo(f"ibtool: warning: {w}", err=True)


def _warn(fabric) -> None:
    for w in fabric.discovery.get("warnings", ()):
        _warn_line(w)


def _fail_on(ctx, param, value: str) -> tuple:
    from ibtool.verify.topology import CATEGORIES
    cats = tuple(dict.fromkeys(c.strip() for c in value.split(",") if c.strip()))
    bad = [c for c in cats if c not in CATEGORIES]
    if bad or not cats:
        raise click.BadParameter(f"{', '.join(bad) or value!r}: expected a comma list of {', '.join(CATEGORIES)}")
    return cats


@group.command(name="topology")
@click.option("--plan", type=InPath(), required=True,
              help="The plan: a plan directory of `ibtool topo` or its topology.net (or any ibnetdiscover dump).")
@click.option("--discovered", type=InPath(), required=True,
              help="ibnetdiscover output of the fabric as cabled (plain, -g, -f or the -p ports report).")
@click.option("--node-name-map", "nnm", type=InPath(),
              help="Plan names for the discovered nodes by GUID (infiniband-diags format): those devices are "
                   "identified by it.")
@click.option("--host-map", type=InPath(),
              help="The site's host map: '<plan name> <host name, description or GUID>' per line; those "
                   "devices are identified by it.")
@click.option("--fail-on", default="miswire,missing,degraded", show_default=True, callback=_fail_on,
              help="Which findings fail the check: miswire (wrong, extra or loopback cables, extra devices), "
                   "missing (cables, devices, a partial discovery), degraded (slow links, ends that disagree).")
@click.option("--cables", type=InPath(),
              help="The plan's cable list (default: PLAN/cabling/cables.csv of `ibtool cabling`, when there): "
                   "findings name cable IDs and labels, and --html's fix list and drawing too.")
@click.option("--stage", type=click.IntRange(min=1), default=None,
              help="Check a fabric cabled up to this wiring stage of the cable list, discovered from the SM "
                   "host `ibtool cabling` names (later cables already in place are reported as cabled ahead of "
                   "their stage, not as errors; planned cables the discovery could not see as not checked, "
                   "exit 5 when nothing else is wrong).")
@_junit
@_opts
def topology_cmd(plan, discovered, nnm, host_map, fail_on, cables, stage, junit_out, as_json, html_out):
    """Plan vs. what is cabled: devices are matched by identity where the plan and the fabric
    share one (node descriptions or node-name-map names, GUIDs, a --host-map), by structure
    where not (the report says which identities were used).

    Names each miswired cable (where its ends are, where they belong, the move or swap that
    fixes it), each identified host on the wrong port ("H[0,0] (node018) is on R[0,1] port 1;
    it belongs on R[0,0] port 1"), missing and extra cables and devices, loopback cables, a
    partial discovery, and links slower than the plan (or than both ends run elsewhere); says
    so when the fabric is not the planned topology at all. Tool noise in saved dumps (ibwarn:,
    src/query_smp.c:...) is skipped with a warning.

    Exit status: 0 PASS, 1 MISWIRED (cabling differs: miswire or missing findings), 4 DEGRADED
    (cabled as planned, links slow), 5 NOT CHECKED (with --stage: all that was seen is right, but
    planned cables the discovery could not see), 2 bad input.

    \b
    Examples:
      ibtool verify topology --plan cellia/topology.net --discovered run/ibnetdiscover.out
      ibtool verify topology --plan plan.net --discovered ibnet.out --host-map hosts.txt
      ibtool verify topology --plan last-week.out --discovered today.out --fail-on miswire,missing
      ibtool verify topology --plan cellia --discovered ibnet.out --stage 2 --html fixes.html
      ibtool verify topology --plan cellia --discovered ibnet.out --junit verify.xml
    """
    from ibtool.formats import host_map as host_map_format
    from ibtool.verify import cables as cable_list
    from ibtool.verify import topology
    names = node_name_map.read(nnm) if nnm else None
    hosts = host_map_format.read(host_map) if host_map else None
    plan = Path(plan)
    p = ibnetdiscover.read(Plan.at(plan).net)
    cl_path = cables if cables is not None else Plan.at(plan).cable_list()
    cl = cable_list.read(cl_path) if cl_path else None
    if stage is not None and cl is None:
        raise InputError("--stage needs the plan's cable list (`ibtool cabling`, or --cables FILE)")
    later = None
    if stage is not None:
        p, later = cable_list.stage_plan(p, cl, stage)
    if hosts:
        hosts.check_plan(p.names)
    f = ibnetdiscover.read(discovered, names)
    _warn(f)
    t = topology.compare(p, f, names=bool(names), host_map=hosts)
    ahead = cable_list.ahead_of_stage(t, cl, later) if later is not None else None
    if later is not None:  # what the discovery could not see is not checked, never right
        cable_list.not_checked(t, p, cl, stage)
    sec = t.as_dict(fail_on)
    if cl is not None:
        cable_list.annotate(sec, cl)
    if ahead is not None:
        sec["stage"] = stage
        sec["sm_host"] = cl.sm_host
        sec["ahead_of_plan"] = ahead
    rep = report.build({"plan": str(plan), "discovered": str(discovered), "node_name_map": str(nnm) if nnm else None,
                        "host_map": str(host_map) if host_map else None,
                        "cables": str(cl_path) if cl_path else None, "stage": stage},
                       {"topology": sec})
    _emit(rep, as_json, html_out, flat="topology", code=t.exit_code(fail_on), junit_out=junit_out,
          suite=f"verify topology {discovered}")


@group.command(name="coords")
@click.option("--fabric", type=InPath(), required=True, help="ibnetdiscover output of the fabric.")
@click.option("--dump", type=InPath(), help="hdor's opensm-hdor.dump to check against the reference.")
@click.option("--plan", type=InPath(),
              help="The plan (a plan directory or its net file): compare coordinates up to relabeling.")
@click.option("--node-name-map", "nnm", type=InPath(), help="Plan names for the fabric's GUIDs.")
@_opts
def coords_cmd(fabric, dump, plan, nnm, as_json, html_out):
    """Device coordinates: hdor's dump vs. the Python reference vs. the plan.

    \b
    Example:
      ibtool verify coords --fabric run/ibnetdiscover.out --dump run/osm/opensm-hdor.dump \\
          --plan cellia/topology.net
    """
    from ibtool.formats import hdor_dump
    from ibtool.verify import coords
    from ibtool.verify.matching import match
    names = node_name_map.read(nnm) if nnm else None
    f = read_fabric(fabric, names)
    d = hdor_dump.read(dump) if dump else None
    p = to_plan = None
    if plan:
        p = ibnetdiscover.read(Plan.at(plan).net)
        to_plan = match(p, f, names=bool(names)).to_plan
    c = coords.verify(f, d, p, to_plan)
    rep = report.build({"fabric": str(fabric), "dump": str(dump) if dump else None,
                        "plan": str(plan) if plan else None}, {"coords": c})
    _emit(rep, as_json, html_out)


@group.command(name="routes")
@click.option("--fabric", type=InPath(), required=True,
              help="The fabric: ibnetdiscover output, or OpenSM's opensm-subnet.lst.")
@click.option("--lfts", type=InPath(), required=True,
              help="Forwarding tables: dump_fts or ibroute output, or OpenSM's opensm-lfts.dump or opensm.fdbs.")
@click.option("--sl2vl", "sl2vl_path", type=InPath(),
              help="OpenSM's opensm-sl2vl.dump: the deadlock check per VL (default: everything on VL0).")
@click.option("--path-sls", "path_sls", type=InPath(),
              help="`saquery -p` output (RUN/saquery-paths.out of `sim run --path-sls`): each HCA-to-HCA route's SL, "
                   "for the deadlock check per VL of engines that use virtual lanes.")
@click.option("--engine", help="The routing engine that made the tables: for one that gives paths their own SLs "
                               "(hdor, dfsssp, lash, nue, torus-2QoS) without --path-sls, a cycle with every route "
                               "on one VL is NOT CHECKED (exit 5), not a credit loop.")
@click.option("--expect", type=click.Choice(["hdor"]),
              help="Also require exactly the hdor reference tables and dimension-ordered routes.")
@click.option("--before-fabric", type=InPath(),
              help="The fabric before a failure (ibnetdiscover output), with --before-lfts: routes that touch no "
                   "failed element must be unchanged; with --expect hdor the reference is the degraded pass from "
                   "that complete KNS (docs/hdor.md section 6).")
@click.option("--before-lfts", type=InPath(), help="The forwarding tables before the failure.")
@_permutations
@click.option("--no-balance", is_flag=True, help="Skip link loads (routes per link, all-to-all, permutations).")
@_junit
@_opts
def routes_cmd(fabric, lfts, sl2vl_path, path_sls, engine, expect, before_fabric, before_lfts, permutations,
               no_balance, junit_out, as_json, html_out):
    """Trace every (source port, destination LID) pair through the forwarding tables.

    Reports undelivered pairs (black hole, loop, wrong port) with their paths, route lengths
    against the shortest, deadlock freedom from the channel dependency graph (printing a cycle
    when there is one), and balance: routes per link and the max link load under all-to-all and
    random permutations.

    \b
    Example:
      ibtool verify routes --fabric run/ibnetdiscover.out --lfts run/dump_fts.out --expect hdor
      ibtool verify routes --fabric run/ibnetdiscover.out --lfts run/dump_fts.out \\
          --sl2vl run/osm/opensm-sl2vl.dump --path-sls run/saquery-paths.out
      ibtool verify routes --fabric faults/step-1/ibnetdiscover.out --lfts faults/step-1/dump_fts.out \\
          --before-fabric faults/step-0/ibnetdiscover.out --before-lfts faults/step-0/dump_fts.out --expect hdor
    """
    if bool(before_fabric) != bool(before_lfts):
        raise InputError("--before-fabric and --before-lfts go together")
    baseline = ref = None
    if before_fabric:
        from ibtool.formats import lft
        f0 = read_fabric(before_fabric)
        baseline = (f0, lft.read(before_lfts))
        if expect == "hdor":
            from ibtool.routing import hdor
            try:
                ref = hdor.compute(read_fabric(fabric), baseline=(f0, hdor.compute(f0)))
            except hdor.NotFamily as e:
                _say(as_json)(str(e))
    r = check_routes(fabric, lfts, sl2vl_path, expect, permutations, _say(as_json), balance=not no_balance,
                     path_sls=path_sls, engine=engine, ref=ref, baseline=baseline)
    rep = report.build({"fabric": str(fabric), "lfts": str(lfts), "sl2vl": str(sl2vl_path) if sl2vl_path else None,
                        "path_sls": str(path_sls) if path_sls else None, "expect": expect,
                        "before_fabric": str(before_fabric) if before_fabric else None,
                        "before_lfts": str(before_lfts) if before_lfts else None}, {"routes": r})
    _emit(rep, as_json, html_out, junit_out=junit_out, suite=f"verify routes {fabric}")


@group.command(name="all")
@click.argument("run_dir", type=InPath())
@click.option("--plan", type=InPath(),
              help="The plan: a plan directory of `ibtool topo` or its topology.net (default: the net file named "
                   "in RUN_DIR/summary.json, if it is there). With the plan's cable list (PLAN/cabling/cables.csv), "
                   "topology findings name cable IDs, labels and places.")
@click.option("--node-name-map", "nnm", type=InPath(), help="Plan names for the fabric's GUIDs.")
@click.option("--expect", type=click.Choice(["hdor", "none"]),
              help="Expected routing (default: hdor when hdor configured the tables).")
@click.option("--accept-fallback", is_flag=True,
              help="Tables by a later engine of the run's routing_engine list pass the run check (as `sim run "
                   "--accept-fallback`); by default the first engine not routing fails it.")
@_permutations
@_junit
@_opts
def all_cmd(run_dir, plan, nnm, expect, accept_fallback, permutations, junit_out, as_json, html_out):
    """Every check on the output directory of `ibtool sim run`.

    Topology against the plan (when known), coordinates (when hdor wrote its dump), and routes
    from dump_fts.out (or osm/opensm-lfts.dump), with osm/opensm-sl2vl.dump and saquery-paths.out
    (`sim run --path-sls`, on by default for engines that give paths their own SLs) when present.
    The run itself: the subnet up with the first engine of its list (a fallback fails it).

    A check that was meant to run and could not is NOT CHECKED with its reason (no plan, no
    summary.json, an input that is not a file, dump_fts.out replaced by OpenSM's own tables,
    deadlock freedom of an engine that uses VLs without the path SLs): exit 5 when nothing failed.

    \b
    A run of a fault scenario (`sim run --faults`, OUT/step-N/) is verified step by step, each
    against the plan without what was down at that step; one line per step.

    \b
    Examples:
      ibtool verify all run
      ibtool verify all run --plan cellia       # a plan directory: cable IDs from cellia/cabling/cables.csv
      ibtool verify all run --junit verify.xml --html verify.html     # in CI (docs/ci.md)
    """
    from ibtool.verify.run import verify_all
    run_dir = Path(run_dir)
    rep, reps = verify_all(run_dir, plan, nnm, expect, permutations, _say(as_json), _warn_line, accept_fallback)
    if not reps:
        _emit(rep, as_json, html_out, junit_out=junit_out, suite=f"verify all {run_dir}")
        return
    if html_out:  # every step drawn: what is down, the detours
        from ibtool.verify import htmlreport
        top = rundir.summary(run_dir).get("net")
        htmlreport.write_steps_html([(d.name, r, rundir.summary(d)) for d, r in reps], rep,
                                    html_out, plan or (rundir.plan_of(run_dir, top) if top else None))
    if junit_out:
        from ibtool.verify import junit
        junit.write(junit_out, [(f"verify all {run_dir}/{d.name}", r) for d, r in reps])
    if as_json:
        click.echo(json.dumps(rep, indent=2))
    else:
        click.echo(f"verify: {rep['verdict']}")
        for d, r in reps:
            # the first failed check, else the first not checked
            bad = [c for c in r["checks"] if not c["ok"] and not c.get("not_checked")] or \
                [c for c in r["checks"] if c.get("not_checked")]
            word = "failed" if r["verdict"] == report.FAIL else "not checked"
            try:
                faults = rundir.summary(d).get("faults", "")
            except InputError:  # said by its own check
                faults = "?"
            click.echo(f"  {d.name}: {r['verdict']}  {faults}; tables by {r['inputs'].get('engine') or 'no engine'}"
                       + (f"; {word}: {bad[0]['name']}: {bad[0]['summary']}" if bad else ""))
    if rep["verdict"] != report.PASS:
        raise SystemExit(report.EXIT[rep["verdict"]])


def _thresholds(ctx, param, values):
    from ibtool.verify.health import THRESHOLDS
    out = {}
    for v in values:
        k, sep, n = v.partition("=")
        if not sep or k not in THRESHOLDS or not n.strip().isdigit():
            raise click.BadParameter(f"expected COUNTER=N with COUNTER one of {', '.join(THRESHOLDS)}; got {v!r}")
        out[k] = int(n)
    return out


@group.command(name="health")
@click.argument("run_dir", type=InPath())
@click.option("--baseline", type=InPath(),
              help="An earlier collection of the same fabric: judge the counter deltas and rates per hour.")
@click.option("--plan", type=InPath(),
              help="The plan (directory or topology.net): with its cable list, findings name cable IDs and labels.")
@click.option("--threshold-file", type=InPath(),
              help="Thresholds in infiniband-diags' format (COUNTER=N lines), e.g. /etc/infiniband-diags/error_thresholds.")
@click.option("--threshold", "thresholds", multiple=True, callback=_thresholds, metavar="COUNTER=N",
              help="Override a threshold (repeatable), e.g. --threshold SymbolErrorCounter=10.")
@_opts
def health_cmd(run_dir, baseline, plan, threshold_file, thresholds, as_json, html_out):
    """Cable health: the port error counters of an `ibtool collect` run, per cable.

    By default any error counted is reported, as ibqueryerrors and ibdiagnet -pc do; a threshold
    file or --threshold raises the bar. With --baseline the deltas since that collection are judged.

    \b
    Example:
      ibtool collect -o run0; ...; ibtool collect -o run1
      ibtool verify health run1 --baseline run0 --plan cellia
    """
    run_dir = Path(run_dir)
    disc = rundir.fabric(run_dir)
    for need in (disc, run_dir / rundir.PERFQUERY):
        if not need.is_file():
            raise InputError(f"no {need.name} here (not an `ibtool collect` run?)", path=str(run_dir))
    f = ibnetdiscover.read(disc)
    from ibtool.verify.health import read_threshold_file
    th = {**(read_threshold_file(threshold_file) if threshold_file else {}), **thresholds}
    h = check_health(run_dir, f, baseline, th, cables_for(plan))
    rep = report.build({"run": str(run_dir), "baseline": str(baseline) if baseline else None}, {"health": h})
    _emit(rep, as_json, html_out, flat="health")
