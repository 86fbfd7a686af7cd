"""Device coordinates: hdor's dump vs. the Python reference inference vs. the plan.

* dump vs. reference: both follow docs/hdor.md on the same discovered fabric, so every device
  must have the same role, dimension and coordinates, exactly.
* reference vs. plan: the discovered fabric's coordinates are compared with the plan's (the plan's
  own hdor coordinates, which for a plan from `ibtool topo kns` are its R[..] labels) through the
  structural plan matching, up to the relabelings that are legitimate: a permutation of the
  dimensions and, per dimension, a permutation of the positions. The relabeling that agrees with
  the most routers is chosen; each device it does not explain is reported with the reason.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

from ibtool.errors import InputError
from ibtool.fabric import Fabric


def _c(t) -> str:
    return "[" + ",".join(str(x) for x in t) + "]"


def dump_vs_reference(fabric: Fabric, ref, dump) -> dict:
    """Every device of the dump against the reference result for the same fabric. InputError when
    most of the dump's devices are not in the fabric (as for LFT and SL2VL dumps)."""
    unknown = [g for g in dump.role if fabric.by_guid(g) is None]
    if unknown and len(unknown) * 2 > len(dump.role):
        g = min(unknown, key=lambda x: dump.lines[x])
        raise InputError(f"{dump.role[g]} {g:#018x} {dump.names.get(g, '')!r} is not in the fabric ({len(unknown)} "
                         f"of {len(dump.role)} devices are unknown): an hdor dump of another fabric?",
                         path=dump.path, line=dump.lines[g])
    problems: list[str] = []
    seen = set()
    for i, role in enumerate(ref.role):
        g = fabric.guids[i]
        name = fabric.names[i]
        seen.add(g)
        if g not in dump.role:
            problems.append(f"{name} ({g:#018x}): in the fabric as {role} {_c(ref.coords.get(i, ()))}, "
                            f"missing from the dump")
            continue
        why = []
        if dump.role[g] != role:
            why.append(f"dump says {dump.role[g]}, reference says {role}")
        if role == "switch" and dump.dim.get(g) != ref.dim.get(i):
            why.append(f"dump says dimension {dump.dim.get(g)}, reference says {ref.dim.get(i)}")
        if tuple(dump.coords[g]) != tuple(ref.coords.get(i, ())):
            why.append(f"dump says {_c(dump.coords[g])}, reference says {_c(ref.coords.get(i, ()))}")
        if why:
            problems.append(f"{name} ({g:#018x}, dump line {dump.lines[g]}): " + "; ".join(why))
    for g in dump.role:
        if g not in seen:
            problems.append(f"{dump.names.get(g, '')!r} ({g:#018x}, dump line {dump.lines[g]}): in the dump, "
                            f"not in the fabric")
    hk = dump.header
    for key, val in (("k", ref.k), ("n", ref.n)):
        if key in hk and hk[key] != val:
            problems.append(f"dump header says {key}={hk[key]}, reference says {val}")
    return {"ok": not problems, "devices": len(ref.role), "problems": problems}


def _best_relabel(pairs: list[tuple[tuple, tuple]], n: int):
    """pairs of (plan coords, found coords): the dimension permutation and per-dimension position
    maps that agree with the most routers. Returns (sigma, maps) with found[sigma[d]] = maps[d][plan[d]]."""
    score = [[0] * n for _ in range(n)]
    tables = {}
    for da in range(n):
        for db in range(n):
            cnt: dict[int, Counter] = defaultdict(Counter)
            for a, b in pairs:
                cnt[a[da]][b[db]] += 1
            mp = {x: c.most_common(1)[0][0] for x, c in cnt.items()}
            score[da][db] = sum(c[mp[x]] for x, c in cnt.items())
            tables[(da, db)] = mp
    if n <= 7:
        sigma = max(itertools.permutations(range(n)), key=lambda s: sum(score[d][s[d]] for d in range(n)))
    else:
        sigma, used = [], set()
        for d in range(n):
            db = max((x for x in range(n) if x not in used), key=lambda x: score[d][x])
            used.add(db)
            sigma.append(db)
    return tuple(sigma), [tables[(d, sigma[d])] for d in range(n)]


