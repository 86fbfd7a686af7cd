"""`ibtool verify all`: every check on a run directory (`ibtool sim run`, `ibtool collect`, each
step of `sim run --faults`), as a library function the CLI calls.

    rep, steps = run.verify_all(Path("run"), say=print)   # the report; each step's (fault scenario)
    rep["ok"]

The pipeline: the fabric as discovered against the plan (topology, with the cable list's IDs),
hdor's coordinates, every route (delivery, minimality, deadlock freedom, balance, hdor's
expectations), cable health where port counters were read, and the run's own verdict. A fault
scenario's steps are each verified against the plan without what was down then, and against
step 0 (the reference hdor degrades from, the routes a fault did not touch).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ibtool import rundir
from ibtool.errors import InputError
from ibtool.formats import ibnetdiscover, node_name_map, open_input
from ibtool.plan import Plan
from ibtool.verify import report


def verify_all(run_dir: Path, plan=None, nnm=None, expect: str | None = None, permutations: int = 16,
               say=None, warn=None, accept_fallback: bool = False) -> tuple[dict, list[tuple[Path, dict]]]:
    """The report of RUN_DIR and, for a fault scenario (OUT/step-N/), each step's report in
    step order ([] for one run). plan: a plan directory or net file (default: the one the run's
    summary names); nnm: a node-name-map; expect: "hdor" or "none" (default: hdor when hdor
    configured the tables); say(line): progress; warn(line): the discovery's warnings;
    accept_fallback: tables by a later engine of the run's list pass (`sim run --accept-fallback`)."""
    say = say or (lambda m: None)
    t0 = time.monotonic()
    run_dir = Path(run_dir)
    steps = rundir.steps(run_dir)
    if not steps or rundir.fabric(run_dir).is_file():
        return verify_run(run_dir, plan, nnm, expect, permutations, say, warn=warn,
                          accept_fallback=accept_fallback), []
    # each step against its own expected.net (the plan without what was down then), and
    # against step 0 (before any fault): the reference and the routes a fault did not touch
    before = before_faults(steps[0], nnm, expect)
    t_before = time.monotonic() - t0
    reps = []
    for st in steps:
        say(f"verifying {st.name}")
        reps.append((st, verify_run(st, None, nnm, expect, permutations, lambda m: None,
                                    before if st != steps[0] else None, warn=warn,
                                    known=before if st == steps[0] else None, accept_fallback=accept_fallback)))
    rep = {"schema": report.SCHEMA, "ok": all(r["ok"] for _, r in reps),
           "verdict": report.overall([r for _, r in reps]), "inputs": {"run": str(run_dir)},
           "steps": {d.name: r for d, r in reps},
           "timings": {"before_faults_s": round(t_before, 3), "total_s": round(time.monotonic() - t0, 3)}}
    return rep, reps


