"""The verification report as a page an operator reads at a glance: the verdict and the checks, the
findings numbered with their fixes, and the fabric drawn (ibtool.drawing) with every finding on it:
miswired cables where they belong and where they are (dashed), missing and extra cables, degraded
links, devices not found, hosts on the wrong port, the credit loop's channels in order, the ports
with health findings, and the link loads as a heat map. Hover or click an element for its details.

One self-contained file: styles, drawing and a few lines of JavaScript inside, the JSON behind a
link (a data: URL), nothing loaded from the network. Prints on A4 and Letter (the drawing scaled to
the paper, fix texts wrapped). It names the fabric, the plan and the run, when it was made and by
which ibtool.

What is drawn on: the plan (with its family's labels and layout, `ibtool.plan`) when the
report has one, else the discovered fabric.
"""

from __future__ import annotations

import base64
import json
import re
from html import escape
from pathlib import Path

from ibtool import __version__, drawing, rundir
from ibtool.drawing import Heat, Mark
from ibtool.errors import IbtoolError, InputError
from ibtool.formats import atomic_write
from ibtool.templating import nobreak

_END = re.compile(r"^(.*)\[(\d+)\]$")
_LONG = re.compile(r"^(.*?)(?: \(.*\))? port (\d+)$")
_CHAN = re.compile(r"^(.*)\[(\d+)\] -> (.*)\[(\d+)\] \(VL(\d+)\)$")


def end(short: str) -> tuple[str, int | None]:
    """'R[1,0][2]' -> ('R[1,0]', 2); a device name alone -> (name, None)."""
    m = _END.match(short)
    return (m.group(1), int(m.group(2))) if m else (short, None)


def long_end(s: str) -> tuple[str, int | None]:
    """'R[0,1] port 1' (or 'R[0,1] (found as ..., GUID ...) port 1') -> ('R[0,1]', 1)."""
    m = _LONG.match(s)
    return (m.group(1), int(m.group(2))) if m else (s, None)


# ------------------------------------------------------------------------------------ findings