def reference_vs_plan(plan: Fabric, plan_ref, fabric: Fabric, ref, to_plan: dict[int, int]) -> dict:
    """Discovered coordinates against the plan's, through the matching, up to relabeling."""
    n = ref.n
    if (plan_ref.k, plan_ref.n) != (ref.k, ref.n):
        return {"ok": False, "problems": [f"the plan is {plan_ref.k}-ary {plan_ref.n}-direct, the fabric "
                                          f"{ref.k}-ary {ref.n}-direct"], "relabeling": None}
    routers = [j for j, r in enumerate(ref.role) if r == "router"]
    pairs, who = [], []
    problems: list[str] = []
    for j in routers:
        i = to_plan.get(j)
        if i is None or plan_ref.role[i] != "router":
            problems.append(f"{fabric.names[j]} ({fabric.guids[j]:#018x}) is a router at {_c(ref.coords[j])} "
                            f"but matches no planned router")
            continue
        # coordinates are written most significant first: index n-1-d is dimension d
        a = tuple(reversed(plan_ref.coords[i]))
        b = tuple(reversed(ref.coords[j]))
        pairs.append((a, b))
        who.append((i, j))
    if not pairs:
        return {"ok": False, "problems": problems or ["no routers matched"], "relabeling": None}
    sigma, maps = _best_relabel(pairs, n)
    for d in range(n):
        vals = list(maps[d].values())
        if len(set(vals)) != len(vals):
            problems.append(f"dimension {d}: plan positions do not map one-to-one onto found positions "
                            f"(map {dict(sorted(maps[d].items()))})")
    for (a, b), (i, j) in zip(pairs, who):
        why = []
        for d in range(n):
            want = maps[d].get(a[d])
            if b[sigma[d]] != want:
                why.append(f"plan dimension {d} position {a[d]} should be found dimension {sigma[d]} position "
                           f"{want}, is {b[sigma[d]]}")
        if why:
            problems.append(f"{plan.names[i]} (found as {fabric.names[j]!r}, {fabric.guids[j]:#018x}) at "
                            f"{_c(ref.coords[j])}: " + "; ".join(why))
    # HCAs carry their router's coordinates: an HCA on the wrong router is at the wrong place
    for j, r in enumerate(ref.role):
        if r != "hca":
            continue
        i = to_plan.get(j)
        if i is None or plan_ref.role[i] != "hca":
            continue
        a = tuple(reversed(plan_ref.coords[i]))
        b = tuple(reversed(ref.coords[j]))
        bad = [d for d in range(n) if b[sigma[d]] != maps[d].get(a[d])]
        if bad:
            want = [None] * n
            for d in range(n):
                want[sigma[d]] = maps[d].get(a[d])
            problems.append(f"{plan.names[i]} (found as {fabric.names[j]!r}) is at {_c(ref.coords[j])}, the plan puts "
                            f"it at {_c(tuple(reversed(want)))} in the fabric's labels: cabled to another router")
    # switches: their dimension must be the relabeled plan dimension
    for j, r in enumerate(ref.role):
        if r != "switch":
            continue
        i = to_plan.get(j)
        if i is None or plan_ref.role[i] != "switch":
            problems.append(f"{fabric.names[j]} ({fabric.guids[j]:#018x}) is an indirect switch of dimension "
                            f"{ref.dim.get(j)} but matches no planned indirect switch")
            continue
        if sigma[plan_ref.dim[i]] != ref.dim[j]:
            problems.append(f"{plan.names[i]} (found as {fabric.names[j]!r}) is in dimension {ref.dim[j]}, the "
                            f"plan's dimension {plan_ref.dim[i]} maps to {sigma[plan_ref.dim[i]]}")
    return {"ok": not problems, "relabeling": {"dimensions": list(sigma),
                                               "positions": [{str(k): v for k, v in sorted(m.items())} for m in maps]},
            "routers_compared": len(pairs), "problems": problems}


