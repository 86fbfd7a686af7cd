"""How long a cable is and what is bought for it: the length models, the purchasable length and
the medium (copper, active copper, fiber).

Models (a site's `cable_model`):

* `routed` (the default for a site): the run a cable really takes, so an order always reaches;
* `paper002`, `paper004`: the models of the source papers, kept by name to reproduce their
  figures (`ibtool analyze`, docs/papers.md). What is ordered is never shorter than the routed
  run, whichever model gives the lengths (see `reach`).

Positions are given per cable end as arrays (or scalars): cabinet row, cabinet column, the U slot
(1 = bottom) and the face (0 front, 1 back). All functions work on numpy arrays, one element per
cable. The one function that says what a cable is, for every command that counts, prices or
orders cables (`ibtool cabling`'s BOM, `ibtool analyze`'s totals and cost), is `cable_order`.
"""

from __future__ import annotations

import re

import numpy as np

from ibtool.errors import InputError

U_HEIGHT = 0.04445  # m, one rack unit (EIA-310: 1.75 in)


def length_paper002(row_a, col_a, u_a, row_b, col_b, u_b, *, cabinet_u: int = 42, width: float = 1.0,
                    depth: float = 1.0, overhead: float = 1.0, side: float = 0.5,
                    u_height: float = U_HEIGHT):
    """Paper 002 (Equality networks), section 4: Manhattan cabling through a pathway `overhead`
    metres above the cabinets, plus `side` metres at each end from the cabinet side to the port.

    * same cabinet: side + |u_a - u_b| * u_height + side (adjacent modules: 2 x 0.5 m + 44.45 mm
      = 104.45 cm, the paper's own figure);
    * other cabinets: each end rises from its slot to the cabinet top ((cabinet_u - u) U) and on to
      the pathway (`overhead`), the cable runs |d_row| x depth + |d_col| x width along the pathway,
      plus `side` at each end. Defaults: 1 m x 1 m cabinets without aisle, 42U, pathway 1 m up.
    """
    row_a, col_a, u_a, row_b, col_b, u_b = (np.asarray(x, dtype=float) for x in
                                            (row_a, col_a, u_a, row_b, col_b, u_b))
    same = (row_a == row_b) & (col_a == col_b)
    inside = 2 * side + np.abs(u_a - u_b) * u_height
    up = (2 * cabinet_u - u_a - u_b) * u_height + 2 * overhead
    across = np.abs(row_a - row_b) * depth + np.abs(col_a - col_b) * width
    return np.where(same, inside, 2 * side + up + across)


def length_paper004(row_a, col_a, row_b, col_b, *, width: float = 0.6, depth: float = 2.1,
                    intra_cabinet: float = 2.0, overhead: float = 4.0):
    """Paper 004 (Skywalk), section III: a cable inside one cabinet is `intra_cabinet` = 2 m; a
    cable between cabinets is `overhead` = 4 m (2 m at each end) plus the Manhattan distance
    between the cabinets on the grid, cabinets 0.6 m wide (along a row) and 2.1 m deep including
    the aisle (row pitch)."""
    row_a, col_a, row_b, col_b = (np.asarray(x, dtype=float) for x in (row_a, col_a, row_b, col_b))
    same = (row_a == row_b) & (col_a == col_b)
    across = np.abs(row_a - row_b) * depth + np.abs(col_a - col_b) * width
    return np.where(same, intra_cabinet, overhead + across)


