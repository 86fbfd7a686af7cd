"""Which discovered device is which planned one: by identity where the two share one, by
structure where not (`verify topology`'s first step; the report of the differences is
`verify/topology.py`).

* identities (`identities`): a site host map, equal names (node descriptions or node-name-map
  names), equal node GUIDs. Identified devices keep their match, so a host on the wrong port is a
  miswire ("H[0,0] (node018) is on R[0,1] port 1; it belongs on R[0,0] port 1"), not a renaming;
* without identities, anchors: devices whose neighbourhood (type, and for each cabled port: the
  far end's port and type) occurs exactly once in the plan and once in the fabric;
* propagation (percolation graph matching): a matched pair votes for the pairs of devices cabled
  to the same port numbers on both sides (2 votes when the far ports agree too, 1 when only the
  near ports do); the pair with the most votes is matched next. A few wrong cables only take votes
  away from a few pairs, so the rest of the fabric still matches;
* what is left is paired by local agreement, then by type.
When there are no anchors (a fabric whose every device looks alike), a few seeds are tried and the
matching that explains the most cables wins.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ibtool.fabric import SWITCH, Fabric


def _adj(f: Fabric) -> list[dict[int, tuple[int, int]]]:
    adj: list[dict[int, tuple[int, int]]] = [{} for _ in range(f.num_nodes)]
    for a, pa, b, pb in zip(f.link_a, f.link_pa, f.link_b, f.link_pb):
        adj[a][pa] = (b, pb)
        adj[b][pb] = (a, pa)
    return adj


def _signature(f: Fabric, adj, i: int) -> tuple:
    return (f.types[i], tuple(sorted((p, q, f.types[j]) for p, (j, q) in adj[i].items())))


def _signatures(f: Fabric, adj, rounds: int) -> list:
    """Colour refinement with port labels: round 1 is the node's own ports and the far ports;
    each further round adds the neighbours' colours by port."""
    sig = [_signature(f, adj, i) for i in range(f.num_nodes)]
    for _ in range(rounds - 1):
        sig = [(sig[i], tuple(sorted((p, q, hash(sig[j])) for p, (j, q) in adj[i].items())))
               for i in range(f.num_nodes)]
    return sig


def _unique_pairs(plan: Fabric, found: Fabric, pa, fa, rounds: int) -> list[tuple[int, int]]:
    sp, sf = _signatures(plan, pa, rounds), _signatures(found, fa, rounds)
    cp, cf = Counter(sp), Counter(sf)
    where = {s: j for j, s in enumerate(sf) if cf[s] == 1}
    return [(i, where[s]) for i, s in enumerate(sp) if cp[s] == 1 and s in where]


@dataclass
class Matching:
    to_plan: dict[int, int]  # discovered node -> plan node
    anchors: int
    method: str
    identities: dict = field(default_factory=dict)  # source -> number of devices it identified
    fixed: dict = field(default_factory=dict)  # discovered node -> plan node, by identity


def identities(plan: Fabric, found: Fabric, host_map: dict[str, str] | None = None) -> tuple[list, dict]:
    """Devices the plan and the fabric name alike: (plan node, found node) pairs and their count
    per source. Sources, first come first served: the site's host map (plan name -> host name,
    description or GUID), equal names (node descriptions, or the node-name-map's names), equal
    node GUIDs (a plan that is an earlier dump, or a plan emulated as is: at least half the
    devices share their GUID)."""
    pairs: list[tuple[int, int]] = []
    used_p: set[int] = set()
    used_f: set[int] = set()
    count: dict[str, int] = {}

    def take(source: str, cands) -> None:
        for i, j in cands:
            if i not in used_p and j not in used_f and plan.types[i] == found.types[j]:
                pairs.append((i, j))
                used_p.add(i)
                used_f.add(j)
                count[source] = count.get(source, 0) + 1

    if host_map:
        by_name = {n: i for i, n in enumerate(plan.names)}
        take("host map", ((by_name[n], j) for n, j in host_map_nodes(found, host_map).items() if n in by_name))
    fnames = {n: j for j, n in enumerate(found.names)}
    take("names", ((i, fnames[n]) for i, n in enumerate(plan.names) if n in fnames))
    by_guid = [(i, found.by_guid(g)) for i, g in enumerate(plan.guids) if found.by_guid(g) is not None]
    # shared GUIDs mean the same hardware only when many are shared (an earlier dump, an emulated
    # plan); a few equal GUIDs (a plan's made-up ones against a real fabric) identify nothing
    if 2 * len(by_guid) >= min(plan.num_nodes, found.num_nodes):
        take("GUIDs", by_guid)
    return pairs, count