def verify_run(run_dir: Path, plan, nnm, expect, permutations, say, before: dict | None = None, warn=None,
               known: dict | None = None, accept_fallback: bool = False) -> dict:
    """Every check of `verify all` on one run directory; the report. before: before_faults() of
    the scenario's step 0 when this is a later step; known: before_faults() of this very step
    (step 0), whose hdor references of it and of its plan are not computed again; warn(line): the
    discovery's warnings."""
    disc = rundir.fabric(run_dir)
    if not disc.is_file():
        raise InputError(f"no {rundir.FABRIC} here (not an `ibtool sim run` output directory?)", path=str(run_dir))
    timings: dict[str, float] = {}  # seconds per stage, in the report (where a large run's time goes)
    t0 = time.monotonic()
    last = [t0]

    def lap(stage: str) -> None:
        now = time.monotonic()
        timings[stage] = round(now - last[0], 3)
        last[0] = now
    # every check meant to run that cannot is NOT CHECKED with its reason, never dropped unsaid
    not_checked: list[dict] = []
    summary, no_summary = _summary(run_dir)
    from_summary = plan is None
    if no_summary:
        not_checked.append(report.not_checked_check(
            "run", f"{no_summary}: whether the subnet came up and which engine configured the tables are unknown"
                   + ("; hdor's tables not compared with its reference (--expect hdor if hdor routed it)"
                      if expect is None else "")))
        if plan is None:
            not_checked.append(report.not_checked_check("topology", f"no plan to compare with: {no_summary}, "
                                                                    f"which names it (give --plan PLAN)"))
    if plan is None and summary.get("net"):
        plan = rundir.plan_of(run_dir, summary["net"])
        if plan is None:
            not_checked.append(report.not_checked_check(
                "topology", f"the plan {summary['net']} named by {run_dir / rundir.SUMMARY} is not there "
                            f"(give --plan PLAN)"))
    lfts, sl, psl, dump = rundir.lfts(run_dir), rundir.sl2vl(run_dir), rundir.path_sls(run_dir), rundir.hdor_dump(run_dir)
    not_checked += _unread_inputs(run_dir, lfts)
    engine = summary.get("engine")
    if expect is None:
        expect = "hdor" if engine == "hdor" else "none"
    names = node_name_map.read(nnm) if nnm else None
    f = ibnetdiscover.read(disc, names)
    for w in f.discovery.get("warnings", ()):
        (warn or (lambda m: None))(w)
    lap("read_fabric_s")
    sections: dict = {}
    inputs = {"run": str(run_dir), "plan": str(plan) if plan else None, "lfts": str(lfts),
              "sl2vl": str(sl) if sl else None, "path_sls": str(psl) if psl else None,
              "engine": engine, "expect": expect}
    to_plan = p = None
    if plan:
        from ibtool.verify import topology
        say(f"topology against {plan}")
        net = Plan.at(plan).net  # a plan directory or its net file
        try:
            p = ibnetdiscover.read(net)
        except InputError as e:
            if not from_summary:
                raise
            raise InputError(f"{e} (the plan named by {run_dir / rundir.SUMMARY})") from None
        t = topology.compare(p, f, names=bool(names))
        sections["topology"] = t.as_dict()
        cl = cables_for(plan)  # findings in cable IDs, labels and places, as `verify topology` gives them
        if cl is not None:
            from ibtool.verify import cables as cable_list
            cable_list.annotate(sections["topology"], cl)
        to_plan = t.to_plan
        lap("topology_s")
    ref = None
    if dump or expect == "hdor":
        from ibtool.formats import hdor_dump
        from ibtool.verify import coords
        say("coordinates")
        desc = None
        if (run_dir / rundir.HDOR_CONF).is_file() and not before:  # the description hdor ran with (sim run --hdor-conf)
            from ibtool.formats import hdor_conf
            desc = hdor_conf.read(run_dir / rundir.HDOR_CONF)
        own = known.get("own") if known and desc is None and f.port_lids else None
        plan_own = known.get("plan") if known and plan and Path(net).resolve() == (run_dir / rundir.EXPECTED).resolve() \
            else None
        same = desc is None and to_plan is not None and _plan_is_fabric(f, p, t, before)
        c = coords.verify(f, hdor_dump.read(dump) if dump else None, p, to_plan,
                          baseline=before and before["ref"], plan_baseline=before and before["plan"], description=desc,
                          reference=own, plan_reference=plan_own and plan_own[1], plan_is_fabric=same)
        ref = c.get("_reference")
        sections["coords"] = c
        timings.update({k: round(v, 3) for k, v in c.pop("_timings").items()})
        lap("coords_s")
    if lfts.is_file():
        base = (before["fabric"], before["tables"]) if before and expect == "hdor" else None
        if base is None and expect == "hdor" and ref is not None and ref.kns is not None:
            base = ref.kns  # degraded from the first sweep: the KNS hdor routed against (docs/hdor.md section 7)
        sections["routes"] = check_routes(disc, lfts, sl, expect if expect == "hdor" else None,
                                     permutations, say, f=f, ref=ref, path_sls=psl,
                                     engine=engine, baseline=base, timings=timings,
                                     tables=known["tables"] if known and rundir.lfts(known["step"]) == lfts else None)
        lap("routes_s")
    else:
        raise InputError(f"no {rundir.LFTS} nor {rundir.OSM}/{rundir.OSM_LFTS}: no forwarding tables to verify",
                         path=str(run_dir))
    if rundir.perfquery(run_dir):
        say("cable health")
        sections["health"] = check_health(run_dir, f, None, {}, cables_for(plan))
    elif summary.get("changes_counters"):  # a fault step set port errors: no counters, no health verdict
        c = summary.get("counters") or {}
        failed = c.get("failed") or []
        why = failed[0].get("error") if failed else f"{rundir.PERFQUERY} is missing" if c.get("ports") else \
            "no port answered perfquery"
        sections["health"] = {"ok": False, "not_run": f"the step set port counters but none were collected ({why})"}
    if summary.get("kind") == "collect":
        failed = [k for k, v in (summary.get("items") or {}).items() if isinstance(v, dict) and not v.get("ok")]
        sections["run"] = {"ok": not failed, "collect": True, "failed": failed}
    elif summary:
        sections["run"] = run_section(summary, run_dir, accept_fallback)
    lap("health_and_run_s")
    rep = report.build(inputs, sections, not_checked)
    timings["total_s"] = round(time.monotonic() - t0, 3)
    rep["timings"] = timings
    return rep


