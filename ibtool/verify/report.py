"""Verification reports: a short human summary first (PASS/FAIL per check, counts), details after;
JSON with a stable schema (docs/verify.md); the HTML page is ibtool.verify.htmlreport's.

A report is a dict:

    {"schema": "ibtool-verify/1", "ok": bool, "verdict": "PASS" | "FAIL" | "NOT CHECKED", "inputs": {...},
     "checks": [{"name": "topology", "ok": bool, "summary": "..."}, ...],
     "topology": {...}, "coords": {...}, "routes": {...}}     # the sections that ran

The verdict is one rule for every command: FAIL when a check failed; else NOT CHECKED when a
check that could have failed did not run (a check {"not_checked": true, "summary": why and how
to run it}); else PASS. `ok` is true for PASS only. Exit codes: 0, 1, 5 (ibtool.errors).
"""

from __future__ import annotations

from ibtool.errors import CheckFailed, NotChecked

SCHEMA = "ibtool-verify/1"
MAX_LINES = 40  # per list in the text report; JSON has everything
PASS, FAIL, NOT_CHECKED = "PASS", "FAIL", "NOT CHECKED"
EXIT = {PASS: 0, FAIL: CheckFailed.exit_code, NOT_CHECKED: NotChecked.exit_code}


def build(inputs: dict, sections: dict, not_checked: list[dict] = ()) -> dict:
    """The report of `sections`; not_checked: checks that were meant to run and did not
    (not_checked_check(name, why) each), listed first."""
    checks = list(not_checked)
    for name, sec in sections.items():
        checks.extend(_checks(name, sec))
    rep = {"schema": SCHEMA, "ok": all(c["ok"] for c in checks), "verdict": verdict(checks), "inputs": inputs,
           "checks": checks}
    for name, sec in sections.items():
        rep[name] = _clean(sec)
    return rep


def not_checked_check(name: str, why: str) -> dict:
    """A check that was meant to run and did not: never a pass (`not_run` is its older name)."""
    return {"name": name, "ok": False, "not_checked": True, "not_run": True, "summary": why}


def verdict(checks: list[dict]) -> str:
    if any(not c["ok"] and not c.get("not_checked") for c in checks):
        return FAIL
    return NOT_CHECKED if any(c.get("not_checked") for c in checks) else PASS


def overall(reports: list[dict]) -> str:
    """The verdict over several reports (the steps of a fault scenario), by the same rule."""
    vs = {r.get("verdict") or (PASS if r["ok"] else FAIL) for r in reports}
    return FAIL if FAIL in vs else NOT_CHECKED if NOT_CHECKED in vs else PASS