def length_routed(row_a, col_a, u_a, face_a, row_b, col_b, u_b, face_b, *, cabinet_u: int = 42,
                  width: float = 0.6, depth: float = 1.2, pitch: float | None = None, side: float = 0.5,
                  tray_height: float = 0.3, service_loop: float = 0.5, u_height: float = U_HEIGHT):
    """The routed run of a cable, the site default: from each port `side` metres to the cabinet's
    vertical cable management; inside one cabinet the vertical run |u_a - u_b| U, plus the
    cabinet's `depth` when one end is on the front and the other on the back; between cabinets
    each end rises to the cabinet top ((cabinet_u - u) U) and `tray_height` on to the overhead
    tray (a back-mounted end first crosses the cabinet's `depth` to the tray over the front), the
    tray runs |d_row| x pitch + |d_col| x width; plus a `service_loop` per cable (slack for
    routing, the bend radius and reseating). Never shorter than the straight line between the
    ports (`straight_line`)."""
    row_a, col_a, u_a, face_a, row_b, col_b, u_b, face_b = (
        np.asarray(x, dtype=float) for x in (row_a, col_a, u_a, face_a, row_b, col_b, u_b, face_b))
    pitch = depth if pitch is None else pitch
    same = (row_a == row_b) & (col_a == col_b)
    inside = np.abs(u_a - u_b) * u_height + np.where(face_a != face_b, depth, 0.0)
    up = (2 * cabinet_u - u_a - u_b) * u_height + 2 * tray_height + (face_a + face_b) * depth
    across = np.abs(row_a - row_b) * pitch + np.abs(col_a - col_b) * width
    return 2 * side + service_loop + np.where(same, inside, up + across)


def straight_line(row_a, col_a, u_a, face_a, row_b, col_b, u_b, face_b, *, width: float, depth: float,
                  pitch: float, u_height: float = U_HEIGHT):
    """The straight-line distance between two ports (no cable is shorter): cabinets `width` apart
    along a row and `pitch` between rows, a port on the back `depth` behind the front, U slots
    `u_height` apart."""
    row_a, col_a, u_a, face_a, row_b, col_b, u_b, face_b = (
        np.asarray(x, dtype=float) for x in (row_a, col_a, u_a, face_a, row_b, col_b, u_b, face_b))
    dx = (col_a - col_b) * width
    dy = (row_a - row_b) * pitch + (face_a - face_b) * depth
    dz = (u_a - u_b) * u_height
    return np.sqrt(dx * dx + dy * dy + dz * dz)


def purchasable(lengths, catalogue) -> np.ndarray:
    """Round each length up to the next catalogue length; NaN where it is longer than any."""
    cat = np.asarray(sorted(catalogue), dtype=float)
    lengths = np.asarray(lengths, dtype=float)
    idx = np.searchsorted(cat, lengths - 1e-9, side="left")  # exact catalogue lengths stay
    out = np.full(lengths.shape, np.nan)
    ok = (idx < len(cat)) & ~np.isnan(lengths)
    out[ok] = cat[idx[ok]]
    return out


_SPEED = re.compile(r"(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)", re.IGNORECASE)


def speed_of(rate: str | None, default: str = "*") -> str:
    """'4xQDR' -> 'QDR'; an unstated rate -> `default`."""
    m = _SPEED.search(rate or "")
    return m.group(1).upper() if m else default


def _limit(table: dict, speeds) -> np.ndarray:
    """Per cable, the reach of `table` (speed -> m) at its speed; its "*" entry for a speed it lacks."""
    fallback = table.get("*", 0.0)
    memo: dict = {}
    return np.asarray([memo.setdefault(s, table.get(s, fallback)) for s in speeds], dtype=float)


def medium(lengths, speeds, copper_limit: dict, active_copper_limit: dict | None = None,
           optical: str = "fiber") -> np.ndarray:
    """What a cable of the given (purchasable) length is at its link speed: 'copper' (passive,
    DAC) within the speed's passive copper reach (the "*" entry for a speed the table lacks),
    'active copper' within its active copper reach where the site buys active copper, else
    `optical` ('fiber' with a transceiver at each end, or 'aoc', active optical cables); ''
    for an unplaced cable (NaN length)."""
    lengths = np.asarray(lengths, dtype=float)
    out = np.full(lengths.shape, optical, dtype=object)
    if active_copper_limit:
        out[lengths <= _limit(active_copper_limit, speeds) + 1e-9] = "active copper"
    out[lengths <= _limit(copper_limit, speeds) + 1e-9] = "copper"
    out[np.isnan(lengths)] = ""
    return out


