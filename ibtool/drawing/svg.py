"""The SVG writer: one document per drawing, its styles inside it, and labels that never overlap.

Every drawing is an `<svg class="ibd">` whose `<style>` holds all it needs (scoped to `svg.ibd`, so
the same drawing inlined in an HTML page neither takes nor gives styles): the file in `svg/`
looks as it does in its page. A standalone file also carries its print layout (`@page`, the
drawing scaled to the paper), which an inlined copy leaves to its page.

Labels are placed through `Labels`: a label goes at the first of its candidate positions whose
box (from DejaVu Sans' advance widths, the font the drawings ask for) touches no label placed
before it; a label that fits nowhere is left out (its text stays in the element's `<title>`).
"""

from __future__ import annotations

import datetime
import os
from html import escape

# Advance widths of DejaVu Sans Bold, in 1/1000 em, for ASCII 32..126 (bold is the wider of the
# two faces, so the estimate holds for both). Read from the font file matplotlib ships.
_W = [348, 456, 521, 838, 696, 1002, 872, 306, 457, 457, 523, 838, 380, 415, 380, 365, 696, 696, 696, 696, 696,
      696, 696, 696, 696, 696, 400, 400, 838, 838, 838, 580, 1000, 774, 762, 734, 830, 683, 683, 821, 837, 372, 372,
      775, 637, 995, 837, 850, 733, 850, 770, 720, 682, 812, 774, 1103, 771, 724, 725, 457, 365, 457, 838, 500, 500,
      675, 716, 593, 716, 678, 435, 716, 712, 343, 343, 665, 343, 1042, 712, 687, 716, 716, 493, 595, 478, 712, 652,
      924, 645, 652, 582, 712, 365, 712, 838]
PAD = 1.0  # px kept free around every label


def text_width(s: str, size: float) -> float:
    """Width in px of `s` at font size `size` (px)."""
    return sum(_W[o - 32] if 32 <= (o := ord(ch)) < 127 else 1000 for ch in s) * size / 1000