def _clean(x):
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items() if not str(k).startswith("_")}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _checks(name: str, s: dict) -> list[dict]:
    if name == "topology":
        c = s["counts"]
        if s["not_planned_topology"]:
            summ = "NOT THE PLANNED TOPOLOGY: " + s["reason"]
        else:
            summ = (f"{s['correct_cables']} of {s['plan']['cables']} planned cables right; {c['miswired_cables']} "
                    f"miswired ({c['fixes']} fix{'' if c['fixes'] == 1 else 'es'}), {c['missing_cables']} missing, "
                    f"{c['extra_cables']} extra cables; "
                    f"{c['missing_devices']} missing, {c['extra_devices']} extra devices; "
                    f"{c['degraded_links']} degraded links")
            extra = [f"{c[k]} {t}" for k, t in (("loopbacks", "loopback cables"),
                                                ("partial_discovery", "devices seen only as peers"),
                                                ("rate_mismatches", "links whose ends disagree")) if c.get(k)]
            summ += "".join(f"; {x}" for x in extra)
            if c.get("not_checked"):
                summ += f"; {c['not_checked']} not checked (not seen by the discovery)"
        if s.get("verdict") == NOT_CHECKED:  # all that was seen is right, not all could be seen
            return [not_checked_check("topology", summ)]
        if s.get("verdict") and s["verdict"] != "PASS":
            summ = f"{s['verdict']}: {summ}"
        return [{"name": "topology", "ok": s["ok"], "summary": summ}]
    if name == "coords":
        if "error" in s:
            return [{"name": "coords", "ok": False, "summary": s["error"]}]
        out = []
        if "dump_vs_reference" in s:
            d = s["dump_vs_reference"]
            out.append({"name": "coords: dump vs reference", "ok": d["ok"],
                        "summary": f"{d['devices']} devices, {len(d['problems'])} inconsistent"})
        if "reference_vs_plan" in s:
            d = s["reference_vs_plan"]
            rl = d.get("relabeling")
            out.append({"name": "coords: fabric vs plan", "ok": d["ok"],
                        # no relabeling: nothing was compared, and the first problem says why
                        "summary": d["problems"][0] if not rl and d["problems"] else
                        f"{d.get('routers_compared', 0)} routers compared"
                        + (f" under dimension order {rl['dimensions']}" if rl else "")
                        + f", {len(d['problems'])} inconsistent"})
        if not out:
            out.append({"name": "coords", "ok": s["ok"], "summary": f"KNS k={s['k']} n={s['n']} inferred"})
        return out
    if name == "routes":
        from ibtool.verify.delivery import delivery_ok
        ss = s["undelivered_switch_to_switch"]
        hole = "black hole (no LFT entry)"
        out = [{"name": "routes: delivery", "ok": delivery_ok(s),
                "summary": f"{s['delivered']} of {s['pairs']} (source port, LID) pairs delivered"
                           + "".join(f"; {_undelivered(k, v, ss.get(k, 0))}" for k, v in s["undelivered"].items()
                                     if v and not (k == hole and v == ss.get(k, 0)))
                           + (f"; {len(s['switches_without_table'])} switches without a table"
                              if s["switches_without_table"] else "")
                           + (f"; {len(s['unaddressed'])} ports without a LID ({', '.join(s['unaddressed'][:3])}"
                              + (", ..." if len(s["unaddressed"]) > 3 else "") + ")" if s.get("unaddressed") else "")}]
        top = s.get("top_lid_not_in_dump")
        if top:
            out.append({"name": "routes: dump incomplete", "ok": True, "info": True,
                        "summary": f"LID {top['lid']} ({top['owner']}) is missing from every switch's table: "
                                   f"{top['pairs_not_checked']} pairs to it not checked ({top['reason'].split(': ', 1)[1]})"})
        if ss.get(hole) and ss[hole] == s["undelivered"].get(hole):
            out.append({"name": "routes: switch to switch", "ok": True, "info": True,
                        "summary": f"{ss[hole]} pairs without an LFT entry"
                                   + " between switches only (management traffic; up/down engines do not "
                                     "route between roots)"})
        ex = s.get("extra_hops_histogram")
        if ex is not None:
            longer = sum(v for k, v in ex.items() if int(k) > 0)
            out.append({"name": "routes: minimal", "ok": True, "info": True,
                        "summary": f"{longer} routes longer than the shortest path"
                                   + (f" (up to {max(int(k) for k in ex)} extra hops)" if longer else "")})
        d = s["deadlock"]
        if d.get("checked") is False:  # an engine that uses VLs, without the path SLs: not judged
            out.append(not_checked_check("routes: deadlock freedom", d["note"]))
        else:
            vls = d.get("dependencies_per_vl") or {}
            src = ("path SLs + SL2VL dump" if d.get("path_sls") and d["sl2vl"] else
                   "path SLs, SL n on VL n (no SL2VL dump)" if d.get("path_sls") else
                   "every route on one VL, so on any VLs the engine's SLs pick" if d.get("one_vl") else
                   "SL2VL dump" if d["sl2vl"] else "VL0 only")
            out.append({"name": "routes: deadlock freedom", "ok": d["free"],
                        "summary": (f"channel dependency graph acyclic ({d['dependencies']} dependencies"
                                    + (" (" + ", ".join(f"{k}: {v}" for k, v in vls.items()) + ")" if len(vls) > 1
                                       else "")
                                    + f", {d['vls']} VL{'s' if d['vls'] > 1 else ''}, {src})") if d["free"] else
                        f"credit loop: a cycle of {len(d['cycle'])} channels in the channel dependency graph "
                        f"({src})"})
        b = s["balance"]
        perm = b.get("permutations") if b else None
        if b:
            out.append({"name": "routes: balance", "ok": True, "info": True,
                        "summary": f"routes per inter-switch link min/mean/max {b['routes_per_link']['min']}/"
                                   f"{b['routes_per_link']['mean']}/{b['routes_per_link']['max']}; all-to-all max "
                                   f"link load {b['all_to_all_max_link_load']}"
                                   + (f"; {perm['count']} random permutations: max link load mean "
                                      f"{perm['max_link_load']['mean']}, ebb estimate {perm['ebb_estimate']}"
                                      if perm else "")})
        if "expect" in s:
            e = s["expect"]
            if "error" in e:
                out.append({"name": "routes: expect hdor", "ok": False, "summary": e["error"]})
            else:
                out.append({"name": "routes: hdor tables", "ok": e["tables_equal"],
                            "summary": "identical to the reference" if e["tables_equal"] else
                            f"{e['table_differences']} switches differ from the reference"})
                dv = e["dimension_order"]
                acc = dv.get("accepted_on_detours")
                out.append({"name": "routes: dimension order", "ok": dv["violations"] == 0,
                            "summary": f"{dv['violations']} of {dv['checked_pairs']} router/HCA routes leave "
                                       f"dimension order" + (f" (besides {acc} on detours around the failures, their "
                                                             f"HCA pairs on a path SL other than 0)" if acc else "")})
        u = s.get("unaffected")
        if u is not None:
            out.append({"name": "routes: unaffected unchanged", "ok": u["ok"],
                        "summary": f"{u['unaffected']} entries whose route touches no failed element: "
                                   + ("all unchanged" if u["ok"] else f"{u['changed_unaffected']} changed, e.g. "
                                      f"{u['examples'][0]}") + f" ({u['affected']} affected)"})
        return out
    if name == "health" and (s.get("not_run") or not s.get("ports_checked")):
        # a check that could not run is not a pass (issue 24)
        why = s.get("not_run") or f"no port's counters to judge ({len(s.get('unanswered', []))} ports did not answer)"
        return [not_checked_check("health", why)]
    if name == "health":
        f = s["findings"]
        worst = sorted(f, key=lambda x: -(x["value"] if x["delta"] is None else x["delta"]))
        cables = list(dict.fromkeys(x["cable"] or x["link"] for x in worst))  # named, the most errors first
        named = ": " + ", ".join(cables[:3]) + (f" and {len(cables) - 3} more" if len(cables) > 3 else "") \
            if cables else ""
        return [{"name": "health", "ok": s["ok"],
                 "summary": f"{s['ports_checked']} ports' error counters"
                            + (" (deltas since the baseline)" if s["baseline"] else "")
                            + f": {len(f)} beyond threshold on {len(cables)} cable{'' if len(cables) == 1 else 's'}"
                            + named
                            + (f"; {len(s['unanswered'])} ports did not answer" if s["unanswered"] else "")
                            + (f"; {len(s['resets'])} counters reset since the baseline" if s["resets"] else "")}]
    if name == "run" and s.get("collect"):
        return [{"name": "run", "ok": bool(s.get("ok")),
                 "summary": "collected from a live fabric (ibtool collect)"
                            + (f"; not collected: {', '.join(s['failed'])}" if s.get("failed") else "")}]
    if name == "run":
        return [{"name": "run", "ok": bool(s.get("ok")), "summary": run_summary(s)}]
    return [{"name": name, "ok": bool(s.get("ok")), "summary": ""}]