def host_map_nodes(found: Fabric, host_map: dict[str, str]) -> dict[str, int]:
    """Plan name -> discovered node for a host map's entries: a host is a node GUID or port GUID
    (0x...), a whole node description, or its first word (the host name in 'node018 HCA-1')."""
    by_desc: dict[str, list[int]] = defaultdict(list)
    for j, n in enumerate(found.names):
        by_desc[n].append(j)
        by_desc[n.split(" (0x")[0]].append(j)
        by_desc[n.split()[0] if n.split() else n].append(j)
    port_owner = {g: n for (n, _p), g in found.port_guids.items()}
    out: dict[str, int] = {}
    for name, host in host_map.items():
        j = None
        if host.lower().startswith("0x"):
            g = int(host, 16)
            j = found.by_guid(g)
            j = port_owner.get(g) if j is None else j
        else:
            hits = sorted(set(by_desc.get(host, ())))
            j = hits[0] if len(hits) == 1 else None
        if j is not None:
            out[name] = j
    return out


def match(plan: Fabric, found: Fabric, names: bool = False, host_map: dict[str, str] | None = None) -> Matching:
    """Map discovered nodes to plan nodes.

    Devices with an identity in both (see `identities`) are matched by it and stay matched: a host
    on the wrong port is then a miswire, not a renaming. The rest is matched by structure, from
    the identified devices or, without any, from devices whose neighbourhood is unique.
    names=True (a node-name-map was given) only names the method in the report.
    """
    pa, fa = _adj(plan), _adj(found)
    fixed, ids = identities(plan, found, host_map)
    if fixed:
        m = _percolate(plan, found, pa, fa, fixed, frozen={j for _i, j in fixed})
        method = "node-name-map + structure" if names else \
            "identities (" + ", ".join(ids) + ") + structure"
        return Matching(m, len(fixed), method, ids, {j: i for i, j in fixed})
    cands: list[tuple[int, Matching]] = []
    # anchors from two rounds of refinement (a wrong cable can make a device look like another
    # one from its own ports, rarely from its neighbours' too); one round if that leaves too few
    seeds = _unique_pairs(plan, found, pa, fa, 2)
    if len(seeds) < 3:
        seeds = _unique_pairs(plan, found, pa, fa, 1)
    if seeds:
        m = _percolate(plan, found, pa, fa, seeds)
        cands.append((_agree(pa, fa, m), Matching(m, len(seeds), "structure")))
        # once more from the devices whose every cable agrees with that matching: anchors that a
        # wrong cable had made look right are not among them
        sure = [(i, j) for j, i in m.items() if fa[j] and all(
            pa[i].get(p) == (m.get(j2), q) for p, (j2, q) in fa[j].items())]
        if sure and len(sure) < len(m):
            m2 = _percolate(plan, found, pa, fa, sure)
            cands.append((_agree(pa, fa, m2), Matching(m2, len(sure), "structure")))
    else:
        best, best_score = {}, -1
        deg_p = sorted(range(plan.num_nodes), key=lambda i: (-len(pa[i]), plan.types[i] != SWITCH, i))
        for i in deg_p[:2]:
            tries = [j for j in range(found.num_nodes)
                     if found.types[j] == plan.types[i] and len(fa[j]) == len(pa[i])][:24]
            for j in tries:
                m = _percolate(plan, found, pa, fa, [(i, j)])
                sc = _agree(pa, fa, m)
                if sc > best_score:
                    best, best_score = m, sc
        cands.append((best_score, Matching(best, 0, "structure (seed search)")))
    cands.sort(key=lambda c: -c[0])
    return cands[0][1]


def _agree(pa, fa, m: dict[int, int]) -> int:
    n = 0
    for j, i in m.items():
        for p, (j2, q) in fa[j].items():
            t = pa[i].get(p)
            if t is not None and m.get(j2) == t[0] and t[1] == q:
                n += 1
    return n // 2


