"""What `--expect hdor` adds: the tables equal to the hdor reference, and routes in dimension
order (the dimension of each router from the reference)."""

from __future__ import annotations

import numpy as np

from ibtool.fabric import Fabric
from ibtool.formats.lft import Tables
from ibtool.verify.trace import route_example


def hdor_dims(fabric: Fabric, reference):
    """Per node: the dimension hdor gives it (-1: none) and whether it is a router."""
    dim = np.full(fabric.num_nodes, -1, dtype=np.int8)
    router = np.zeros(fabric.num_nodes, dtype=bool)
    for i, r in enumerate(reference.role):
        if r == "router":
            router[i] = True
    for i, d in reference.dim.items():
        dim[i] = d
    return dim, router


def expect_hdor(fabric, tables, b, reference, checked, viol, example) -> dict:
    """The 'expect' section: tables against the reference, and the dimension-order count the
    route walk made (`checked` pairs, `viol` of them out of order, one `example` pair)."""
    if reference is None:
        return {"ok": False, "error": "no hdor reference available (ibtool.routing.hdor missing or fabric not KNS)"}
    from ibtool.routing import hdor as hd
    want = reference.tables
    if b.top_missing:  # not in the dump: not compared either (said in the delivery section)
        want = Tables({g: a[:b.top_missing] for g, a in want.lft.items()}, want.names)
    diffs = hd.compare_tables(want, tables)
    out = {
        "k": reference.k, "n": reference.n, "s": reference.s,
        "tables_equal": not diffs,
        "table_differences": len(diffs),
        "table_difference_examples": diffs[:10],
        "dimension_order": {"checked_pairs": checked, "violations": viol,
                            "example": route_example(b, *example) if example else None},
    }
    out["ok"] = not diffs and viol == 0
    return out