def run_summary(s: dict) -> str:
    """The run check's line: the subnet, the engine whose tables they are, and a fallback said as one
    (the first engine of the list did not route: a failure unless --accept-fallback)."""
    engine = s.get("engine") or "no engine"
    out = f"subnet {'up' if s.get('subnet_up') else 'NOT up'}, tables configured by {engine}"
    if s.get("fallback"):
        req = s.get("requested") or []
        why = (f"it deferred to OpenSM's default algorithm, though OpenSM's log names it" if s.get("default_for") else
               s["hdor_declined"] if s.get("hdor_declined") else None)  # "HDxx: why" (docs/plugin.md)
        out += (f"; FALLBACK: the first engine {req[0] if req else '?'} did not route" + (f" ({why})" if why else "")
                + ("; accepted (--accept-fallback)" if s.get("accepted_fallback") else
                   "; a later engine of the list passes only with --accept-fallback" if engine in req else
                   "; no engine of the list routed"))
    if s.get("no_routes"):
        out += f"; NO ROUTES: {s['no_routes']}"
    return out + ("; the run was INTERRUPTED" if s.get("interrupted") else "")


# ------------------------------------------------------------------------------------ text

def text(rep: dict) -> str:
    lines = []
    lines.append(f"verify: {rep.get('verdict') or (PASS if rep['ok'] else FAIL)}")
    for c in rep["checks"]:
        lines.append(f"  {c['name']}: {tag(c)}  {c['summary']}")
    if "topology" in rep:
        lines += _topology_text(rep["topology"])
    if "coords" in rep:
        lines += _coords_text(rep["coords"])
    if "routes" in rep:
        lines += _routes_text(rep["routes"])
    if "findings" in rep.get("health", {}):  # not when the check could not run
        lines += _health_text(rep["health"])
    return "\n".join(lines)


