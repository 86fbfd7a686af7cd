"""A histogram with its axes: bars over their categories (x, labelled), the count over each bar,
a y axis with round ticks and both axis titles; one self-contained SVG like every drawing."""

from __future__ import annotations

import math
from html import escape

from ibtool.drawing.svg import document, text_width


def _ticks(top: float, n: int = 4) -> list[float]:
    """Round tick values from 0 to at least `top`."""
    if top <= 0:
        return [0, 1]
    raw = top / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    step = max(step, 1) if float(top).is_integer() else step
    return [i * step for i in range(int(math.ceil(top / step)) + 1)]


def histogram(counts: dict, title: str, xlabel: str, ylabel: str, width: float = 420, height: float = 200) -> str:
    """counts: {category: count}, drawn in the given order."""
    items = list(counts.items())
    ticks = _ticks(max((v for _, v in items), default=0))
    top = ticks[-1] or 1
    left = 14 + max(text_width(f"{t:,g}", 9) for t in ticks) + 6
    x0, x1, y0, y1 = left, width - 8, height - 34, 24
    bw = (x1 - x0) / max(1, len(items))
    body = [f'<text x="{width / 2:.1f}" y="13" text-anchor="middle" class="title">{escape(title)}</text>']
    for t in ticks:
        y = y0 - (y0 - y1) * t / top
        body.append(f'<path d="M{x0:.1f},{y:.1f}L{x1:.1f},{y:.1f}" class="grid"/>'
                    f'<text x="{x0 - 4:.1f}" y="{y + 3:.1f}" text-anchor="end" class="axis">{t:,g}</text>')
    for i, (k, v) in enumerate(items):
        h = (y0 - y1) * v / top
        x = x0 + i * bw
        body.append(f'<rect x="{x + bw * 0.12:.1f}" y="{y0 - h:.1f}" width="{bw * 0.76:.1f}" height="{h:.1f}" '
                    f'class="bar" data-count="{v}"><title>{escape(str(k))}: {v:,}</title></rect>')
        body.append(f'<text x="{x + bw / 2:.1f}" y="{y0 + 12:.1f}" text-anchor="middle" class="axis">'
                    f'{escape(str(k))}</text>')
        if text_width(f"{v:,}", 8) <= bw:  # the count over its bar, where it fits
            body.append(f'<text x="{x + bw / 2:.1f}" y="{y0 - h - 3:.1f}" text-anchor="middle" class="small">'
                        f'{v:,}</text>')
    body.append(f'<path d="M{x0:.1f},{y1 - 4:.1f}L{x0:.1f},{y0:.1f}L{x1:.1f},{y0:.1f}" class="axisline"/>')
    body.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{height - 6:.1f}" text-anchor="middle" class="axis">'
                f'{escape(xlabel)}</text>')
    body.append(f'<text x="10" y="{(y0 + y1) / 2:.1f}" text-anchor="middle" class="axis" '
                f'transform="rotate(-90 10 {(y0 + y1) / 2:.1f})">{escape(ylabel)}</text>')
    return document(width, height, title, body)
