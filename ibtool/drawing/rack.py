"""A rack elevation: front and back of one cabinet, U 1 at the bottom, each device a box with its U
and name."""

from __future__ import annotations

from html import escape

import numpy as np

from ibtool.drawing.svg import document
from ibtool.fabric import SWITCH

U_PX = 14  # one rack unit


def elevation(layout, cabinet: int, standalone: bool = False, desc: str = "") -> str:
    f, site = layout.fabric, layout.site
    nodes = np.flatnonzero(layout.cabinet == cabinet)
    faces = sorted(set(int(layout.side[i]) for i in nodes)) or [0]
    cu = site.cabinet_u
    col_w, top, left = 240, 24, 34
    w = left + len(faces) * (col_w + 20)
    h = top + cu * U_PX + 10
    body = []
    for k, face in enumerate(faces):
        x0 = left + k * (col_w + 20)
        body.append(f'<text x="{x0 + col_w / 2}" y="16" text-anchor="middle" class="title">'
                    f'{"front" if face == 0 else "back"}</text>')
        body.append(f'<rect x="{x0}" y="{top}" width="{col_w}" height="{cu * U_PX}" class="rack"/>')
        for u in range(1, cu + 1):
            y = top + (cu - u) * U_PX
            if k == 0:
                body.append(f'<text x="{left - 4}" y="{y + U_PX - 3}" text-anchor="end" class="u">{u}</text>')
            if u <= site.reserved_u:
                body.append(f'<rect x="{x0}" y="{y}" width="{col_w}" height="{U_PX}" class="reserved"/>')
        for i in nodes:
            if int(layout.side[i]) != face:
                continue
            size = site.switch_u if f.types[i] == SWITCH else site.hca_u
            u = int(layout.u[i])
            y = top + (cu - (u + size - 1)) * U_PX
            cls = "switch" if f.types[i] == SWITCH else "hca"
            name = escape(f.names[i])
            body.append(f'<g data-device="{name}"><rect x="{x0 + 2}" y="{y + 1}" width="{col_w - 4}" '
                        f'height="{size * U_PX - 2}" class="{cls}"/><text x="{x0 + 8}" y="{y + size * U_PX - 4}">'
                        f'U{u} {name}</text></g>')
    return document(w, h, f"rack {layout.cabinet_names[cabinet]}", body, standalone=standalone, desc=desc)
