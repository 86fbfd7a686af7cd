"""`ibtool watch report --html`: a trend per cable. The fabric drawn (the drawing room) with each
cable coloured by its error rate over the window, the cables ranked — those whose rates rise
first, in a fix sheet's words ("C0043: SymbolErrorCounter 40/h and rising for 3 days: reseat or
replace the cable") — each with a small series of its error counters, and the window's events.

A cable's errors are its two ports' error counters (verify health's: the thresholds' counters);
the window is cut into BUCKETS spans, and a cable rises when its rate grew span after span up to
the last (from its first span with errors, at least two spans), so a steady or a fading rate is
not rising however high. One self-contained page (styles, drawing and script inside, nothing
loaded), printable on A4.
"""

from __future__ import annotations

import math
from html import escape
from pathlib import Path

from ibtool import __version__, drawing
from ibtool.drawing import Heat, Mark
from ibtool.fabric import CA, SWITCH, Fabric
from ibtool.verify.health import CABLE, THRESHOLDS
from ibtool.verify.htmlreport import CSS, JS, _label_lines, _write
from ibtool.watch.plan import PlanView, cable_key, ends_of
from ibtool.watch.store import Store

BUCKETS = 24
DRAWN_MARKS = 12  # the top cables labelled on the drawing


def _span(secs: float) -> str:
    for unit, n in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if secs >= 2 * n or (unit == "minutes" and secs >= n):
            return f"{secs / n:.0f} {unit}"
    return f"{secs:.0f} s"


def _n(k: int, what: str) -> str:
    return f"{k} {what}" + ("" if k == 1 else "s")