# Styles: one sheet for every drawing. Colours: planned cables grey, KNS dimensions as paper 000's
# Fig. 7 (routers orange, switches blue); findings in colours a print keeps apart, none near a
# dimension's colour (CIE76 distance 40 or more: tests/drawing), and dashed, dotted or hollow where
# the colour alone would not tell: "where the cable belongs" is a hollow black line, a line no bus is.
STYLE = """
svg.ibd{font-family:"DejaVu Sans",Arial,sans-serif;background:#fff}
svg.ibd text{font-size:8px;fill:#111;stroke:none}
svg.ibd text.halo{paint-order:stroke;stroke:#fff;stroke-width:2.5px;stroke-linejoin:round}
svg.ibd text.title{font-size:11px;font-weight:bold}
svg.ibd text.small{font-size:7px}
svg.ibd text.tiny{font-size:6px;fill:#444}
svg.ibd text.count{font-size:7px;fill:#742;font-weight:bold}
svg.ibd text.u{font-size:7px;fill:#666}
svg.ibd text.axis{font-size:9px;fill:#333}
svg.ibd text.mark{font-size:8px;font-weight:bold}
svg.ibd .switch{fill:#cfe3ff;stroke:#245;stroke-width:.8}
svg.ibd .router{fill:#ffd9a0;stroke:#741;stroke-width:.8}
svg.ibd .hca{fill:#dff5d8;stroke:#353;stroke-width:.6}
svg.ibd .group{fill:#eef3fb;stroke:#245;stroke-width:.8}
svg.ibd .rack{fill:#fafafa;stroke:#333}
svg.ibd .reserved{fill:#ddd;stroke:none}
svg.ibd .cab-switch{fill:#cfe3ff;stroke:#245}
svg.ibd .cab-node{fill:#dff5d8;stroke:#353}
svg.ibd .cab-mixed{fill:#f3f3f3;stroke:#333}
svg.ibd .cab-floor{fill:#fff;stroke:#999;stroke-dasharray:3 2}
svg.ibd .bus{stroke-width:3;stroke-linecap:round;fill:none}
svg.ibd .d0{stroke:#c33}
svg.ibd .d1{stroke:#33c}
svg.ibd .d2{stroke:#393}
svg.ibd .d3{stroke:#939}
svg.ibd .wire{stroke:#888;stroke-width:.7;fill:none}
svg.ibd .stub{stroke-width:1;fill:none}
svg.ibd .tray{stroke:#c60;stroke-opacity:.55;fill:none;stroke-linecap:butt}
svg.ibd .drop{stroke:#c60;stroke-opacity:.55;fill:none}
svg.ibd .bundle{stroke:#667;stroke-opacity:.7;fill:none}
svg.ibd .frame{fill:none;stroke:#bbb;stroke-width:.6}
svg.ibd .bar{fill:#4a7ab5}
svg.ibd .axisline{stroke:#333;stroke-width:1;fill:none}
svg.ibd .grid{stroke:#ddd;stroke-width:.6;fill:none}
svg.ibd .peer{stroke:#c60;stroke-width:2.5}
svg.ibd .m{fill:none;stroke-linecap:round;stroke-width:3.5}
svg.ibd .m.miswired{stroke:#000;stroke-width:5}
svg.ibd .m.core{stroke:#fff;stroke-width:1.8}
svg.ibd .m.found{stroke:#000;stroke-dasharray:4 3;stroke-width:1.6}
svg.ibd .m.missing{stroke:#e80;stroke-dasharray:6 3}
svg.ibd .m.extra{stroke:#f09;stroke-dasharray:2 2}
svg.ibd .m.degraded{stroke:#cb0}
svg.ibd .m.health{stroke:#0aa}
svg.ibd .m.cycle{stroke:#f0f;stroke-width:2;stroke-linecap:butt}
svg.ibd .m.down{stroke:#000;stroke-dasharray:5 3;stroke-width:3}
svg.ibd .m.detour{stroke:#07c;stroke-width:2.5;stroke-opacity:.8}
svg.ibd .mdev{fill:none;stroke-width:3}
svg.ibd .mdev.notfound{stroke:#e80;stroke-dasharray:3 2}
svg.ibd .mdev.misplaced{stroke:#d00}
svg.ibd .mdev.extra{stroke:#f09}
svg.ibd .mdev.health{stroke:#0aa}
svg.ibd .mdev.down{stroke:#000}
svg.ibd .mdev.cycle{stroke:#f0f}
svg.ibd text.mark.miswired,svg.ibd text.mark.found{fill:#000}
svg.ibd text.mark.misplaced{fill:#b00}
svg.ibd text.mark.missing,svg.ibd text.mark.notfound{fill:#b50}
svg.ibd text.mark.extra{fill:#c07}
svg.ibd text.mark.degraded{fill:#870}
svg.ibd text.mark.health{fill:#077}
svg.ibd text.mark.cycle{fill:#b0b}
svg.ibd text.mark.down{fill:#000}
svg.ibd text.mark.detour{fill:#057}
svg.ibd marker path{fill:#f0f}
""" + "".join(f"svg.ibd .h{i}{{stroke:{c};stroke-width:{1.2 + i * 0.35:.2f};stroke-opacity:1}}\n"
              for i, c in enumerate(("#2c7bb6", "#4a9cc6", "#7ab8d6", "#abd9e9", "#d8eebf", "#ffffbf", "#fed690",
                                     "#fdae61", "#f46d43", "#d7191c")))
HEAT = ("#2c7bb6", "#4a9cc6", "#7ab8d6", "#abd9e9", "#d8eebf", "#ffffbf", "#fed690", "#fdae61", "#f46d43", "#d7191c")

# A standalone file's print layout: landscape paper, the drawing scaled to fit it.
PRINT = ("@page{size:A4 landscape;margin:10mm}"
         "@media print{svg.ibd{width:100%;height:auto;max-height:100%}}")