def choose(reach, speeds, site) -> tuple[np.ndarray, np.ndarray]:
    """(purchasable length, medium) of cables that must reach `reach` metres: the shortest
    catalogue length that reaches, and the medium that length is at the link's speed — the
    purchasable length decides the medium, so no copper cable is ordered past its reach."""
    buy = purchasable(reach, site.purchasable_lengths)
    return buy, medium(buy, speeds, site.copper_limit, site.active_copper_limit, site.optical)


# ------------------------------------------------------------------ prices

MEDIA = ("copper", "active copper", "fiber", "aoc")


def price_key(medium_: str) -> str:
    """The price table's key for a medium: 'active copper' -> 'active_copper'."""
    return medium_.replace(" ", "_")


def unit_price(table, key, source: str, missing: str) -> float:
    """One price from a price table entry: a number, or a mapping by `key` (a length, a port
    count, a speed); none there is an InputError `missing` naming the price file (ibtool has no
    default prices)."""
    if table is None:
        raise InputError(missing, path=source)
    if not isinstance(table, dict):
        return float(table)
    p = table.get(key)
    if p is None and isinstance(key, str):
        p = table.get(key.upper(), table.get("*"))
    if p is None:
        raise InputError(missing, path=source)
    return float(p)


def cable_price(prices: dict, medium_: str, length: float, speed: str, transceivers: bool = True) -> float:
    """The price of one cable of `medium_` and purchasable `length` from a price table, with its
    two optical transceivers for 'fiber' (unless `transceivers` is False)."""
    src = prices.get("source", "prices")
    key = price_key(medium_)
    v = unit_price(prices.get(key), length, src, f"{key}: no price for a {length:g} m cable")
    if medium_ == "fiber" and transceivers:
        v += 2 * unit_price(prices.get("transceiver"), speed, src,
                            f"transceiver: no price for a {speed} transceiver (2 per fiber cable; "
                            f"optical: aoc in the site buys active optical cables instead)")
    return v


def cable_order(layout, prices: dict | None = None) -> dict:
    """What every cable of `layout` is, for everything that counts, prices or orders cables: per
    fabric link (arrays indexed like `layout.fabric`'s links)

        length_m       the model's length (or a measured one, from layout.json / cables.csv)
        reach_m        what the cable must reach: the measured length, else the model's length
                       but never less than the routed run between its ports
        purchasable_m  the catalogue length ordered (NaN: an end not placed, or longer than the
                       catalogue)
        medium         'copper', 'active copper', 'fiber' or 'aoc' ('' when unplaced)
        speed          the link speed the medium was chosen for (the plan's rate, else the site's
                       default_speed)
        transceivers   optical transceivers the cable needs (2 for 'fiber', else 0)
        unit_price     with `prices` (ibtool.analyze.cost.read_prices): the cable's price, its
                       transceivers included; a missing price is an InputError naming the file

    `ibtool cabling` (cables.csv, bom.csv) and `ibtool analyze` (cable totals, cost) both read
    cables from here, so one plan gets one answer."""
    out = {"length_m": layout.length, "reach_m": layout.reach, "purchasable_m": layout.purchasable,
           "medium": layout.medium, "speed": layout.speeds,
           "transceivers": np.where(layout.medium == "fiber", 2, 0)}
    if prices is not None:
        price = np.full(len(layout.medium), np.nan)
        memo: dict = {}
        for li, (m, p, sp) in enumerate(zip(layout.medium, layout.purchasable, layout.speeds)):
            if not m or np.isnan(p):
                continue
            key = (m, float(p), sp)
            if key not in memo:
                memo[key] = cable_price(prices, m, float(p), sp)
            price[li] = memo[key]
        out["unit_price"] = price
    return out