def _rate(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def _rising(r: list[float]) -> int:
    """How many spans at the end of `r` the rate grew through (0: not rising)."""
    i = len(r) - 1
    if i < 1 or r[i] <= 0:
        return 0
    while i > 0 and 0 < r[i - 1] <= r[i]:
        i -= 1
    n = len(r) - i
    return n if n >= 2 and r[-1] > r[i] else 0


def trends(store: Store, plan: PlanView, window: float) -> dict:
    """Per cable with errors in the window: its counters' increases per span, rate, rise; ranked."""
    last = store.last_round()
    if last is None:
        return {"t0": None, "t1": None, "window": window, "cables": [], "events": [], "down": [], "rounds": 0}
    t1 = last["t"]
    t0 = t1 - window
    span = window / BUCKETS
    view = store.state().get("view") or {}
    up = {cable_key((c[0], c[1]), (c[2], c[3])) for c in view.get("cables", [])}
    of_end = {}
    for k in up:
        for e in k:
            of_end[e] = k
    per: dict[frozenset, dict[str, list[float]]] = {}
    for end, counters in store.series(t0, set(THRESHOLDS)).items():
        key = plan.home(end) or of_end.get(end) or cable_key(end, end)
        for name, pts in counters.items():
            buckets = per.setdefault(key, {}).setdefault(name, [0.0] * BUCKETS)
            for (ta, va), (tb, vb) in zip(pts, pts[1:]):
                inc = vb - va if vb >= va else vb  # a reset: the new value is what was counted since
                if inc > 0 and tb > t0:  # counted in the span that ends at or after tb
                    buckets[min(BUCKETS - 1, max(0, math.ceil((tb - t0) / span) - 1))] += inc
    cables = []
    for key, counters in per.items():
        counters = {n: b for n, b in counters.items() if sum(b) > 0}
        if not counters:
            continue
        w = plan.where(key) if len(key) == 2 else None
        rates = {n: [x / (span / 3600) for x in b] for n, b in counters.items()}
        rise = {n: _rising(r) for n, r in rates.items()}
        top = max(counters, key=lambda n: (rise[n] > 0, rates[n][-1] if rise[n] else sum(counters[n]), n in CABLE))
        total = {n: sum(b) for n, b in counters.items()}
        now = rates[top][-1]
        per_h = total[top] / (window / 3600)
        action = "reseat or replace the cable" if top in CABLE else "check the port and its traffic"
        name = (w.cable if w and w.cable else None) or " - ".join(f"{d} P{p}" for d, p in ends_of(key))
        if rise[top]:
            say = f"{name}: {top} {_rate(now)}/h and rising for {_span(rise[top] * span)}: {action}"
        else:
            trend = "falling" if rates[top][-1] < per_h else "steady"
            say = f"{name}: {top} {_rate(per_h)}/h over {_span(window)} ({trend}): {action}"
        cables.append({"cable": w.cable if w else None, "ends": [list(e) for e in ends_of(key)],
                       "labels": list(w.labels) if w else [None, None], "racks": list(w.racks) if w else [None, None],
                       "us": list(w.us) if w else [None, None], "counter": top, "rate_now": round(now, 3),
                       "rate_window": round(per_h, 3), "rising": rise[top] > 0,
                       "rising_for_s": rise[top] * span, "increase": {n: int(v) for n, v in total.items()},
                       "series": {n: [round(x, 3) for x in r] for n, r in rates.items()}, "text": say,
                       "up": key in up})
    cables.sort(key=lambda c: (not c["rising"], -(c["rate_now"] if c["rising"] else c["rate_window"]),
                               c["cable"] or ""))
    down = sorted(ends_of(k) for k in plan.planned if k not in up) if view else []
    return {"t0": t0, "t1": t1, "window": window, "span": span, "cables": cables, "events": store.events(t0),
            "down": [[list(a), list(b)] for a, b in down], "rounds": len(store.rounds(t0)), "last_round": last}


def _fabric_of(plan: PlanView, store: Store):
    """What to draw on: the plan (its family's labels and layout), else the fabric as last seen."""
    if plan.fabric is not None:
        lay = None
        if plan.plan is not None and plan.plan.layout_json.is_file():
            from ibtool.layout import Layout
            lay = Layout.read(plan.plan.layout_json, plan.fabric)
        return plan.fabric, lay, f"the plan {plan.path}"
    view = store.state().get("view") or {}
    if not view.get("devices"):
        return None, None, "no drawing: the store has no view of the fabric yet"
    f = Fabric("as last seen")
    ports: dict[str, int] = {}
    for a, pa, b, pb in (c[:4] for c in view["cables"]):
        ports[a], ports[b] = max(ports.get(a, 1), pa), max(ports.get(b, 1), pb)
    for name, d in sorted(view["devices"].items()):
        f.add_node(SWITCH if d["switch"] else CA, name, min(254, ports.get(name, 1)), "switch" if d["switch"] else "hca")
    for a, pa, b, pb in (c[:4] for c in view["cables"]):
        f.add_link(f.index(a), f.index(b), pa, pb)
    return f, None, "the fabric as the watcher last saw it"


def _spark(series: dict[str, list[float]], top: str, w: float = 150, h: float = 26) -> str:
    """A small bar chart of the cable's error rate per span (all its counters; `top` darker)."""
    n = BUCKETS
    tot = [sum(s[i] for s in series.values()) for i in range(n)]
    hi = max(tot) or 1.0
    bw = w / n
    bars = []
    for i, v in enumerate(tot):
        if v <= 0:
            continue
        bh = max(1.0, v / hi * (h - 2))
        mine = series.get(top, [0] * n)[i]
        tip = ", ".join(f"{k} {_rate(s[i])}/h" for k, s in sorted(series.items()) if s[i] > 0)
        bars.append(f'<rect x="{i * bw:.1f}" y="{h - bh:.1f}" width="{bw - 1:.1f}" height="{bh:.1f}" '
                    f'fill="{"#d7191c" if mine >= v / 2 else "#fdae61"}"><title>{escape(tip)}</title></rect>')
    return (f'<svg class="spark" width="{w:.0f}" height="{h:.0f}" viewBox="0 0 {w:.0f} {h:.0f}">'
            f'<line x1="0" y1="{h - 0.5}" x2="{w}" y2="{h - 0.5}" stroke="#999" stroke-width="1"/>{"".join(bars)}</svg>')


def _place(racks, us, k) -> str:
    r, u = racks[k], us[k]
    return " ".join(x for x in (r, f"U{u}" if u is not None else None) if x)


_EXTRA_CSS = """
svg.ibd path.m.health{stroke-opacity:0}
svg.spark{display:block}td.spark{width:155px}
tr.rising td.v{color:#b00}tr.steady td.v{color:#a60}
.heat i{display:inline-block;width:14px;height:10px;margin:0;print-color-adjust:exact;-webkit-print-color-adjust:exact}
"""


def html(store: Store, plan: PlanView, window: float) -> tuple[str, dict]:
    import time
    rep = trends(store, plan, window)
    f, lay, what = _fabric_of(plan, store)
    svg, note = "", what
    marks: list[Mark] = []
    if f is not None:
        sc = drawing.scene_for(f, lay)
        if sc is None:
            note = f"no drawing: {f.num_nodes:,} devices without a shape to draw them in"
        else:
            links = {}
            for li in range(f.num_links):
                links[cable_key((f.names[f.link_a[li]], f.link_pa[li]), (f.names[f.link_b[li]], f.link_pb[li]))] = li
            values = dict.fromkeys(range(f.num_links), 0.0)
            details = {}
            for c in rep["cables"]:
                li = links.get(cable_key(tuple(c["ends"][0]), tuple(c["ends"][1])))
                if li is not None:
                    values[li] = c["rate_window"]
                    details[li] = c["text"]
            sc.heat = [Heat("errors/h", values, details)]
            def as_drawn(a, b):
                """A cable's ends, the one its wire starts at first (where the drawing puts the
                first end's port label)."""
                w = sc.wire_of.get(links.get(cable_key(a, b)))
                na, nb = (sc.node_of.get(sc.device(e[0])) for e in (a, b))
                if w is None or na is None or nb is None:
                    return a, b
                x, y = w.points[0]
                return (a, b) if (na.x - x) ** 2 + (na.y - y) ** 2 <= (nb.x - x) ** 2 + (nb.y - y) ** 2 else (b, a)
            for n, c in enumerate(rep["cables"][:DRAWN_MARKS], 1):
                marks.append(Mark("health", c["cable"] or f"#{n}", c["text"],
                                  ends=as_drawn(*map(tuple, c["ends"])), ref=f"c{n}"))
            for a, b in rep["down"]:
                w = plan.where(cable_key(tuple(a), tuple(b)))
                marks.append(Mark("down", w.cable or "down", f"{w.text()} is down", ends=(tuple(a), tuple(b))))
            sc.marks = marks
            svg = drawing.render(sc, desc=f"ibtool watch report; store {store.path}; made {drawing.made_at()}")
            note = f"{sc.note}; drawn on {what}"
    when = (lambda t: time.strftime("%Y-%m-%d %H:%M", time.localtime(t))) if rep["t1"] else str
    rows = []
    for n, c in enumerate(rep["cables"], 1):
        cls = "rising" if c["rising"] else "steady"
        ends = "<br>".join(escape(f"{d} P{p}") + (f" <small>{escape(_place(c['racks'], c['us'], k))}</small>"
                                                   if _place(c["racks"], c["us"], k) else "")
                           for k, (d, p) in enumerate(c["ends"]))
        labels = "<br>".join(_label_lines(x) for x in c["labels"] if x)
        rows.append(f'<tr id="c{n}" class="{cls}"><td>{n}</td><td class="v">{escape(c["cable"] or "")}</td>'
                    f'<td>{ends}</td><td class="label">{labels}</td><td class="spark">{_spark(c["series"], c["counter"])}'
                    f'</td><td class="text">{escape(c["text"])}</td></tr>')
    table = ('<table id="cables"><thead><tr><th>#</th><th>cable</th><th>ends (rack, U)</th><th>labels</th>'
             f'<th>errors per hour, {BUCKETS} spans of {_span(rep.get("span") or 0)}</th><th>what to do</th></tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table>' if rows else
             f'<p id="cables">No cable counted an error in the last {_span(window)}.</p>')
    ev_rows = "".join(f'<tr class="ev-{escape(e["kind"])}"><td class="id">{when(e["t"])}</td><td>{escape(e["kind"])}</td>'
                      f'<td class="text">{escape(e["text"])}</td></tr>' for e in rep["events"][-500:])
    events = (f'<table id="events"><thead><tr><th>when</th><th>event</th><th>what</th></tr></thead><tbody>{ev_rows}'
              f'</tbody></table>' if ev_rows else '<p id="events">No events in the window.</p>')
    legend = ('<div class="legend heat">cables coloured by errors per hour (blue none &rarr; red most): '
              + "".join(f'<i style="background:{c}"></i>' for c in ("#2c7bb6", "#abd9e9", "#ffffbf", "#fdae61",
                                                                    "#d7191c"))
              + '&nbsp; <span>labelled: the top cables below</span>'
              + ('<span><i style="border-top:3px dashed #000;height:0;width:22px"></i> down</span>' if rep["down"] else "")
              + "</div>")
    fig = (f'<figure>{legend}{svg}<figcaption>{escape(note)}. Hover or click a cable for its rate.</figcaption>'
           f'<div id="info" class="noprint"></div></figure>' if svg else f"<p>{escape(note)}</p>")
    last = rep.get("last_round") or {}
    rising = sum(1 for c in rep["cables"] if c["rising"])
    summary = (f"{_n(len(rep['cables']), 'cable')} counted errors in the last {_span(window)}, {rising} of them "
               f"rising; {_n(len(rep['down']), 'planned cable')} down; {_n(len(rep['events']), 'event')}; "
               f"{_n(rep['rounds'], 'round')}" if rep["t1"] else "the store has no round yet")
    meta = (f"store <code>{escape(str(store.path))}</code>"
            + (f" &middot; plan <code>{escape(str(plan.path))}</code>" if plan.path else "")
            + (f" &middot; {when(rep['t0'])} &ndash; {when(rep['t1'])}" if rep["t1"] else "")
            + (f" &middot; last round: {last.get('devices')} devices, {last.get('cables')} cables up" if last else "")
            + f"<br>made {drawing.made_at()} by ibtool {__version__}")
    doc = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>ibtool watch: the cables over '
           f'{_span(window)}</title><style>{CSS}{_EXTRA_CSS}</style></head><body>\n'
           f'<h1>ibtool watch: the cables over {_span(window)}</h1>\n<div class="meta">{meta}</div>\n'
           f'<p id="summary">{escape(summary)}</p>\n<h2>The fabric</h2>{fig}\n'
           f'<h2>Cables with errors, rising first</h2>{table}\n<h2>Events</h2>{events}\n'
           f'<script>{JS}</script>\n</body></html>\n')
    return doc, rep


def write_html(store: Store, plan: PlanView, path: str | Path, window: float) -> dict:
    doc, rep = html(store, plan, window)
    _write(path, doc)
    return {k: v for k, v in rep.items() if k != "last_round"}
