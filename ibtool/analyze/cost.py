"""Cost per endpoint from a price table the user gives; nothing is priced by default.

    # prices.yaml
    currency: EUR
    switch: 9000            # per switch (or per radix: {36: 9000, 64: 21000})
    hca: 900                # per HCA
    copper: {1: 60, 2: 75, 3: 90, 5: 120}      # per purchasable length (m)
    fiber: {5: 450, 10: 480, 20: 520, 50: 600}
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import yaml

from ibtool.errors import InputError
from ibtool.fabric import SWITCH
from ibtool.layout.site import compose_yaml

KEYS = ("currency", "switch", "hca", "copper", "fiber")


def read_prices(path: str | Path) -> dict:
    path = str(path)
    root = compose_yaml(path)
    d = yaml.safe_load(yaml.serialize(root)) if root is not None else None
    if not isinstance(d, dict):
        raise InputError("a price table is a mapping (currency, switch, hca, copper, fiber)", path=path)
    for k in d:
        if k not in KEYS:
            raise InputError(f"unknown price key {k!r} (known: {', '.join(KEYS)})", path=path)
    for k in ("switch", "hca"):
        if k not in d:
            raise InputError(f"{k}: no price given (ibtool has no default prices)", path=path)
    out = {"currency": str(d.get("currency", "")), "source": path}
    for k in ("switch", "hca", "copper", "fiber"):
        v = d.get(k)
        if v is None:
            continue
        try:
            out[k] = {float(x): float(p) for x, p in v.items()} if isinstance(v, dict) else float(v)
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
    if layout is not None:
        for m in ("copper", "fiber"):
            sel = layout.medium == m
            if not sel.any():
                parts[f"{m}_cables"] = 0.0
                continue
            table = prices.get(m)
            if not isinstance(table, dict):
                raise InputError(f"{m}: the layout has {int(sel.sum())} {m} cables but no {m} price table",
                                 path=src)
            lengths = Counter(float(x) for x in layout.purchasable[sel] if not np.isnan(x))
            missing = sorted(x for x in lengths if x not in table)
            if missing:
                raise InputError(f"{m}: no price for a {missing[0]:g} m cable", path=src)
            parts[f"{m}_cables"] = sum(table[x] * c for x, c in lengths.items())
    total = sum(parts.values())
    per = nhca if nhca else nsw
    return {"currency": prices["currency"], "prices": {k: v for k, v in prices.items() if k != "currency"},
            "parts": {k: round(v, 2) for k, v in parts.items()}, "total": round(total, 2),
            "per_endpoint": round(total / per, 2) if per else None,
            "endpoint": "HCA" if nhca else "switch",
            "cables_priced": layout is not None}