def findings(rep: dict, cable_ids: dict | None = None) -> tuple[list[dict], list[Mark]]:
    """The report's findings, numbered, and the marks that draw them. A finding: {n, what, cables,
    labels, text, fix (bool: an action for the technician)}. cable_ids: (device, port) -> cable ID
    from the plan's cable list, where the report does not carry them."""
    items: list[dict] = []
    marks: list[Mark] = []
    ids = cable_ids or {}

    def cid(a: tuple, b: tuple) -> str:
        c = ids.get(a) or ids.get(b)
        return c.id if c else ""

    def lab(x: dict, a: tuple, b: tuple) -> list[str]:
        c = ids.get(a) or ids.get(b)
        return _labels(x.get("labels")) or ([c.a_label] if c else [])

    def add(what: str, text: str, cables=(), labels=(), fix: bool = True) -> dict:
        it = {"n": len(items) + 1, "what": what, "cables": [c for c in cables if c], "labels": list(labels),
              "text": text, "fix": fix}
        items.append(it)
        return it

    t = rep.get("topology") or {}
    by_fix: dict[str, dict] = {}
    for fx in t.get("fixes", []):
        c = fx.get("cable_id") or []
        it = by_fix[fx["fix"]] = add("fix", fx["text"], [c] if isinstance(c, str) else c, _labels(fx.get("labels")))
        for h in fx.get("hosts", []):  # hosts this one fix puts back: outlined, no finding of their own
            marks.append(Mark("misplaced", h, fx["text"], device=h, ref=f"f{it['n']}"))
    for m in t.get("miswired", []):
        it = by_fix.get(m.get("fix")) or add("fix", m["text"], [m.get("cable_id")], _labels(m.get("labels")))
        a, exp, now = end(m["port"]), end(m["expected"]), end(m["found"])
        c = m.get("cable_id") or cid(a, exp)
        if c and c not in it["cables"]:
            it["cables"].append(c)
            it["labels"] += lab({}, a, exp)
        marks.append(Mark("miswired", c or f"#{it['n']}", m["text"], ends=(a, exp), ref=f"f{it['n']}"))
        marks.append(Mark("found", "", f"as found: {m['cable']}", ends=(a, now), ref=f"f{it['n']}"))
    for d in t.get("misplaced_devices", []):
        it = add("move device", d["text"])
        marks.append(Mark("misplaced", d["device"], d["text"], device=d["device"], ref=f"f{it['n']}"))
        for now, want in zip(d.get("is_on", []), d.get("belongs_on", [])):
            marks.append(Mark("found", "", f"as found: {d['device']} on {now}", ends=((d["device"], None),
                                                                                        long_end(now)),
                              ref=f"f{it['n']}"))
    for key, kind, what in (("missing_cables", "missing", "add"), ("extra_cables", "extra", "remove"),
                            ("loopbacks", "extra", "remove loopback"), ("degraded_links", "degraded",
                                                                         "reseat or replace"),
                            ("rate_mismatches", "degraded", "check")):
        for x in t.get(key, []):
            a, b = (end(e) for e in x["ends"][:2])
            c = x.get("cable_id") or cid(a, b)
            it = add(what, x["text"], [c], lab(x, a, b))
            marks.append(Mark(kind, c or f"#{it['n']}", x["text"], ends=(a, b), ref=f"f{it['n']}"))
    for key, kind, what in (("missing_devices", "notfound", "find device"), ("extra_devices", "extra",
                                                                             "unplanned device"),
                            ("partial_discovery", "notfound", "rediscover")):
        for d in t.get(key, []):
            it = add(what, d["text"])
            marks.append(Mark(kind, d["device"].split(" (")[0], d["text"], device=d["device"].split(" (")[0],
                              ref=f"f{it['n']}"))
    for x in t.get("not_checked", []) or []:  # a stage check: what the discovery could not see (exit 1)
        it = add("not checked", x["text"], [x.get("cable_id")], _labels(x.get("labels")))
        if x.get("ends"):
            a, b = (end(e) for e in x["ends"][:2])
            marks.append(Mark("missing", x.get("cable_id") or f"#{it['n']}", x["text"], ends=(a, b), ref=f"f{it['n']}"))
    for x in t.get("ahead_of_plan", []) or []:
        add("cabled ahead of its stage", x["text"], [x.get("cable_id")], fix=False)
    r = rep.get("routes") or {}
    cyc = (r.get("deadlock") or {}).get("cycle") or []
    if cyc:
        chans = "; ".join(f"{i + 1}. {c}" for i, c in enumerate(cyc))
        if (r.get("deadlock") or {}).get("checked") is False:  # without the path SLs: NOT CHECKED
            loop = "cycle with every route on one VL (NOT CHECKED without the path SLs)"
            it = add("not checked", f"{loop}: {len(cyc)} channels, a credit loop only if the engine's SLs keep it "
                                    f"on one VL: {chans}", fix=False)
        else:
            loop = "credit loop"
            it = add(loop, f"credit loop: a cycle of {len(cyc)} channels, each channel's routes wait for the next: "
                           f"{chans}", fix=False)
        for i, c in enumerate(cyc):
            m = _CHAN.match(c)
            if m:
                marks.append(Mark("cycle", str(i + 1), f"{loop}, channel {i + 1} of {len(cyc)}: {c}",
                                  ends=((m.group(1), int(m.group(2))), (m.group(3), int(m.group(4)))), arrow=True,
                                  ref=f"f{it['n']}"))
    h = rep.get("health") or {}
    for x in h.get("findings", []):
        it = add("reseat or replace", x["action"], [x.get("cable")], _labels(x.get("labels")))
        ends = str(x.get("link") or "").split(" - ")  # "A port 1 - B port 2"
        if len(ends) == 2:
            marks.append(Mark("health", x.get("cable") or f"#{it['n']}", x["action"],
                              ends=tuple(long_end(e) for e in ends), ref=f"f{it['n']}"))
        else:
            marks.append(Mark("health", x.get("cable") or f"#{it['n']}", x["action"], device=x["device"],
                              ref=f"f{it['n']}"))
    return items, marks