def tag(check: dict) -> str:
    """A check's verdict: info, NOT CHECKED (it was meant to run and did not: never a pass), PASS or FAIL."""
    return "info" if check.get("info") else NOT_CHECKED if check.get("not_checked") else PASS if check["ok"] else FAIL


def _health_text(h: dict) -> list[str]:
    out = []
    for title, items in (("cable health (actions)", [x["action"] for x in h["findings"]]),
                         ("ports that did not answer", h["unanswered"]), ("counters reset", h["resets"])):
        if items:
            out += ["", title] + _cap(items, "  ")
    return out


def _cap(items: list[str], indent: str = "    ") -> list[str]:
    out = [indent + x for x in items[:MAX_LINES]]
    if len(items) > MAX_LINES:
        out.append(f"{indent}... and {len(items) - MAX_LINES} more (see --json)")
    return out


def _topology_text(t: dict) -> list[str]:
    out = ["", "topology details"]
    ids = t["matching"].get("identities")
    out.append("  devices matched by " + (", ".join(f"{k} ({v})" for k, v in ids.items()) + " and structure"
                                         if ids else "structure alone (no names, GUIDs or host map shared with the "
                                                     "plan)"))
    if t.get("cable_list"):
        out.append(f"  cable IDs and labels from {t['cable_list']}"
                   + (f"; checked up to wiring stage {t['stage']}" if t.get("stage") else ""))
    if t["not_planned_topology"]:
        out.append("  " + t["reason"])
    # what to fix first; then what could not be checked; what is already right (ahead of its stage) last
    for title, key in (("hosts not where planned", "misplaced_devices"), ("miswired cables (fixes)", "fixes"),
                       ("loopback cables", "loopbacks"), ("missing cables", "missing_cables"),
                       ("extra cables", "extra_cables"), ("missing devices", "missing_devices"),
                       ("extra devices", "extra_devices"), ("partial discovery", "partial_discovery"),
                       ("degraded links", "degraded_links"), ("link ends that disagree", "rate_mismatches"),
                       ("not checked (the discovery could not see them)", "not_checked"),
                       ("cabled ahead of their stage (later stages, already in place)", "ahead_of_plan")):
        items = t.get(key) or []
        if items:
            out.append(f"  {title}:")
            out += _cap([x["text"] for x in items])
    if t.get("devices"):
        out.append("  the devices named above, as the fabric reports them:")
        out += _cap([f"{n} = {d['description']!r} (GUID {d['guid']})" for n, d in t["devices"].items()])
    if t.get("warnings"):
        out.append("  warnings:")
        out += _cap(t["warnings"])
    if t["ok"]:
        out.append(f"  all {t['correct_cables']} cables as planned ({t['matching']['method']})"
                   if t["verdict"] == "PASS" and not t["counts"]["degraded_links"] else
                   f"  PASS for --fail-on {','.join(t['fail_on'])}")
    return out


