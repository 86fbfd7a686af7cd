"""Each failure's row, its criticality and the ranking; the results as JSON and CSV.

The criticality (docs/whatif.md, "The ranking") is a class, then numbers within it:

| class | when |
|---|---|
| credit loop | the routes after the failure close a cycle of channel dependencies on a VL: the fabric can hang |
| subnet manager | the failure takes the subnet manager's own device: nothing is routed until a standby takes over |
| cuts hosts apart | HCA pairs that are both still there no longer reach each other |
| takes hosts off | HCAs lost with the device (a router's own hosts) |
| declined | the engine refuses the failure (hdor's HD code): OpenSM falls back to the next engine |
| not measured | no tables to measure (OpenSM timed out, LIDs moved) |
| needs VLs | the detours need more VLs than the fault-free routes (hdor: deadlock freedom by VL) |
| more load | the worst link load grows, under all-to-all or the worst random permutation |
| longer routes | routes change, and some are longer |
| no effect | nothing measured changed beyond routes of equal length |

Within a class: more host pairs disconnected first, then more VLs, then the larger increase of the
all-to-all load, of the permutations' load, then the longest and the mean extra hops, then more
rerouted pairs; ties by ID. The same inputs give the same bytes (no times, no hosts, no order of
workers in them).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from ibtool import __version__
from ibtool.formats import atomic_write

CLASSES = ("credit loop", "subnet manager", "cuts hosts apart", "takes hosts off", "declined", "not measured",
           "needs VLs", "more load", "longer routes", "no effect")
SCHEMA = "ibtool-whatif/1"


def row(spec: dict, outcome: str, routed=None, m: dict | None = None, before: dict | None = None,
        engine: str = "") -> dict:
    """One failure's row (JSON-ready). outcome: routed | declined | sm | error. `down`: what fails,
    as `sim run --fail` names it ('DEVICE PORT' for a cable, 'DEVICE')."""
    down = [f"{a} {pa}" for a, pa, _, _ in spec["links"]] + list(spec["nodes"])
    r = {"id": spec["id"], "kind": spec["kind"], "parts": spec.get("parts") or [], "down": down, "outcome": outcome,
         "engine": (routed.engine if routed is not None and routed.engine else engine) or None,
         "fallback": bool(routed.fallback) if routed is not None else False,
         "decline": routed.declined if routed is not None else None,
         "error": routed.error if routed is not None else None}
    if m is None:
        return r
    before = before or {}
    r.update({k: m[k] for k in ("hcas_lost", "pairs_lost", "pairs_undelivered", "pairs_disconnected",
                                "pairs_rerouted", "extra_hops")})
    r["vls"] = routed.vls if routed is not None else None
    r.update({k: m[k] for k in ("vls_used", "deadlock_free", "dependencies_per_vl", "cycle", "a2a_max_load")})
    r["a2a_increase"] = m["a2a_max_load"] - before.get("a2a_max_load", 0)
    r["perm_max_load"] = m["perm_max_load"]
    r["perm_increase"] = m["perm_max_load"] - before.get("perm_max_load", 0)
    r.update({k: m[k] for k in ("routes_per_link", "hot_links", "pairs", "delivered", "undelivered",
                                "undelivered_switch_to_switch", "entries_changed")})
    return r


def klass(r: dict) -> str:
    if r.get("deadlock_free") is False:
        return "credit loop"
    if r["outcome"] == "sm":
        return "subnet manager"
    if r.get("pairs_undelivered"):
        return "cuts hosts apart"
    if r.get("hcas_lost"):
        return "takes hosts off"
    if r["outcome"] == "declined" or r.get("decline"):
        return "declined"
    if r["outcome"] == "error":
        return "not measured"
    if (r.get("vls_used") or 1) > 1:
        return "needs VLs"
    if r.get("a2a_increase", 0) > 0 or r.get("perm_increase", 0) > 0:
        return "more load"
    if (r.get("extra_hops") or {}).get("max", 0) > 0:
        return "longer routes"
    return "no effect"


def key(r: dict) -> tuple:
    e = r.get("extra_hops") or {}
    return (CLASSES.index(klass(r)), -(r.get("pairs_disconnected") or 0), -(r.get("vls_used") or 1),
            -(r.get("a2a_increase") or 0), -(r.get("perm_increase") or 0), -e.get("max", 0), -e.get("mean", 0.0),
            -(r.get("pairs_rerouted") or 0), r["id"])


def advice(r: dict) -> str:
    """What to do about it, as a fix sheet says it."""
    text = _advice(r)
    if r["kind"] in ("pair", "set"):
        text = text.replace("its failure", "their failure").replace("its detours", "their detours")
    return text


def _advice(r: dict) -> str:
    c, name = klass(r), r["id"]
    spare = r["kind"] in ("switch", "router")
    first = f"keep a spare for {name}" if spare else f"inspect {name} first"
    if r["kind"] in ("pair", "set"):  # a double failure: what the two do together
        first = f"{name} together"
    if c == "credit loop":
        return (f"{name}: its failure closes a credit loop under {r.get('engine') or 'the engine'} (the fabric can "
                f"hang), through {(r.get('cycle') or ['?'])[0]}: route with a deadlock-free engine, and {first}")
    if c == "subnet manager":
        on = r.get("sm") or name
        if on == name:
            return f"keep a standby subnet manager on another device: {name} carries the master SM"
        return f"keep a standby subnet manager away from {name}: its failure takes the master SM (on {on}) off the fabric"
    if c == "cuts hosts apart":
        what = f"add a second cable beside {name}" if not spare else first
        return f"{what}: its failure cuts {r['pairs_undelivered']:,} host pairs that are still up apart"
    if c == "takes hosts off":
        lost = r.get("hcas_lost") or []
        hosts = ", ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
        return f"{first}: its failure takes {hosts} off the fabric"
    if c == "declined":
        d = r.get("decline") or {}
        fb = f"; OpenSM routes with {r['engine']} instead" if r.get("fallback") and r.get("engine") else \
            "; OpenSM falls back to the next engine of its list"
        return f"{first}: hdor declines its failure ({d.get('code', '?')}: {d.get('reason', '')}){fb}"
    if c == "not measured":
        return f"{name}: not measured ({r.get('error')}): run it again with --only {name}"
    if c == "needs VLs":
        load = _load(r)
        return f"{first}: its detours need {r['vls_used']} VLs (the fault-free routes: 1)" + (f";{load}" if load else "")
    if c == "more load":
        return f"{first}:{_load(r)}"
    if c == "longer routes":
        e = r["extra_hops"]
        return f"{name}: {r['pairs_rerouted']:,} host pairs detour, up to {e['max']} more hops"
    return f"{name}: no effect measured"


def _load(r: dict) -> str:
    out = ""
    if r.get("a2a_increase"):
        was = r["a2a_max_load"] - r["a2a_increase"]
        hot = hot_text(r["hot_links"][0]) if r.get("hot_links") else ""
        out += (f" its failure raises the worst all-to-all link load from {was} to {r['a2a_max_load']} "
                f"(+{100 * r['a2a_increase'] / max(was, 1):.0f} %)" + (f", on {hot}" if hot else ""))
    if r.get("perm_increase"):
        was = r["perm_max_load"] - r["perm_increase"]
        out += ("," if out else " its failure raises") + \
            f" the worst permutation's link load from {was} to {r['perm_max_load']}"
    return out


def hot_text(h: list) -> str:
    """A hot link: its cable ID and direction when the plan has a cable list, else the channel."""
    return f"{h[3]} ({h[0]})" if len(h) > 3 and h[3] else h[0]


def ranked(rows: list[dict]) -> list[dict]:
    out = sorted(rows, key=key)
    for i, r in enumerate(out, 1):
        r["rank"], r["class"], r["advice"] = i, klass(r), advice(r)
    return out


def results(job: dict, engine: dict, before: dict, rows: list[dict]) -> dict:
    counts = {c: 0 for c in CLASSES}
    for r in rows:
        counts[r["class"]] += 1
    return {"schema": SCHEMA, "ibtool": __version__, "source": job["source"], "plan": job["plan"],
            "engine": engine, "sm": job["sm"],
            "failures": {"how": job["how"], "routed": len(rows), "hosts_not_routed": job["hosts"]},
            "before": before, "classes": {c: n for c, n in counts.items() if n}, "rows": rows}


COLUMNS = ("rank", "id", "kind", "class", "outcome", "pairs_disconnected", "hcas_lost", "pairs_rerouted",
           "extra_hops_max", "extra_hops_mean", "vls_used", "deadlock_free", "a2a_max_load", "a2a_increase",
           "perm_max_load", "perm_increase", "decline", "labels", "where", "advice")


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        e = r.get("extra_hops") or {}
        parts = r.get("parts") or []
        d = r.get("decline") or {}
        w.writerow([r["rank"], r["id"], r["kind"], r["class"], r["outcome"], r.get("pairs_disconnected", ""),
                    len(r.get("hcas_lost") or []), r.get("pairs_rerouted", ""), e.get("max", ""), e.get("mean", ""),
                    r.get("vls_used", ""), r.get("deadlock_free", ""), r.get("a2a_max_load", ""),
                    r.get("a2a_increase", ""), r.get("perm_max_load", ""), r.get("perm_increase", ""),
                    f"{d['code']}: {d['reason']}" if d else "",
                    " | ".join(" / ".join(p.get("labels") or []) for p in parts if p.get("labels")),
                    " | ".join(" - ".join(p.get("where") or []) for p in parts if p.get("where")), r["advice"]])
    return out.getvalue()


def write(out: Path, res: dict) -> None:
    with atomic_write(Path(out) / "results.json") as fh:
        json.dump(res, fh, indent=1, sort_keys=False)
        fh.write("\n")
    with atomic_write(Path(out) / "results.csv") as fh:
        fh.write(csv_text(res["rows"]))
