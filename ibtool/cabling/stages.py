"""Wiring stages: groups of cables a crew lays and checks on their own, in an order in which the
fabric grows from the subnet manager's host as one connected piece.

A stage is checked by discovering the fabric from one host (`ibnetdiscover` sees only the piece
it stands in), so every stage after the first adds to the piece that holds the SM host:

1. the family's groups, in its order: KNS the indirect networks of dimension 0, 1, ...; trees one
   group per pair of levels (leaves to the level above, ...); other families the cables inside
   cabinets, then between cabinets; the node cables (switch to HCA) last;
2. the first stage starts with the SM host's own cable; each group joins the current stage with
   the part of it that is connected to the SM host's piece, and the rest of the group is put
   back to come after the groups still to go (a stage that took only part of a group stays open
   and takes the next group too);
3. a group no part of which can reach the SM host's piece (a fabric in pieces) becomes a stage of
   its own at the end: `verify topology --stage` reports its cables as not checked from the SM
   host, never as right.

CELLIA (KNS 6-ary 2-direct): stage 1 is the SM host H[0,0]'s cable, the dimension 0 network of
S[0,0] (the 6 cables its row of routers needs) and all of dimension 1 (43 cables, one piece);
stage 2 the other dimension 0 networks (30); stage 3 the other node cables (35).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ibtool.fabric import CA, SWITCH
from ibtool.layout.model import FLOOR

NODE_CABLES = "node cables (switch to HCA)"


def _group_key(f, a: int, b: int, lay) -> tuple:
    """(order, name) of the family's group of a cable, from its labels."""
    if f.types[a] == CA or f.types[b] == CA:
        return (9, 0, NODE_CABLES)
    la, lb = f.labels[a], f.labels[b]
    dim = la.get("dim", lb.get("dim"))
    if dim is not None:
        return (1, int(dim), f"dimension {dim} indirect networks")
    for key in ("level", "stage"):
        if key in la and key in lb:
            lo, hi = sorted((int(la[key]), int(lb[key])))
            return (2, lo, f"{key}s {lo}-{hi}" if lo != hi else f"{key} {lo}")
    if lay is not None and lay.cabinet[a] != FLOOR and lay.cabinet[a] == lay.cabinet[b]:
        return (3, 0, "switch cables inside cabinets")
    if lay is not None:
        return (3, 1, "switch cables between cabinets")
    return (3, 0, "switch cables")


def sm_host(fabric, name: str | None = None) -> int:
    """The node the subnet manager runs on: `name`, else the first HCA (the first switch in a
    fabric without HCAs)."""
    if name is not None:
        return fabric.index(name)
    for i, t in enumerate(fabric.types):
        if t == CA:
            return i
    return next((i for i, t in enumerate(fabric.types) if t == SWITCH), 0)


class _Pieces:
    """Union-find over the fabric's nodes: the pieces the cables laid so far make."""

    def __init__(self, n: int):
        self.up = list(range(n))

    def find(self, x: int) -> int:
        while self.up[x] != x:
            self.up[x] = self.up[self.up[x]]
            x = self.up[x]
        return x

    def join(self, a: int, b: int) -> None:
        self.up[self.find(a)] = self.find(b)


def stages(fabric, layout=None, sm: int = 0) -> list[tuple[str, list[int]]]:
    """(name, fabric links) of every stage, in wiring order (see the module docstring)."""
    f = fabric
    groups: dict[tuple, list[int]] = defaultdict(list)
    for li, (a, b) in enumerate(zip(f.link_a, f.link_b)):
        groups[_group_key(f, a, b, layout)].append(li)
    own = [li for li in range(f.num_links) if sm in (f.link_a[li], f.link_b[li]) and f.types[sm] == CA]
    mine = set(own)
    queue = [(k[2], [li for li in v if li not in mine]) for k, v in sorted(groups.items())]
    queue = [(name, links) for name, links in queue if links]
    # the node cables last, after every switch group and its rest
    last = [g for g in queue if g[0] == NODE_CABLES]
    queue = [g for g in queue if g[0] != NODE_CABLES]
    laid = _Pieces(f.num_nodes)
    for li in own:
        laid.join(f.link_a[li], f.link_b[li])
    out: list[tuple[str, list[int]]] = []
    cur, names = list(own), [f"the SM host {f.names[sm]}'s cable{'s' if len(own) > 1 else ''}"] if own else []
    stuck = 0  # groups looked at since the piece last grew
    while queue or last:
        if not queue:
            queue, last = last, []
        name, links = queue.pop(0)
        trial = _Pieces(f.num_nodes)
        trial.up = list(laid.up)
        for li in links:
            trial.join(f.link_a[li], f.link_b[li])
        home = trial.find(sm)
        part = [li for li in links if trial.find(f.link_a[li]) == home]
        rest = [li for li in links if trial.find(f.link_a[li]) != home]
        if not part and stuck < len(queue) + 1:
            queue.append((name, links))  # nothing of it reaches the SM host yet: after the others
            stuck += 1
            continue
        if not part:  # a piece the SM host never reaches: a stage of its own, checked from another host
            if cur:
                out.append(("; ".join(names), cur))
                cur, names = [], []
            out.append((f"{name} (not connected to the SM host's piece)", links))
            for li in links:
                laid.join(f.link_a[li], f.link_b[li])
            continue
        stuck = 0
        for li in part:
            laid.join(f.link_a[li], f.link_b[li])
        cur += part
        if rest:
            names.append(f"{name}: the {len(part):,} reached from it")
            queue.append((f"{name}: the rest", rest))
            continue
        names.append(name)
        out.append(("; ".join(names), cur))
        cur, names = [], []
    if cur:
        out.append(("; ".join(names), cur))
    return out


def stage_numbers(fabric, layout=None, sm: int = 0) -> tuple[np.ndarray, list[str]]:
    """(stage number of every fabric link, 1-based; the stages' names)."""
    st = np.zeros(fabric.num_links, dtype=np.int64)
    names = []
    for k, (name, links) in enumerate(stages(fabric, layout, sm), 1):
        st[links] = k
        names.append(name)
    return st, names
