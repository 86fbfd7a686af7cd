"""kantc: paper 001's routing for KANTC (Algorithm 1) and MiKANTC (Algorithm 2), as forwarding
tables for OpenSM's `file` engine, from a discovered fabric.

    result = compute(ibnetdiscover.read("ibnetdiscover.out"))   # raises NotFamily with a reason
    result.label[node], result.tables.lft[switch_guid][lid]

Labels are recovered from the wiring alone (names and port numbers are never read; GUIDs only
break ties between equivalent choices, as in routing/hdor.py):
1. host switches: switches with an HCA; cube switches: hosts and their switch neighbours; a cube:
   the hosts and intermediates joined by links that touch a host (plus the links between its own
   intermediates); it must have 2^k switches of which k (no HCA) are intermediates.
2. cube labels C: the origin 0...0 is the lowest-GUID intermediate whose distances to the other
   intermediates are those of I_0 in `topologies.kantc.intermediates(k)`; its neighbours are
   given bits 0..k-1 by the first assignment, in GUID order, that maps the intermediates onto
   that list. Intermediate I_j is the tree's leaf with digit 0 = j.
3. levels: hops from the intermediates through switches outside the cubes. Links between two
   switches of the same level (or between two cubes' intermediates) are MiKANTC's mirror links;
   n = top level + 1 (+ 1 when mirrored). Groups: the two colour classes of the subtrees the
   mirror links join (group 0 holds the lowest GUID).
4. words: digit j of a level-L switch is, for j >= L, the rank (by lowest GUID) of its component
   of levels 0..j among those inside its component of levels 0..j+1 (for the top digit of a
   mirrored tree: among its group's subtrees); for j < L, the same on levels j+1..top inside
   j..top. These are the k-ary n-tree's <L,w> up to its automorphisms, and equal the builder's
   labels when GUIDs follow construction order.

Routes (per destination HCA on host switch t in cube c; its DIS = the intermediate nearest to t,
lowest j on ties; its word T = (c, j)):
* in t's cube: dimension order (lowest differing bit of C first), then the HCA port;
* in another cube: to the nearest intermediate (ties spread by destination), then up;
* tree switch at level L of T's group that is an ancestor of T (digits >= L equal): down to the
  child that is; otherwise up to the parent whose digit L is T_L;
* MiKANTC, level n-2: to T's group, the mirror link to T's subtree; within T's group but not
  its ancestor, across to subtree T_0 of the other group and back (Algorithm 2).
Switch LIDs are routed on shortest paths (lowest port on ties). The paper's routing is minimal
inside a cube but not deadlock-free on one VL: `ibtool verify routes` shows the cycle; updn (the
plan's engine) is the deadlock-free choice.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ibtool.errors import NotFamily
from ibtool.fabric import CA, SWITCH, Fabric, switch_graph
from ibtool.formats import atomic_write
from ibtool.formats.lft import NO_ROUTE, Tables
from ibtool.hops import bfs_hops
from ibtool.topologies.kantc import bits, intermediates


def _not_kantc(reason: str) -> NotFamily:
    return NotFamily("kantc", "KANTC/MiKANTC", reason)


@dataclass
class KantcResult:
    k: int
    n: int
    mirrored: bool
    # per node: switches {"group", "level", "word"} (+ "cube", "c" for cube switches);
    # HCAs {"group", "cube", "c"} of their host switch
    label: dict[int, dict] = field(default_factory=dict)
    tables: Tables = field(default_factory=Tables)
    cubes: list[list[int]] = field(default_factory=list)
    lids: int = 0

    def name(self, node: int) -> str:
        """The label as the paper writes it: <G,L,D,C> (G only for MiKANTC)."""
        lab = self.label[node]
        parts = [lab["group"]] if self.mirrored else []
        if "level" in lab:
            parts.append(lab["level"])
            w = lab.get("word")
            parts += list(w) if w else [*lab["cube"], "*"]
        else:
            parts += [*lab["cube"], "*"]
        c = lab.get("c")
        parts.append(bits(c, self.k) if c is not None else "0" * self.k)
        return "<" + ",".join(map(str, parts)) + ">"


def _describe(f: Fabric, node: int) -> str:
    return f"{'switch' if f.types[node] == SWITCH else 'hca'} {f.guids[node]:#018x} '{f.names[node]}'"


class _Recover:
    def __init__(self, f: Fabric):
        self.f = f
        N = f.num_nodes
        self.nb: list[list[tuple[int, int]]] = [[(p, b) for p, b, _ in f.neighbors(i)] for i in range(N)]
        self.sw = [i for i in range(N) if f.types[i] == SWITCH]
        for i in range(N):
            if f.types[i] not in (SWITCH, CA):
                raise _not_kantc(f"node {_describe(f, i)} is neither a switch nor a CA")
        self.host = {i for i in self.sw if any(f.types[b] == CA for _, b in self.nb[i])}
        if not self.host:
            raise _not_kantc("no switch has an HCA")
        self.guid = f.guids

    def run(self) -> KantcResult:
        f, nb, host = self.f, self.nb, self.host
        cube_sw = set(host) | {b for h in host for _, b in nb[h] if f.types[b] == SWITCH}
        # 1. cubes: components over links touching a host
        comp: dict[int, int] = {}
        cubes = []
        for s in sorted(cube_sw, key=lambda x: self.guid[x]):
            if s in comp:
                continue
            cid = len(cubes)
            comp[s] = cid
            members, q = [s], deque([s])
            while q:
                u = q.popleft()
                for _, v in nb[u]:
                    if v in cube_sw and v not in comp and (u in host or v in host):
                        comp[v] = cid
                        members.append(v)
                        q.append(v)
            cubes.append(sorted(members, key=lambda x: self.guid[x]))
        ks = set()
        for cu in cubes:
            inter = [s for s in cu if s not in host]
            k = len(inter)
            if k < 2 or len(cu) != 2 ** k:
                raise _not_kantc(f"the cube of {_describe(f, cu[0])} has {len(cu)} switches and {k} without HCAs; "
                               f"a k-cube has 2^k switches, k of them intermediate")
            ks.add(k)
        if len(ks) != 1:
            raise _not_kantc(f"cubes of different dimensions {sorted(ks)}")
        k = ks.pop()
        self.k = k
        self.comp = comp
        labels: dict[int, dict] = {}
        for cid, cu in enumerate(cubes):
            for s, c in self._cube_labels(cu, k).items():
                labels[s] = {"c": c, "cubeid": cid}
        I = intermediates(k)
        jof = {x: j for j, x in enumerate(I)}
        # 3. levels
        inter = [s for s in cube_sw if s not in host]
        level = {s: 0 for s in inter}
        q = deque(inter)
        while q:
            u = q.popleft()
            for _, v in nb[u]:
                if f.types[v] == SWITCH and v not in cube_sw and v not in level:
                    level[v] = level[u] + 1
                    q.append(v)
        tree = [s for s in self.sw if s not in cube_sw]
        for s in tree:
            if s not in level:
                raise _not_kantc(f"{_describe(f, s)} is not connected to any cube")
        top = max(level.values())

        def cross(u: int, v: int) -> bool:
            if u not in level or v not in level or level[u] != level[v]:
                return False
            return u not in cube_sw or v not in cube_sw or comp[u] != comp[v]

        mirrored = any(cross(u, v) for u in level for _, v in nb[u] if f.types[v] == SWITCH)
        n = top + (2 if mirrored else 1)
        if not mirrored and top == 0:
            raise _not_kantc("no switch above the cubes")
        # subtrees: components of the tree (levels 0..top) without the mirror links and cube links
        tree_nodes = [s for s in level]  # intermediates and tree switches

        def tree_edge(u, v, lo, hi):
            return (v in level and lo <= level[u] <= hi and lo <= level[v] <= hi and level[u] != level[v])

        def components(lo: int, hi: int) -> dict[int, int]:
            """Component id (its lowest GUID) of every node of levels lo..hi over up/down links."""
            out: dict[int, int] = {}
            for s in sorted((x for x in tree_nodes if lo <= level[x] <= hi), key=lambda x: self.guid[x]):
                if s in out:
                    continue
                out[s] = s
                qq = deque([s])
                while qq:
                    u = qq.popleft()
                    for _, v in nb[u]:
                        if v not in out and tree_edge(u, v, lo, hi):
                            out[v] = s
                            qq.append(v)
            return out

        digits: dict[int, list] = {s: [None] * (n - 1) for s in tree_nodes}
        group = {s: 0 for s in tree_nodes}
        down = [components(0, m) for m in range(top + 1)]
        if mirrored:
            # subtrees = components of levels 0..top; the mirror joins them bipartitely
            sub = down[top]
            roots = sorted(set(sub.values()), key=lambda x: self.guid[x])
            color = {roots[0]: 0}
            q = deque([roots[0]])
            while q:
                r = q.popleft()
                for s in [x for x in tree_nodes if sub[x] == r and level[x] == top]:
                    for _, v in nb[s]:
                        if cross(s, v):
                            c = sub[v]
                            if c not in color:
                                color[c] = 1 - color[r]
                                q.append(c)
                            elif color[c] == color[r]:
                                raise _not_kantc(f"mirror links of {_describe(f, s)} join two subtrees of one group")
            if len(color) != len(roots) or len(roots) != 2 * k:
                raise _not_kantc(f"{len(roots)} subtrees below the mirror links, expected 2k = {2 * k}")
            for s in tree_nodes:
                group[s] = color[sub[s]]
        for j in range(n - 1):  # digit j sits at word index n-2-j
            # switches of levels <= j: their part of levels 0..j within levels 0..j+1 (or the group)
            outer = down[j + 1] if j < top else group
            for s, v in self._ranks(down[j], outer, k).items():
                digits[s][n - 2 - j] = v
            if j < top:  # switches of levels > j: their part of levels j+1..top within j..top
                for s, v in self._ranks(components(j + 1, top), components(j, top), k).items():
                    digits[s][n - 2 - j] = v
        # intermediates: digit 0 is j of I_j, not a GUID rank (the cube label decides)
        for s in inter:
            digits[s][n - 2] = jof.get(labels[s]["c"], -1)
            if digits[s][n - 2] < 0:
                raise _not_kantc(f"intermediate {_describe(f, s)} got label {bits(labels[s]['c'], k)}")
        res = KantcResult(k, n, mirrored, cubes=cubes)
        for s in tree_nodes:
            lab = {"group": group[s], "level": level[s], "word": tuple(digits[s])}
            if s in labels:
                lab["c"] = labels[s]["c"]
                lab["cube"] = tuple(digits[s][:n - 2])
            res.label[s] = lab
        for cu in cubes:
            i0 = next(s for s in cu if s not in host)
            for s in cu:
                if s in host:
                    res.label[s] = {"group": group[i0], "level": 0, "word": None,
                                    "cube": res.label[i0]["cube"], "c": labels[s]["c"]}
        for s in host:
            for _, b in nb[s]:
                if f.types[b] == CA:
                    res.label[b] = {"group": res.label[s]["group"], "cube": res.label[s]["cube"],
                                    "c": res.label[s]["c"]}
        self.res, self.level, self.group, self.top = res, level, group, top
        self.cube_labels = labels
        return res

    def _ranks(self, inner: dict, outer: dict, k: int) -> dict[int, int]:
        """Digit of every node of `inner`: the rank (lowest GUID first) of its inner component among
        the k inside its outer one."""
        kids: dict = {}
        for s, ci in inner.items():
            kids.setdefault(outer[s], set()).add(ci)
        order = {}
        for cs in kids.values():
            if len(cs) != k:
                raise _not_kantc(f"{_describe(self.f, min(cs, key=lambda x: self.guid[x]))}'s part of the tree "
                               f"branches {len(cs)} ways upwards, not k = {k}")
            for r, ci in enumerate(sorted(cs, key=lambda x: self.guid[x])):
                order[ci] = r
        return {s: order[ci] for s, ci in inner.items()}

    def _cube_labels(self, cu: list[int], k: int) -> dict[int, int]:
        f, host = self.f, self.host
        g = switch_graph(f, cu)  # the links inside the cube
        ptr, nbr = g.indptr.tolist(), g.nodes[g.indices].tolist()
        adj = {s: nbr[ptr[i]:ptr[i + 1]] for i, s in enumerate(cu)}
        for s in cu:
            if len(adj[s]) != k:
                raise _not_kantc(f"{_describe(f, s)} has {len(adj[s])} links inside its cube, a {k}-cube needs {k}")
        inter = [s for s in cu if s not in host]
        I = intermediates(k)

        want = sorted(bin(x).count("1") for x in I[1:])  # I_0 = 0: distances = popcounts
        origin = None
        for s, row in zip(inter, bfs_hops(g.indptr, g.indices, g.vertex[inter]).tolist()):  # cu: GUID order
            d = dict(zip(cu, row))  # the cube is connected: every hop count is found
            if sorted(d[t] for t in inter if t != s) == want:
                origin, dist = s, d
                break
        if origin is None:
            raise _not_kantc(f"the intermediates of the cube of {_describe(f, cu[0])} are not placed as "
                           f"paper 001's rule places them")
        # bit set of every switch as a set of origin-neighbour indices
        e = sorted(adj[origin], key=lambda x: self.guid[x])
        sets = {origin: 0}
        for s in sorted(cu, key=lambda x: dist[x])[1:]:
            m = 0
            for v in adj[s]:
                if dist[v] == dist[s] - 1:
                    m |= sets[v] if v != origin else 0
            if dist[s] == 1:
                m = 1 << e.index(s)
            sets[s] = m
        def lab(m, perm):
            return sum(1 << perm[i] for i in range(len(perm)) if m >> i & 1)

        def assign(perm):
            """The first bit assignment (origin-neighbour i -> bit perm[i]), in lexicographic order,
            mapping the intermediates onto I; a prefix whose projection already differs is cut."""
            if len(perm) == k:
                return perm
            for b in range(k):
                if b not in perm:
                    p = [*perm, b]
                    mask = sum(1 << x for x in p)
                    if sorted(lab(sets[s] & ((1 << len(p)) - 1), p) for s in inter) == sorted(x & mask for x in I):
                        r = assign(p)
                        if r:
                            return r
            return None

        perm = assign([])
        if perm is not None:
            out = {s: lab(sets[s], perm) for s in cu}
            if len(set(out.values())) != 2 ** k or any(
                    bin(out[s] ^ out[v]).count("1") != 1 for s in cu for v in adj[s]):
                raise _not_kantc(f"the cube of {_describe(f, cu[0])} is not a {k}-cube")
            return out
        raise _not_kantc(f"the intermediates of the cube of {_describe(f, cu[0])} are not placed as paper 001's rule "
                       f"places them")


def compute(fabric: Fabric) -> KantcResult:
    """Recover labels and fill every switch's LFT (module docstring)."""
    rec = _Recover(fabric)
    res = rec.run()
    _route(fabric, rec, res)
    return res