def _labels(x) -> list[str]:
    """A cable's label as printed on its first end (it names both ends), one per cable."""
    if not x:
        return []
    if isinstance(x[0], (list, tuple)):
        return [v[0] for v in x if v]
    return [x[0]]


def heat(scene, rep: dict) -> list[Heat]:
    """The routes section's link loads as two heat layers over the scene's wires."""
    links = ((rep.get("routes") or {}).get("balance") or {}).get("links") or []
    routes: dict[int, float] = {}
    a2a: dict[int, float] = {}
    det: dict[int, list[str]] = {}
    for a, b, n, m in links:
        (da, pa), (db, pb) = end(a), end(b)
        li = scene.link((da, pa), (db, pb))
        if li is None:
            continue
        routes[li] = max(routes.get(li, 0), n)
        a2a[li] = max(a2a.get(li, 0), m)
        det.setdefault(li, []).append(f"{da} P{pa} -> {db} P{pb}: {n} routes, all-to-all load {m}")
    if not routes:
        return []
    d = {li: "; ".join(v) for li, v in det.items()}
    return [Heat("routes per link", routes, d), Heat("all-to-all link load", a2a, d)]


# ------------------------------------------------------------------------------------ page

def fabric_for(rep: dict):
    """(fabric, layout or None, what it is) to draw the report on: the plan, else the discovered
    fabric; (None, None, why) when neither can be read."""
    from ibtool.formats import ibnetdiscover
    inp = rep.get("inputs") or {}
    plan = inp.get("plan")
    try:
        if plan:
            from ibtool.plan import read_plan
            f, p, _ = read_plan(plan)
            lay = None
            if p.layout_json.is_file():  # as planned (a layout placed now would be a guess)
                from ibtool.layout import Layout
                lay = Layout.read(p.layout_json, f)
            return f, lay, f"the plan {plan}"
        for key in ("discovered", "fabric"):
            if inp.get(key):
                return ibnetdiscover.read(inp[key]), None, f"the fabric as discovered ({inp[key]})"
        if inp.get("run") and rundir.fabric(inp["run"]).is_file():
            p = rundir.fabric(inp["run"])
            return ibnetdiscover.read(p), None, f"the fabric as discovered ({p})"
    except (IbtoolError, OSError, ValueError) as e:
        return None, None, f"no drawing: {e}"
    return None, None, "no drawing: the report names no fabric"


def cable_ids_for(rep: dict) -> dict:
    """(device, port) -> the plan's cable there (ID and labels), from its cable list, when there is one."""
    plan = (rep.get("inputs") or {}).get("plan")
    if not plan:
        return {}
    from ibtool.plan import Plan
    from ibtool.verify import cables
    try:
        given = rep["inputs"].get("cables")
        p = Path(given) if given else Plan.at(plan).cable_list()
        return dict(cables.read(p)) if p else {}
    except (IbtoolError, OSError):
        return {}


def drawn(rep: dict, marks: list[Mark], fabric=None, layout=None, what: str = "") -> tuple[str, str, list[Mark]]:
    """(svg, note, marks) of the fabric with the marks and the heat layers on it."""
    if fabric is None:
        fabric, layout, what = fabric_for(rep)
    if fabric is None:
        return "", what, marks
    sc = drawing.scene_for(fabric, layout)
    if sc is None:
        return "", f"no drawing: {fabric.num_nodes:,} devices without a shape to draw them in", marks
    sc.marks = marks
    sc.heat = heat(sc, rep)
    svg = drawing.render(sc, desc=meta_text(rep))
    return svg, f"{sc.note}; drawn on {what}", marks