def run_section(summary: dict, run_dir: Path, accept_fallback: bool = False) -> dict:
    """The run's own verdict, by the one rule of `sim run`: the subnet came up, not interrupted,
    and the tables are the first requested engine's, or — with --accept-fallback (the run's or
    this command's) — a later engine's of the list. OpenSM's default (minhop), when no engine of
    the list routed, is accepted only where the list names it."""
    requested = summary.get("requested") or summary.get("engines") or []
    if not isinstance(requested, list) or not all(isinstance(e, str) for e in requested):
        raise InputError(f"'requested' is {json.dumps(requested)[:40]}, expected a list of engine names",
                         path=str(run_dir / rundir.SUMMARY))
    requested = [e for e in requested if e != "no_fallback"]
    engine = summary.get("engine")
    first = requested[0] if requested else None
    fell_back = bool(engine and first and engine != first)
    accepted = fell_back and engine in requested and (accept_fallback or summary.get("accept_fallback") is True)
    ok = summary.get("ok", summary.get("subnet_up")) is True
    if accepted and summary.get("subnet_up") is True and not summary.get("timed_out"):
        ok = True  # the run failed for its fallback alone, which is accepted here
    ok = ok and not summary.get("interrupted") and (not fell_back or accepted)
    return {"ok": ok, "engine": engine, "subnet_up": summary.get("subnet_up"),
            "requested": requested, "fallback": fell_back, "accepted_fallback": accepted,
            "default_for": summary.get("default_for"), "no_routes": summary.get("no_routes"),
            "interrupted": summary.get("interrupted", False),
            "hdor_declined": str(summary.get("hdor_declined") or "no reason logged") if first == "hdor" and fell_back
            else None}


def _summary(run_dir: Path) -> tuple[dict, str | None]:
    """The run's summary.json, and why there is none to judge by (missing, a directory, empty,
    unreadable). One that is there and not ours is bad input (rundir.summary)."""
    path = Path(run_dir) / rundir.SUMMARY
    name = str(path)
    if not path.exists():
        return {}, f"{name} is missing"
    if not path.is_file():
        return {}, f"{name} is not a file"
    try:
        with open(path, "rb") as fh:
            empty = not fh.read().strip()
    except OSError as e:
        return {}, f"{name} cannot be read ({e.strerror})"
    s = {} if empty else rundir.summary(run_dir)
    return s, (f"{name} is empty" if not s else None)