def _coords_text(c: dict) -> list[str]:
    out = ["", "coordinates details"]
    if "error" in c:
        return out + ["  " + c["error"]]
    out.append(f"  KNS k={c['k']} n={c['n']} s={c['s']}: {c['routers']} routers, {c['switches']} indirect switches, "
               f"{c['hcas']} HCAs")
    for key, title in (("dump_vs_reference", "hdor dump vs reference"), ("reference_vs_plan", "fabric vs plan")):
        if key in c:
            d = c[key]
            if key == "reference_vs_plan" and d.get("relabeling"):
                dims = d["relabeling"]["dimensions"]
                out.append("  relabeling: " + ", ".join(f"plan dimension {a} = found dimension {b}"
                                                         for a, b in enumerate(dims)))
            n_bad = len(d["problems"])
            out.append(f"  {title}: " + ("consistent" if d["ok"] else f"{n_bad} inconsistent"))
            out += _cap(d["problems"])
    return out


def _undelivered(kind: str, n: int, between_switches: int) -> str:
    """One count for the summary line and the details alike, with the switch-to-switch share."""
    return f"{n} {kind}" + (f" ({between_switches} of them between switches only)" if between_switches else "")


def _routes_text(r: dict) -> list[str]:
    out = ["", "routes details",
           f"  {r['source_ports']} source ports x {r['lids']} LIDs; {r['switches']} switches; {r['seconds']} s"]
    ss = r["undelivered_switch_to_switch"]
    for k, v in r.get("undelivered_examples", {}).items():
        out.append(f"  {_undelivered(k, r['undelivered'][k], ss.get(k, 0))} pairs, e.g.")
        out += _cap(v, "    ")
    if r["switches_without_table"]:
        out.append(f"  switches without a table ({len(r['switches_without_table'])}; every route through them is a "
                   f"black hole):")
        out += _cap(r["switches_without_table"], "    ")
    if r.get("unaddressed"):
        out.append(f"  ports without a LID ({len(r['unaddressed'])}; "
                   f"{r['undelivered'].get('no LID (port not addressed)', 0)} pairs to or from them undelivered):")
        out += _cap(r["unaddressed"], "    ")
    if r.get("top_lid_not_in_dump"):
        out.append("  " + r["top_lid_not_in_dump"]["reason"])
    out.append("  route length (links from source port to destination port): "
               + ", ".join(f"{k}: {v}" for k, v in r["length_histogram"].items()))
    if r.get("extra_hops_histogram") is not None:
        out.append("  hops beyond the shortest path: " + ", ".join(f"+{k}: {v}" for k, v in
                                                                   r["extra_hops_histogram"].items()))
    d = r["deadlock"]
    if d["cycle"] and d.get("checked") is False:
        out.append(f"  a cycle of {len(d['cycle'])} channels with every route on one VL (a credit loop only "
                   f"if the engine's SLs keep it on one VL; NOT CHECKED without the path SLs):")
        out += _cap(d["cycle"], "    ")
        out.append("    (and back to the first)")
    elif d["cycle"]:
        out.append(f"  credit loop (channel dependency cycle, {len(d['cycle'])} channels; each channel's "
                   f"routes wait for the next):")
        out += _cap(d["cycle"], "    ")
        out.append("    (and back to the first)")
    e = r.get("expect")
    if e and "error" not in e:
        if e["table_difference_examples"]:
            out.append("  tables differing from the hdor reference:")
            out += _cap(e["table_difference_examples"], "    ")
        if e["dimension_order"]["example"]:
            out.append("  route out of dimension order, e.g. " + e["dimension_order"]["example"])
    return out