def meta(rep: dict) -> dict:
    inp = rep.get("inputs") or {}
    run_fabric = rundir.fabric(inp["run"]) if inp.get("run") else None
    return {"fabric": inp.get("fabric") or inp.get("discovered") or
            (str(run_fabric) if run_fabric and run_fabric.is_file() else ""),
            "plan": inp.get("plan") or "", "run": inp.get("run") or "", "made": drawing.made_at(),
            "version": __version__}


def meta_text(rep: dict) -> str:
    m = meta(rep)
    return "; ".join(f"{k} {v}" for k, v in (("fabric", m["fabric"]), ("plan", m["plan"]), ("run", m["run"]))
                     if v) + f"; made {m['made']} by ibtool {m['version']}"


CSS = """
body{font:10.5pt/1.4 "DejaVu Sans",Arial,sans-serif;margin:1.2em;color:#111}
h1{font-size:17pt;margin:0 0 .2em}h1 .PASS{color:#070}h1 .FAIL{color:#b00}.NOT{color:#a60}
h2{font-size:13pt;margin:1.1em 0 .4em}
.meta{color:#444;margin-bottom:.8em;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;margin:.3em 0 .8em}
th,td{border:1px solid #aaa;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#eee}
td.v{font-weight:bold;white-space:nowrap}tr.ok td.v{color:#070}tr.bad td.v{color:#b00}tr.info td.v{color:#555}
tr.nc td.v{color:#a60}
td.text{overflow-wrap:anywhere;word-break:normal;min-width:20em}.label{font:8pt "DejaVu Sans Mono",monospace}
.id{white-space:nowrap;overflow-wrap:normal}thead{display:table-header-group}
.check{width:1.4em;text-align:center}
tr.sel{background:#fff3b0}
.layout{display:flex;gap:1.2em;align-items:flex-start;flex-wrap:wrap}
.layout figure{margin:0;flex:3 1 600px;min-width:0}
.layout aside{flex:2 1 560px;min-width:0}
figure svg.ibd{width:100%;height:auto;border:1px solid #ddd}
figcaption{color:#444;font-size:9pt}
.legend span{display:inline-block;margin-right:1em;white-space:nowrap}
.legend i{display:inline-block;width:22px;height:0;border-top:3px solid;vertical-align:middle;margin-right:4px}
#info{position:sticky;top:0;background:#fffbe6;border:1px solid #cc9;padding:4px 8px;min-height:1.4em;
  white-space:pre-wrap;overflow-wrap:anywhere;font-size:9pt}
pre.details{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:.6em;font-size:8.5pt}
.toggle{font-size:9pt}
@page{margin:12mm}
@media print{body{margin:0;font-size:9pt}.noprint{display:none}
  .layout{display:block}figure svg.ibd{border:none;max-height:var(--room,240mm)}
  section.step+section.step{break-before:page}section.step details{display:none}
  tr{page-break-inside:avoid}h2{page-break-after:avoid}a{color:inherit;text-decoration:none}}
"""

LEGEND = (("miswired", "#000", "double", "miswired: where the cable belongs"),
          ("found", "#000", "dashed", "where it is now"),
          ("missing", "#e80", "dashed", "missing"), ("extra", "#f09", "dotted", "extra / not planned"),
          ("degraded", "#cb0", "solid", "degraded link"), ("health", "#0aa", "solid", "port errors"),
          ("cycle", "#f0f", "solid", "credit loop: each channel an arrow beside its cable, numbered in order"),
          ("down", "#000", "dashed", "down in this step"),
          ("detour", "#07c", "solid", "carries more routes than before the faults"))