def made_at() -> str:
    """When a report or sheet was made (UTC, to the second); SOURCE_DATE_EPOCH, when set, makes it
    reproducible (reproducible-builds.org)."""
    sde = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    t = (datetime.datetime.fromtimestamp(int(sde), datetime.timezone.utc) if sde.isdigit()
         else datetime.datetime.now(datetime.timezone.utc))
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def document(w: float, h: float, title: str, body: list[str] | str, *, standalone: bool = False,
             desc: str = "", extra: str = "") -> str:
    """One drawing: <svg class="ibd"> with its size, its title (and `desc`: which fabric, when, by
    which ibtool), its styles and its body."""
    style = STYLE + (PRINT if standalone else "")
    head = '<?xml version="1.0" encoding="UTF-8"?>\n' if standalone else ""
    return (f'{head}<svg xmlns="http://www.w3.org/2000/svg" class="ibd" width="{w:.0f}" height="{h:.0f}" '
            f'viewBox="0 0 {w:.0f} {h:.0f}" role="img" aria-label="{escape(title)}">'
            f'<title>{escape(title)}</title>' + (f"<desc>{escape(desc)}</desc>" if desc else "")
            + f"<style>{style}</style>{extra}"
            + ("".join(body) if isinstance(body, list) else body) + "</svg>")


class Labels:
    """Text labels placed without overlap: a uniform grid of buckets holding the boxes placed."""

    def __init__(self, cell: float = 40.0, bounds: tuple | None = None):
        self.cell = cell
        self.bounds = bounds  # (x0, y0, x1, y1): a label must lie wholly inside (the drawing's viewBox)
        self.grid: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}
        self.out: list[str] = []

    def _keys(self, x0, y0, x1, y1):
        c = self.cell
        for i in range(int(x0 // c), int(x1 // c) + 1):
            for j in range(int(y0 // c), int(y1 // c) + 1):
                yield i, j

    def free(self, box) -> bool:
        x0, y0, x1, y1 = box
        if self.bounds is not None:
            b0, c0, b1, c1 = self.bounds
            if x0 < b0 or y0 < c0 or x1 > b1 or y1 > c1:
                return False
        for k in self._keys(*box):
            for a0, b0, a1, b1 in self.grid.get(k, ()):
                if x0 < a1 and a0 < x1 and y0 < b1 and b0 < y1:
                    return False
        return True

    def take(self, box) -> None:
        for k in self._keys(*box):
            self.grid.setdefault(k, []).append(box)

    @staticmethod
    def box(text: str, x: float, y: float, size: float, anchor: str = "middle", vertical: bool = False):
        """The box of a label whose anchor point is (x, y): baseline at y, or, vertical (rotated -90
        degrees), reading upwards from y."""
        w = text_width(text, size)
        if vertical:
            x0 = {"start": y - w, "middle": y - w / 2, "end": y}[anchor]
            return (x - size * 0.8 - PAD, x0 - PAD, x + size * 0.25 + PAD, x0 + w + PAD)
        x0 = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        return (x0 - PAD, y - size * 0.8 - PAD, x0 + w + PAD, y + size * 0.25 + PAD)

    def place(self, text: str, spots, size: float = 8.0, cls: str = "", attrs: str = "") -> tuple[float, float] | None:
        """Put `text` at the first free spot of `spots` ((x, y, anchor) or (x, y, anchor, vertical)).
        Returns where it went, or None (nowhere free: left out)."""
        spots = list(spots)
        for s in spots:
            x, y, anchor = s[:3]
            vertical = len(s) > 3 and s[3]
            b = self.box(text, x, y, size, anchor, vertical)
            if self.free(b):
                self.take(b)
                self.out.append(_text(text, x, y, anchor, cls, attrs, vertical))
                return x, y
        return None


def _text(text: str, x: float, y: float, anchor: str, cls: str, attrs: str, vertical: bool) -> str:
    rot = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if vertical else ""
    a = "" if anchor == "start" else f' text-anchor="{anchor}"'
    c = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}"{a}{c}{rot}{attrs}>{escape(text)}</text>'


def ring(x: float, y: float, r: float, dx: float = 0.0, dy: float = 0.0, size: float = 8.0, rings: int = 4):
    """Candidate spots for a label near (x, y), at distance r: right, left, above, below, then
    the diagonals, then farther out (`rings` times)."""
    out = []
    for k in range(1, rings + 1):
        d = r * k
        out += [(x + d + dx, y + size * 0.3, "start"), (x - d - dx, y + size * 0.3, "end"),
                (x, y - d - dy, "middle"), (x, y + d + dy + size * 0.8, "middle"),
                (x + d, y - d, "start"), (x - d, y - d, "end"), (x + d, y + d + size * 0.8, "start"),
                (x - d, y + d + size * 0.8, "end")]
    return out