def _route(f: Fabric, rec: _Recover, res: KantcResult) -> None:
    from ibtool.errors import InputError
    owners = f.lid_owners()
    if not owners:
        raise InputError("the fabric has no LIDs (a plan, not a discovered fabric? use the ibnetdiscover.out "
                         "of `ibtool sim run`)")
    k, n, top = res.k, res.n, rec.top
    L, nb, host = res.label, rec.nb, rec.host
    I = intermediates(k)
    NL = max(owners) + 1
    switches = sorted(rec.sw, key=lambda x: f.guids[x])
    cube_of = rec.comp  # cube switch -> cube index
    word = {s: L[s].get("word") for s in switches}
    # per cube switch: port by bit flipped
    port_bit = {s: {} for s in cube_of}
    for s in cube_of:
        for p, v in nb[s]:
            if v in cube_of and cube_of[v] == cube_of[s]:
                port_bit[s][(L[s]["c"] ^ L[v]["c"]).bit_length() - 1] = p
    # distance to the nearest intermediate, and the ports that get closer
    def dnear(c):
        return min(bin(c ^ x).count("1") for x in I)
    toward = {}
    for s in cube_of:
        d = dnear(L[s]["c"])
        toward[s] = sorted(p for b, p in port_bit[s].items() if dnear(L[s]["c"] ^ (1 << b)) == d - 1)
    up = {s: {} for s in switches}  # digit value -> port, to the level above
    dn = {s: [] for s in switches}  # (port, child)
    mirror = {s: {} for s in switches}  # subtree digit (n-2) of the other group -> port
    for s in switches:
        if s not in rec.level:
            continue
        for p, v in nb[s]:
            if v not in rec.level:
                continue
            if rec.level[v] == rec.level[s] + 1:
                up[s][word[v][n - 2 - rec.level[s]]] = p
            elif rec.level[v] == rec.level[s] - 1 and not (v in cube_of and s in cube_of):
                dn[s].append((p, v))
            elif rec.level[v] == rec.level[s] and L[v]["group"] != L[s]["group"]:
                mirror[s][word[v][0]] = p

    def ancestor(s, T, G):
        lv = rec.level[s]
        return L[s]["group"] == G and all(word[s][n - 2 - j] == T[n - 2 - j] for j in range(lv, n - 1))

    def port(s, t, T, G, spread):
        """Next port at switch s towards host switch t (word T of its DIS, group G)."""
        if s in cube_of and cube_of[s] == cube_of[t]:
            diff = L[s]["c"] ^ L[t]["c"]
            return port_bit[s][(diff & -diff).bit_length() - 1]
        if s in cube_of and s in host:
            cand = toward[s]
            return cand[spread % len(cand)]
        lv = rec.level[s]
        if res.mirrored and lv == top:
            if L[s]["group"] != G:
                return mirror[s][T[0]]
            if not ancestor(s, T, G):
                return mirror[s][T[-1]]  # across to subtree T_0 of the other group, then back
        if ancestor(s, T, G) and lv > 0:
            for p, v in dn[s]:
                if all(word[v][n - 2 - j] == T[n - 2 - j] for j in range(lv - 1, n - 1)):
                    return p
            raise _not_kantc(f"{_describe(f, s)} has no child towards {T}")
        return up[s][T[n - 2 - lv]]

    tables = res.tables
    rows = {s: np.full(NL, NO_ROUTE, dtype=np.uint8) for s in switches}
    lids_of: dict[int, list[int]] = {}
    for lid, (node, _) in owners.items():
        if f.types[node] == SWITCH:
            rows[node][lid] = 0
            lids_of.setdefault(node, []).append(lid)
    # HCA LIDs
    by_host: dict[int, list[tuple[int, int]]] = {}
    for lid, (node, p) in owners.items():
        if f.types[node] == CA:
            peer = f.peer(node, p)
            if peer is not None:
                by_host.setdefault(peer[0], []).append((lid, peer[1]))
    for spread, t in enumerate(sorted(by_host, key=lambda x: f.guids[x])):
        if t not in host:
            raise _not_kantc(f"{_describe(f, t)} carries an HCA but is not a cube switch")
        ct = L[t]["c"]
        dis = min(range(k), key=lambda j: (bin(ct ^ I[j]).count("1"), j))
        T = tuple(L[t]["cube"]) + (dis,)
        G = L[t]["group"]
        lids = [x for x, _ in by_host[t]]
        for s in switches:
            if s == t:
                for lid, p in by_host[t]:
                    rows[s][lid] = p
            else:
                rows[s][lids] = port(s, t, T, G, spread)
    # switch LIDs: shortest paths over switches, lowest port on ties (hops to d = hops from d)
    g = switch_graph(f)
    vx = g.vertex.tolist()
    dests = list(lids_of)
    for lo in range(0, len(dests), 256):  # bfs_hops' temporaries grow with sources x links
        chunk = dests[lo:lo + 256]
        for d, dist in zip(chunk, bfs_hops(g.indptr, g.indices, g.vertex[chunk]).tolist()):
            dl = lids_of[d]
            for s in switches:
                h = dist[vx[s]]
                if s != d and h >= 0:
                    rows[s][dl] = min(p for p, v in nb[s] if vx[v] >= 0 and dist[vx[v]] == h - 1)
    for s in switches:
        tables.lft[f.guids[s]] = rows[s]
        tables.names[f.guids[s]] = f.names[s]
    res.lids = len(owners)


def port_guids(fabric: Fabric) -> dict[int, int]:
    return {lid: fabric.port_guid(node, port) for lid, (node, port) in fabric.lid_owners().items()}


def dump_lines(res: KantcResult, fabric: Fabric) -> list[str]:
    """One line per node: kind, GUID, recovered label, name (the name is never read back)."""
    out = [f"# kantc k={res.k} n={res.n} mirrored={int(res.mirrored)} cubes={len(res.cubes)} lids={res.lids}"]
    for i in sorted(res.label, key=lambda x: (fabric.types[x], fabric.guids[x])):
        kind = "switch" if fabric.types[i] == SWITCH else "hca"
        out.append(f"{kind:6} {fabric.guids[i]:#018x} {res.name(i)} \"{fabric.names[i]}\"")
    return out


def write_dump(res: KantcResult, fabric: Fabric, path: str | Path) -> None:
    with atomic_write(path) as fh:
        fh.write("\n".join(dump_lines(res, fabric)) + "\n")