JS = """
(function(){
  var info=document.getElementById("info");
  document.querySelectorAll("svg.ibd path, svg.ibd g, svg.ibd [data-mark], svg.ibd circle, svg.ibd rect").forEach(
    function(e){e.addEventListener("click",function(ev){
      var t=e.querySelector(":scope > title");if(!t&&e.parentNode)t=e.parentNode.querySelector(":scope > title");
      if(info&&t){info.textContent=t.textContent;ev.stopPropagation();}
      var ref=e.getAttribute("data-ref");
      document.querySelectorAll("tr.sel").forEach(function(r){r.classList.remove("sel")});
      if(ref){var r=document.getElementById(ref);if(r){r.classList.add("sel");}}
    });});
  document.querySelectorAll("input[name=heat]").forEach(function(b){b.addEventListener("change",function(){
    var k=b.value;document.querySelectorAll("svg.ibd path[data-h0]").forEach(function(p){
      p.setAttribute("class",p.getAttribute("class").replace(/ h\\d+$/,"")+" h"+p.getAttribute("data-"+k));});
    document.querySelectorAll("svg.ibd g.legend").forEach(function(g){
      g.style.opacity=g.getAttribute("data-layer")==k?1:.35;});
  });});
})();
"""


def page(rep: dict, title: str, body: str) -> str:
    m = meta(rep)
    verdict = rep.get("verdict") or ("PASS" if rep.get("ok") else "FAIL")  # PASS, FAIL or NOT CHECKED
    data = base64.b64encode(json.dumps(rep, indent=1).encode()).decode()
    meta_html = " &middot; ".join(f"{k} <code>{escape(str(v))}</code>" for k, v in
                                  (("fabric", m["fabric"]), ("plan", m["plan"]), ("run", m["run"])) if v)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}: {verdict}'
            f'</title><style>{CSS}</style></head><body>\n<h1>{escape(title)}: <span class="{verdict}">{verdict}</span>'
            f'</h1>\n<div class="meta">{meta_html}<br>made {m["made"]} by ibtool {m["version"]} &middot; '
            f'<a href="data:application/json;base64,{data}" download="verify-report.json">the report as JSON</a>'
            f'</div>\n{body}\n<script>{JS}</script>\n</body></html>\n')


def checks_table(rep: dict) -> str:
    from ibtool.verify.report import tag
    kind = (lambda c: "info" if c.get("info") else "nc" if c.get("not_checked") else "ok" if c["ok"] else "bad")
    rows = "".join(f"<tr class='{kind(c)}'><td class='v'>"
                   f"{tag(c)}</td><td>{escape(c['name'])}</td>"
                   f"<td class='text'>{escape(c['summary'])}</td></tr>" for c in rep["checks"])
    return f'<table id="checks"><tr><th></th><th>check</th><th>result</th></tr>{rows}</table>'


