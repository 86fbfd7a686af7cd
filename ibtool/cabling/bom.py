"""The bill of materials of a cable list: what to order, with prices only from the user's table."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ibtool.cabling.cable_list import CablePlan
from ibtool.fabric import CA, SWITCH
from ibtool.layout.cables import cable_order, cable_price, unit_price


def bom(plan: CablePlan, prices: dict | None = None) -> list[dict]:
    """Switches (by port count), HCAs, cables per medium and purchasable length, optical
    transceivers (two per fiber cable; none with active optical cables), labels (two per cable).
    Cables, their media and prices come from ibtool.layout.cables.cable_order, as in `ibtool
    analyze`. Prices only from the user's table (ibtool.analyze.cost.read_prices format); a price
    the table lacks is an InputError naming the file, none is invented."""
    f = plan.fabric
    order = cable_order(plan.layout, prices)
    src = (prices or {}).get("source", "prices")
    rows: list[dict] = []

    def add(item, kind, size, quantity, unit=None):
        r = {"item": item, "kind": kind, "size": size, "quantity": quantity}
        if prices is not None:
            r["unit_price"] = None if unit is None else round(unit, 2)
            r["price"] = None if unit is None else round(unit * quantity, 2)
        rows.append(r)

    sw = Counter(n for t, n in zip(f.types, f.nports) if t == SWITCH)
    for n, c in sorted(sw.items()):
        add(f"switch, {n} ports", "switch", n, c,
            unit_price(prices.get("switch"), float(n), src, f"switch: no price for radix {n}") if prices else None)
    hcas = sum(1 for t in f.types if t == CA)
    add("HCA port (node)", "hca", "", hcas,
        unit_price(prices.get("hca"), "hca", src, "hca: no price given") if prices else None)
    links = np.asarray(plan.links, dtype=np.int64)
    purch, med = order["purchasable_m"][links], order["medium"][links]
    cab = Counter((m, float(p)) for m, p in zip(med, purch) if not np.isnan(p))
    for (m, length), c in sorted(cab.items()):
        # the cable alone: its transceivers are a row of their own
        add(f"{m} cable {length:g} m", m, length, c,
            cable_price(prices, m, length, "*", transceivers=False) if prices else None)
    unknown = int(np.isnan(purch).sum())
    if unknown:
        add("cable of unknown length (an end not placed, or longer than the catalogue)", "cable", "", unknown)
    speeds = [order["speed"][li] for li in links if order["medium"][li] == "fiber"]
    for sp, c in sorted(Counter(speeds).items()):
        add(f"optical transceiver{'' if sp == '*' else ' ' + sp} (2 per fiber cable)", "transceiver", sp, 2 * c,
            unit_price(prices.get("transceiver"), sp, src, f"transceiver: no price for a {sp} transceiver")
            if prices else None)
    add("cable label (one per end)", "label", "", 2 * len(plan))
    return rows