def _percolate(plan: Fabric, found: Fabric, pa, fa, seeds, frozen: set | None = None) -> dict[int, int]:
    """Percolation matching from seed pairs (plan node, found node); returns found -> plan.
    Found nodes in `frozen` (identified devices) keep their seed's plan node.

    A: the pair with the most votes is matched next (votes come from matched neighbours on the
       same port number; 2 when the far port agrees too);
    B: when no pair has votes, devices next to matched ones are compared by how many of their
       cables lead to the right matched devices, whatever the ports; the best pair is matched
       and A resumes;
    C: what is left (devices whose every cable is wrong, or missing) is paired by type, equal
       names first.
    """
    to_plan: dict[int, int] = {}
    to_found: dict[int, int] = {}
    votes: dict[tuple[int, int], int] = defaultdict(int)
    heap: list[tuple[int, int, int]] = []
    pt, ft = plan.types, found.types

    def accept(i: int, j: int):
        to_plan[j] = i
        to_found[i] = j
        for p, (i2, q) in pa[i].items():
            t = fa[j].get(p)
            if t is None:
                continue
            j2, q2 = t
            if i2 in to_found or j2 in to_plan or pt[i2] != ft[j2]:
                continue
            key = (i2, j2)
            votes[key] += 2 if q == q2 else 1
            heapq.heappush(heap, (-votes[key], i2, j2))

    def run_votes():
        while heap:
            v, i, j = heapq.heappop(heap)
            if i in to_found or j in to_plan or -v != votes[(i, j)]:
                continue
            accept(i, j)

    for i, j in seeds:
        if i not in to_found and j not in to_plan and pt[i] == ft[j]:
            accept(i, j)
    run_votes()
    while True:  # B
        best = None
        for j in range(found.num_nodes):
            if j in to_plan:
                continue
            sc: dict[int, int] = defaultdict(int)
            for p, (j2, q) in fa[j].items():
                i2 = to_plan.get(j2)
                if i2 is None:
                    continue
                for p2, (i, q2) in pa[i2].items():
                    if i in to_found or pt[i] != ft[j]:
                        continue
                    sc[i] += 1 + (q2 == p) + (p2 == q)
            for i, v in sc.items():
                cand = (v, plan.names[i] == found.names[j], -i, -j)
                if best is None or cand > best:
                    best = cand
        if best is None:
            break
        accept(-best[2], -best[3])
        run_votes()
    # C
    left_f = [j for j in range(found.num_nodes) if j not in to_plan]
    left_p = [i for i in range(plan.num_nodes) if i not in to_found]
    by_name = defaultdict(list)
    for i in left_p:
        by_name[plan.names[i]].append(i)
    for j in list(left_f):
        for i in by_name.get(found.names[j], ()):
            if i not in to_found and pt[i] == ft[j]:
                to_plan[j] = i
                to_found[i] = j
                break
    for j in left_f:
        if j in to_plan:
            continue
        for i in sorted(left_p, key=lambda i: abs(len(pa[i]) - len(fa[j]))):
            if i not in to_found and pt[i] == ft[j]:
                to_plan[j] = i
                to_found[i] = j
                break
    _repair(plan, found, pa, fa, to_plan, to_found, frozen=frozen or set())
    return to_plan


def _repair(plan, found, pa, fa, to_plan, to_found, rounds: int = 4, frozen: set = frozenset()) -> None:
    """Local search: re-assign a device to the plan device its matched neighbours say it is
    (exchanging with the current holder) whenever that makes more cables agree. This undoes
    anchors that a wrong cable made look like another device."""
    pt, ft = plan.types, found.types

    def local(nodes) -> int:
        seen, n = set(), 0
        for j in nodes:
            if j is None or j not in to_plan:
                continue
            i = to_plan[j]
            for p, (j2, q) in fa[j].items():
                key = (min((j, p), (j2, q)), max((j, p), (j2, q)))
                if key in seen:
                    continue
                seen.add(key)
                i2 = to_plan.get(j2)
                if i2 is not None and pa[i].get(p) == (i2, q):
                    n += 1
        return n

    def assign(j, i):
        if j is None:
            return
        if i is None:
            to_plan.pop(j, None)
        else:
            to_plan[j] = i
            to_found[i] = j

    def proposals(j) -> list[int]:
        props: Counter = Counter()
        for p, (j2, q) in fa[j].items():
            i2 = to_plan.get(j2)
            if i2 is None:
                continue
            t = pa[i2].get(q)
            if t is not None and t[1] == p and pt[t[0]] == ft[j]:
                props[t[0]] += 1
        return [i for i, _ in props.most_common(2)]

    def try_cycle(js: list, new: list) -> bool:
        """Give js[x] the plan node new[x] (a permutation of their current ones); keep if better."""
        if frozen.intersection(js):
            return False
        old = [to_plan.get(j) for j in js]
        before = local(js)
        for j, i in zip(js, new):
            assign(j, i)
        if local(js) > before:
            return True
        for j, i in zip(js, old):
            assign(j, i)
        return False

    for _ in range(rounds):
        improved = False
        for j in range(found.num_nodes):
            i_old = to_plan.get(j)
            if i_old is None:
                continue
            for i_new in proposals(j):
                if i_new == i_old:
                    break
                j2 = to_found.get(i_new)
                if j2 is None or j2 == j:
                    continue
                if try_cycle([j, j2], [i_new, i_old]):  # exchange
                    improved = True
                    break
                # rotation of three: j2 takes what its own neighbours say, that device's holder takes i_old
                done = False
                for i_x in proposals(j2):
                    j3 = to_found.get(i_x)
                    if i_x in (i_new, i_old) or j3 is None or j3 in (j, j2):
                        continue
                    if pt[i_old] == ft[j3] and try_cycle([j, j2, j3], [i_new, i_x, i_old]):
                        done = improved = True
                        break
                if done:
                    break
        if not improved:
            break


# ------------------------------------------------------------------------------------ diff