class _Renumbered:
    """An hdor result's placement (k, n, role, coords, dim) in another fabric's node numbers."""

    def __init__(self, ref, to_other: dict[int, int], size: int):
        self.k, self.n = ref.k, ref.n
        self.role: list = [None] * size
        self.coords: dict = {}
        self.dim: dict = {}
        for j, i in to_other.items():
            self.role[i] = ref.role[j]
            if j in ref.coords:
                self.coords[i] = ref.coords[j]
            if j in ref.dim:
                self.dim[i] = ref.dim[j]


def verify(fabric: Fabric, dump=None, plan: Fabric | None = None, to_plan: dict[int, int] | None = None,
           baseline=None, plan_baseline=None, description=None, reference=None, plan_reference=None,
           plan_is_fabric: bool = False) -> dict:
    """The 'coords' section of the report. baseline / plan_baseline: (fabric, hdor result) of the
    complete KNS before a fault (step 0), for a degraded fabric / plan (docs/hdor.md section 6);
    description: the hdor.conf hdor ran with (docs section 7); reference / plan_reference: the
    hdor result of this fabric / plan when already computed (of the same file, same arguments).
    plan_is_fabric: the plan is this fabric (same GUIDs, same cables, baselines placing every
    device alike): hdor places the devices by GUID and structure, so the plan's placement is the
    fabric's and is not computed a second time (a degraded pass of KNS 12^3: ~19 s)."""
    import time

    from ibtool.routing import hdor
    from ibtool.routing.lids import assign_lids
    t0 = time.monotonic()
    out: dict = {"ok": True, "_timings": {}}
    if not fabric.port_lids:  # coordinates do not depend on LIDs; the reference wants some
        assign_lids(fabric)
    try:
        ref = reference or hdor.compute(fabric, baseline=baseline, description=description)
    except hdor.NotFamily as e:
        return {"ok": False, "error": f"the discovered fabric is not a KNS: {e.reason}",
                "_timings": {"reference_s": time.monotonic() - t0}}
    out["_timings"]["reference_s"] = time.monotonic() - t0
    out.update({"k": ref.k, "n": ref.n, "s": ref.s, "routers": len(ref.routers), "switches": len(ref.switches),
                "hcas": len(ref.hcas)})
    if dump is not None:
        out["dump_vs_reference"] = dump_vs_reference(fabric, ref, dump)
        out["ok"] &= out["dump_vs_reference"]["ok"]
    if plan is not None and to_plan is not None:
        if not plan.port_lids and plan_baseline is not None:  # a degraded plan keeps the complete one's LIDs
            full = plan_baseline[0]
            for (x, port), v in full.port_lids.items():
                y = plan.by_guid(full.guids[x])
                if y is not None:
                    plan.port_lids[(y, port)] = v
        if not plan.port_lids:
            assign_lids(plan)
        t1 = time.monotonic()
        try:
            plan_ref = plan_reference or (_Renumbered(ref, to_plan, plan.num_nodes) if plan_is_fabric
                                          else hdor.compute(plan, baseline=plan_baseline))
        except hdor.NotFamily as e:  # a finding of this section: the other checks still report
            out["reference_vs_plan"] = {"ok": False, "relabeling": None,
                                        "problems": [f"the plan is not a KNS: {e.reason}"]}
        else:
            out["reference_vs_plan"] = reference_vs_plan(plan, plan_ref, fabric, ref, to_plan)
        out["_timings"]["plan_reference_s"] = time.monotonic() - t1
        out["ok"] &= out["reference_vs_plan"]["ok"]
    out["_reference"] = ref
    return out
