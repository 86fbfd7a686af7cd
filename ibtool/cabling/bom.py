"""The bill of materials of a cable list."""

from __future__ import annotations

import numpy as np

from ibtool.cabling.cable_list import CablePlan
from ibtool.fabric import CA, SWITCH


def bom(plan: CablePlan, prices: dict | None = None) -> list[dict]:
    """Switches (by port count), HCAs, cables per medium and purchasable length, transceivers for
    fiber cables (two per cable, unless bought as active optical cables), labels (two per cable).
    Prices only from the user's table (ibtool.analyze.cost.read_prices format); none invented."""
    f, lay = plan.fabric, plan.layout
    rows: list[dict] = []
    sw = {}
    for t, n in zip(f.types, f.nports):
        if t == SWITCH:
            sw[n] = sw.get(n, 0) + 1
    for n, c in sorted(sw.items()):
        rows.append({"item": f"switch, {n} ports", "kind": "switch", "size": n, "quantity": c})
    rows.append({"item": "HCA port (node)", "kind": "hca", "size": "", "quantity": sum(1 for t in f.types if t == CA)})
    cab: dict[tuple[str, float], int] = {}
    unpriced = 0
    for li in plan.links:
        p = lay.purchasable[li]
        if np.isnan(p):
            unpriced += 1
            continue
        key = (lay.medium[li] or "copper", float(p))
        cab[key] = cab.get(key, 0) + 1
    for (m, length), c in sorted(cab.items()):
        rows.append({"item": f"{m} cable {length:g} m", "kind": m, "size": length, "quantity": c})
    if unpriced:
        rows.append({"item": "cable of unknown length (an end not placed, or longer than the catalogue)",
                     "kind": "cable", "size": "", "quantity": unpriced})
    fiber = sum(c for (m, _), c in cab.items() if m == "fiber")
    if fiber:
        rows.append({"item": "optical transceiver (2 per fiber cable; none with active optical cables)",
                     "kind": "transceiver", "size": "", "quantity": 2 * fiber})
    rows.append({"item": "cable label (one per end)", "kind": "label", "size": "", "quantity": 2 * len(plan)})
    if prices:
        for r in rows:
            table = prices.get({"switch": "switch", "hca": "hca", "copper": "copper", "fiber": "fiber"}.get(r["kind"], ""))
            unit = None
            if isinstance(table, dict):
                unit = table.get(float(r["size"])) if r["size"] != "" else None
            elif table is not None:
                unit = table
            r["unit_price"] = unit
            r["price"] = None if unit is None else round(unit * r["quantity"], 2)
    return rows