# files of a run a check reads when they are there: one that is there but no file was dropped unsaid
_INPUTS = ((f"{rundir.OSM}/{rundir.OSM_SL2VL}", "the VL of each hop, for the deadlock check"),
           (rundir.SL2VL, "the VL of each hop, for the deadlock check"),
           (rundir.PATH_SLS, "the SL of each path, for the deadlock check"),
           (f"{rundir.OSM}/{rundir.OSM_HDOR}", "hdor's coordinates, for the coordinates check"),
           (rundir.HDOR_CONF, "the KNS description hdor ran with, for the coordinates check"),
           (rundir.PERFQUERY, "the port counters, for the cable health check"))


def _unread_inputs(run_dir: Path, lfts: Path) -> list[dict]:
    """NOT CHECKED lines for what a check would have read and could not: an input that is there
    but is no file, and dump_fts.out replaced by OpenSM's own tables."""
    out = []
    for rel, what in _INPUTS:
        p = Path(run_dir) / rel
        if p.exists() and not p.is_file():
            out.append(report.not_checked_check(f"input {rel}", f"{p} is not a file: not read ({what})"))
    own = Path(run_dir) / rundir.LFTS
    if lfts != own and lfts.is_file():
        why = "is empty" if own.is_file() else "is not a file" if own.exists() else "is missing"
        out.append(report.not_checked_check(
            "routes: the switches' tables", f"{own} {why}: the routes were traced in OpenSM's own {lfts} (what "
                                            f"OpenSM computed, not what the switches hold)"))
    return out


def _plan_is_fabric(f, p, t, before: dict | None) -> bool:
    """The discovered fabric is its plan: every cable where planned (nothing miswired, missing or
    extra), every device under its planned GUID, and - for a fault step - step 0's fabric and plan
    placed alike. Then hdor places both alike (coords.verify: plan_is_fabric)."""
    if t.failing(("miswire", "missing")) or t.not_planned_topology or f.num_nodes != p.num_nodes:
        return False
    if len(t.to_plan) != f.num_nodes or any(f.guids[j] != p.guids[i] for j, i in t.to_plan.items()):
        return False
    if before is None:
        return True
    if not before.get("ref") or not before.get("plan"):
        return False
    (fa, ra), (fb, rb) = before["ref"], before["plan"]
    if (ra.k, ra.n) != (rb.k, rb.n) or fa.num_nodes != fb.num_nodes:
        return False
    for x in range(fa.num_nodes):
        y = fb.by_guid(fa.guids[x])
        if y is None or ra.role[x] != rb.role[y] or ra.coords.get(x) != rb.coords.get(y) or \
                ra.dim.get(x) != rb.dim.get(y):
            return False
    return True


def before_faults(step0: Path, nnm, expect) -> dict | None:
    """Step 0 of a fault scenario, for the steps after it: its fabric and tables, and — when hdor
    routed it (or --expect hdor) — the hdor reference of it and of its plan, the remembered KNS the
    degraded passes start from (docs/hdor.md section 6)."""
    from ibtool.formats import lft
    from ibtool.routing import hdor
    from ibtool.routing.lids import assign_lids
    disc, lfts = rundir.fabric(step0), rundir.lfts(step0)
    if not disc.is_file() or not lfts.is_file():
        return None
    f0 = ibnetdiscover.read(disc, node_name_map.read(nnm) if nnm else None)
    out = {"step": step0, "fabric": f0, "tables": lft.read(lfts), "ref": None, "plan": None, "own": None}
    if (expect or ("hdor" if rundir.summary(step0).get("engine") == "hdor" else None)) != "hdor":
        return out
    try:
        r0 = hdor.compute(f0)
    except hdor.NotFamily:
        return out  # each step then says why it has no reference
    out["own"] = r0  # step 0's own reference, as its coordinates check computes it
    # degraded from the start: the later steps are routed against the KNS hdor completed it to
    out["ref"] = (f0, r0) if r0.kns is None else (r0.kns[0], hdor.compute(r0.kns[0], first_sight=False))
    plan0 = step0 / rundir.EXPECTED
    if plan0.is_file():
        p0 = ibnetdiscover.read(plan0)
        assign_lids(p0)
        try:
            out["plan"] = (p0, hdor.compute(p0))
        except hdor.NotFamily:
            pass
    return out


