"""Cable length models of the source papers, purchasable lengths, and copper vs fiber.

Positions are given per cable end as arrays (or scalars): cabinet row, cabinet column, and the
U slot (1 = bottom). All functions work on numpy arrays, one element per cable.
"""

from __future__ import annotations

import re

import numpy as np

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


def medium(lengths, speeds, copper_limit: dict) -> np.ndarray:
    """'copper' where a length is within the copper limit of its link speed (the "*" entry for a
    speed the table lacks), else 'fiber'; '' for an unplaced cable (NaN length)."""
    fallback = copper_limit.get("*", 0.0)
    limit = np.asarray([copper_limit.get(s, fallback) for s in speeds], dtype=float)
    lengths = np.asarray(lengths, dtype=float)
    out = np.where(lengths <= limit + 1e-9, "copper", "fiber").astype(object)
    out[np.isnan(lengths)] = ""
    return out
