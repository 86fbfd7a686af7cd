"""Routes a fault did not touch must not move: a fault step's tables against the tables before it.

An entry (switch W, LID L) of the tables before (step 0 of `sim run --faults`) is *affected* when
its route from W — the walk over those tables — uses a link that is down now or enters a device
that is gone (the rule of docs/hdor.md section 6, checked here from the two runs' own dumps, not
from the engine). Every unaffected entry must be the same port in the tables now, so every route
that touches no failed element is the route it was. The affected mask also tells `verify routes`
which routes are detours (where a dimension-order violation is the scheme's, not a fault).
"""

from __future__ import annotations

import numpy as np

from ibtool.fabric import Fabric
from ibtool.formats.lft import Tables
from ibtool.verify.bound import K_CA, K_SWITCH, Bound, bind, port_tables

EXAMPLES = 5


def compare(before: Bound, now: Bound) -> tuple[dict, np.ndarray]:
    """The 'unaffected' section and the affected mask over `now`'s (switch row, LID) entries.

    LIDs are compared where the same port (by GUID) owns them in both runs."""
    f0, f = before.fabric, now.fabric
    ns0 = len(before.sw_nodes)
    kind, node, _, _ = port_tables(before)
    width = min(before.lft.shape[1], now.lft.shape[1])
    lft0 = before.lft[:, :width].astype(np.int64)
    rows = np.arange(ns0, dtype=np.int64)[:, None]
    k = rows * 256 + lft0
    hop_kind = kind[k]
    nxt = node[k]
    # is each (switch before, port) still cabled to the same device now?
    alive = np.zeros((ns0, 256), dtype=bool)
    alive[:, 0] = True
    to_now = np.full(ns0, -1, dtype=np.int64)
    for r, x in enumerate(before.sw_nodes):
        y = f.by_guid(f0.guids[x])
        if y is None or not f.is_switch(y):
            continue
        to_now[r] = now.row[y]
        alive[r, 0] = True
        for p, peer, _ in f0.neighbors(int(x)):
            q = f.peer(y, p)
            alive[r, p] = q is not None and f.guids[q[0]] == f0.guids[peer]
    bad = to_now[:, None] < 0
    bad = bad | (((hop_kind == K_SWITCH) | (hop_kind == K_CA)) & ~alive[rows, lft0])
    onward = hop_kind == K_SWITCH
    nrow = np.where(onward, before.row[np.maximum(nxt, 0)], 0)
    cols = np.broadcast_to(np.arange(width), bad.shape)
    for _ in range(64):  # a suffix of an affected route is affected back to its start
        grown = bad | (onward & bad[nrow, cols])
        if np.array_equal(grown, bad):
            break
        bad = grown
    # LIDs owned by the same port before and now
    same = np.zeros(width, dtype=bool)
    for lid in range(width):
        a, b = int(before.own_node[lid]), int(now.own_node[lid])
        if a >= 0 and b >= 0 and f0.guids[a] == f.guids[b] and before.own_port[lid] == now.own_port[lid]:
            same[lid] = True
    keep = (to_now >= 0)[:, None] & same[None, :]
    unaff = keep & ~bad
    r0, lids = np.nonzero(unaff)
    got = now.lft[to_now[r0], lids]
    want = lft0[r0, lids]
    moved = np.flatnonzero(got != want)
    examples = []
    for j in moved[:EXAMPLES]:
        x = int(before.sw_nodes[r0[j]])
        owner = f0.names[int(before.own_node[lids[j]])]
        examples.append(f"{f0.names[x]} LID {int(lids[j])} ({owner}): port {int(want[j])} before, "
                        f"{int(got[j])} now, although its route touches no failed element")
    mask = np.zeros(now.lft.shape, dtype=bool)
    ar0, alids = np.nonzero(keep & bad)
    mask[to_now[ar0], alids] = True
    sec = {"ok": not len(moved), "entries_compared": int(keep.sum()), "unaffected": int(unaff.sum()),
           "affected": int((keep & bad).sum()), "changed_unaffected": len(moved), "examples": examples}
    return sec, mask


def check(f0: Fabric, t0: Tables, f: Fabric, t: Tables) -> tuple[dict, np.ndarray]:
    """compare() from the two runs' fabrics and tables."""
    return compare(bind(f0, t0), bind(f, t))