def findings_table(items: list[dict]) -> str:
    if not items:
        return '<p id="findings">No findings: the fabric is as planned.</p>'
    rows = []
    for it in items:
        cls = "fix" if it["what"] == "fix" else "finding"
        # identifiers (cable IDs, label lines, C0 U42 front, R[0,0] port 2) never break over two lines
        rows.append(f'<tr id="f{it["n"]}" class="{cls}" data-cables="{escape(" ".join(it["cables"]))}">'
                    f'<td class="check">{"&#9744;" if it["fix"] else ""}</td><td>{it["n"]}</td>'
                    f'<td>{escape(it["what"])}</td><td class="cable">{_cables(it)}</td>'
                    f'<td class="text">{nobreak(it["text"])}</td></tr>')
    return ('<table id="findings"><thead><tr><th class="check">&#10003;</th><th>#</th><th>action</th>'
            '<th>cable and its label</th><th>what to do</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>")


def _id(text: str) -> str:
    return f'<span class="id">{escape(text)}</span>'


def _cables(it: dict) -> str:
    """Each cable of a finding: its ID, and under it the rest of its label (one column for both,
    so the fix text keeps the width)."""
    labels = list(it["labels"])
    out = []
    for c in it["cables"]:
        lab = next((x for x in labels if x.split(" / ")[0] == c), None)
        if lab is not None:
            labels.remove(lab)
        out.append(f"<b>{_id(c)}</b>" + (f'<br><span class="label">{_label_lines(lab, skip_id=True)}</span>'
                                         if lab else ""))
    out += [f'<span class="label">{_label_lines(x)}</span>' for x in labels]
    return "<br>".join(out)


def _label_lines(label: str, skip_id: bool = False) -> str:
    """A label as the cable list keeps it ('C0044 / C0-U05F S[0,1] P1 / ...'), one line each
    (without its first, the cable ID, when that stands above it)."""
    lines = label.split(" / ")
    return "<br>".join(_id(x) for x in (lines[1:] if skip_id else lines))


def legend(marks: list[Mark], heat_layers: bool) -> str:
    kinds = {m.kind for m in marks}
    spans = [f'<span><i style="border-top:{5 if s == "double" else 3}px {s} {c}"></i>{escape(t)}</span>'
             for k, c, s, t in LEGEND if k in kinds]
    if {"misplaced", "notfound"} & kinds:
        spans.append('<span><i style="border-top-color:#d00"></i>outlined: a device with a finding</span>')
    out = f'<div class="legend">{"".join(spans)}</div>' if spans else ""
    if heat_layers:
        out += ('<div class="toggle noprint">heat map: <label><input type="radio" name="heat" value="h0" checked> '
                'routes per link</label> <label><input type="radio" name="heat" value="h1"> all-to-all link load'
                '</label></div>')
    return out


# On paper the drawing shares its page with what stands above it (the title, the checks, the
# legend) instead of moving whole to the next page and leaving this one mostly blank: its printed
# height is what is left of the shorter of A4 and Letter (255 mm inside the 12 mm margins) under
# that text, estimated at the print size (9 pt: a line 4.4 mm; measured in Chromium).
PAGE_MM, LINE_MM, ROW_MM, MIN_MM = 255.0, 4.4, 1.4, 90.0


def _lines(text: str, per_line: int) -> int:
    return max(1, -(-len(text) // per_line))


def checks_mm(rep: dict) -> float:
    """The printed height of the checks table: a row per check, its result wrapped at about 80
    characters and its name at 16."""
    return 6.0 + sum(ROW_MM + LINE_MM * max(_lines(c["summary"], 80), _lines(c["name"], 16)) for c in rep["checks"])


def head_mm(rep: dict) -> float:
    """The title and the line of inputs above the first heading, printed."""
    m = meta(rep)
    line = " . ".join(f"{k} {v}" for k, v in (("fabric", m["fabric"]), ("plan", m["plan"]), ("run", m["run"])) if v)
    return 23.0 + LINE_MM * _lines(line, 95)


def drawing_section(svg: str, note: str, marks: list[Mark], rep: dict, items: list[dict],
                    above_mm: float = 0.0) -> str:
    """The drawing (with its legend) beside the findings; above_mm: how much of the printed page
    stands above it."""
    missed = [m for m in marks if not m.drawn and m.kind != "found"]
    side = findings_table(items)
    if missed:
        side += ("<p>Not on the drawing (a device or cable it does not show): "
                 + "; ".join(escape(m.text or m.label) for m in missed[:20]) + "</p>")
    leg = legend(marks, "data-h0=" in svg)
    room = PAGE_MM - above_mm - LINE_MM * _lines(re.sub("<[^>]+>", "", leg) if leg else "", 90) - 6.0
    style = f' style="--room:{room:.0f}mm"' if room >= MIN_MM else ""  # else: a page of its own (240 mm)
    fig = (f'<figure{style}>{leg}{svg}<figcaption>{escape(note)}. Hover or click a cable or '
           f'device for its details.</figcaption><div id="info" class="noprint"></div></figure>' if svg else
           f"<p>{escape(note)}</p>")
    return f'<div class="layout">{fig}<aside><h2>Findings</h2>{side}</aside></div>'


def write_html(rep: dict, path: str | Path) -> None:
    """The report of one run (or one comparison) as a page (see the module docstring)."""
    from ibtool.verify.report import text
    items, marks = findings(rep, cable_ids_for(rep))
    svg, note, marks = drawn(rep, marks)
    above = head_mm(rep) + 10.0 + checks_mm(rep) + 13.0  # the title, "Checks", its table, "The fabric"
    body = (f'<h2>Checks</h2>{checks_table(rep)}\n<h2>The fabric</h2>'
            f'{drawing_section(svg, note, marks, rep, items, above)}'
            f'\n<h2>Details</h2><pre class="details">{escape(text(rep).partition(chr(10))[2])}</pre>')
    _write(path, page(rep, "ibtool verify", body))


def write_steps_html(steps: list[tuple[str, dict, dict]], rep: dict, path: str | Path, plan=None) -> None:
    """A fault scenario (`sim run --faults`): per step its checks and the fabric with what is down
    at that step and the links that carry more routes than before the faults (the detours), and
    the step's findings. steps: (name, step report, step summary.json); plan: the scenario's plan
    (its net file), drawn on when it can be read, else step 0's expected fabric."""
    from ibtool.verify.report import text
    parts = []
    f, lay, what = fabric_for({"inputs": {"plan": str(plan)}}) if plan else (None, None, "")

    def above(r: dict) -> float:  # a step starts a printed page: its heading, its checks (the title first)
        return (head_mm(rep) if not parts else 0.0) + 10.0 + checks_mm(r)
    base_loads: dict | None = None
    for name, r, summ in steps:
        if f is None:
            f, lay, what = fabric_for(r)
        items, marks = findings(r, cable_ids_for(r))
        marks += down_marks(f, summ.get("down") or [])
        loads = {(a, b): n for a, b, n, _ in (((r.get("routes") or {}).get("balance") or {}).get("links") or [])}
        if base_loads is None:
            base_loads = loads
        else:
            for (a, b), n in loads.items():
                if n > base_loads.get((a, b), 0):
                    marks.append(Mark("detour", "", f"{a} -> {b}: {n} routes (before the faults: "
                                                    f"{base_loads.get((a, b), 0)})", ends=(end(a), end(b))))
        svg, note, marks = drawn(r, marks, f, lay, what)
        verdict = r.get("verdict") or ("PASS" if r["ok"] else "FAIL")
        parts.append(f'<section class="step" id="{escape(name)}"><h2>{escape(name)}: <span class="{verdict}">'
                     f'{verdict}</span> &mdash; {escape(str(summ.get("faults") or "no faults"))}</h2>'
                     f'{checks_table(r)}{drawing_section(svg, note, marks, r, items, above(r))}'
                     f'<details><summary>details</summary><pre class="details">'
                     f'{escape(text(r).partition(chr(10))[2])}</pre></details></section>')
    _write(path, page(rep, "ibtool verify: fault scenario", "\n".join(parts)))


def down_marks(plan, down: list[str]) -> list[Mark]:
    """What `sim run --faults` took down at a step ("DEVICE PORT": a cable by either end, "DEVICE": a
    switch and its cables), as marks on the plan."""
    out = []
    if plan is None:
        return out
    names = {n: i for i, n in enumerate(plan.names)}
    for x in down:
        dev, _, port = str(x).rpartition(" ")
        if dev in names and port.isdigit():
            pe = plan.peer(names[dev], int(port))
            if pe is not None:
                out.append(Mark("down", "down", f"cable {dev} P{port} - {plan.names[pe[0]]} P{pe[1]} is down",
                                ends=((dev, int(port)), (plan.names[pe[0]], pe[1]))))
                continue
        out.append(Mark("down", str(x), f"{x} is down (and every cable of it)", device=str(x)))
    return out


def _write(path, doc: str) -> None:
    try:
        with atomic_write(path) as fh:
            fh.write(doc)
    except OSError as e:
        raise InputError(f"cannot write the HTML report: {e.strerror}", path=str(path)) from None
