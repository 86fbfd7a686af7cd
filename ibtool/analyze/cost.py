"""Cost per endpoint from a price table the user gives; nothing is priced by default.

    # prices.yaml
    currency: EUR
    switch: 9000            # per switch (or per radix: {36: 9000, 64: 21000})
    hca: 900                # per HCA
    copper: {1: 60, 2: 75, 3: 90, 5: 120}      # per purchasable length (m)
    fiber: {5: 450, 10: 480, 20: 520, 50: 600}
    transceiver: 180        # per optical transceiver, 2 per fiber cable (or per speed: {QDR: 180, EDR: 400})
    active_copper: {10: 200}                   # where the site buys active copper / active optical cables
    aoc: {10: 700, 20: 760}

Cables are priced as `ibtool cabling` orders them (ibtool.layout.cables.cable_order).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from ibtool.errors import InputError
from ibtool.fabric import SWITCH
from ibtool.layout.cables import MEDIA, cable_order, price_key
from ibtool.layout.site import compose_yaml, node_value

KEYS = ("currency", "switch", "hca", "copper", "active_copper", "fiber", "aoc", "transceiver")


def read_prices(path: str | Path) -> dict:
    path = str(path)
    root = compose_yaml(path)
    d = node_value(root, path) if root is not None else None
    if not isinstance(d, dict):
        raise InputError(f"a price table is a mapping ({', '.join(KEYS)})", path=path)
    for k in d:
        if k not in KEYS:
            raise InputError(f"unknown price key {k!r} (known: {', '.join(KEYS)})", path=path)
    for k in ("switch", "hca"):
        if k not in d:
            raise InputError(f"{k}: no price given (ibtool has no default prices)", path=path)
    out = {"currency": str(d.get("currency", "")), "source": path}
    for k in KEYS[1:]:
        v = d.get(k)
        if v is None:
            continue
        try:
            if isinstance(v, dict):  # by length (cables), port count (switches) or speed (transceivers)
                out[k] = {(str(x).upper() if k == "transceiver" else float(x)): float(p) for x, p in v.items()}
            else:
                out[k] = float(v)
        except (TypeError, ValueError):
            raise InputError(f"{k}: not a price or a mapping of prices: {v!r}", path=path) from None
        vals = out[k].values() if isinstance(out[k], dict) else [out[k]]
        if any(p < 0 for p in vals):
            raise InputError(f"{k}: a price cannot be negative", path=path)
    return out


def cost(fabric, layout, prices: dict) -> dict:
    """Switches, HCAs and (with a layout) every cable at its purchasable length and medium."""
    src = prices.get("source", "prices")
    t = np.asarray(fabric.types)
    nsw, nhca = int((t == SWITCH).sum()), int((t != SWITCH).sum())
    sw = prices["switch"]
    if isinstance(sw, dict):
        radix = Counter(fabric.nports[i] for i in np.flatnonzero(t == SWITCH))
        missing = [r for r in radix if float(r) not in sw]
        if missing:
            raise InputError(f"switch: no price for radix {missing[0]}", path=src)
        switches = sum(sw[float(r)] * c for r, c in radix.items())
    else:
        switches = sw * nsw
    parts = {"switches": switches, "hcas": prices["hca"] * nhca}
    if layout is not None:  # every cable as `ibtool cabling` orders it, transceivers included
        order = cable_order(layout, prices)
        for m in MEDIA:
            sel = order["medium"] == m
            if sel.any() or m in ("copper", "fiber"):
                parts[f"{price_key(m)}_cables"] = float(np.nansum(order["unit_price"][sel]))
    total = sum(parts.values())
    per = nhca if nhca else nsw
    return {"currency": prices["currency"], "prices": {k: v for k, v in prices.items() if k != "currency"},
            "parts": {k: round(v, 2) for k, v in parts.items()}, "total": round(total, 2),
            "per_endpoint": round(total / per, 2) if per else None,
            "endpoint": "HCA" if nhca else "switch",
            "cables_priced": layout is not None}