def read_fabric(path: Path, names: dict | None = None):
    """An ibnetdiscover dump / ibsim net file, or OpenSM's opensm-subnet.lst (told apart by content)."""
    with open_input(path) as fh:  # a FIFO or device is refused here, not waited for
        head = next((ln for ln in fh if ln.strip()), "")
    if head.lstrip().startswith("{"):
        from ibtool.formats import opensm_subnet_lst
        return opensm_subnet_lst.read(path, names)
    return ibnetdiscover.read(path, names)


def check_routes(fabric: Path, lfts: Path, sl2vl_path: Path | None, expect: str | None, permutations: int, say,
            f=None, ref=None, balance: bool = True, path_sls: Path | None = None, engine: str | None = None,
            baseline=None, timings: dict | None = None, tables=None) -> dict:
    """The routes section of a report: the tables at `lfts` traced on the fabric at `fabric`
    (`tables`: those already read); timings: seconds of its reading stages are added there."""
    from ibtool.formats import lft, pathrecord, sl2vl
    from ibtool.verify import routes
    f = f or read_fabric(fabric)
    if not f.port_lids:
        raise InputError("no LIDs in this fabric (a plan? use the ibnetdiscover output of the running fabric)",
                         path=str(fabric))
    timings = {} if timings is None else timings
    t0 = time.monotonic()
    say(f"reading {lfts}")
    t = tables if tables is not None else lft.read(lfts)
    t1 = time.monotonic()
    s = sl2vl.read(sl2vl_path) if sl2vl_path else None
    t2 = time.monotonic()
    psl = pathrecord.read_table(path_sls) if path_sls else None
    t3 = time.monotonic()
    timings.update(read_lfts_s=round(t1 - t0, 3), read_sl2vl_s=round(t2 - t1, 3), read_path_sls_s=round(t3 - t2, 3))
    if expect == "hdor" and ref is None:
        from ibtool.routing import hdor
        try:
            ref = hdor.compute(f)
        except hdor.NotFamily as e:
            ref = None
            say(str(e))
    try:
        return routes.verify(f, t, s, expect, ref, permutations=permutations, progress=say, balance=balance,
                             path_sls=psl, engine=engine, baseline=baseline)
    except InputError as e:
        if e.path is None:  # about the fabric itself (duplicate LIDs, too many switches): name its file
            raise InputError(str(e), path=str(fabric)) from None
        raise


def cables_for(plan: Path | None):
    """The plan's cable list (`ibtool cabling` writes PLAN/cabling/cables.csv), when there is one."""
    if plan is None:
        return None
    from ibtool.verify import cables
    found = Plan.at(plan).cable_list()
    return cables.read(found) if found else None


def _counters(run_dir: Path, f):
    from ibtool.formats import perfquery
    from ibtool.verify.health import port_counters
    return port_counters(f, perfquery.read(run_dir / rundir.PERFQUERY))


def check_health(run_dir: Path, f, baseline: Path | None, thresholds: dict, cables: dict | None) -> dict:
    from ibtool.verify import health
    base = hours = None
    if baseline is not None:
        b = Path(baseline)
        if not rundir.perfquery(b):
            raise InputError(f"no {rundir.PERFQUERY} here (not an `ibtool collect` run?)", path=str(b))
        base = _counters(b, f)
        t0 = rundir.summary(b).get("epoch")
        t1 = rundir.summary(run_dir).get("epoch")
        if isinstance(t0, (int, float)) and isinstance(t1, (int, float)) and t1 > t0:
            hours = (t1 - t0) / 3600
    return health.check(f, _counters(run_dir, f), baseline=base, hours=hours, thresholds=thresholds,
                        cables=cables)
